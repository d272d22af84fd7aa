// Command node_fail measures how long a failure takes to cross nodes: the
// time from the SIGKILL of the last rank (on the last node) to the moment
// rank 0 (on the first node), blocked in a Recv from it, gets
// ranks.ErrProcFailed. One death per job; run it under node agents on
// one machine, whose clocks agree:
//
//	mpirun --oversubscribe --mca btl tcp,self -n 2 bin/shmnode -ft -cores 1 -n 1 bin/node_fail -t0 /tmp/t0
//
// The victim waits 3 ms after rank 0 said it is about to block (so that
// rank 0 sleeps, as a blocked rank does), writes CLOCK_MONOTONIC (t0) to
// the file -t0 names, and kills itself. Every other rank blocks on the
// victim too, so that the victim's node-mates see its death as in a real
// job (their watchers declare it, robust futex). Rank 0 reads CLOCK_MONOTONIC
// (t1) when its Recv returns, reads t0 from the file, and prints
// "detect_us" t1-t0. The time includes the victim's write of the file (a
// few µs). The path the failure takes: a node-mate's watcher declares it
// in its node's table (or, with no node-mate, the agent reaps it), the
// victim's agent sees the table change and tells the other agents over
// the MPI, and rank 0's agent declares it in rank 0's segment.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/ranks"
)

const (
	tagReady = 1
	tagNever = 2
)

func main() {
	t0file := flag.String("t0", "", "file the victim writes its time of death to (required)")
	flag.Parse()
	if *t0file == "" {
		log.Fatal("node_fail: -t0 FILE is required")
	}
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	c := w.Comm()
	victim := c.Size() - 1
	if victim == 0 {
		log.Fatal("node_fail: needs at least 2 ranks")
	}
	var b [1]byte
	switch c.Rank() {
	default:
		// The other ranks block on the victim too, so that its node-mates
		// are alive when it dies, as in a real job: their watchers see
		// the death first (robust futex).
		if _, err := ranks.Recv(c, b[:], victim, tagNever); !errors.Is(err, ranks.ErrProcFailed) {
			log.Fatalf("node_fail: rank %d: Recv from the victim: %v, want ErrProcFailed", c.Rank(), err)
		}
	case 0:
		if err := ranks.Send(c, b[:], victim, tagReady); err != nil {
			log.Fatal(err)
		}
		_, err := ranks.Recv(c, b[:], victim, tagNever)
		t1 := monotonic()
		if !errors.Is(err, ranks.ErrProcFailed) {
			log.Fatalf("node_fail: Recv from the victim: %v, want ErrProcFailed", err)
		}
		raw, rerr := os.ReadFile(*t0file)
		t0, perr := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if rerr != nil || perr != nil {
			log.Fatalf("node_fail: reading t0: %v %v", rerr, perr)
		}
		fmt.Printf("detect_us %.1f\n", float64(t1-t0)/1e3)
	case victim:
		if _, err := ranks.Recv(c, b[:], 0, tagReady); err != nil {
			log.Fatal(err)
		}
		time.Sleep(3 * time.Millisecond) // rank 0 sleeps in its Recv by then
		if err := os.WriteFile(*t0file, []byte(strconv.FormatInt(monotonic(), 10)), 0o644); err != nil {
			log.Fatal(err)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	w.Finalize()
}

func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		log.Fatal(err)
	}
	return ts.Nano()
}
