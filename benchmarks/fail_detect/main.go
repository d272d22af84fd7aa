// Command fail_detect measures how long a rank blocked in Recv waits
// before it learns that its peer died: the time from rank 1's death to
// the moment rank 0's Recv from rank 1 returns an error matching
// ranks.ErrProcFailed. Two kinds of death are measured, each many times:
// SIGKILL, and os.Exit(3) without Finalize.
//
//	./fail_detect [-kills 25] [-busy] [-v]      (directly, not under shmrun)
//
// It is its own driver: run without SHMPI_FD it starts, per trial, a
// 2-rank job of its own executable (through package launch); with SHMPI_FD
// set it is one of those ranks. In each job rank 0 tells rank 1 it is
// about to block, and blocks in Recv from rank 1 on a tag nothing will
// match. Rank 1 waits 3 ms, so that rank 0 has stopped spinning and sleeps
// on its futex (the usual state of a blocked rank), reads CLOCK_MONOTONIC
// (t0), writes it to its output and dies. Rank 0 reads CLOCK_MONOTONIC
// (t1) as soon as its Recv returns. The figure is t1-t0: it includes rank
// 1's write of t0 (a few µs), so it is a slight overestimate.
//
// With -busy rank 0 does not sleep: rank 1 streams 8-byte messages to
// it for 3 ms and then dies, and rank 0 receives them from AnySource
// until a receive fails, so that it spins when the death comes; the ranks
// are bound to cores, as shmrun binds them, so that rank 0's liveness
// watcher shares its CPU.
//
// detected_by counts who declared the failure in the shared table: the
// robust-futex watcher thread of a surviving rank (the kernel marked the
// dead process's liveness word), the blocked rank itself, woken by the
// kernel on the dead rank's direct liveness word ("robust-futex-direct"),
// or the launcher when it reaped the process ("exit"). Trials that go wrong (timeout, wrong error, bad
// output) are reported on stderr, left out of the figures, and make the
// command exit 1.
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

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
)

// Tags of the two messages: rank 0's "I am about to block", and the one
// it blocks on, which nobody ever sends.
const (
	tagReady  = 1
	tagNever  = 2
	tagStream = 3 // -busy: rank 1's stream to rank 0
)

// trialTimeout bounds one job: detection takes well under a millisecond,
// so reaching it means rank 0 never got the error.
const trialTimeout = 10 * time.Second

var modes = []string{"sigkill", "exit"}

func main() {
	kills := flag.Int("kills", 25, "deaths measured per mode")
	verbose := flag.Bool("v", false, "print every trial on stderr")
	mode := flag.String("mode", "", "(rank side, set by the driver) how rank 1 dies: sigkill or exit")
	busy := flag.Bool("busy", false, "rank 0 receives a stream from rank 1 (spinning, ranks bound to cores as shmrun binds them) instead of sleeping in Recv")
	flag.Parse()
	log.SetFlags(0)
	if launch.IsRank() {
		if *mode == "" {
			// A rank without -mode was not started by the driver below
			// but by another launcher, such as shmrun.
			fmt.Fprintln(os.Stderr, "fail_detect starts its own jobs; run it directly, not under shmrun")
			os.Exit(2)
		}
		rank(*mode, *busy)
		return
	}
	if *kills < 1 {
		log.Fatal("fail_detect: -kills must be at least 1")
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}

	type result struct {
		lat    []float64 // µs
		gone   []float64 // µs from the death until the process finished exiting
		causes map[string]int
		bad    int
	}
	res := map[string]*result{}
	for _, m := range modes {
		res[m] = &result{causes: map[string]int{}}
	}
	// The modes alternate, so that a burst of load from the machine's
	// other users falls on both rather than on one.
	for k := range *kills {
		for _, m := range modes {
			d, cause, err := trial(exe, m, *busy)
			r := res[m]
			if err != nil {
				r.bad++
				log.Printf("fail_detect: %s, trial %d: %v", m, k, err)
				continue
			}
			if *verbose {
				log.Printf("%-7s %2d: %8.1f us  %s  (%s)", m, k, d.total, cause, d.split)
			}
			r.lat = append(r.lat, d.total)
			if d.gone > 0 {
				r.gone = append(r.gone, d.gone)
			}
			r.causes[cause]++
		}
	}

	if *busy {
		fmt.Println("# fail_detect -busy: time from rank 1's death to ErrProcFailed at rank 0, receiving rank 1's stream (spinning; ranks bound)")
	} else {
		fmt.Println("# fail_detect: time from rank 1's death to ErrProcFailed at rank 0, blocked (asleep) in Recv from rank 1")
	}
	fmt.Printf("# %d kills per mode; t1-t0 on CLOCK_MONOTONIC, in microseconds; detected_by: who declared the failure\n", *kills)
	fmt.Println("# mode      n   median_us   p10_us   p90_us   min_us   max_us   detected_by")
	failed := false
	for _, m := range modes {
		r := res[m]
		if r.bad > 0 {
			failed = true
		}
		if len(r.lat) == 0 {
			fmt.Printf("%-8s %3d %11s %8s %8s %8s %8s   %d trials failed\n", m, 0, "-", "-", "-", "-", "-", r.bad)
			continue
		}
		lat := r.lat
		slices.Sort(lat)
		var cs []string
		for c, n := range r.causes {
			cs = append(cs, fmt.Sprintf("%s:%d", c, n))
		}
		slices.Sort(cs)
		if r.bad > 0 {
			cs = append(cs, fmt.Sprintf("FAILED:%d", r.bad))
		}
		fmt.Printf("%-8s %3d %11.1f %8.1f %8.1f %8.1f %8.1f   %s\n", m, len(lat), pct(lat, 50), pct(lat, 10), pct(lat, 90),
			lat[0], lat[len(lat)-1], strings.Join(cs, " "))
	}
	fmt.Println("# teardown: time from rank 1's death until its process finished exiting (its pidfd readable at rank 0),")
	fmt.Println("# during which the kernel tears it down on the CPU it ran on; ranks bound to that CPU wait for it")
	fmt.Println("# teardown mode      n   median_us   p10_us   p90_us")
	for _, m := range modes {
		g := res[m].gone
		if len(g) == 0 {
			fmt.Printf("teardown %-8s %3d %11s %8s %8s\n", m, 0, "-", "-", "-")
			continue
		}
		slices.Sort(g)
		fmt.Printf("teardown %-8s %3d %11.1f %8.1f %8.1f\n", m, len(g), pct(g, 50), pct(g, 10), pct(g, 90))
	}
	if failed {
		os.Exit(1)
	}
}

// timing is one trial's result: t1-t0 in µs, and how it splits at the
// moment the failure was declared (wall clock, so only roughly).
type timing struct {
	total float64
	gone  float64 // t2-t0 in µs: the death until the process finished exiting; 0 if not seen
	split string
}

// trial runs one job and returns its timing and who declared the death.
func trial(exe, mode string, busy bool) (timing, string, error) {
	var outs, errs [2]bytes.Buffer
	args := []string{"-mode", mode}
	if busy {
		args = append(args, "-busy")
	}
	job, err := launch.Start(launch.Config{N: 2, Path: exe, Args: args, Bind: busy,
		Output: func(r int) (io.Writer, io.Writer) { return &outs[r], &errs[r] }})
	if err != nil {
		return timing{}, "", err
	}
	exits, ok := job.WaitTimeout(trialTimeout)
	if !ok {
		// Say where each rank is before killing them: that is the bug.
		var where []string
		for _, f := range job.Fates() {
			where = append(where, f.String())
		}
		job.Kill()
		exits = job.Wait()
		return timing{}, "", fmt.Errorf("timed out after %v; %s; %s", trialTimeout, strings.Join(where, "; "), describe(exits, &outs, &errs))
	}
	x0, x1 := exits[0], exits[1]
	if x0.Abnormal() {
		return timing{}, "", fmt.Errorf("rank 0 %s; %s", x0.How(), describe(exits, &outs, &errs))
	}
	wantSig, wantCode := syscall.SIGKILL, -1
	if mode == "exit" {
		wantSig, wantCode = 0, 3
	}
	if !x1.Failed() || x1.Sig != wantSig || x1.Code != wantCode {
		return timing{}, "", fmt.Errorf("rank 1 %s (fate %s), want it to die by %s; %s", x1.How(), x1.Fate.State, mode, describe(exits, &outs, &errs))
	}
	t0, err0 := stamp(outs[1].String(), "t0=")
	t1, err1 := stamp(outs[0].String(), "t1=")
	if err0 != nil || err1 != nil {
		return timing{}, "", fmt.Errorf("no timestamps: %v, %v; %s", err0, err1, describe(exits, &outs, &errs))
	}
	if t1 < t0 {
		// Rank 0 got the error before rank 1 died: a false detection.
		return timing{}, "", fmt.Errorf("rank 0 got ErrProcFailed %d ns before rank 1 died; %s", t0-t1, describe(exits, &outs, &errs))
	}
	cause := x1.Fate.Cause
	switch {
	case cause == "robust-futex" || cause == "robust-futex-direct":
		cause = fmt.Sprintf("%s(rank %d)", cause, x1.Fate.Detector)
	case cause == "exit" && x1.Fate.Detector == -1:
		cause = "exit(launcher)"
	case cause == "":
		cause = "none"
	}
	d := timing{total: float64(t1-t0) / 1e3}
	if t2, err := stamp(outs[0].String(), "t2="); err == nil && t2 > t0 {
		d.gone = float64(t2-t0) / 1e3
	}
	w0, err0 := stamp(outs[1].String(), "w0=")
	w1, err1 := stamp(outs[0].String(), "w1=")
	if at := x1.Fate.FailedAt.UnixNano(); err0 == nil && err1 == nil && !x1.Fate.FailedAt.IsZero() {
		d.split = fmt.Sprintf("death→declared %.1f us, declared→error %.1f us", float64(at-w0)/1e3, float64(w1-at)/1e3)
	}
	return d, cause, nil
}

// describe sums up a job's exits and outputs for an error message.
func describe(exits []launch.Exit, outs, errs *[2]bytes.Buffer) string {
	var b strings.Builder
	for r, x := range exits {
		fmt.Fprintf(&b, "rank %d: %s, fate %s/%s by %d, stdout %q, stderr %q; ", r, x.How(), x.Fate.State, x.Fate.Cause,
			x.Fate.Detector, outs[r].String(), errs[r].String())
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// stamp finds key followed by a decimal number in out.
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

// monotonic reads CLOCK_MONOTONIC directly: it is one clock for every
// process of the machine, so the two ranks' readings compare.
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// rank is the rank side of a trial.
func rank(mode string, busy bool) {
	if mode != "sigkill" && mode != "exit" {
		fmt.Fprintf(os.Stderr, "rank: bad -mode %q\n", mode)
		os.Exit(2)
	}
	w, err := ranks.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Init:", err)
		os.Exit(1)
	}
	c := w.Comm()
	switch c.Rank() {
	case 0:
		if err := ranks.Send(c, []byte{1}, 1, tagReady); err != nil {
			fmt.Fprintln(os.Stderr, "rank 0: Send ready:", err)
			os.Exit(1)
		}
		var err error
		if busy {
			// Receive rank 1's stream until it fails: the last
			// receive spins when rank 1 dies (AnySource: no direct
			// liveness word), so only the liveness watcher, sharing
			// this rank's CPU, or the launcher can declare the death.
			for err == nil {
				_, err = ranks.Recv(c, make([]byte, 8), ranks.AnySource, tagStream)
			}
		} else {
			_, err = ranks.Recv(c, make([]byte, 1), 1, tagNever)
		}
		t1 := monotonic() // first thing: the error is what is timed
		w1 := time.Now().UnixNano()
		if !errors.Is(err, ranks.ErrProcFailed) {
			fmt.Fprintf(os.Stderr, "rank 0: Recv from rank 1 returned %v, want ErrProcFailed\n", err)
			os.Exit(1)
		}
		fmt.Printf("t1=%d w1=%d\n", t1, w1)
		// Then wait for rank 1's process to finish exiting (its pidfd
		// becomes readable once the kernel has torn it down): the CPU it
		// ran on is busy in the kernel until then.
		if t2, ok := exited(w, 1); ok {
			fmt.Printf("t2=%d\n", t2)
		}
		if err := w.Finalize(); err != nil {
			fmt.Fprintln(os.Stderr, "rank 0: Finalize:", err)
			os.Exit(1)
		}
	case 1:
		if _, err := ranks.Recv(c, make([]byte, 1), 0, tagReady); err != nil {
			fmt.Fprintln(os.Stderr, "rank 1: Recv ready:", err)
			os.Exit(1)
		}
		if busy {
			// Keep rank 0 receiving for 3 ms.
			for start := time.Now(); time.Since(start) < 3*time.Millisecond; {
				if err := ranks.Send(c, make([]byte, 8), 0, tagStream); err != nil {
					fmt.Fprintln(os.Stderr, "rank 1: Send:", err)
					os.Exit(1)
				}
			}
		} else {
			time.Sleep(3 * time.Millisecond) // let rank 0 stop spinning and fall asleep in Recv
		}
		t0 := monotonic()
		w0 := time.Now().UnixNano()
		os.Stdout.WriteString("t0=" + strconv.FormatInt(t0, 10) + " w0=" + strconv.FormatInt(w0, 10) + "\n") // one write(2)
		if mode == "exit" {
			os.Exit(3) // without Finalize: a failure
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // not reached
	}
}

// exited waits until world rank r's process has finished exiting and
// returns CLOCK_MONOTONIC then; false if that cannot be watched (the
// process was already reaped, or no pid is known).
func exited(w *ranks.World, r int) (int64, bool) {
	pid := 0
	for _, f := range w.Fates() {
		if f.Rank == r {
			pid = f.Pid
		}
	}
	if pid <= 0 {
		return 0, false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(trialTimeout/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0, false
		}
		return monotonic(), true
	}
}

// pct is the p-th percentile of sorted (nearest rank, rounding down).
func pct(sorted []float64, p int) float64 {
	return sorted[(len(sorted)-1)*p/100]
}
