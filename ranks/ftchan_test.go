package ranks_test

import (
	"slices"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// Shrink by messages (as across nodes, ext.AgreeByMessages) when the
// node's slot allocator, rank 0, dies after it sent the slot to one
// member only (the highest): the next member allocates again, the node's
// members then hold two slots, and Shrink starts over. Every survivor
// gets the same group, which works, and holds no slot but the new
// communicator's more than before (the highest also held the second
// allocator's slot, which it never heard of).
func TestShrinkByMessagesAllocatorDies(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 5, Dies: []int{0}, Quiet: true}, func(r *ranktest.R) {
		ext.AgreeByMessages = true
		if r.Rank == 0 {
			ranks.DieAtStage("slot sent")
		}
		held := r.World.HeldContexts()
		// Every member counts before the allocator gives it a slot.
		r.Check(coll.Barrier(r.Comm), "barrier")
		nc, err := ulfm.Shrink(r.Comm)
		r.Check(err, "shrink")
		if r.Rank == 0 {
			r.Kill() // it was not the allocator: die anyway
		}
		g, _ := nc.Group()
		if w := g.WorldRanks(); !slices.Equal(w, []int{1, 2, 3, 4}) {
			r.Fatalf("shrink gave %v", w)
		}
		sum := []int{r.Rank}
		r.Check(coll.Allreduce(nc, nil, sum, coll.Sum), "allreduce on the result")
		if sum[0] != 10 {
			r.Errorf("allreduce on the result: %d, want 10", sum[0])
		}
		if h := r.World.HeldContexts(); h != held+1 {
			r.Errorf("holds %d context slots after Shrink, %d before", h, held)
		}
	})
}
