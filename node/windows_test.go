package node

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
	"github.com/shmpi/shmpi/win"
)

// One-sided communication on a communicator that spans nodes: Put and
// Get (small and large) under Fence, exclusive locks excluding each
// other, Accumulate, FetchAndOp and CompareAndSwap atomic among every
// node's origins, PSCW in a ring, a dynamic window, the refusals, and
// Revoke reaching every node.
func TestWindowsAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "windows"}).check(t)
		})
	}
}

func init() {
	bodies["windows"] = func(w *ranks.World, c *ranks.Comm) error {
		for _, step := range []struct {
			name string
			run  func(*ranks.Comm) error
		}{
			{"fence", winFence}, {"locks", winLocks}, {"atomics", winAtomics}, {"pscw", winPSCW},
			{"dynamic", winDynamic}, {"goroutines", winGoroutines}, {"refused", winRefused}, {"revoke", winRevoke},
		} {
			if err := step.run(c); err != nil {
				return fmt.Errorf("%s: %w", step.name, err)
			}
		}
		return nil
	}
}

// winFence: every member puts its value into every member's part, then
// reads a neighbour's part back; a 1 MiB Put and Get go past the eager
// sizes.
func winFence(c *ranks.Comm) error {
	me, n := c.Rank(), c.Size()
	w, err := win.Allocate(c, 8*n, 8)
	if err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	for t := range n {
		if err := win.Put(w, []int64{int64(100*me + t)}, t, me); err != nil {
			return err
		}
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	mine := int64s(w.Base())
	for r := range n {
		if mine[r] != int64(100*r+me) {
			return fmt.Errorf("slot %d holds %d, want %d", r, mine[r], 100*r+me)
		}
	}
	next := (me + 1) % n
	got := make([]int64, n)
	if err := win.Get(w, got, next, 0); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	for r := range n {
		if got[r] != int64(100*r+next) {
			return fmt.Errorf("Get: slot %d of %d holds %d, want %d", r, next, got[r], 100*r+next)
		}
	}
	if err := w.Free(); err != nil {
		return err
	}

	const big = 1 << 20
	w, err = win.Allocate(c, big, 1)
	if err != nil {
		return err
	}
	src := make([]byte, big)
	for i := range src {
		src[i] = byte(i*7 + me)
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := win.Put(w, src, next, 0); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	prev := (me + n - 1) % n
	for i, b := range w.Base() {
		if b != byte(i*7+prev) {
			return fmt.Errorf("1 MiB Put: byte %d is %d, want %d", i, b, byte(i*7+prev))
		}
	}
	back := make([]byte, big)
	if err := win.Get(w, back, next, 0); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if !slices.Equal(back, src) {
		return fmt.Errorf("1 MiB Get differs from what was put")
	}
	return w.Free()
}

// winLocks: a read-modify-write of a counter under an exclusive lock
// loses no update, whoever the origins are; a shared lock lets every
// member read at once.
func winLocks(c *ranks.Comm) error {
	me, n := c.Rank(), c.Size()
	buf := make([]byte, 16)
	w, err := win.Create(c, buf, 8)
	if err != nil {
		return err
	}
	const k = 30
	for range k {
		if err := w.Lock(win.LockExclusive, 0); err != nil {
			return err
		}
		var v [1]int64
		if err := win.Get(w, v[:], 0, 0); err != nil {
			return err
		}
		if err := w.Flush(0); err != nil {
			return err
		}
		v[0]++
		if err := win.Put(w, v[:], 0, 0); err != nil {
			return err
		}
		if err := w.Unlock(0); err != nil {
			return err
		}
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	if err := w.Lock(win.LockShared, 0); err != nil {
		return err
	}
	var v [1]int64
	if err := win.Get(w, v[:], 0, 0); err != nil {
		return err
	}
	if err := w.Unlock(0); err != nil {
		return err
	}
	if v[0] != int64(n*k) {
		return fmt.Errorf("counter %d after %d exclusive increments", v[0], n*k)
	}
	// Unlock without Lock, Flush outside a passive epoch: the epoch rules.
	if err := w.Unlock(0); !errors.Is(err, ranks.ErrRMASync) {
		return fmt.Errorf("Unlock without Lock: %v, want ErrRMASync", err)
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	_ = me
	return w.Free()
}

// winAtomics: Accumulate, FetchAndOp and CompareAndSwap from every member
// to one target are atomic: with coll's ops, which the target applies,
// and with a function of the program's, which the origin applies under
// the target's accumulate lock, to the same element.
func winAtomics(c *ranks.Comm) error {
	me, n := c.Rank(), c.Size()
	target := n - 1 // on the last node
	w, err := win.Allocate(c, 4*8, 8)
	if err != nil {
		return err
	}
	const k = 20
	if err := w.LockAll(); err != nil {
		return err
	}
	fetched := make([]int64, k)
	for i := range k {
		if err := win.Accumulate(w, []int64{1, 2}, target, 0, coll.Sum); err != nil {
			return err
		}
		triple := func(inout, in []int64) {
			// Holds the target's accumulate lock a while, so that other
			// members' Sums arrive meanwhile (not a synchronization: the
			// result must be the same without it).
			time.Sleep(200 * time.Microsecond)
			for j := range inout {
				inout[j] += 3 * in[j]
			}
		}
		if err := win.Accumulate(w, []int64{1}, target, 0, triple); err != nil {
			return err
		}
		old, err := win.FetchAndOp(w, 1, target, 2, coll.Sum[int64])
		if err != nil {
			return err
		}
		fetched[i] = old
		for {
			// An atomic read (a Get concurrent with the others'
			// CompareAndSwap would be a conflicting access).
			cur, err := win.FetchAndOp(w, 0, target, 3, win.NoOp[int64])
			if err != nil {
				return err
			}
			prev, err := win.CompareAndSwap(w, cur, cur+1, target, 3)
			if err != nil {
				return err
			}
			if prev == cur {
				break
			}
		}
	}
	if err := w.UnlockAll(); err != nil {
		return err
	}
	all := make([]int64, k*n)
	if err := coll.Allgather(c, fetched, all); err != nil {
		return err
	}
	slices.Sort(all)
	for i, v := range all {
		if v != int64(i) {
			return fmt.Errorf("FetchAndOp handed out %d as the %dth value: not each value once", v, i)
		}
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	if me == target {
		got := int64s(w.Base())
		want := []int64{int64(4 * n * k), int64(2 * n * k), int64(n * k), int64(n * k)}
		if !slices.Equal(got, want) {
			return fmt.Errorf("target holds %v, want %v", got, want)
		}
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	return w.Free()
}

// winGoroutines: goroutines of every member share a LockAll epoch and
// accumulate into one element of every member (coll.Sum, applied by the
// target, and a function of the program's, applied at the origin under
// the target's accumulate lock: atomic with each other across the
// goroutines of one origin too), while each puts to and gets from slots
// of its own.
func winGoroutines(c *ranks.Comm) error {
	me, n := c.Rank(), c.Size()
	const goroutines, k = 4, 10
	w, err := win.Allocate(c, 8*(1+n*goroutines), 8)
	if err != nil {
		return err
	}
	if err := w.LockAll(); err != nil {
		return err
	}
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			errs <- func() error {
				slot := 1 + me*goroutines + g
				twice := func(inout, in []int64) {
					for j := range inout {
						inout[j] += 2 * in[j]
					}
				}
				for i := range k {
					for t := range n {
						if err := win.Accumulate(w, []int64{1}, t, 0, coll.Sum); err != nil {
							return err
						}
						if err := win.Accumulate(w, []int64{1}, t, 0, twice); err != nil {
							return err
						}
						v := int64(1000*slot + i)
						if err := win.Put(w, []int64{v}, t, slot); err != nil {
							return err
						}
						if err := w.Flush(t); err != nil {
							return err
						}
						var got [1]int64
						if err := win.Get(w, got[:], t, slot); err != nil {
							return err
						}
						if got[0] != v {
							return fmt.Errorf("goroutine %d: slot %d of %d holds %d after a flushed Put of %d", g, slot, t, got[0], v)
						}
					}
				}
				return nil
			}()
		}()
	}
	var first error
	for range goroutines {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if err := w.UnlockAll(); err != nil && first == nil {
		first = err
	}
	if first != nil {
		return first
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	if got, want := int64s(w.Base())[0], int64(3*n*goroutines*k); got != want {
		return fmt.Errorf("element 0 holds %d, want %d", got, want)
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	return w.Free()
}

// winPSCW: each member exposes its part to the one before it and puts
// into the one after it, twice (the second time polling with Test).
func winPSCW(c *ranks.Comm) error {
	me, n := c.Rank(), c.Size()
	next, prev := (me+1)%n, (me+n-1)%n
	w, err := win.Allocate(c, 8, 8)
	if err != nil {
		return err
	}
	for round := range 2 {
		if err := w.Post([]int{prev}); err != nil {
			return err
		}
		if err := w.Start([]int{next}); err != nil {
			return err
		}
		if err := win.Put(w, []int64{int64(1000*round + me)}, next, 0); err != nil {
			return err
		}
		if err := w.Complete(); err != nil {
			return err
		}
		if round == 0 {
			if err := w.Wait(); err != nil {
				return err
			}
		} else {
			for {
				ok, err := w.Test()
				if err != nil {
					return err
				}
				if ok {
					break
				}
			}
		}
		if got := int64s(w.Base())[0]; got != int64(1000*round+prev) {
			return fmt.Errorf("round %d: part holds %d, want %d", round, got, 1000*round+prev)
		}
	}
	return w.Free()
}

// winDynamic: members attach memory, exchange its addresses, and put to
// their neighbour's; an address nobody attached is an error at the
// origin.
func winDynamic(c *ranks.Comm) error {
	me, n := c.Rank(), c.Size()
	next, prev := (me+1)%n, (me+n-1)%n
	w, err := win.CreateDynamic(c)
	if err != nil {
		return err
	}
	buf := make([]byte, 4096)
	if err := w.Attach(buf); err != nil {
		return err
	}
	addrs := make([]int64, n)
	if err := coll.Allgather(c, []int64{int64(win.Address(buf))}, addrs); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := win.Put(w, []byte("from "+fmt.Sprint(me)), next, int(addrs[next])+100); err != nil {
		return err
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if got, want := string(buf[100:100+len("from "+fmt.Sprint(prev))]), "from "+fmt.Sprint(prev); got != want {
		return fmt.Errorf("attached memory holds %q, want %q", got, want)
	}
	var b [8]byte
	if err := win.Get(w, b[:], next, int(addrs[next])+4093); !errors.Is(err, ranks.ErrArg) {
		return fmt.Errorf("Get past the attached memory: %v, want ErrArg", err)
	}
	if err := w.Fence(0); err != nil {
		return err
	}
	if err := w.Detach(buf); err != nil {
		return err
	}
	return w.Free()
}

// winRefused: what needs shared memory says so.
func winRefused(c *ranks.Comm) error {
	if _, err := win.AllocateShared(c, 64, 1); !errors.Is(err, ranks.ErrUnsupported) {
		return fmt.Errorf("AllocateShared: %v, want ErrUnsupported", err)
	}
	w, err := win.Allocate(c, 64, 1)
	if err != nil {
		return err
	}
	if _, _, err := w.SharedQuery(0); !errors.Is(err, ranks.ErrWin) {
		return fmt.Errorf("SharedQuery: %v, want ErrWin", err)
	}
	if err := win.Put(w, []byte{1}, 0, 0); !errors.Is(err, ranks.ErrRMASync) {
		return fmt.Errorf("Put outside an epoch: %v, want ErrRMASync", err)
	}
	return w.Free()
}

// winRevoke: member 0 revokes; every member's next synchronization says
// so.
func winRevoke(c *ranks.Comm) error {
	w, err := win.Allocate(c, 64, 1)
	if err != nil {
		return err
	}
	// Every member has the window before it is revoked (else its creation
	// may end with ErrRevoked).
	if err := coll.Barrier(c); err != nil {
		return err
	}
	if c.Rank() == 0 {
		if err := w.Revoke(); err != nil {
			return err
		}
	}
	if err := w.Fence(0); !errors.Is(err, ranks.ErrRevoked) {
		return fmt.Errorf("Fence after a revoke: %v, want ErrRevoked", err)
	}
	if err := w.Lock(win.LockShared, 0); !errors.Is(err, ranks.ErrRevoked) {
		return fmt.Errorf("Lock after a revoke: %v, want ErrRevoked", err)
	}
	if err := w.Free(); err != nil && !errors.Is(err, ranks.ErrRevoked) {
		return err
	}
	return coll.Barrier(c)
}

// A member SIGKILLed while it holds member 0's lock exclusively: every
// survivor's Lock of member 0 returns ErrProcFailed (the lock is
// poisoned; a lazy Lock, at its Unlock), a Get from the dead member ErrProcFailed, and the survivors
// shrink and use a new window.
func TestWindowsFailureAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "windows-fail", FT: true}).check(t, sum(counts)-1)
		})
		// The victim dies in an access epoch to member 0, after Start and
		// before Complete.
		t.Run(fmt.Sprint(counts, "/pscw"), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "windows-fail-pscw", FT: true}).check(t, sum(counts)-1)
		})
	}
}

// failures counts what a survivor saw: ErrProcFailed, or ErrRevoked
// where another survivor's failed Free revoked the window first (the
// first survivor to get there sees the failure).
type failures struct{ saw int }

func (f *failures) ok(err error) bool {
	if errors.Is(err, ranks.ErrProcFailed) {
		f.saw = 1
		return true
	}
	return errors.Is(err, ranks.ErrRevoked)
}

// winRecover frees w after a member's death, and shrinks c; some
// survivor must have seen the failure.
func winRecover(c *ranks.Comm, w *win.Win, f *failures) (*ranks.Comm, error) {
	if err := w.Free(); err != nil && !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
		return nil, fmt.Errorf("Free: %v", err)
	}
	if err := ulfm.Revoke(c); err != nil {
		return nil, err
	}
	s, err := ulfm.Shrink(c)
	if err != nil {
		return nil, fmt.Errorf("Shrink: %w", err)
	}
	if s.Size() != c.Size()-1 {
		return nil, fmt.Errorf("Shrink: %d members, want %d", s.Size(), c.Size()-1)
	}
	if k, err := coll.AllreduceValue(s, f.saw, coll.Sum[int]); err != nil || k == 0 {
		return nil, fmt.Errorf("no survivor saw ErrProcFailed (%v)", err)
	}
	return s, nil
}

func init() {
	bodies["windows-fail-pscw"] = func(_ *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		victim := n - 1
		w, err := win.Allocate(c, 64, 8)
		if err != nil {
			return err
		}
		var f failures
		// Every member has the window before the victim can die.
		if err := coll.Barrier(c); err != nil && !f.ok(err) {
			return err
		}
		switch me {
		case 0:
			if err := w.Post([]int{victim}); err != nil {
				return err
			}
			if err := w.Wait(); !f.ok(err) {
				return fmt.Errorf("Wait for the dead origin: %v, want ErrProcFailed", err)
			}
		case victim:
			if err := w.Start([]int{0}); err != nil {
				return err
			}
			if err := win.Put(w, []int64{1}, 0, 0); err != nil {
				return err
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		if err := w.Fence(0); !f.ok(err) {
			return fmt.Errorf("Fence without the dead member: %v, want ErrProcFailed", err)
		}
		s, err := winRecover(c, w, &f)
		if err != nil {
			return err
		}
		return winPSCW(s)
	}
	bodies["windows-fail"] = func(_ *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		victim := n - 1
		w, err := win.Allocate(c, 64, 8)
		if err != nil {
			return err
		}
		if me == victim {
			if err := w.Lock(win.LockExclusive, 0); err != nil {
				return err
			}
			// A Get waits for the lock, which Lock alone (lazy) may not.
			var b [8]byte
			if err := win.Get(w, b[:], 0, 0); err != nil {
				return err
			}
		}
		var f failures
		// The victim may die before this Barrier returns here, and a
		// survivor that got further may have revoked c.
		if err := coll.Barrier(c); err != nil && !f.ok(err) {
			return err
		}
		if me == victim {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		// A lazy Lock (of another member's part) fails at the first call
		// that waits, a Get, and at Unlock.
		err = w.Lock(win.LockExclusive, 0)
		if err == nil {
			var b [8]byte
			if err := win.Get(w, b[:], 0, 0); !f.ok(err) {
				return fmt.Errorf("Get under a lock held by the dead member: %v, want ErrProcFailed", err)
			}
			err = w.Unlock(0)
		}
		if !f.ok(err) {
			return fmt.Errorf("Lock held by the dead member: %v, want ErrProcFailed", err)
		}
		if err := w.Lock(win.LockShared, victim); err == nil {
			var b [8]byte
			if err := win.Get(w, b[:], victim, 0); !f.ok(err) {
				return fmt.Errorf("Get from the dead member: %v, want ErrProcFailed", err)
			}
			w.Unlock(victim)
		} else if !f.ok(err) {
			return fmt.Errorf("Lock of the dead member: %v, want ErrProcFailed", err)
		}
		s, err := winRecover(c, w, &f)
		if err != nil {
			return err
		}
		return winFence(s)
	}
}

// int64s views b as int64s (a window's part, 8-byte aligned).
func int64s(b []byte) []int64 {
	return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}
