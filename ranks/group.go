package ranks

import "slices"

// Group is an ordered set of processes (MPI_Group), named by their world
// ranks. Groups are local objects: every operation on them is local and
// none of them communicates. The zero Group is the empty group.
type Group struct {
	world []int // world rank of each member, in group order
	me    int   // this process's world rank
}

// Results of Compare (groups and communicators).
const (
	Ident     = 0 // same members in the same order (communicators: the same object)
	Congruent = 1 // communicators only: same group in the same order, another context
	Similar   = 2 // same members, another order
	Unequal   = 3
)

// EmptyGroup is the group without members (MPI_GROUP_EMPTY).
var EmptyGroup = Group{me: -1}

// Group returns the group of c (of an intercommunicator: the local
// group; RemoteGroup is the other).
func (c *Comm) Group() (Group, error) {
	if c == nil {
		return Group{}, nilComm("Group")
	}
	c.e.lock()
	defer c.e.unlock()
	if err := c.usable("Group"); err != nil {
		return Group{}, err
	}
	return Group{world: c.localGroup(), me: c.e.me}, nil
}

// Size is the number of members.
func (g Group) Size() int { return len(g.world) }

// Rank is this process's rank in g, or Undefined if it is not a member.
func (g Group) Rank() int {
	if i := slices.Index(g.world, g.me); i >= 0 {
		return i
	}
	return Undefined
}

// WorldRanks returns the members' world ranks, in group order.
func (g Group) WorldRanks() []int { return slices.Clone(g.world) }

func (g Group) member(w int) int { return slices.Index(g.world, w) }

// TranslateRanks maps ranks of g to ranks of h: Undefined for a process
// that is not in h, ProcNull for ProcNull.
func (g Group) TranslateRanks(ranks []int, h Group) ([]int, error) {
	out := make([]int, len(ranks))
	for i, r := range ranks {
		switch {
		case r == ProcNull:
			out[i] = ProcNull
		case r < 0 || r >= len(g.world):
			return nil, newErr(ErrRank, "TranslateRanks", -1, "rank %d in a group of %d", r, len(g.world))
		default:
			out[i] = h.member(g.world[r])
			if out[i] < 0 {
				out[i] = Undefined
			}
		}
	}
	return out, nil
}

// Compare says whether g and h are Ident, Similar or Unequal.
func (g Group) Compare(h Group) int {
	switch {
	case slices.Equal(g.world, h.world):
		return Ident
	case len(g.world) == len(h.world) && g.Difference(h).Size() == 0:
		return Similar
	}
	return Unequal
}

func (g Group) with(world []int) Group { return Group{world: world, me: g.me} }

// Union is g's members, then h's members not in g.
func (g Group) Union(h Group) Group {
	w := slices.Clone(g.world)
	for _, x := range h.world {
		if g.member(x) < 0 {
			w = append(w, x)
		}
	}
	return g.join(h, w)
}

// Intersection is g's members that are in h, in g's order.
func (g Group) Intersection(h Group) Group {
	var w []int
	for _, x := range g.world {
		if h.member(x) >= 0 {
			w = append(w, x)
		}
	}
	return g.join(h, w)
}

// Difference is g's members that are not in h, in g's order.
func (g Group) Difference(h Group) Group {
	var w []int
	for _, x := range g.world {
		if h.member(x) < 0 {
			w = append(w, x)
		}
	}
	return g.join(h, w)
}

// join keeps the calling process's world rank from whichever operand
// knows it (the empty group does not).
func (g Group) join(h Group, w []int) Group {
	me := g.me
	if me < 0 {
		me = h.me
	}
	return Group{world: w, me: me}
}

// checkRanks validates distinct ranks of g.
func (g Group) checkRanks(ranks []int, op string) error {
	seen := make([]bool, len(g.world))
	for _, r := range ranks {
		if r < 0 || r >= len(g.world) {
			return newErr(ErrRank, op, -1, "rank %d in a group of %d", r, len(g.world))
		}
		if seen[r] {
			return newErr(ErrRank, op, -1, "rank %d given twice", r)
		}
		seen[r] = true
	}
	return nil
}

// Incl is the group of g's ranks listed, in that order.
func (g Group) Incl(ranks []int) (Group, error) {
	if err := g.checkRanks(ranks, "Incl"); err != nil {
		return Group{}, err
	}
	w := make([]int, len(ranks))
	for i, r := range ranks {
		w[i] = g.world[r]
	}
	return g.with(w), nil
}

// Excl is g without the ranks listed, in g's order.
func (g Group) Excl(ranks []int) (Group, error) {
	if err := g.checkRanks(ranks, "Excl"); err != nil {
		return Group{}, err
	}
	drop := make([]bool, len(g.world))
	for _, r := range ranks {
		drop[r] = true
	}
	var w []int
	for i, x := range g.world {
		if !drop[i] {
			w = append(w, x)
		}
	}
	return g.with(w), nil
}

// Range is a triplet of MPI_Group_range_incl: First, First+Stride, ...
// up to Last (inclusive; Stride may be negative, never zero).
type Range struct{ First, Last, Stride int }

func (g Group) expand(rs []Range, op string) ([]int, error) {
	var out []int
	for _, r := range rs {
		if r.Stride == 0 {
			return nil, newErr(ErrArg, op, -1, "range %+v has stride 0", r)
		}
		if (r.Stride > 0 && r.First > r.Last) || (r.Stride < 0 && r.First < r.Last) {
			return nil, newErr(ErrArg, op, -1, "range %+v is empty in the wrong direction", r)
		}
		for x := r.First; (r.Stride > 0 && x <= r.Last) || (r.Stride < 0 && x >= r.Last); x += r.Stride {
			if len(out) > len(g.world) {
				break // repeated ranks; checkRanks reports it
			}
			out = append(out, x)
		}
	}
	return out, g.checkRanks(out, op)
}

// RangeIncl is Incl of the ranks the ranges list.
func (g Group) RangeIncl(rs []Range) (Group, error) {
	ranks, err := g.expand(rs, "RangeIncl")
	if err != nil {
		return Group{}, err
	}
	return g.Incl(ranks)
}

// RangeExcl is Excl of the ranks the ranges list.
func (g Group) RangeExcl(rs []Range) (Group, error) {
	ranks, err := g.expand(rs, "RangeExcl")
	if err != nil {
		return Group{}, err
	}
	return g.Excl(ranks)
}
