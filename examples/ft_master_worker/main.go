// Command ft_master_worker is the spec's Example 15.4, a master that
// survives the failure of its workers, in a program that checks its own
// answer:
//
//	shmrun --ft -n 8 ./ft_master_worker
//	SHMPI_KILL=3@op=40 shmrun --ft -n 8 ./ft_master_worker
//
// Rank 0, the master, counts the primes below limit by handing out
// intervals of it to the other ranks, the workers, one at a time. It
// receives their answers with a nonblocking AnySource receive. When the
// receive reports a failure (ErrProcFailed, or ErrProcFailedPending for
// a receive still pending), the master acknowledges the failures
// (FailureAck), finds which workers died (FailureGetAcked), puts the
// intervals they held back in the queue and hands them to the workers
// still alive; the pending receive goes on without being posted again,
// as in the spec. The count is the same whoever dies; the master checks
// it against a sieve and prints it.
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/shmpi/shmpi/ranks"
)

const (
	limit = 2_000_000
	// numbers per work item: 1000 items, so that a worker the
	// scheduler starves on a loaded 2-vCPU machine (an eighth of the
	// items or less, seen down to 7%) still makes the 75 runtime calls
	// the test's latest kill point needs.
	interval = 2000
	nitems   = limit / interval

	tagWork   = 1 // master → worker: an item
	tagStop   = 2 // master → worker: no more work
	tagResult = 3 // worker → master: item, count
)

// work is the count of primes in item i's interval.
func work(i int64) int64 {
	var n int64
	for x := i * interval; x < (i+1)*interval; x++ {
		if isPrime(x) {
			n++
		}
	}
	return n
}

func isPrime(x int64) bool {
	if x < 2 {
		return false
	}
	if x%2 == 0 {
		return x == 2
	}
	for d := int64(3); d*d <= x; d += 2 {
		if x%d == 0 {
			return false
		}
	}
	return true
}

// expected counts the primes below limit with a sieve.
func expected() int64 {
	composite := make([]bool, limit)
	var n int64
	for x := 2; x < limit; x++ {
		if composite[x] {
			continue
		}
		n++
		for y := x * x; y < limit; y += x {
			composite[y] = true
		}
	}
	return n
}

// Result is the master's account of the job.
type Result struct {
	Primes   int64 // the count
	Lost     []int // workers that failed
	Reissued int   // items handed out again
	ByMaster int   // items the master did itself, for want of workers
}

// run is the program: the master at rank 0, a worker elsewhere. Only the
// master's result means something.
func run(w *ranks.World) (Result, error) {
	comm := w.Comm()
	if comm.Rank() == 0 {
		return master(comm)
	}
	return Result{}, worker(comm)
}

// master is Example 15.4's master.
func master(comm *ranks.Comm) (Result, error) {
	var res Result
	size := comm.Size()
	queue := make([]int64, nitems) // items not handed out yet
	for i := range queue {
		queue[i] = int64(i)
	}
	held := make([]int64, size) // the item each worker holds, or -1
	dead := make([]bool, size)  // workers known to have failed
	for q := range held {
		held[q] = -1
	}
	results := make([]int64, nitems)
	have := make([]bool, nitems)
	done := 0
	activeWorkers := size - 1

	// dispatch hands queued items to the idle live workers. A worker
	// whose send fails is dead: its item goes back in the queue, and the
	// pending receive will report the failure.
	dispatch := func() error {
		for q := 1; q < size && len(queue) > 0; q++ {
			if dead[q] || held[q] >= 0 {
				continue
			}
			it := queue[0]
			if err := ranks.Send(comm, []int64{it}, q, tagWork); err != nil {
				if !errors.Is(err, ranks.ErrProcFailed) {
					return err
				}
				dead[q] = true
				continue
			}
			queue = queue[1:]
			held[q] = it
		}
		return nil
	}

	// Submit the initial work requests.
	if err := dispatch(); err != nil {
		return res, err
	}
	// Progress engine: get answers, send new requests, and handle
	// process failures.
	buf := make([]int64, 2)
	req, err := ranks.Irecv(comm, buf, ranks.AnySource, tagResult)
	if err != nil {
		return res, err
	}
	for activeWorkers > 0 && done < nitems {
		st, err := req.Wait()
		if err == nil {
			// Process the answer. It may come from a worker that has
			// died since it sent it, for an item already handed out
			// again: the first answer for an item counts.
			it := buf[0]
			if !have[it] {
				have[it], results[it] = true, buf[1]
				done++
			}
			if held[st.Source] == it {
				held[st.Source] = -1
			}
			if err := dispatch(); err != nil {
				return res, err
			}
		} else {
			pending := errors.Is(err, ranks.ErrProcFailedPending)
			if !pending && !errors.Is(err, ranks.ErrProcFailed) {
				return res, err
			}
			if err := comm.FailureAck(); err != nil {
				return res, err
			}
			g, err := comm.FailureGetAcked()
			if err != nil {
				return res, err
			}
			// Find the lost work and requeue it.
			for _, q := range g {
				dead[q] = true
				if held[q] >= 0 {
					if !have[held[q]] {
						queue = append(queue, held[q])
						res.Reissued++
					}
					held[q] = -1
				}
				if !slices.Contains(res.Lost, q) {
					res.Lost = append(res.Lost, q)
				}
			}
			activeWorkers = size - len(g) - 1
			if err := dispatch(); err != nil {
				return res, err
			}
			// No need to post the receive again: it is still pending.
			if pending {
				continue
			}
		}
		// Get ready to receive more notifications from workers.
		req, err = ranks.Irecv(comm, buf, ranks.AnySource, tagResult)
		if err != nil {
			return res, err
		}
	}
	// Cancel the request and clean up.
	if err := req.Cancel(); err != nil {
		return res, err
	}
	if _, err := req.Wait(); err != nil && !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrProcFailedPending) {
		return res, err
	}
	for q := 1; q < size; q++ {
		if !dead[q] {
			// A worker that died unnoticed cannot take it; no matter.
			if err := ranks.Send(comm, []int64{-1}, q, tagStop); err != nil && !errors.Is(err, ranks.ErrProcFailed) {
				return res, err
			}
		}
	}
	// If every worker died, the master does what is left itself.
	for it := range int64(nitems) {
		if !have[it] {
			results[it] = work(it)
			have[it] = true
			res.ByMaster++
		}
	}
	for _, v := range results {
		res.Primes += v
	}
	slices.Sort(res.Lost)
	return res, nil
}

// worker does the items the master sends until told to stop.
func worker(comm *ranks.Comm) error {
	buf := make([]int64, 1)
	for {
		st, err := ranks.Recv(comm, buf, 0, ranks.AnyTag)
		if err != nil {
			return err
		}
		if st.Tag == tagStop {
			return nil
		}
		it := buf[0]
		if err := ranks.Send(comm, []int64{it, work(it)}, 0, tagResult); err != nil {
			return err
		}
	}
}

func main() {
	w, err := ranks.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_master_worker: %v\n", err)
		os.Exit(1)
	}
	res, err := run(w)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_master_worker: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	good := true
	if w.Rank() == 0 {
		want := expected()
		good = res.Primes == want
		status := "ok"
		if !good {
			status = "WRONG"
		}
		fmt.Printf("ft_master_worker: primes below %d in %d items on %d workers (lost %v, %d items reissued, %d done by the master): %d, expected %d: %s\n",
			limit, nitems, w.Size()-1, res.Lost, res.Reissued, res.ByMaster, res.Primes, want, status)
	}
	w.Finalize()
	if !good {
		os.Exit(1)
	}
}
