// Command ulfm_agree measures the latency of ulfm.Agree, beside
// coll.Barrier on the same communicator, failure-free and after an
// acknowledged failure.
//
// Failure-free, as a job of shmrun (any N, including 1):
//
//	shmrun -n 8 ./ulfm_agree [-i 500] [-x 50]
//
// Each iteration is an untimed Barrier, a timed Agree, an untimed Barrier
// and a timed Barrier, so that both calls start from the same state and
// share whatever the machine does meanwhile. Every member's flag is all
// ones but one bit that depends on its rank and the iteration; each
// member checks that Agree returned the AND of them all and no error.
//
// After a failure, run directly (not under shmrun), like fail_detect:
//
//	./ulfm_agree -failed -n 8 [-i 500] [-x 50]
//
// It starts a job of N ranks of its own executable (package launch).
// Rank N-1 SIGKILLs itself after a first Barrier; the survivors' next
// Barrier on the world returns ErrProcFailed, they acknowledge the
// failure (Comm.FailureAck), shrink the world once to get a communicator
// of the survivors, and then time Agree on the world, which still has
// the dead member (each member checks that it returns the AND of the
// survivors' flags and no error, since every contributor acknowledged
// the failure). The reference is Barrier on the survivors' communicator
// (a Barrier on the world would fail at once), with the same interleaving;
// the untimed Barriers are on it too. The table's ranks column is N, the
// world's size, dead member included.
//
// The figure of one call is the time of the slowest rank (the largest of
// the members' own entry-to-return times); the table has the median and
// the 90th percentile of that over the -i calls, after -x warm-up
// iterations, in microseconds, and the ratio of the medians
// Agree/Barrier. Its last two columns are the statistic of the Open MPI
// figures in PLATFORM.md, for comparing with them: each member's mean
// over the calls, the largest over members (avg_slow_us for Agree,
// barrier_avg_us for Barrier). A row per run, on rank 0.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/ulfm"
)

var (
	iters   = flag.Int("i", 500, "timed iterations (an Agree and a Barrier each)")
	skip    = flag.Int("x", 50, "warm-up iterations")
	failed  = flag.Bool("failed", false, "measure after an acknowledged failure (run directly: it starts its own job)")
	nranks  = flag.Int("n", 2, "with -failed: ranks of the job it starts (rank n-1 dies)")
	timeout = flag.Duration("timeout", 5*time.Minute, "with -failed: the job's deadline")
	role    = flag.String("role", "", "(set by the -failed driver) the rank side of the failure run")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *iters < 1 || *skip < 0 {
		log.Fatal("ulfm_agree: -i must be at least 1 and -x at least 0")
	}
	switch {
	case *role == "failed":
		rankFailed()
	case *role != "":
		log.Fatalf("ulfm_agree: unknown -role %q", *role)
	case *failed && launch.IsRank():
		fmt.Fprintln(os.Stderr, "ulfm_agree -failed starts its own job; run it directly, not under shmrun: ./ulfm_agree -failed -n 8")
		os.Exit(2)
	case *failed:
		driver()
	default:
		healthy()
	}
}

// flagFor is member r's flag in iteration i: all ones but one bit.
func flagFor(r, i int) int { return ^(1 << ((r + i) % 62)) }

// expectFor is the AND of flagFor over members.
func expectFor(members []int, i int) int {
	v := -1
	for _, r := range members {
		v &= flagFor(r, i)
	}
	return v
}

// healthy is the failure-free measurement, on the world.
func healthy() {
	w, err := ranks.Init()
	must(err)
	c := w.Comm()
	me, np := c.Rank(), c.Size()
	all := make([]int, np)
	for r := range all {
		all[r] = r
	}
	agree, barrier := loop(c, c, all, me)
	report(c, np, agree, barrier,
		"# ulfm_agree: ulfm.Agree, failure-free, beside coll.Barrier on the same communicator (interleaved; each call after an untimed Barrier)")
	must(w.Finalize())
}

// loop times Agree on c and Barrier on sync (c itself, or the survivors'
// communicator), each after an untimed Barrier on sync; members are the
// ranks of c whose flags count and me is this rank in c. It returns this
// rank's times of the timed iterations, in µs.
func loop(c, sync *ranks.Comm, members []int, me int) (agree, barrier []float64) {
	agree = make([]float64, *iters)
	barrier = make([]float64, *iters)
	must(coll.Barrier(sync))
	for i := range *iters + *skip {
		must(coll.Barrier(sync))
		t := time.Now()
		v, err := ulfm.Agree(c, flagFor(me, i))
		da := time.Since(t)
		if err != nil {
			log.Fatalf("rank %d: Agree, iteration %d: %v", me, i, err)
		}
		if want := expectFor(members, i); v != want {
			log.Fatalf("rank %d: Agree, iteration %d: %#x, want %#x", me, i, uint64(v), uint64(want))
		}
		must(coll.Barrier(sync))
		t = time.Now()
		err = coll.Barrier(sync)
		db := time.Since(t)
		must(err)
		if i >= *skip {
			agree[i-*skip] = us(da)
			barrier[i-*skip] = us(db)
		}
	}
	must(coll.Barrier(sync))
	return agree, barrier
}

// report gathers every member's times at rank 0 of c and prints the row:
// per call the slowest member's time, then median and p90 over calls.
func report(c *ranks.Comm, n int, agree, barrier []float64, title string) {
	mine := append(slices.Clone(agree), barrier...)
	var all []float64
	if c.Rank() == 0 {
		all = make([]float64, len(mine)*c.Size())
	}
	must(coll.Gather(c, mine, all, 0))
	if c.Rank() != 0 {
		return
	}
	a, b := slowest(all, c.Size(), *iters, 0), slowest(all, c.Size(), *iters, 1)
	fmt.Println(title)
	fmt.Printf("# %d calls of each after %d warm-up; per call the slowest rank's time; median and p90 over the calls, µs; ratio = agree/barrier medians\n", *iters, *skip)
	fmt.Printf("# %-5s %10s %10s %18s %15s %8s %12s %14s\n", "ranks", "median_us", "p90_us", "barrier_median_us", "barrier_p90_us", "ratio", "avg_slow_us", "barrier_avg_us")
	ma, mb := pct(a, 50), pct(b, 50)
	fmt.Printf("%-7d %10.2f %10.2f %18.2f %15.2f %8.2f %12.2f %14.2f\n", n, ma, pct(a, 90), mb, pct(b, 90), ma/mb,
		slowestMean(all, c.Size(), *iters, 0), slowestMean(all, c.Size(), *iters, 1))
}

// slowestMean is the largest over members of a member's mean time of
// series s: the statistic of PLATFORM.md's Open MPI figures ("the slowest
// rank's average"), gentler than the per-call maximum when ranks outnumber
// cores, since a different rank is late in each call.
func slowestMean(all []float64, members, iters, s int) float64 {
	per := len(all) / members
	worst := 0.0
	for r := range members {
		sum := 0.0
		for i := range iters {
			sum += all[r*per+s*iters+i]
		}
		worst = max(worst, sum/float64(iters))
	}
	return worst
}

// slowest takes gathered per-member arrays of k series of iters values
// each and returns, for series s, the largest value over members of each
// iteration, sorted.
func slowest(all []float64, members, iters, s int) []float64 {
	out := make([]float64, iters)
	per := len(all) / members
	for r := range members {
		for i := range iters {
			out[i] = max(out[i], all[r*per+s*iters+i])
		}
	}
	slices.Sort(out)
	return out
}

// rankFailed is a rank of the job the -failed driver starts.
func rankFailed() {
	w, err := ranks.Init()
	must(err)
	c := w.Comm()
	me, np := c.Rank(), c.Size()
	victim := np - 1
	must(coll.Barrier(c))
	if me == victim {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		for {
			time.Sleep(time.Second) // not reached
		}
	}
	err = coll.Barrier(c)
	if !errors.Is(err, ranks.ErrProcFailed) {
		log.Fatalf("rank %d: Barrier after rank %d's death returned %v, want ErrProcFailed", me, victim, err)
	}
	must(c.FailureAck())
	if f, _ := c.FailureGetAcked(); !slices.Equal(f, []int{victim}) {
		log.Fatalf("rank %d: acknowledged failures %v, want [%d]", me, f, victim)
	}
	s, err := ulfm.Shrink(c)
	must(err)
	if s.Size() != np-1 || s.Rank() != me {
		log.Fatalf("rank %d: shrunk world has size %d and rank %d, want %d and %d", me, s.Size(), s.Rank(), np-1, me)
	}
	survivors := make([]int, np-1)
	for r := range survivors {
		survivors[r] = r
	}
	agree, barrier := loop(c, s, survivors, me)
	report(s, np, agree, barrier,
		fmt.Sprintf("# ulfm_agree -failed: ulfm.Agree on a world of %d whose rank %d died (SIGKILL) and is acknowledged, beside coll.Barrier on the %d survivors' communicator (interleaved; each call after an untimed Barrier)", np, victim, np-1))
	must(s.Free())
	must(w.Finalize())
}

// driver starts the failure job and checks how it ended.
func driver() {
	n := *nranks
	if n < 2 {
		fmt.Printf("# ulfm_agree -failed: needs at least 2 ranks (one dies, one survives); nothing measured at %d\n", n)
		fmt.Printf("# %-5s %10s %10s %18s %15s %8s\n", "ranks", "median_us", "p90_us", "barrier_median_us", "barrier_p90_us", "ratio")
		fmt.Printf("%-7d %10s %10s %18s %15s %8s\n", n, "-", "-", "-", "-", "-")
		return
	}
	exe, err := os.Executable()
	must(err)
	outs := make([]bytes.Buffer, n)
	errs := make([]bytes.Buffer, n)
	job, err := launch.Start(launch.Config{N: n, Path: exe,
		Args: []string{"-role", "failed", "-i", strconv.Itoa(*iters), "-x", strconv.Itoa(*skip)},
		Bind: n <= runtime.NumCPU(),
		Output: func(r int) (io.Writer, io.Writer) {
			return &outs[r], &errs[r]
		}})
	must(err)
	exits, ok := job.WaitTimeout(*timeout)
	if !ok {
		var where []string
		for _, f := range job.Fates() {
			where = append(where, f.String())
		}
		job.Kill()
		exits = job.Wait()
		log.Fatalf("ulfm_agree -failed -n %d: timed out after %v; %s; %s", n, *timeout, strings.Join(where, "; "), describe(exits, outs, errs))
	}
	for r, x := range exits {
		if r == n-1 {
			if !x.Failed() || x.Sig != syscall.SIGKILL {
				log.Fatalf("ulfm_agree -failed -n %d: rank %d %s, want it killed by SIGKILL; %s", n, r, x.How(), describe(exits, outs, errs))
			}
		} else if x.Abnormal() {
			log.Fatalf("ulfm_agree -failed -n %d: rank %d %s; %s", n, r, x.How(), describe(exits, outs, errs))
		}
	}
	os.Stdout.Write(outs[0].Bytes())
}

// describe sums up a job's exits and outputs for an error message.
func describe(exits []launch.Exit, outs, errs []bytes.Buffer) string {
	var b strings.Builder
	for r, x := range exits {
		fmt.Fprintf(&b, "rank %d: %s, fate %s/%s by %d, stdout %q, stderr %q; ", r, x.How(), x.Fate.State, x.Fate.Cause,
			x.Fate.Detector, outs[r].String(), errs[r].String())
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// pct is the p-th percentile of sorted (nearest rank, rounding down, as
// fail_detect).
func pct(sorted []float64, p int) float64 { return sorted[(len(sorted)-1)*p/100] }

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
