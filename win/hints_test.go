package win_test

import (
	"fmt"
	"maps"
	"os"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/win"
)

// Issue 23's window items: info hints, asserts, attributes and names.

// sizes are the job sizes of the tests below: one rank, two, an odd
// number, and more ranks than the machine has cores.
var sizes = []int{1, 2, 5, 16}

func forSizes(t *testing.T, body func(r *ranktest.R)) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, body)
		})
	}
}

var defaultInfo = win.Info{
	"no_locks":               "false",
	"accumulate_ordering":    "rar,raw,war,waw",
	"accumulate_ops":         "same_op_no_op",
	"same_size":              "false",
	"same_disp_unit":         "false",
	"alloc_shared_noncontig": "false",
}

func with(base win.Info, kv ...string) win.Info {
	i := maps.Clone(base)
	for j := 0; j < len(kv); j += 2 {
		i[kv[j]] = kv[j+1]
	}
	return i
}

func wantInfo(r *ranktest.R, w *win.Win, want win.Info, what string) {
	if got := w.Info(); !maps.Equal(got, want) {
		r.Errorf("%s: Info() = %v, want %v", what, got, want)
	}
}

// Info reads back every key this package knows, with its default or the
// value given (canonical), and not unknown keys; SetInfo changes the keys
// that can change and keeps the others; no_locks refuses Lock and
// LockAll at the member that gave it; bad values are ErrArg at creation
// (at every member, which all pass them: no member waits for another)
// and at SetInfo, which then changes nothing.
func TestInfo(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		w := alloc(r, 8, 8)
		wantInfo(r, w, defaultInfo, "no hints")
		r.Check(w.Free(), "free")

		hinted := win.Info{"no_locks": "TRUE", "accumulate_ordering": " waw, rar,waw", "accumulate_ops": "same_op",
			"alloc_shared_noncontig": "false", "mpi_unknown_key": "whatever", "same_size": "false"}
		w, err := win.AllocateShared(r.Comm, 8, 8, hinted)
		r.Check(err, "AllocateShared with hints")
		want := with(defaultInfo, "no_locks", "true", "accumulate_ordering", "rar,waw", "accumulate_ops", "same_op")
		wantInfo(r, w, want, "hints")
		next := (r.Rank + 1) % r.Size
		wantClass(r, w.Lock(win.LockShared, next), ranks.ErrRMASync, "Lock with no_locks")
		wantClass(r, w.LockAll(), ranks.ErrRMASync, "LockAll with no_locks")
		wantClass(r, win.Put(w, []int64{1}, next, 0), ranks.ErrRMASync, "Put after a refused Lock")
		// Fence still works, and Info is unchanged by the refusals.
		r.Check(w.Fence(0), "fence")
		r.Check(win.Put(w, []int64{int64(r.Rank)}, next, 0), "put")
		r.Check(w.Fence(win.ModeNoSucceed), "fence")
		wantInfo(r, w, want, "after the refusals")

		// SetInfo: no_locks, accumulate_ordering and accumulate_ops
		// change; the creation's keys do not; missing keys keep their
		// values; unknown keys are ignored.
		r.Check(w.SetInfo(win.Info{"no_locks": "false", "accumulate_ordering": "none", "same_size": "true",
			"alloc_shared_noncontig": "true", "other": "x"}), "SetInfo")
		want = with(defaultInfo, "accumulate_ordering", "none", "accumulate_ops", "same_op")
		wantInfo(r, w, want, "after SetInfo")
		r.Check(w.Lock(win.LockExclusive, next), "Lock after SetInfo no_locks=false")
		got := []int64{-1}
		r.Check(win.Get(w, got, next, 0), "get")
		if got[0] != int64(r.Rank) {
			r.Errorf("got %d from %d, want %d", got[0], next, r.Rank)
		}
		r.Check(w.Unlock(next), "unlock")

		// Bad values.
		for _, bad := range []win.Info{{"no_locks": "yes"}, {"accumulate_ops": "sum"}, {"accumulate_ordering": "raw,rwa"},
			{"accumulate_ordering": ""}, {"accumulate_ordering": "none,raw"}, {"same_disp_unit": ""}} {
			wantClass(r, w.SetInfo(bad), ranks.ErrArg, fmt.Sprintf("SetInfo(%v)", bad))
			wantInfo(r, w, want, fmt.Sprintf("after SetInfo(%v)", bad))
			_, err := win.AllocateShared(r.Comm, 8, 8, bad)
			wantClass(r, err, ranks.ErrArg, fmt.Sprintf("AllocateShared(%v)", bad))
			_, err = win.Create(r.Comm, make([]byte, 8), 8, bad)
			wantClass(r, err, ranks.ErrArg, fmt.Sprintf("Create(%v)", bad))
			_, err = win.CreateDynamic(r.Comm, bad)
			wantClass(r, err, ranks.ErrArg, fmt.Sprintf("CreateDynamic(%v)", bad))
		}
		r.Check(w.Free(), "free")
		wantClass(r, w.SetInfo(win.Info{}), ranks.ErrWin, "SetInfo on a freed window")

		// Flags are hints too, and other kinds of windows have them.
		w, err = win.Create(r.Comm, make([]byte, 16), 8, win.NoLocks, win.Info{"accumulate_ops": "same_op"})
		r.Check(err, "Create with hints")
		wantInfo(r, w, with(defaultInfo, "no_locks", "true", "accumulate_ops", "same_op"), "Create")
		wantClass(r, w.Lock(win.LockExclusive, 0), ranks.ErrRMASync, "Lock with no_locks (Create)")
		r.Check(w.Free(), "free")
		w, err = win.CreateDynamic(r.Comm, win.NonContiguous)
		r.Check(err, "CreateDynamic with hints")
		wantInfo(r, w, defaultInfo, "CreateDynamic: alloc_shared_noncontig has no effect")
		r.Check(w.Free(), "free")
	})
}

// same_size and same_disp_unit (at every member) skip the allgather of
// sizes and units: the window is the same as with it, in every kind of
// window, with and without NonContiguous (at every member, or some); and
// a member whose size or unit is not member 0's makes the creation fail
// at every member (with the allgather it would have worked).
func TestSameSize(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		next := (me + 1) % size
		same := win.Info{"same_size": "true", "same_disp_unit": "true"}
		for _, mode := range []string{"contiguous", "noncontig", "some"} {
			opts := []win.Option{same}
			if mode == "noncontig" || mode == "some" && me%2 == 0 {
				opts = append(opts, win.NonContiguous)
			}
			w, err := win.AllocateShared(r.Comm, 24, 8, opts...)
			r.Check(err, "AllocateShared "+mode)
			wantInfo(r, w, with(defaultInfo, "same_size", "true", "same_disp_unit", "true",
				"alloc_shared_noncontig", fmt.Sprint(mode == "noncontig" || mode == "some" && size == 1)), mode)
			for p := range size {
				b, unit, err := w.SharedQuery(p)
				r.Check(err, "SharedQuery")
				if len(b) != 24 || unit != 8 {
					r.Errorf("%s: part %d: %d bytes, unit %d; want 24, 8", mode, p, len(b), unit)
				}
				if p == 0 {
					continue
				}
				prev, _, _ := w.SharedQuery(p - 1)
				at, end := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&prev[0]))+24
				if mode == "noncontig" && (at%uintptr(os.Getpagesize()) != 0 || at < end) ||
					mode != "noncontig" && at != end {
					r.Errorf("%s: part %d at %#x, part %d ends at %#x", mode, p, at, p-1, end)
				}
			}
			r.Check(w.Fence(0), "fence")
			r.Check(win.Put(w, []int64{int64(me), int64(me + 1), int64(me + 2)}, next, 0), "put")
			r.Check(w.Fence(win.ModeNoSucceed), "fence")
			own, err := win.View[int64](w, me)
			r.Check(err, "view")
			prev := (me + size - 1) % size
			if own[0] != int64(prev) || own[2] != int64(prev+2) {
				r.Errorf("%s: own part %v, want %d..%d", mode, own, prev, prev+2)
			}
			r.Check(w.Free(), "free")
		}
		// Create with same_disp_unit; CreateDynamic never gathers.
		buf := make([]byte, 16)
		w, err := win.Create(r.Comm, buf, 8, win.SameDispUnit)
		r.Check(err, "Create")
		r.Check(w.Fence(0), "fence")
		r.Check(win.Put(w, []int64{int64(me)}, next, 1), "put (Create)")
		r.Check(w.Fence(win.ModeNoSucceed), "fence")
		if v := *(*int64)(unsafe.Pointer(&buf[8])); v != int64((me+size-1)%size) {
			r.Errorf("Create: slot 1 holds %d", v)
		}
		r.Check(w.Free(), "free")
		w, err = win.CreateDynamic(r.Comm)
		r.Check(err, "CreateDynamic")
		if w.DispUnit() != 1 {
			r.Errorf("CreateDynamic: unit %d", w.DispUnit())
		}
		r.Check(w.Free(), "free")
		// A size or a unit that differs at the last member.
		if size > 1 {
			n, unit := 16, 8
			if me == size-1 {
				n = 24
			}
			_, err := win.AllocateShared(r.Comm, n, unit, same)
			wantClass(r, err, ranks.ErrArg, "AllocateShared, sizes differ under same_size")
			n = 16
			if me == size-1 {
				unit = 4
			}
			_, err = win.AllocateShared(r.Comm, n, unit, win.SameSize, win.SameDispUnit)
			wantClass(r, err, ranks.ErrArg, "AllocateShared, units differ under same_disp_unit")
			_, err = win.Create(r.Comm, buf, unit, win.SameDispUnit)
			wantClass(r, err, ranks.ErrArg, "Create, units differ under same_disp_unit")
			// Without the hints they work.
			w, err := win.AllocateShared(r.Comm, n, unit, win.SameSize)
			r.Check(err, "AllocateShared, units differ, same_size only")
			if _, u, _ := w.SharedQuery(size - 1); u != 4 {
				r.Errorf("last member's unit %d, want 4", u)
			}
			r.Check(w.Free(), "free")
		}
		// Nothing leaked: the communicator still works.
		r.Check(coll.Barrier(r.Comm), "barrier")
	})
}

// Attributes: base and size (Base), displacement unit, flavour and
// model; names; SharedQuery(ProcNull).
func TestAttributes(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		// The parts of members below size/2 are empty.
		first := size / 2
		n := 0
		if me >= first {
			n = 8 * (me + 1)
		}
		for _, f := range []win.Flavor{win.FlavorShared, win.FlavorAllocate} {
			var w *win.Win
			var err error
			if f == win.FlavorShared {
				w, err = win.AllocateShared(r.Comm, n, 4)
			} else {
				w, err = win.Allocate(r.Comm, n, 4)
			}
			r.Check(err, f.String())
			own, _, err := w.SharedQuery(me)
			r.Check(err, "SharedQuery")
			if b := w.Base(); len(b) != n || n > 0 && &b[0] != &own[0] {
				r.Errorf("%v: Base: %d bytes, want %d at the own part", f, len(b), n)
			}
			if w.DispUnit() != 4 || w.Flavor() != f || w.Model() != win.ModelUnified || w.Name() != "" {
				r.Errorf("%v: unit %d, flavour %v, model %v, name %q", f, w.DispUnit(), w.Flavor(), w.Model(), w.Name())
			}
			b, unit, err := w.SharedQuery(ranks.ProcNull)
			r.Check(err, "SharedQuery(ProcNull)")
			want, _, _ := w.SharedQuery(first)
			if len(b) != 8*(first+1) || unit != 4 || &b[0] != &want[0] {
				r.Errorf("SharedQuery(ProcNull): %d bytes, unit %d; want member %d's %d bytes", len(b), unit, first, 8*(first+1))
			}
			r.Check(w.SetName("grid"), "SetName")
			if w.Name() != "grid" {
				r.Errorf("Name after SetName: %q", w.Name())
			}
			r.Check(w.Free(), "free")
			if w.Base() != nil {
				r.Errorf("Base of a freed window: not nil")
			}
			wantClass(r, w.SetName("x"), ranks.ErrWin, "SetName on a freed window")
		}
		// Every part empty.
		w, err := win.AllocateShared(r.Comm, 0, 2)
		r.Check(err, "AllocateShared of nothing")
		b, unit, err := w.SharedQuery(ranks.ProcNull)
		if err != nil || len(b) != 0 || unit != 2 {
			r.Errorf("SharedQuery(ProcNull) of empty parts: %d bytes, unit %d, %v", len(b), unit, err)
		}
		wantClass(r, func() error { _, _, err := w.SharedQuery(-5); return err }(), ranks.ErrRank, "SharedQuery(-5)")
		r.Check(w.Free(), "free")
		// Create: Base is the buffer; dynamic: nil.
		buf := make([]byte, 24)
		w, err = win.Create(r.Comm, buf, 8)
		r.Check(err, "Create")
		if b := w.Base(); len(b) != 24 || &b[0] != &buf[0] || w.Flavor() != win.FlavorCreate || w.DispUnit() != 8 || w.Model() != win.ModelUnified {
			r.Errorf("Create: Base %d bytes, flavour %v, unit %d", len(b), w.Flavor(), w.DispUnit())
		}
		_, _, err = w.SharedQuery(ranks.ProcNull)
		wantClass(r, err, ranks.ErrWin, "SharedQuery(ProcNull) of a window over heap memory")
		r.Check(w.Free(), "free")
		w, err = win.CreateDynamic(r.Comm)
		r.Check(err, "CreateDynamic")
		r.Check(w.Attach(buf), "attach")
		if w.Base() != nil || w.Flavor() != win.FlavorDynamic || w.DispUnit() != 1 {
			r.Errorf("CreateDynamic: Base %v, flavour %v, unit %d", w.Base(), w.Flavor(), w.DispUnit())
		}
		r.Check(w.Detach(buf), "detach")
		r.Check(w.Free(), "free")
	})
}

// Fence(ModeNoPrecede|ModeNoSucceed) is no barrier: each member passes
// it while the next is still waiting for a message the member sends
// after it (a barrier would deadlock), and it opens no epoch.
// Fence(ModeNoPrecede) opens one and Fence(ModeNoSucceed) ends it, with
// every Put done; the other asserts change nothing.
func TestFenceAsserts(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		next, prev := (me+1)%size, (me+size-1)%size
		w := alloc(r, 8*size, 8)
		r.Check(w.Fence(0), "fence opening an epoch")
		token := []int64{0}
		for round := range 3 {
			if me > 0 {
				_, err := ranks.Recv(r.Comm, token, me-1, round)
				r.Check(err, "recv")
			}
			r.Check(w.Fence(win.ModeNoPrecede|win.ModeNoSucceed|win.ModeNoStore), "fence without epochs")
			if me < size-1 {
				r.Check(ranks.Send(r.Comm, token, me+1, round), "send")
			}
			wantClass(r, win.Put(w, []int64{1}, next, 0), ranks.ErrRMASync, "put after a fence that opens no epoch")
		}
		for round := range 20 {
			r.Check(w.Fence(win.ModeNoPrecede|win.ModeNoStore), "opening fence")
			r.Check(win.Put(w, []int64{int64(100*round + me)}, next, me), "put")
			r.Check(w.Fence(win.ModeNoSucceed|win.ModeNoPut), "closing fence")
			wantClass(r, win.Put(w, []int64{1}, next, 0), ranks.ErrRMASync, "put after ModeNoSucceed")
			own, _ := win.View[int64](w, me)
			if own[prev] != int64(100*round+prev) {
				r.Errorf("round %d: slot %d holds %d", round, prev, own[prev])
			}
		}
		// Bits that are not asserts: refused before any communication.
		wantClass(r, w.Fence(1<<10), ranks.ErrArg, "fence with a bad assert")
		wantClass(r, w.Fence(-1), ranks.ErrArg, "fence with assert -1")
		r.Check(w.Free(), "free")
	})
}

// Lock and LockAll with ModeNoCheck take no lock (the lock word and the
// holder bits stay clear) and release none; the program's own exclusion
// (turns, separated by barriers) keeps a counter exact; the real locks
// still work after, with nothing left behind. Bad assert bits are ErrArg
// and open no epoch.
func TestLockNoCheck(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		w := alloc(r, 16, 8)
		const rounds = 10
		for range rounds {
			for turn := range size {
				if turn == me {
					r.Check(w.Lock(win.LockExclusive, 0, win.ModeNoCheck), "lock nocheck")
					if word, holders := win.LockState(w, 0); word != 0 || holders != 0 {
						r.Errorf("Lock(ModeNoCheck) took the lock: word %#x, holders %#x", word, holders)
					}
					v := []int64{0}
					r.Check(win.Get(w, v, 0, 0), "get")
					v[0]++
					r.Check(win.Put(w, v, 0, 0), "put")
					r.Check(w.Flush(0), "flush")
					r.Check(w.Unlock(0), "unlock")
				}
				r.Check(coll.Barrier(r.Comm), "barrier")
			}
		}
		// Shared, with ModeNoCheck: everyone reads at once.
		r.Check(w.Lock(win.LockShared, 0, win.ModeNoCheck, win.ModeNoPut), "lock shared nocheck")
		v := []int64{0}
		r.Check(win.Get(w, v, 0, 0), "get")
		if v[0] != int64(size*rounds) {
			r.Errorf("counter %d, want %d", v[0], size*rounds)
		}
		wantClass(r, w.Lock(win.LockShared, 0), ranks.ErrRMASync, "lock twice")
		r.Check(w.Unlock(0), "unlock")
		r.Check(coll.Barrier(r.Comm), "barrier")
		// The real lock, contended: nothing was left locked.
		for range rounds {
			r.Check(w.Lock(win.LockExclusive, 0), "lock")
			r.Check(win.Accumulate(w, []int64{1}, 0, 0, coll.Sum[int64]), "accumulate")
			r.Check(w.Unlock(0), "unlock")
		}
		// LockAll with ModeNoCheck at every member, accumulates to
		// everyone.
		r.Check(coll.Barrier(r.Comm), "barrier")
		r.Check(w.LockAll(win.ModeNoCheck), "lockall nocheck")
		for t := range size {
			if word, holders := win.LockState(w, t); word != 0 || holders != 0 {
				r.Errorf("LockAll(ModeNoCheck) set holder bits at %d: word %#x, holders %#x", t, word, holders)
			}
			r.Check(win.Accumulate(w, []int64{1}, t, 1, coll.Sum[int64]), "accumulate")
		}
		wantClass(r, w.Lock(win.LockShared, 0), ranks.ErrRMASync, "Lock inside LockAll")
		wantClass(r, w.Unlock(0), ranks.ErrRMASync, "Unlock of LockAll's lock")
		r.Check(w.FlushAll(), "flushall")
		r.Check(w.UnlockAll(), "unlockall")
		r.Check(coll.Barrier(r.Comm), "barrier")
		// A real LockAll sets the bits; after UnlockAll an exclusive lock
		// gets in.
		r.Check(w.LockAll(), "lockall")
		if _, holders := win.LockState(w, me); holders&(1<<me) == 0 {
			r.Errorf("LockAll set no holder bit")
		}
		r.Check(w.UnlockAll(), "unlockall")
		r.Check(w.Lock(win.LockExclusive, me), "lock own")
		got := []int64{0, 0}
		r.Check(win.Get(w, got, me, 0), "get")
		r.Check(w.Unlock(me), "unlock")
		if got[1] != int64(size) || me == 0 && got[0] != int64(2*size*rounds) {
			r.Errorf("own slots %v, want [%d] %d", got, 2*size*rounds, size)
		}
		// Bad asserts: ErrArg, and no epoch.
		wantClass(r, w.Lock(win.LockShared, 0, 1<<7), ranks.ErrArg, "lock with a bad assert")
		wantClass(r, w.LockAll(1<<20), ranks.ErrArg, "lockall with a bad assert")
		wantClass(r, win.Put(w, []int64{1}, 0, 0), ranks.ErrRMASync, "put after the refused locks")
		wantClass(r, w.Post([]int{me}, -1), ranks.ErrArg, "post with a bad assert")
		wantClass(r, w.Start([]int{me}, 64), ranks.ErrArg, "start with a bad assert")
		wantClass(r, w.Wait(), ranks.ErrRMASync, "wait after the refused post")
		wantClass(r, w.Complete(), ranks.ErrRMASync, "complete after the refused start")
		r.Check(w.Free(), "free")
	})
}

// Start with ModeNoCheck: the targets posted before it (here: Post, then
// a barrier), with ModeNoCheck too; the epochs work as without it.
// Then, to show that Start does not look for the post, a wrong assert
// (the program's error): Start returns before the target posts.
func TestStartNoCheck(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		w := alloc(r, 8*size, 8)
		for round := range 20 {
			// Member 0 exposes to everyone else; each of them puts its slot.
			if me == 0 && size > 1 {
				origins := make([]int, 0, size-1)
				for o := 1; o < size; o++ {
					origins = append(origins, o)
				}
				r.Check(w.Post(origins, win.ModeNoCheck), "post")
			}
			r.Check(coll.Barrier(r.Comm), "barrier")
			if me == 0 {
				if size > 1 {
					r.Check(w.Wait(), "wait")
				}
				own, _ := win.View[int64](w, 0)
				for o := 1; o < size; o++ {
					if own[o] != int64(round*1000+o) {
						r.Errorf("round %d: slot %d holds %d", round, o, own[o])
					}
				}
			} else {
				r.Check(w.Start([]int{0}, win.ModeNoCheck), "start")
				r.Check(win.Put(w, []int64{int64(round*1000 + me)}, 0, me), "put")
				r.Check(w.Complete(), "complete")
			}
		}
		// Every epoch above has ended at member 0 (its Waits) before the
		// wrong one below begins.
		r.Check(coll.Barrier(r.Comm), "barrier")
		if size > 1 && me < 2 {
			// Member 1 starts before member 0 posts: it is told after.
			if me == 1 {
				r.Check(w.Start([]int{0}, win.ModeNoCheck), "start before the post")
				r.Check(w.Complete(), "complete")
				r.Check(ranks.Send(r.Comm, []int64{1}, 0, 7), "send")
			} else {
				_, err := ranks.Recv(r.Comm, []int64{0}, 1, 7)
				r.Check(err, "recv")
				r.Check(w.Post([]int{1}, win.ModeNoCheck), "post")
				r.Check(w.Wait(), "wait")
			}
		}
		r.Check(w.Free(), "free")
	})
}

// The asserts allocate nothing either.
func TestAssertsDoNotAllocate(t *testing.T) {
	if win.RaceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		w := alloc(r, 16, 8)
		other := 1 - r.Rank
		ops := map[string]func() error{
			"Lock/Unlock": func() error {
				if err := w.Lock(win.LockShared, other, 0); err != nil {
					return err
				}
				return w.Unlock(other)
			},
			"Lock/Unlock ModeNoCheck": func() error {
				if err := w.Lock(win.LockExclusive, other, win.ModeNoCheck); err != nil {
					return err
				}
				return w.Unlock(other)
			},
			"LockAll/UnlockAll ModeNoCheck": func() error {
				if err := w.LockAll(win.ModeNoCheck); err != nil {
					return err
				}
				return w.UnlockAll()
			},
			"Fence ModeNoPrecede|ModeNoSucceed": func() error { return w.Fence(win.ModeNoPrecede | win.ModeNoSucceed) },
		}
		for name, op := range ops {
			var err error
			if n := testing.AllocsPerRun(200, func() {
				if e := op(); e != nil {
					err = e
				}
			}); n != 0 {
				r.Errorf("%s: %v allocations per call, want 0", name, n)
			}
			r.Check(err, name)
		}
		r.Check(w.Free(), "free")
	})
}

// A target's exposure epochs with different groups, one after another
// (odd origins, then even ones): an origin's Start waits for a Post whose
// group has it, not for any Post of the target, and the target's Wait for
// its own group's Completes; so each group sees what the previous one
// put. (Start used to match the target's next Post whatever its group.)
func TestPSCWGroupsDiffer(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		var odd, even []int
		for o := 1; o < size; o++ {
			if o%2 == 1 {
				odd = append(odd, o)
			} else {
				even = append(even, o)
			}
		}
		w := alloc(r, 8*size, 8)
		slot := func(round, o int) int64 { return int64(1000*round + o) }
		const rounds = 20
		for round := range rounds {
			if me == 0 {
				own, _ := win.View[int64](w, 0)
				for _, g := range [][]int{odd, even} {
					r.Check(w.Post(g), "post")
					r.Check(w.Wait(), "wait")
					for _, o := range g {
						if own[o] != slot(round, o) {
							r.Errorf("round %d: after its group's epoch, slot %d holds %d", round, o, own[o])
						}
					}
				}
				continue
			}
			r.Check(w.Start([]int{0}), "start")
			// The other group's slots: the odd group's of this round, or
			// the even group's of the last.
			got := make([]int64, size)
			r.Check(win.Get(w, got, 0, 0), "get")
			for o := 1; o < size; o++ {
				want := slot(round, o)
				if me%2 == 1 && o%2 == 0 {
					want = slot(round-1, o)
				}
				if o%2 != me%2 && (round > 0 || me%2 == 0) && got[o] != want {
					r.Errorf("round %d: origin %d sees slot %d = %d, want %d", round, me, o, got[o], want)
				}
			}
			r.Check(win.Put(w, []int64{slot(round, me)}, 0, me), "put")
			r.Check(w.Complete(), "complete")
		}
		r.Check(w.Free(), "free")
	})
}

// ByteDisplacements: displacements are bytes at every target, whatever
// its unit (which DispUnitOf still reports), for every kind of window.
func TestByteDisplacements(t *testing.T) {
	forSizes(t, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		right, left := (me+1)%size, (me+size-1)%size
		for _, f := range []win.Flavor{win.FlavorShared, win.FlavorAllocate, win.FlavorCreate} {
			var w *win.Win
			var err error
			switch f {
			case win.FlavorShared:
				w, err = win.AllocateShared(r.Comm, 16, 8, win.ByteDisplacements())
			case win.FlavorAllocate:
				w, err = win.Allocate(r.Comm, 16, 8, win.ByteDisplacements())
			default:
				w, err = win.Create(r.Comm, make([]byte, 16), 8, win.ByteDisplacements())
			}
			r.Check(err, f.String())
			if w.DispUnit() != 8 || w.DispUnitOf(right) != 8 {
				r.Errorf("%v: units %d and %d, want 8", f, w.DispUnit(), w.DispUnitOf(right))
			}
			r.Check(w.Fence(0), "fence")
			// Byte 4: between the target's units 0 and 1.
			r.Check(win.Put(w, []int32{int32(100 + me)}, right, 4), "Put")
			r.Check(win.Accumulate(w, []int32{1}, right, 8, coll.Sum[int32]), "Accumulate")
			r.Check(w.Fence(0), "fence")
			var got [2]int32
			r.Check(win.Get(w, got[:], right, 4), "Get")
			r.Check(w.Fence(0), "fence")
			if got[0] != int32(100+me) || got[1] != 1 {
				r.Errorf("%v: bytes 4-11 of member %d: %v, want [%d 1]", f, right, got, 100+me)
			}
			if b := w.Base(); len(b) != 16 || b[4] != byte(100+left) || b[0] != 0 {
				r.Errorf("%v: own part %v: member %d's Put is not at byte 4", f, b, left)
			}
			// The end of the target's part is in bytes too.
			wantClass(r, win.Put(w, []int32{0}, right, 13), ranks.ErrArg, "Put past the end")
			r.Check(w.Free(), "free")
		}
	})
}
