// Command ft_failed_group_agree is the spec's Example 15.3, a consistent
// group of failed processes obtained with Agree and the acknowledgement
// calls, in a program that checks its own answer:
//
//	shmrun --ft -n 8 ./ft_failed_group_agree
//	SHMPI_KILL=3@op=60 shmrun --ft -n 8 ./ft_failed_group_agree
//
// The program is the one of Example 15.2 (ft_failed_group_shrink) done
// without ever leaving the world communicator: the work of each step is
// cut into a fixed number of shares, each owner keeps its shares' running
// sums, and a step reduces them with point-to-point messages to the
// lowest live rank, which sends the totals back; the step ends with an
// agreement on its success. When a step fails, every survivor calls
// commFailureAllget2, the example's function: acknowledge, agree, and
// again until the agreement succeeds; then every survivor has
// acknowledged the same failures, and FailureGetAcked gives the same
// group everywhere. From it every survivor picks the same live ranks, the
// same root and the same new owners for the failed ranks' shares (which
// rebuild their running sums by replaying the earlier steps). Later
// agreements on the world communicator succeed despite the failed ranks
// in it, since every survivor acknowledged them. Each step also checks
// that every member holds the same failed group. The answer is the sum of
// every share over every step; the lowest surviving rank prints it with
// the failed group.
package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"

	"github.com/shmpi/shmpi/examples/internal/shares"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

// commFailureAllget2 is Example 15.3: the group of the members of c that
// failed, the same at every survivor. It is not pure: FailureAck changes
// the state of c.
func commFailureAllget2(c *ranks.Comm) (ranks.Group, error) {
	for {
		if err := c.FailureAck(); err != nil {
			return ranks.Group{}, err
		}
		// The value is ignored, as in the spec.
		_, err := ulfm.Agree(c, 1)
		if err == nil {
			break
		}
		if !errors.Is(err, ranks.ErrProcFailed) {
			return ranks.Group{}, err
		}
	}
	// Agree returned success everywhere, so every survivor has
	// acknowledged the same set of failures: get it as a group.
	acked, err := c.FailureGetAcked()
	if err != nil {
		return ranks.Group{}, err
	}
	cg, err := c.Group()
	if err != nil {
		return ranks.Group{}, err
	}
	return cg.Incl(acked)
}

// Result is what every survivor computes.
type Result struct {
	StepSum  int64 // the sum of the steps' totals
	Running  int64 // the owners' running sums after the last step
	Live     int   // ranks alive in the end, as far as the program knows
	Failed   []int // world ranks in the consistent failed group
	Retries  int   // steps redone
	Reporter bool  // this rank is the lowest survivor: it prints
}

// run is the program, at every rank.
func run(w *ranks.World) (Result, error) {
	var res Result
	comm := w.Comm()
	n, me := comm.Size(), comm.Rank()
	failed := ranks.EmptyGroup
	live := make([]int, n) // ranks of comm not in failed, increasing
	for i := range live {
		live[i] = i
	}
	owner := make([]int, shares.Shares) // rank of comm owning each share
	for s := range owner {
		owner[s] = s % n
	}
	acc := map[int]int64{} // running sums of the shares this rank owns
	for s, o := range owner {
		if o == me {
			acc[s] = 0
		}
	}
	tag := 0 // one tag per attempt: nothing of an aborted step matches later
	for k := 0; k < shares.Steps; tag++ {
		// This step's value of my shares, my running sums with it, and
		// a fingerprint of my failed group.
		var part [3]int64
		for s := range acc {
			v := shares.Value(k, s)
			part[0] += v
			part[1] += acc[s] + v
		}
		part[2] = fingerprint(failed.WorldRanks())
		out, good, err := reduce(comm, live, part, tag)
		if err != nil {
			return res, fmt.Errorf("step %d: %w", k, err)
		}
		ok, aerr := ulfm.AgreeBool(comm, good)
		if ok && aerr == nil {
			for s := range acc {
				acc[s] += shares.Value(k, s)
			}
			res.StepSum += out[0]
			res.Running = out[1]
			k++
			continue
		}
		if aerr != nil && !errors.Is(aerr, ranks.ErrProcFailed) {
			return res, fmt.Errorf("step %d: agree: %w", k, aerr)
		}
		res.Retries++
		g, err := commFailureAllget2(comm)
		if err != nil {
			return res, fmt.Errorf("step %d: failed group: %w", k, err)
		}
		failed = g
		dead := failed.WorldRanks() // the world is comm: its ranks
		live = live[:0]
		for q := range n {
			if !slices.Contains(dead, q) {
				live = append(live, q)
			}
		}
		// The same failed group everywhere: the same new owners
		// everywhere. A new owner rebuilds a share's running sum.
		j := 0
		for s, o := range owner {
			if slices.Contains(dead, o) {
				owner[s] = live[j%len(live)]
				j++
				if owner[s] == me {
					var a int64
					for p := range k {
						a += shares.Value(p, s)
					}
					acc[s] = a
				}
			}
		}
	}
	res.Live = len(live)
	res.Failed = failed.WorldRanks()
	res.Reporter = me == live[0]
	return res, nil
}

// reduce sums part over the ranks in live at live[0], which sends the sums
// back: out[0] and out[1] are the sums. good says whether this rank saw the
// step succeed; err is an error other than a failure.
func reduce(comm *ranks.Comm, live []int, part [3]int64, tag int) (out [3]int64, good bool, err error) {
	root := live[0]
	if comm.Rank() != root {
		if err := ranks.Send(comm, part[:], root, tag); err != nil {
			return out, false, notFailure(err)
		}
		if _, err := ranks.Recv(comm, out[:], root, tag); err != nil {
			return out, false, notFailure(err)
		}
		return out, out[2] == 1, nil
	}
	good = true
	sum := part
	// Receive from every live rank even after an error, so that no
	// message of this step is left over.
	for _, q := range live[1:] {
		var in [3]int64
		if _, err := ranks.Recv(comm, in[:], q, tag); err != nil {
			if err = notFailure(err); err != nil {
				return out, false, err
			}
			good = false
			continue
		}
		if in[2] != part[2] {
			return out, false, fmt.Errorf("rank %d has another failed group than rank %d", q, root)
		}
		sum[0] += in[0]
		sum[1] += in[1]
	}
	out = [3]int64{sum[0], sum[1], 0}
	if good {
		out[2] = 1
	}
	for _, q := range live[1:] {
		if err := ranks.Send(comm, out[:], q, tag); err != nil {
			if err = notFailure(err); err != nil {
				return out, false, err
			}
			good = false
		}
	}
	return out, good, nil
}

// notFailure is nil for a process failure, and err otherwise.
func notFailure(err error) error {
	if errors.Is(err, ranks.ErrProcFailed) {
		return nil
	}
	return err
}

// fingerprint identifies a set of ranks.
func fingerprint(ranks []int) int64 {
	h := fnv.New64a()
	for _, r := range ranks {
		fmt.Fprintf(h, "%d,", r)
	}
	return int64(h.Sum64() >> 1)
}

func main() {
	w, err := ranks.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_failed_group_agree: %v\n", err)
		os.Exit(1)
	}
	res, err := run(w)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_failed_group_agree: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	want := shares.Expected()
	good := res.StepSum == want && res.Running == want
	if res.Reporter {
		status := "ok"
		if !good {
			status = "WRONG"
		}
		fmt.Printf("ft_failed_group_agree: %d steps of %d shares on %d live ranks (failed group %v, %d steps redone): steps' sum %d, owners' running sums %d, expected %d: %s\n",
			shares.Steps, shares.Shares, res.Live, res.Failed, res.Retries, res.StepSum, res.Running, want, status)
	}
	w.Finalize()
	if !good {
		os.Exit(1)
	}
}
