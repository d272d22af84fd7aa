// Command spawn measures Comm.Spawn of k ranks until every one of them
// has completed ranks.Init (it sends the root a message right after its
// Init, and the clock stops at the last of those):
//
//	shmrun -n 1 --universe 81 ./spawn [-k 8] [-i 10]
//
// Each of -i spawns takes k new rank slots (slots are not reused), so
// the universe must hold 1 + i*k ranks. Between spawns the root waits,
// untimed, until the previous children's processes are gone, so that
// their exits do not share the CPUs with the next spawn. It prints
// every time and the median, in milliseconds, and beside them when Spawn
// returned at the root (the launcher had started every process).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/ranks"
)

func main() {
	k := flag.Int("k", 8, "ranks per spawn")
	iters := flag.Int("i", 10, "spawns")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	if p := w.Parent(); p != nil {
		if err := ranks.Send(p, []byte{1}, 0, 1); err != nil {
			log.Fatal(err)
		}
		if err := p.Disconnect(); err != nil {
			log.Fatal(err)
		}
		return
	}
	if w.Rank() != 0 {
		return
	}
	if need := 1 + *iters**k; w.UniverseSize() < need {
		log.Fatalf("%d spawns of %d need a universe of %d (shmrun --universe %d); it is %d", *iters, *k, need, need, w.UniverseSize())
	}
	self, err := w.Self()
	if err != nil {
		log.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	var ms, ret []float64
	b := make([]byte, 1)
	for i := range *iters {
		t0 := time.Now()
		ic, err := self.Spawn(exe, os.Args[1:], *k, 0)
		if err != nil {
			log.Fatal(err)
		}
		ret = append(ret, float64(time.Since(t0).Microseconds())/1e3)
		for range *k {
			if _, err := ranks.Recv(ic, b, ranks.AnySource, 1); err != nil {
				log.Fatal(err)
			}
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1e3)
		if err := ic.Disconnect(); err != nil {
			log.Fatal(err)
		}
		// Untimed: wait for the children's processes to be gone.
		for _, f := range w.Fates()[1+i**k : 1+(i+1)**k] {
			if fd, err := unix.PidfdOpen(f.Pid, 0); err == nil {
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				for {
					if _, err := unix.Poll(pfd, -1); err != unix.EINTR {
						break
					}
				}
				unix.Close(fd)
			}
		}
	}
	fmt.Printf("# Spawn of %d ranks: until their Init completed; until Spawn returned at the root; ms\n", *k)
	for i, v := range ms {
		fmt.Printf("spawn %2d  %8.2f  %8.2f\n", i, v, ret[i])
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	fmt.Printf("median    %8.2f  %8.2f  (Init: min %.2f, max %.2f; %d spawns)\n", med(ms), med(ret), s[0], s[len(s)-1], len(s))
}
