// Command footprint measures the memory a shmpi job uses: the shared
// segment's size, and each rank's resident memory (RSS, PSS) and the part
// of the segment it has touched, after every rank has sent a message to
// every other (the worst case for the fast paths: every inbox touched).
//
//	./footprint [-n 2,64,256]
//
// It starts each job itself (through package launch) and prints one line
// per job size.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
)

func main() {
	sizes := flag.String("n", "2,64,256", "job sizes")
	flag.Parse()
	if launch.IsRank() {
		rank()
		return
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("# footprint: segment size, and per rank after an all-to-all of 8-byte messages")
	fmt.Println("# (KiB; per-rank figures are medians; seg_touched = segment pages resident in that rank)")
	fmt.Printf("%-6s %12s %14s %10s %10s %14s %12s\n", "ranks", "segment_KiB", "seg/rank_KiB", "rss_KiB", "pss_KiB", "seg_touched", "total_pss_MiB")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			log.Fatalf("bad size %q", s)
		}
		outs := make([]*bytes.Buffer, n)
		for i := range outs {
			outs[i] = &bytes.Buffer{}
		}
		job, err := launch.Start(launch.Config{N: n, Path: exe, Args: []string{"-n", s},
			Output: func(r int) (io.Writer, io.Writer) { return outs[r], os.Stderr }})
		if err != nil {
			log.Fatal(err)
		}
		segKiB := job.SegmentSize() / 1024
		exits, ok := job.WaitTimeout(5 * time.Minute)
		if !ok {
			job.Kill()
			job.Wait()
			log.Fatalf("job of %d ranks timed out", n)
		}
		var rss, pss, seg []float64
		for r, x := range exits {
			if x.Abnormal() {
				log.Fatalf("rank %d %s", r, x.How())
			}
			var a, b, c float64
			if _, err := fmt.Sscanf(outs[r].String(), "rss=%g pss=%g seg=%g", &a, &b, &c); err != nil {
				log.Fatalf("rank %d printed %q", r, outs[r].String())
			}
			rss, pss, seg = append(rss, a), append(pss, b), append(seg, c)
		}
		var total float64
		for _, p := range pss {
			total += p
		}
		fmt.Printf("%-6d %12d %14.1f %10.0f %10.0f %14.0f %12.1f\n", n, segKiB, float64(segKiB)/float64(n),
			median(rss), median(pss), median(seg), total/1024)
	}
}

// rank exchanges with every other rank, then reports its memory.
func rank() {
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	c := w.Comm()
	me, n := c.Rank(), c.Size()
	var reqs []*ranks.Request
	in := make([][]int64, n)
	for p := range n {
		in[p] = make([]int64, 1)
		q, err := ranks.Irecv(c, in[p], p, 0)
		if err != nil {
			log.Fatal(err)
		}
		reqs = append(reqs, q)
	}
	for p := range n {
		q, err := ranks.Isend(c, []int64{int64(me)}, p, 0)
		if err != nil {
			log.Fatal(err)
		}
		reqs = append(reqs, q)
	}
	if err := ranks.WaitAll(reqs, nil); err != nil {
		log.Fatal(err)
	}
	// Everyone has finished touching everyone's inbox before we measure.
	for p := range n {
		if p != me {
			if err := ranks.Send(c, []byte{1}, p, 1); err != nil {
				log.Fatal(err)
			}
		}
	}
	for p := range n {
		if p != me {
			if _, err := ranks.Recv(c, make([]byte, 1), p, 1); err != nil {
				log.Fatal(err)
			}
		}
	}
	rss, pss, seg := memory()
	fmt.Printf("rss=%d pss=%d seg=%d\n", rss, pss, seg)
	w.Finalize()
}

// memory reads this process's RSS and PSS (KiB) and the resident KiB of
// its mapping of the segment file, from /proc/self/smaps.
func memory() (rss, pss, seg int) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	inSeg := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") || strings.Contains(fields[0], "-") {
			// A mapping header: "start-end perms offset dev inode path".
			inSeg = len(fields) >= 6 && strings.Contains(fields[5], "shmpi-")
			continue
		}
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fields[1])
		switch fields[0] {
		case "Rss:":
			rss += v
			if inSeg {
				seg += v
			}
		case "Pss:":
			pss += v
		}
	}
	return
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
