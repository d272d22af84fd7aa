package node

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// aff is the map x -> a*x + b (mod matP): 16 bytes, and composing two
// does not commute, so a result shows the order of the ranks.
type aff [2]int64

func affOf(r, it int) aff { return aff{int64(r + 2), int64(it%7 + r)} }

// then is f followed by g: x -> g(f(x)).
func (f aff) then(g aff) aff { return aff{f[0] * g[0] % matP, (g[0]*f[1] + g[1]) % matP} }

var affThen = coll.Op[aff](func(inout, in []aff) {
	for i := range inout {
		inout[i] = inout[i].then(in[i])
	}
})

// Small Allreduces and Barriers across nodes whose ranks outnumber their
// core, so that they sleep: from a communicator's fifth collective, the
// node-local phases are coll's hier.held (every member counts itself in,
// the leader crosses the nodes, one wake releases the node). Every round
// checks a sum, a composition that does not commute and a 24-byte
// maximum (a line's most) against values computed here.
func init() {
	bodies["held"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		for it := range 1000 {
			s := []int64{int64(me + it)}
			if err := coll.Allreduce(c, nil, s, coll.Sum); err != nil {
				return fmt.Errorf("round %d: Allreduce sum: %w", it, err)
			}
			f := []aff{affOf(me, it)}
			if err := coll.Allreduce(c, nil, f, affThen); err != nil {
				return fmt.Errorf("round %d: Allreduce of maps: %w", it, err)
			}
			three := []int64{int64(me), int64(it), int64(n - me)}
			if err := coll.Allreduce(c, nil, three, coll.Max[int64]); err != nil {
				return fmt.Errorf("round %d: Allreduce max: %w", it, err)
			}
			wantSum, wantF := int64(0), affOf(0, it)
			for r := range n {
				wantSum += int64(r + it)
				if r > 0 {
					wantF = wantF.then(affOf(r, it))
				}
			}
			if s[0] != wantSum || f[0] != wantF || !eq3(three, n, it) {
				return fmt.Errorf("round %d: sum %d (want %d), maps %v (want %v), max %v", it, s[0], wantSum, f[0], wantF, three)
			}
			if it%3 == 0 {
				if err := coll.Barrier(c); err != nil {
					return fmt.Errorf("round %d: Barrier: %w", it, err)
				}
			}
		}
		return nil
	}
}

func eq3(v []int64, n, it int) bool {
	return v[0] == int64(n-1) && v[1] == int64(it) && v[2] == int64(n)
}

func TestHeldCollectivesAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{3, 3}, {2, 4, 1}, {5, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "held"}).check(t)
		})
	}
}

// A member dies inside the loop of small collectives whose node-local
// phases are held (nodes of one core): killed by the runtime at its
// op-th entry (SHMPI_KILL), so anywhere in a phase (counting in, asleep
// for the release, the leader's crossing). Every survivor's loop must
// end with ErrProcFailed, none may hang on a member that left, and
// every Allreduce that succeeds must hold every member's contribution
// (the victim's counts if it counted in).
func init() {
	bodies["held-fail"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		want := int64(n * (n - 1) / 2)
		for it := range 400 {
			var err error
			if it%4 == 3 {
				err = coll.Barrier(c)
			} else {
				s := []int64{int64(me)}
				if err = coll.Allreduce(c, nil, s, coll.Sum); err == nil && s[0] != want {
					return fmt.Errorf("round %d: sum %d, want %d", it, s[0], want)
				}
			}
			if errors.Is(err, ranks.ErrProcFailed) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("round %d: %v", it, err)
			}
		}
		return errors.New("every collective succeeded: the victim did not die")
	}
}

func TestHeldCollectivesFailureAcrossNodes(t *testing.T) {
	counts := []int{3, 3, 2}
	// Rank 1: a member of node 0; rank 3: node 1's leader.
	for _, victim := range []int{1, 3} {
		for op := 12; op <= 160; op += 8 {
			t.Run(fmt.Sprintf("kill-%d-at-op-%d", victim, op), func(t *testing.T) {
				env := []string{fmt.Sprintf("SHMPI_KILL=%d@op=%d", victim, op)}
				runNodes(t, nodesOpts{Counts: counts, Body: "held-fail", FT: true, Env: env, Timeout: 30 * time.Second}).check(t, victim)
			})
		}
	}
}
