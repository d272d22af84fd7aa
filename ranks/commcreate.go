package ranks

import (
	"slices"
	"sort"

	"github.com/shmpi/shmpi/internal/job"
)

// Creating communicators: Dup, Split, SplitType, Create, CreateGroup and
// the self communicator.
//
// A new communicator needs a context slot that all its members agree on.
// Its leader (its first member) takes a free slot from the segment
// (job.Map.AllocContext, which marks every member as holding it) and
// sends the slot to the other members over the parent's collective
// context, on tags of ranks' own; they adopt it and answer, and the
// leader returns once every member has (so that a leader looping over
// Dup and Free cannot run ahead of its members and take every slot of the
// job). Split first gathers
// every member's color and key at the parent's rank 0, which sends the
// table back to all. No other agreement is needed: the leader's choice is
// the decision.
//
// Failures. Every step is a point-to-point operation of the parent, so a
// dead leader or member gives ErrProcFailed instead of a hang. A member
// that fails to get its slot because the leader died releases its hold
// on that leader's slots it never adopted; holds of dead ranks are
// released by whoever sees them die; so a slot returns to the pool once
// every member has freed it, died or finalized, and none leaks. The
// result may differ between members (some get the communicator, some an
// error); as in the spec's Example 15.1, a program that must know
// agrees on it afterwards (ulfm.Agree).

// Tags of ranks' own on a communicator's collective context; package
// coll keeps below tagCreateBase.
const (
	tagCreateBase = 1 << 30
	tagCreate     = tagCreateBase     // leader → member: slot, generation
	tagSplitInfo  = tagCreateBase + 1 // member → rank 0: color, key
	tagSplitTable = tagCreateBase + 2 // rank 0 → member: every color and key
	tagCreateUser = tagCreateBase + 8 // + CreateGroup's tag
	tagAck        = 1 << 29           // | the creation's tag: member → leader, adopted
	// MaxCreateTag bounds CreateGroup's tag.
	MaxCreateTag = tagAck - 9
)

// TypeShared is SplitType's kind for "ranks that share memory": every
// rank of a job here.
const TypeShared = 1

// Dup returns a communicator with the same group and topology as c and a
// new context (MPI_Comm_dup). It is collective over c.
func (c *Comm) Dup() (*Comm, error) {
	if c == nil {
		return nil, nilComm("Dup")
	}
	members := make([]int, c.size)
	for i := range members {
		members[i] = i
	}
	nc, err := c.create(members, tagCreate, "Dup")
	if nc != nil {
		nc.topo = c.topo // a duplicate keeps the topology (topo.go)
	}
	return nc, err
}

// Split partitions c by color (MPI_Comm_split): ranks that pass the same
// color form a communicator, ordered by key and then by their rank in c.
// A rank that passes Undefined gets nil. It is collective over c; color
// must be Undefined or non-negative at every rank.
func (c *Comm) Split(color, key int) (*Comm, error) {
	if c == nil {
		return nil, nilComm("Split")
	}
	if color < 0 && color != Undefined {
		return nil, newErr(ErrArg, "Split", -1, "color %d (must be non-negative or Undefined)", color)
	}
	table, err := c.splitTable(color, key)
	if err != nil {
		return nil, err
	}
	if color == Undefined {
		return nil, nil
	}
	var members []int
	for r := range c.size {
		if table[2*r] == int64(color) {
			members = append(members, r)
		}
	}
	sort.SliceStable(members, func(i, j int) bool { return table[2*members[i]+1] < table[2*members[j]+1] })
	return c.create(members, tagCreate, "Split")
}

// SplitType splits c by kind (MPI_Comm_split_type); with TypeShared all
// ranks of a job share memory, so it is a Split with one color. Undefined
// as the kind gives nil.
func (c *Comm) SplitType(kind, key int) (*Comm, error) {
	switch kind {
	case TypeShared:
		return c.Split(0, key)
	case Undefined:
		return c.Split(Undefined, key)
	}
	return nil, newErr(ErrArg, "SplitType", -1, "split type %d", kind)
}

// Create returns a communicator of the members of g, which must be a
// subgroup of c, in g's order (MPI_Comm_create); ranks not in g get nil.
// Only g's members take part, so it is also MPI_Comm_create_group with
// tag 0.
func (c *Comm) Create(g Group) (*Comm, error) { return c.createGroup(g, 0, "Create") }

// CreateGroup is Create called by g's members only (MPI_Comm_create_group);
// concurrent calls on c are told apart by tag (0..MaxCreateTag).
func (c *Comm) CreateGroup(g Group, tag int) (*Comm, error) {
	return c.createGroup(g, tag, "CreateGroup")
}

func (c *Comm) createGroup(g Group, tag int, op string) (*Comm, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	if tag < 0 || tag > MaxCreateTag {
		return nil, newErr(ErrTag, op, -1, "tag %d (0..%d)", tag, MaxCreateTag)
	}
	members := make([]int, len(g.world))
	for i, w := range g.world {
		if w < 0 || w >= len(c.toComm) || c.toComm[w] < 0 {
			return nil, newErr(ErrArg, op, -1, "world rank %d of the group is not in the communicator", w)
		}
		members[i] = int(c.toComm[w])
	}
	if !slices.Contains(members, c.rank) {
		return nil, nil
	}
	return c.create(members, tagCreateUser+tag, op)
}

// create makes the communicator of members (ranks of c, in the new
// order, this rank among them): members[0] allocates the context slot and
// sends it to the others on tag.
func (c *Comm) create(members []int, tag int, op string) (*Comm, error) {
	e := c.e
	e.lock()
	err := c.live(op)
	e.unlock()
	if err != nil {
		return nil, err
	}
	world := make([]int, len(members))
	for i, m := range members {
		world[i] = c.group[m]
	}
	leader := members[0]
	var msg [2]uint32 // slot, generation; generation 0: no slot was free
	if c.rank == leader {
		if slot, gen, ok := e.t.AllocContext(e.me, world); ok {
			msg = [2]uint32{slot, gen}
		}
		testStage(e, "allocated")
		var reqs []*Request
		for _, m := range members[1:] {
			rq, err := Isend(c.coll, msg[:], m, tag)
			if err != nil {
				return nil, c.abandon(msg, err, op)
			}
			reqs = append(reqs, rq)
		}
		if err := WaitAll(reqs, nil); err != nil {
			// A member failed: the live ones have the slot; this rank
			// reports the failure (see the comment at the top).
			return nil, c.abandon(msg, err, op)
		}
		if msg[1] != 0 {
			var ack [1]uint32
			for _, m := range members[1:] {
				if _, err := Recv(c.coll, ack[:], m, tag|tagAck); err != nil {
					return nil, c.abandon(msg, err, op)
				}
			}
		}
	} else {
		_, err := Recv(c.coll, msg[:], leader, tag)
		if err != nil {
			lw := c.group[leader]
			e.lock()
			e.t.ReleaseOrphans(e.me, lw, e.holdsLocally)
			e.unlock()
			return nil, relabel(err, op)
		}
	}
	if msg[1] == 0 {
		return nil, newErr(ErrNoMem, op, -1, "every one of the job's %d context slots is in use", job.MaxContexts)
	}
	e.lock()
	if !e.t.Adoptable(e.me, msg[0], msg[1]) {
		e.unlock()
		return nil, newErr(ErrProcFailed, op, -1, "the communicator's creator failed before this rank adopted it")
	}
	nc := e.newComm(msg[0], msg[1], world, "")
	e.unlock()
	if c.rank != leader {
		if err := Send(c.coll, []uint32{1}, leader, tag|tagAck); err != nil {
			// The leader died after handing out the slot: the
			// communicator is made; its next operations report it.
			_ = err
		}
	}
	return nc, nil
}

// abandon gives up this rank's hold on a slot it allocated but could not
// hand to every member.
func (c *Comm) abandon(msg [2]uint32, err error, op string) error {
	if msg[1] != 0 {
		c.e.lock()
		c.e.t.ReleaseContext(c.e.me, msg[0])
		c.e.unlock()
	}
	return relabel(err, op)
}

// holdsLocally reports whether this rank has a communicator in slot s.
// Called under the engine lock.
func (e *engine) holdsLocally(s uint32) bool { return e.comms[2*s] != nil }

// relabel names op in an error of an internal step.
func relabel(err error, op string) error {
	var src error = err
	if m, ok := err.(multiErr); ok {
		src = m.err
	}
	if e, ok := src.(*Error); ok {
		out := *e
		out.Op = op
		return &out
	}
	return err
}

// splitTable gathers every member's color and key at rank 0 of c, which
// sends the table back: entry 2r is rank r's color, 2r+1 its key. If a
// member failed, rank 0 sends a table whose first entry says so, so that
// no one waits for a table that will not come.
func (c *Comm) splitTable(color, key int) ([]int64, error) {
	const failed = -1 << 62
	mine := []int64{int64(color), int64(key)}
	table := make([]int64, 2*c.size)
	if c.rank != 0 {
		if err := Send(c.coll, mine, 0, tagSplitInfo); err != nil {
			return nil, relabel(err, "Split")
		}
		if _, err := Recv(c.coll, table, 0, tagSplitTable); err != nil {
			return nil, relabel(err, "Split")
		}
		if table[0] == failed {
			return nil, newErr(ErrProcFailed, "Split", -1, "a member failed during the split (rank 0 says)")
		}
		return table, nil
	}
	copy(table, mine)
	var ferr error
	for r := 1; r < c.size; r++ {
		if _, err := Recv(c.coll, table[2*r:2*r+2], r, tagSplitInfo); err != nil && ferr == nil {
			ferr = err
		}
	}
	out := table
	if ferr != nil {
		out = []int64{failed}
		out = append(out, make([]int64, 2*c.size-1)...)
	}
	var reqs []*Request
	for r := 1; r < c.size; r++ {
		if rq, err := Isend(c.coll, out, r, tagSplitTable); err == nil {
			reqs = append(reqs, rq)
		}
	}
	// A member that died after sending its color does not get the table:
	// no reason to fail here, where every live member goes on with it
	// (rank 0 may lead their communicator); the death surfaces in create.
	WaitAll(reqs, nil)
	if ferr != nil {
		return nil, relabel(ferr, "Split")
	}
	return table, nil
}

// Compare says whether c1 and c2 are Ident (the same communicator),
// Congruent (same group and order), Similar (same members) or Unequal.
func Compare(c1, c2 *Comm) (int, error) {
	if c1 == nil || c2 == nil {
		return Unequal, nilComm("Compare")
	}
	if c1 == c2 {
		return Ident, nil
	}
	g1, err := c1.Group()
	if err != nil {
		return Unequal, err
	}
	g2, err := c2.Group()
	if err != nil {
		return Unequal, err
	}
	switch g1.Compare(g2) {
	case Ident:
		return Congruent, nil
	case Similar:
		return Similar, nil
	}
	return Unequal, nil
}

// Self is the communicator of this process alone (MPI_COMM_SELF),
// created at its first use. It cannot be freed.
func (w *World) Self() (*Comm, error) {
	e := w.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return nil, newErr(ErrFinalized, "Self", -1, "")
	}
	if w.self == nil {
		slot, gen, ok := e.t.AllocContext(e.me, []int{e.me})
		if !ok {
			return nil, newErr(ErrNoMem, "Self", -1, "every one of the job's %d context slots is in use", job.MaxContexts)
		}
		w.self = e.newComm(slot, gen, []int{e.me}, "MPI_COMM_SELF")
		w.self.permanent = true
	}
	return w.self, nil
}

// SetName names c (MPI_Comm_set_name); error messages use the name.
func (c *Comm) SetName(name string) error {
	if c == nil {
		return nilComm("SetName")
	}
	c.e.lock()
	defer c.e.unlock()
	if err := c.usable("SetName"); err != nil {
		return err
	}
	c.name = name
	return nil
}

// Attributes (MPI_Comm_set_attr and friends): values a program attaches
// to a communicator under keys from NewKeyval. Dup does not copy them
// (MPI_COMM_NULL_COPY_FN). Predefined, read-only keys: KeyTagUB (the
// largest tag, an int) and KeyFT (whether failures are tolerated in this
// job, a bool: the FT attribute of DESIGN.md's rule 11).

// Keyval is an attribute key.
type Keyval struct{ id int }

// Predefined attribute keys.
var (
	KeyTagUB = Keyval{-1}
	KeyFT    = Keyval{-2}
)

var keyvals struct {
	next int
}

// NewKeyval returns a new attribute key (MPI_Comm_create_keyval).
func NewKeyval() Keyval {
	initMu.Lock()
	defer initMu.Unlock()
	keyvals.next++
	return Keyval{keyvals.next}
}

// SetAttr attaches v to c under k.
func (c *Comm) SetAttr(k Keyval, v any) error {
	if c == nil {
		return nilComm("SetAttr")
	}
	c.e.lock()
	defer c.e.unlock()
	if err := c.usable("SetAttr"); err != nil {
		return err
	}
	if k.id <= 0 {
		return newErr(ErrArg, "SetAttr", -1, "predefined or zero key %d", k.id)
	}
	if c.attrs == nil {
		c.attrs = map[int]any{}
	}
	c.attrs[k.id] = v
	return nil
}

// Attr returns c's attribute under k, and whether it is set.
func (c *Comm) Attr(k Keyval) (any, bool, error) {
	if c == nil {
		return nil, false, nilComm("Attr")
	}
	c.e.lock()
	defer c.e.unlock()
	if err := c.usable("Attr"); err != nil {
		return nil, false, err
	}
	switch k {
	case KeyTagUB:
		return TagUB, true, nil
	case KeyFT:
		return jobFT, true, nil
	}
	v, ok := c.attrs[k.id]
	return v, ok, nil
}

// DeleteAttr removes c's attribute under k.
func (c *Comm) DeleteAttr(k Keyval) error {
	if c == nil {
		return nilComm("DeleteAttr")
	}
	c.e.lock()
	defer c.e.unlock()
	if err := c.usable("DeleteAttr"); err != nil {
		return err
	}
	if k.id <= 0 {
		return newErr(ErrArg, "DeleteAttr", -1, "predefined or zero key %d", k.id)
	}
	delete(c.attrs, k.id)
	return nil
}
