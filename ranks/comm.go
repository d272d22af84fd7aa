package ranks

// Comm is a communicator: a group of ranks and a private matching space.
// Ranks in a Comm's methods are ranks of that communicator.
type Comm struct {
	e      *engine
	ctx    uint32
	rank   int
	size   int
	name   string
	group  []int   // communicator rank -> world rank
	toComm []int32 // world rank -> communicator rank, or -1

	posted ilist[request] // receives waiting for a message, in posting order
	unexp  ilist[umsg]    // messages that arrived before their receive

	freed    bool
	ackCount int // how many entries of engine.failedOrder FailureAck covered
}

func identityGroup(n int) []int {
	g := make([]int, n)
	for i := range g {
		g[i] = i
	}
	return g
}

// newComm registers a communicator with context id ctx over group (world
// ranks in communicator order, including this rank).
func (e *engine) newComm(ctx uint32, group []int, name string) *Comm {
	c := &Comm{e: e, ctx: ctx, group: group, size: len(group), name: name, rank: -1}
	c.toComm = make([]int32, e.n)
	for i := range c.toComm {
		c.toComm[i] = -1
	}
	for i, w := range group {
		c.toComm[w] = int32(i)
		if w == e.me {
			c.rank = i
		}
	}
	for int(ctx) >= len(e.comms) {
		e.comms = append(e.comms, nil)
	}
	e.comms[ctx] = c
	// Messages that arrived before this communicator existed here.
	if early := e.early[ctx]; early != nil {
		for m := early.head; m != nil; {
			next := m.next
			early.remove(m)
			c.unexp.push(m)
			m = next
		}
		delete(e.early, ctx)
	}
	return c
}

// Rank is this process's rank in the communicator.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in the communicator.
func (c *Comm) Size() int { return c.size }

// Name is a label for diagnostics.
func (c *Comm) Name() string { return c.name }

// WorldRank translates a rank of c into a world rank.
func (c *Comm) WorldRank(r int) int {
	if r < 0 || r >= c.size {
		return -1
	}
	return c.group[r]
}

// Free releases the communicator. Later operations on it return ErrComm.
// The world communicator cannot be freed.
func (c *Comm) Free() error {
	if c == nil {
		return newErr(ErrComm, "Free", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("Free"); err != nil {
		return err
	}
	if c.ctx == 0 {
		return newErr(ErrComm, "Free", -1, "the world communicator cannot be freed")
	}
	c.freed = true
	for r := c.posted.head; r != nil; r = c.posted.head {
		c.posted.remove(r)
		e.complete(r, newErr(ErrComm, "Free", -1, "communicator freed with the receive pending"))
	}
	if int(c.ctx) < len(e.comms) && e.comms[c.ctx] == c {
		e.comms[c.ctx] = nil
	}
	return nil
}

// usable checks, under the engine lock, that c may be used.
func (c *Comm) usable(op string) error {
	if c.e.closed {
		return newErr(ErrFinalized, op, -1, "")
	}
	if c.freed {
		return newErr(ErrComm, op, -1, "communicator %q was freed", c.name)
	}
	return nil
}

// FailureAck acknowledges every failure of a member of c that this rank
// has been told about. Afterwards AnySource receives on c no longer
// report ErrProcFailedPending for those failures. It is local.
func (c *Comm) FailureAck() error {
	if c == nil {
		return newErr(ErrComm, "FailureAck", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("FailureAck"); err != nil {
		return err
	}
	e.refresh()
	c.ackCount = len(e.failedOrder)
	return nil
}

// FailureGetAcked returns the ranks of c whose failure FailureAck has
// acknowledged, in increasing order. It is local.
func (c *Comm) FailureGetAcked() ([]int, error) {
	if c == nil {
		return nil, newErr(ErrComm, "FailureGetAcked", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("FailureGetAcked"); err != nil {
		return nil, err
	}
	return c.failedRanks(c.ackCount), nil
}

// GetFailed returns the ranks of c known here to have failed, acknowledged
// or not, in increasing order. It is local.
func (c *Comm) GetFailed() ([]int, error) {
	if c == nil {
		return nil, newErr(ErrComm, "GetFailed", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("GetFailed"); err != nil {
		return nil, err
	}
	e.refresh()
	return c.failedRanks(len(c.e.failedOrder)), nil
}

// failedRanks lists the members of c among the first k failures.
func (c *Comm) failedRanks(k int) []int {
	marks := make([]bool, c.size)
	for _, w := range c.e.failedOrder[:k] {
		if cr := c.toComm[w]; cr >= 0 {
			marks[cr] = true
		}
	}
	out := []int{}
	for r, m := range marks {
		if m {
			out = append(out, r)
		}
	}
	return out
}

// unacked reports whether a member of c failed without FailureAck.
func (c *Comm) unacked() bool {
	fo := c.e.failedOrder
	for i := c.ackCount; i < len(fo); i++ {
		if c.toComm[fo[i]] >= 0 {
			return true
		}
	}
	return false
}

// noSender reports whether no other member of c can ever send again:
// every one of them has failed or finalized. An AnySource receive that
// nothing matched then can never complete.
func (c *Comm) noSender() bool {
	if c.size == 1 {
		return false
	}
	for _, w := range c.group {
		if w != c.e.me && !c.e.gone[w] {
			return false
		}
	}
	return true
}
