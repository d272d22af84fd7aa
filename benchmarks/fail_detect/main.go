// Command fail_detect measures how long a rank blocked in Recv waits
// before it learns that its peer died: the time from rank 1's death to
// the moment rank 0's Recv from rank 1 returns ErrProcFailed. Two kinds
// of death are measured, each many times: SIGKILL, and os.Exit(3) without
// Finalize.
//
//	./fail_detect [-kills 25]
//
// It runs its own 2-rank jobs (through package launch). In each, rank 0
// tells rank 1 it is about to block, and blocks in Recv from rank 1 on a
// tag nothing will match. Rank 1 waits 3 ms, so that rank 0 has stopped
// spinning and sleeps on its futex (the usual state of a blocked rank),
// reads CLOCK_MONOTONIC (t0), writes it to its output and dies. Rank 0
// reads CLOCK_MONOTONIC (t1) when its Recv returns. The figure is t1-t0:
// it includes rank 1's write of t0 (a few µs), so it is an upper bound.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"shmpi/ranks"
	"shmpi/ranks/launch"
)

func main() {
	kills := flag.Int("kills", 25, "deaths measured per mode")
	mode := flag.String("mode", "", "(rank side) how rank 1 dies: sigkill or exit")
	flag.Parse()
	if os.Getenv(ranks.EnvFD) != "" {
		rank(*mode)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("# fail_detect: time from rank 1's death to ErrProcFailed at rank 0, blocked (asleep) in Recv from rank 1")
	fmt.Println("# mode      n   median_us   p10_us   p90_us   min_us   max_us   detected_by")
	for _, m := range []string{"sigkill", "exit"} {
		var lat []float64
		causes := map[string]int{}
		for k := 0; k < *kills; k++ {
			d, cause, err := trial(exe, m)
			if err != nil {
				log.Fatalf("%s, trial %d: %v", m, k, err)
			}
			lat = append(lat, d)
			causes[cause]++
		}
		slices.Sort(lat)
		var cs []string
		for c, n := range causes {
			cs = append(cs, fmt.Sprintf("%s:%d", c, n))
		}
		slices.Sort(cs)
		fmt.Printf("%-8s %3d %11.1f %8.1f %8.1f %8.1f %8.1f   %s\n", m, len(lat), pct(lat, 50), pct(lat, 10), pct(lat, 90),
			lat[0], lat[len(lat)-1], strings.Join(cs, " "))
	}
}

// trial runs one job and returns t1-t0 in µs and who detected the death.
func trial(exe, mode string) (float64, string, error) {
	var outs [2]bytes.Buffer
	job, err := launch.Start(launch.Config{N: 2, Path: exe, Args: []string{"-mode", mode},
		Output: func(r int) (io.Writer, io.Writer) { return &outs[r], os.Stderr }})
	if err != nil {
		return 0, "", err
	}
	exits, ok := job.WaitTimeout(10 * time.Second)
	if !ok {
		job.Kill()
		job.Wait()
		return 0, "", errors.New("timed out: rank 0 never got the error")
	}
	if x := exits[0]; x.Abnormal() {
		return 0, "", fmt.Errorf("rank 0 %s: %s", x.How(), outs[0].String())
	}
	if !exits[1].Failed() {
		return 0, "", fmt.Errorf("rank 1 did not fail: %s", exits[1].How())
	}
	t0, err0 := stamp(outs[1].String(), "t0=")
	t1, err1 := stamp(outs[0].String(), "t1=")
	if err0 != nil || err1 != nil {
		return 0, "", fmt.Errorf("outputs %q / %q", outs[0].String(), outs[1].String())
	}
	f := exits[1].Fate
	cause := f.Cause
	if f.Cause == "robust-futex" {
		cause = fmt.Sprintf("robust-futex(watcher in rank %d)", f.Detector)
	} else if f.Cause == "exit" {
		cause = "exit(launcher)"
	}
	return float64(t1-t0) / 1e3, cause, nil
}

func stamp(out, key string) (int64, error) {
	i := strings.Index(out, key)
	if i < 0 {
		return 0, errors.New("no " + key)
	}
	f := strings.Fields(out[i+len(key):])
	if len(f) == 0 {
		return 0, errors.New("empty " + key)
	}
	return strconv.ParseInt(f[0], 10, 64)
}

func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func rank(mode string) {
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	c := w.Comm()
	switch c.Rank() {
	case 0:
		if err := ranks.Send(c, []byte{1}, 1, 1); err != nil {
			log.Fatal(err)
		}
		_, err := ranks.Recv(c, make([]byte, 1), 1, 2)
		t1 := monotonic()
		if !errors.Is(err, ranks.ErrProcFailed) {
			log.Fatalf("Recv returned %v, want ErrProcFailed", err)
		}
		fmt.Printf("t1=%d\n", t1)
		w.Finalize()
	case 1:
		if _, err := ranks.Recv(c, make([]byte, 1), 0, 1); err != nil {
			log.Fatal(err)
		}
		time.Sleep(3 * time.Millisecond) // let rank 0 fall asleep in Recv
		t0 := monotonic()
		os.Stdout.WriteString("t0=" + strconv.FormatInt(t0, 10) + "\n")
		if mode == "exit" {
			os.Exit(3)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

func pct(sorted []float64, p int) float64 {
	return sorted[(len(sorted)-1)*p/100]
}
