package ranks

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/shmpi/shmpi/internal/job"
)

// Dynamic processes: Spawn, SpawnMultiple, Parent, Disconnect.
//
// Spawned ranks live in the job's segment, in the rank slots that the
// launcher reserved beyond the first world (shmrun --universe; job's
// spawn.go has the slots and the mailbox to the launcher). The root of a
// spawn does everything that must happen before the children exist: it
// takes their rank slots, allocates their world's context slot, the
// intercommunicator's and both local groups' (setting the children's
// hold bits while they are still unstarted, so that nothing of theirs
// can be reclaimed before they adopt it), and asks the launcher to start
// them with all of it in their environment. A child builds its world and
// its parent intercommunicator in Init, from that environment, without
// talking to anyone: a child never waits for its parents, and the root's
// death cannot block it. The root then hands the slots to the other
// parents, as IntercommCreate's leaders do.
//
// The failure rules of the ULFM chapter (15.2.3):
//   - The root raises ErrProcFailed only before it has started anyone: a
//     failure it knows of among the parents fails the spawn, and nobody
//     is started. Once the children run, the root returns the
//     intercommunicator whatever happens to the other parents.
//   - Communication with the root on the new intercommunicator never
//     deadlocks: the children hold it from their Init, and the root's
//     failure is reported like any peer's.
//   - A spawn past the universe raises ErrSpawn and starts nothing.

// Tags of the spawn and of Disconnect on collective twins (between
// IntercommCreate's and CreateGroup's).
const (
	tagSpawn      = tagCreateBase + 5 // root → parents: the slots
	tagDisconnect = tagCreateBase + 6 // every member → every peer: done
)

// SpawnCmd is one command of SpawnMultiple: MaxProcs processes of
// Command with Args, and Env added to their environment.
type SpawnCmd struct {
	Command  string
	Args     []string
	MaxProcs int
	Env      []string
}

// Spawn starts maxprocs processes of command with args as a new job of
// the same segment, and returns an intercommunicator whose remote group
// is their world (MPI_Comm_spawn). It is collective over c, an
// intracommunicator; command, args and maxprocs matter at root only. The
// children see the parents through World.Parent. The processes are
// started by the launcher (shmrun, ranktest), in slots it reserved
// (shmrun --universe): past them, Spawn returns ErrSpawn and starts
// nothing. A failure among c's members known at the root before it
// starts anyone makes it return ErrProcFailed; once the children run,
// the root returns the intercommunicator, and the other parents get it
// or, if the root failed, ErrProcFailed.
func (c *Comm) Spawn(command string, args []string, maxprocs, root int) (*Comm, error) {
	return c.spawn([]SpawnCmd{{Command: command, Args: args, MaxProcs: maxprocs}}, root, "Spawn")
}

// SpawnMultiple is Spawn of several commands at once
// (MPI_Comm_spawn_multiple): one world of all their processes, in the
// order of cmds; World.AppNum tells each which command it runs.
func (c *Comm) SpawnMultiple(cmds []SpawnCmd, root int) (*Comm, error) {
	return c.spawn(cmds, root, "SpawnMultiple")
}

func (c *Comm) spawn(cmds []SpawnCmd, root int, op string) (*Comm, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	if c.inter != nil {
		return nil, newErr(ErrComm, op, -1, "spawn from an intercommunicator")
	}
	if root < 0 || root >= c.size {
		return nil, newErr(ErrRank, op, -1, "root %d in a communicator of %d", root, c.size)
	}
	e := c.e
	var nc *Comm
	var err error
	c.inOrder(func() {
		if c.rank != root {
			e.spawnHook(spawnMember)
			nc, err = e.receiveSlots(c.coll, root, c.group, tagSpawn, op, nil)
			return
		}
		var s interSlots
		s, err = e.spawnRoot(c, cmds, op)
		if err != nil {
			// The parents wait for the slots: tell them what failed.
			fail := interSlots{failed: true}
			if errors.Is(err, ErrSpawn) {
				fail = interSlots{spawnErr: true}
			}
			e.handOutAll(c.coll, leaderFirst(c.size, root), fail, tagSpawn)
			return
		}
		e.handOutAll(c.coll, leaderFirst(c.size, root), s, tagSpawn)
		nc, err = e.adoptInter(s, c.group, op)
	})
	return nc, err
}

// spawnRoot is the root's part of a spawn, up to the children running:
// it returns the slots to hand to the other parents.
func (e *engine) spawnRoot(c *Comm, cmds []SpawnCmd, op string) (interSlots, error) {
	if len(cmds) == 0 {
		return interSlots{}, newErr(ErrArg, op, -1, "no command")
	}
	k := 0
	paths := make([]string, len(cmds))
	for i, cmd := range cmds {
		if cmd.MaxProcs < 1 {
			return interSlots{}, newErr(ErrArg, op, -1, "maxprocs %d for %q", cmd.MaxProcs, cmd.Command)
		}
		// Found here, not by the launcher, so that a missing program
		// starts nothing; made absolute, as the launcher's directory
		// may differ from the root's.
		p, err := exec.LookPath(cmd.Command)
		if err == nil {
			p, err = filepath.Abs(p)
		}
		if err != nil {
			return interSlots{}, newErr(ErrSpawn, op, -1, "%v", err)
		}
		paths[i] = p
		k += cmd.MaxProcs
	}
	e.lock()
	e.refresh()
	switch {
	case c.revoked:
		e.unlock()
		return interSlots{}, revokedErr(c, op)
	case c.memberFailed():
		// The chapter: when the root raises a process failure, nobody
		// has been started.
		err := &Error{Class: ErrProcFailed, Op: op, Rank: -1, Failed: c.failedRanks(len(e.failedOrder)),
			Detail: "a parent has failed; nothing was started"}
		e.unlock()
		return interSlots{}, err
	}
	e.unlock()
	t := e.t
	if !t.SpawnServed() {
		return interSlots{}, newErr(ErrSpawn, op, -1, "%v", job.ErrNoLauncher)
	}
	base, ok := t.ReserveSlots(k)
	if !ok {
		return interSlots{}, newErr(ErrSpawn, op, -1, "%d processes asked, %d of the universe of %d rank slots left (shmrun --universe)",
			k, t.SlotsLeft(), t.Universe())
	}
	children := make([]int, k)
	for i := range children {
		children[i] = base + i
	}
	parents := c.group
	union := slices.Concat(parents, children)
	// The children's world, their local group, the parents' local group
	// and the union's intercommunicator.
	lists := [4][]int{children, children, parents, union}
	var slots [4][2]uint32
	// release gives back the holds of every member on the first n slots.
	// Clearing a bit twice is harmless (ReleaseContext), so it may race
	// with sweeps of children declared failed.
	release := func(n int) {
		e.lock()
		for i := range n {
			for _, w := range lists[i] {
				t.ReleaseContext(w, slots[i][0])
			}
		}
		e.unlock()
	}
	e.lock()
	for i, members := range lists {
		s, g, ok := t.AllocContext(e.me, members)
		if !ok {
			e.unlock()
			release(i)
			t.UnreserveSlots(base, k)
			return interSlots{}, newErr(ErrNoMem, op, -1, "every one of the job's %d context slots is in use", job.MaxContexts)
		}
		slots[i] = [2]uint32{s, g}
	}
	e.unlock()
	procs := make([]job.SpawnProc, len(cmds))
	for app, cmd := range cmds {
		env := append(slices.Clone(cmd.Env),
			job.WorldEnv(base, k, slots[0][0], slots[0][1]),
			job.ParentEnv(slots[3][0], slots[3][1], slots[1][0], slots[1][1], parents),
			job.EnvAppNum+"="+strconv.Itoa(app))
		procs[app] = job.SpawnProc{Path: paths[app], Args: cmd.Args, Env: env, N: cmd.MaxProcs}
	}
	e.spawnHook(spawnBeforeRequest)
	notStarted, err := t.SpawnRequest(e.me, base, procs, t.DeadRank)
	if err == nil && notStarted == 0 {
		e.spawnHook(spawnAfterStart)
		return interSlots{uslot: slots[3][0], ugen: slots[3][1], lslot: slots[2][0], lgen: slots[2][1],
			low: true, remote: children}, nil
	}
	release(len(lists))
	if err != nil {
		// Nobody was started.
		t.UnreserveSlots(base, k)
		return interSlots{}, newErr(ErrSpawn, op, -1, "%v", err)
	}
	// The launcher kills what it started of a request it cannot complete,
	// and declared the rest failed: none of the children is left.
	return interSlots{}, newErr(ErrSpawn, op, -1, "the launcher could not start %d of the %d processes; none was left running", notStarted, k)
}

// handOutAll is a spawn root's hand-out of the slots (or of its failure)
// to the other parents, mine (ranks of ch, the root first). Once the
// children run the root's spawn succeeds whatever the other parents do,
// so a member that fails on the way is only skipped.
func (e *engine) handOutAll(ch *Comm, mine []int, s interSlots, tag int) {
	msg := s.encode()
	var reqs []*Request
	for _, m := range mine[1:] {
		if rq, err := Isend(ch, msg, m, tag); err == nil {
			reqs = append(reqs, rq)
		}
	}
	WaitAll(reqs, nil)
	if s.failed || s.spawnErr {
		return
	}
	// Wait for the adoptions, as creations do, so that a parent's first
	// operation on the new communicator finds every live parent in it.
	var ack [1]uint32
	for _, m := range mine[1:] {
		Recv(ch, ack[:], m, tag|tagAck)
	}
}

// Kill points of a spawn's root, for tests (SHMPI_SPAWN_KILL=RANK@point).
const (
	spawnBeforeRequest = "before-request" // slots taken, nobody started
	spawnAfterStart    = "after-start"    // children started, parents not told
	spawnMember        = "member"         // a parent other than the root, entering the spawn
)

// spawnHook kills this rank at the named point of a spawn if
// SHMPI_SPAWN_KILL asks for it (read at Init; never in a real job).
func (e *engine) spawnHook(point string) {
	if e.spawnKill != "" && e.spawnKill == point {
		dieNow()
	}
}

// adoptSpawned makes a spawned rank's world and parent intercommunicator
// from the slots its spawn's root allocated (job.SpawnedWorld).
func (w *World) adoptSpawned(sw job.SpawnedWorld) error {
	e := w.e
	if sw.Size < 1 || sw.Base < 0 || sw.Base+sw.Size > e.n || e.me < sw.Base || e.me >= sw.Base+sw.Size {
		return newErr(ErrInit, "Init", -1, "rank slot %d outside its spawned world %d+%d", e.me, sw.Base, sw.Size)
	}
	group := make([]int, sw.Size)
	for i := range group {
		group[i] = sw.Base + i
	}
	e.lock()
	defer e.unlock()
	if !e.t.Adoptable(e.me, sw.Slot, sw.Gen) || (sw.ParentOK && (!e.t.Adoptable(e.me, sw.USlot, sw.UGen) || !e.t.Adoptable(e.me, sw.LSlot, sw.LGen))) {
		return newErr(ErrInit, "Init", -1, "the context slots of the spawned world were given up")
	}
	w.world = e.newComm(sw.Slot, sw.Gen, group, "MPI_COMM_WORLD")
	if sw.ParentOK {
		for _, p := range sw.Parents {
			if p < 0 || p >= e.n {
				return newErr(ErrInit, "Init", -1, "parent rank slot %d outside the universe of %d", p, e.n)
			}
		}
		lc := e.newComm(sw.LSlot, sw.LGen, group, "")
		w.parent = e.newInterComm(sw.USlot, sw.UGen, group, sw.Parents, false, lc)
	}
	appNum = sw.AppNum
	return nil
}

// envSpawnKill: "RANK@POINT" kills world rank slot RANK at POINT of a
// spawn it roots (spawnHook); for the kill tests.
const envSpawnKill = "SHMPI_SPAWN_KILL"

func spawnKillPoint(spec string, me int) string {
	r, point, ok := strings.Cut(spec, "@")
	if !ok || r != strconv.Itoa(me) {
		return ""
	}
	return point
}

// Parent is the intercommunicator to the parents that spawned this
// rank's world (MPI_Comm_get_parent), or nil if it was not spawned.
func (w *World) Parent() *Comm { return w.parent }

// UniverseSize is the number of rank slots of the job: the first world
// and the room reserved for spawned ranks (MPI_UNIVERSE_SIZE; shmrun
// --universe).
func (w *World) UniverseSize() int { return w.e.n }

// AppNum is which command of a SpawnMultiple (or 0 of a Spawn) started
// this rank, or -1 for a rank of the first world (MPI_APPNUM).
func (w *World) AppNum() int { return appNum }

// appNum is World.AppNum, read at Init.
var appNum = -1

// Disconnect waits until every peer of c (the remote group of an
// intercommunicator, the other members of an intracommunicator) has
// called Disconnect too, and frees c (MPI_Comm_disconnect). It is
// collective over c. A peer that failed makes it return ErrProcFailed
// (a revoked c, ErrRevoked) instead of waiting; c is freed all the
// same.
func (c *Comm) Disconnect() error {
	const op = "Disconnect"
	if c == nil {
		return nilComm(op)
	}
	if err := c.usableLocked(op); err != nil {
		return err
	}
	if c.permanent {
		return newErr(ErrComm, op, -1, "the %s communicator cannot be disconnected", c.name)
	}
	peers := make([]int, 0, len(c.group))
	for r := range c.group {
		if c.inter != nil || r != c.rank {
			peers = append(peers, r)
		}
	}
	// A peer that finalized has disconnected (MPI_Finalize is collective
	// over the connected processes, and ends their connections): its
	// ErrPeerFinalized is not an error here.
	var first error
	note := func(err error) {
		if err != nil && first == nil && !errors.Is(err, ErrPeerFinalized) {
			first = err
		}
	}
	reqs := make([]*Request, 0, 2*len(peers))
	for _, p := range peers {
		rq, err := Irecv(c.coll, []byte(nil), p, tagDisconnect)
		note(err)
		if err == nil {
			reqs = append(reqs, rq)
		}
	}
	for _, p := range peers {
		rq, err := Isend(c.coll, []byte(nil), p, tagDisconnect)
		note(err)
		if err == nil {
			reqs = append(reqs, rq)
		}
	}
	for _, rq := range reqs {
		if first != nil {
			rq.Cancel()
		}
		_, err := rq.Wait()
		note(err)
	}
	ferr := c.Free()
	if first != nil {
		return relabel(first, op)
	}
	return ferr
}
