package win

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/shm"
)

// Windows over memory the user already has (Create) or attaches later
// (CreateDynamic). The memory stays in its owner's process, which the
// others cannot map, so they reach it with single-copy
// process_vm_readv/writev; the window's control area is shared memory
// as for AllocateShared, with a region table per member that says what
// it exposes. Accumulates to a target take that target's accumulate lock
// (a word in its control line) around a read, the op and a write, so
// they are atomic with respect to each other, as MPI requires; a holder
// that dies poisons that lock as for Lock. Elements no larger than 8
// bytes and aligned to their size never straddle a page, and the kernel
// copies a page at a time, so an origin killed during an accumulate
// leaves each element written or not, never half.
//
// A dynamic window's member keeps the list of the regions it attached in
// its own memory, as many as it likes: the region table in shared memory
// says where the list is, and peers read it with process_vm_readv when
// its version changed since they last did.
//
// Go never moves heap memory, and every exposed buffer is pinned
// (runtime.Pinner) while the window exposes it.

// regionTable is a member's entry (64 bytes, 64-byte aligned):
//
//	+0   version uint64  odd while the member rewrites the entry (a
//	                     sequence lock: readers retry)
//	+8   pid     uint32  the member's process, for process_vm_readv/writev
//	+12  count   uint32  dynamic windows: regions in the member's list
//	+16  list    uint64  dynamic windows: the list's address in the
//	                     member's process, count regions {addr, len
//	                     uint64} sorted by address. A published list never
//	                     changes: Attach and Detach publish a new one.
//	+24  addr    uint64  Create: the exposed memory's address
//	+32  len     uint64  and its length
type regionTable struct {
	version atomic.Uint64
	pid     atomic.Uint32
	count   atomic.Uint32
	list    atomic.Uint64
	addr    atomic.Uint64
	len     atomic.Uint64
	_       [24]byte
}

const regionTableBytes = 64

// region is an entry of a member's list, in the member's process.
type region struct{ addr, len uint64 }

// regionList is a member's list of regions: this rank's own (with the
// memory of each), or a peer's as read at version.
type regionList struct {
	version uint64
	r       []region
	bufs    [][]byte
}

// find returns the index of the region that holds n bytes at address a,
// or -1.
func (l *regionList) find(a uint64, n int) int {
	if l == nil {
		return -1
	}
	lo, hi := 0, len(l.r) // the regions from hi on start after a
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.r[m].addr <= a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 {
		return -1
	}
	if g := l.r[i]; a-g.addr > g.len || uint64(n) > g.len-(a-g.addr) {
		return -1
	}
	return i
}

func init() {
	if unsafe.Sizeof(regionTable{}) != regionTableBytes || unsafe.Offsetof(regionTable{}.addr) != 24 ||
		unsafe.Sizeof(region{}) != 16 {
		panic("win: region table layout drifted from its documentation")
	}
}

func (w *Win) table(t int) *regionTable {
	return (*regionTable)(unsafe.Add(w.regions, t*regionTableBytes))
}

// Create makes a window over buf, this rank's memory (any []byte: from
// make, or from ranks.AllocMem). It is collective over c. When every
// member's buf is from ranks.AllocMem, the members map each other's
// memory: the window is shared memory, SharedQuery works, and operations
// are loads, stores and hardware atomics. Otherwise peers reach it with
// single-copy process_vm_readv/writev, and SharedQuery is not available.
// opts are hints (info.go); same_disp_unit saves gathering the units.
func Create(c *ranks.Comm, buf []byte, dispUnit int, opts ...Option) (*Win, error) {
	const op = "Win.Create"
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	if dispUnit <= 0 {
		return nil, &ranks.Error{Class: ranks.ErrArg, Op: op, Rank: -1, Detail: fmt.Sprintf("displacement unit %d", dispUnit)}
	}
	h, err := parseOptions(op, opts)
	if err != nil {
		return nil, err
	}
	if ext.AcrossNodes(c, op) != nil {
		return newNet(c, op, buf[:len(buf):len(buf)], dispUnit, false, h, FlavorCreate)
	}
	w, err := newRemote(c, op, dispUnit, false, h)
	if err != nil {
		return nil, err
	}
	if len(buf) > 0 {
		w.pin(buf)
		w.own = buf[:len(buf):len(buf)]
		tb := w.table(w.rank)
		tb.addr.Store(uint64(addrOfBytes(buf)))
		tb.len.Store(uint64(len(buf)))
	}
	if err := w.mapAllocMem(buf); err != nil {
		w.Free()
		return nil, err
	}
	// Every member's region must be in its table before anyone uses it.
	// (A barrier, not a Fence: the user's first epoch is the user's.)
	if err := coll.Barrier(w.c); err != nil {
		w.Free()
		return nil, w.relabel(err)
	}
	return w, nil
}

// mapAllocMem makes a window created over buf shared memory when every
// member's memory is from ranks.AllocMem (or empty): each member maps
// the others' memfds, and the window then works as AllocateShared's
// (SharedQuery, loads and stores, hardware atomics). Otherwise, or if a
// member cannot map another's memory, it stays a window reached with
// process_vm_readv/writev. Collective; every member decides alike.
func (w *Win) mapAllocMem(buf []byte) error {
	// Per member: AllocMem (1) or not (0), descriptor, allocation id,
	// offset of buf in the allocation, the allocation's size, len(buf).
	const fields = 6
	mine := make([]int64, fields)
	if ref, ok := ranks.MemOf(buf); ok || len(buf) == 0 {
		mine[0] = 1
		mine[1], mine[2], mine[3], mine[4] = int64(ref.FD), int64(ref.ID), int64(ref.Offset), int64(ref.Size)
	}
	mine[5] = int64(len(buf))
	all := make([]int64, fields*w.size)
	if err := coll.Allgather(w.c, mine, all); err != nil {
		return err
	}
	for r := range w.size {
		if all[fields*r] == 0 {
			return nil // someone's memory is on its heap: stay remote
		}
	}
	parts := make([][]byte, w.size)
	var maps []*shm.Mem
	ok := 1
	for r := range w.size {
		f := all[fields*r : fields*r+fields]
		switch {
		case f[5] == 0:
			parts[r] = []byte{}
		case r == w.rank:
			parts[r] = buf[:len(buf):len(buf)]
		default:
			m, err := shm.OpenMem(ext.Pid(w.c, r), int(f[1]), int(f[4]))
			if err != nil {
				ok = 0
				continue
			}
			m.CloseFD()
			maps = append(maps, m)
			parts[r] = m.B[f[3] : f[3]+f[5] : f[3]+f[5]]
		}
	}
	agreed, err := coll.AllreduceValue(w.c, ok, coll.Min[int])
	if err != nil || agreed == 0 {
		for _, m := range maps {
			m.Close()
		}
		return err
	}
	for r := range w.size {
		w.length[r] = int(all[fields*r+5])
	}
	w.parts, w.peerMem, w.remote = parts, maps, false
	return nil
}

// CreateDynamic makes a window with no memory; members expose memory with
// Attach and withdraw it with Detach. Displacements are addresses in the
// target (ranks.Address of the target's buffer, sent to the origin).
// opts are hints (info.go).
func CreateDynamic(c *ranks.Comm, opts ...Option) (*Win, error) {
	const op = "Win.CreateDynamic"
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	h, err := parseOptions(op, opts)
	if err != nil {
		return nil, err
	}
	if ext.AcrossNodes(c, op) != nil {
		return newNet(c, op, nil, 1, true, h, FlavorDynamic)
	}
	return newRemote(c, op, 1, true, h)
}

// newRemote makes a window over user memory. Every member's part has no
// bytes in the window's memory, so only the units can differ: not when
// the hints say they do not, nor in a dynamic window (all 1).
func newRemote(c *ranks.Comm, op string, dispUnit int, dynamic bool, h *hints) (*Win, error) {
	if err := ext.AcrossNodes(c, op); err != nil {
		return nil, err // Create and CreateDynamic take newNet there
	}
	d, err := c.Dup()
	if err != nil {
		return nil, err
	}
	w, err := build(d, op, 0, dispUnit, true, h, dynamic || h.sameDispUnit)
	if err != nil {
		d.Free()
		return nil, err
	}
	w.dynamic = dynamic
	w.flavor = FlavorCreate
	if dynamic {
		w.flavor = FlavorDynamic
	}
	w.pins = map[uintptr]*runtime.Pinner{}
	return w, nil
}

// Address is the displacement of b's first byte in a dynamic window.
func Address(b []byte) int { return int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// Attach exposes buf in a dynamic window (local). A member may attach
// any number of regions; they must not overlap (ErrArg).
func (w *Win) Attach(buf []byte) error {
	const op = "Win.Attach"
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.dynamic {
		return w.errf(ranks.ErrWin, op, -1, "not a dynamic window")
	}
	if len(buf) == 0 {
		return nil
	}
	w.attachMu.Lock()
	defer w.attachMu.Unlock()
	old := w.lists[w.rank].Load()
	a := uint64(addrOfBytes(buf))
	var n int // regions before buf
	if old != nil {
		n = len(old.r)
		for i, g := range old.r {
			if g.addr >= a {
				n = i
				break
			}
		}
		if n > 0 && old.r[n-1].addr+old.r[n-1].len > a || n < len(old.r) && a+uint64(len(buf)) > old.r[n].addr {
			return w.errf(ranks.ErrArg, op, -1, "the memory overlaps memory attached already")
		}
	}
	if old != nil && len(old.r) >= 1<<32-1 {
		return w.errf(ranks.ErrNoMem, op, -1, "%d regions attached already", len(old.r))
	}
	l := &regionList{}
	if old != nil {
		l.r = append(append(append(make([]region, 0, len(old.r)+1), old.r[:n]...), region{a, uint64(len(buf))}), old.r[n:]...)
		l.bufs = append(append(append(make([][]byte, 0, len(old.r)+1), old.bufs[:n]...), buf[:len(buf):len(buf)]), old.bufs[n:]...)
	} else {
		l.r, l.bufs = []region{{a, uint64(len(buf))}}, [][]byte{buf[:len(buf):len(buf)]}
	}
	w.pin(buf)
	w.publish(l)
	return nil
}

// Detach withdraws memory that Attach exposed (local). The caller makes
// sure, by its own synchronization, that no origin still accesses it.
func (w *Win) Detach(buf []byte) error {
	const op = "Win.Detach"
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.dynamic {
		return w.errf(ranks.ErrWin, op, -1, "not a dynamic window")
	}
	w.attachMu.Lock()
	defer w.attachMu.Unlock()
	a := uint64(addrOfBytes(buf))
	if old := w.lists[w.rank].Load(); old != nil {
		for i, g := range old.r {
			if g.addr == a {
				l := &regionList{
					r:    append(append(make([]region, 0, len(old.r)-1), old.r[:i]...), old.r[i+1:]...),
					bufs: append(append(make([][]byte, 0, len(old.r)-1), old.bufs[:i]...), old.bufs[i+1:]...),
				}
				w.publish(l)
				if p := w.pins[uintptr(a)]; p != nil {
					p.Unpin()
					delete(w.pins, uintptr(a))
				}
				return nil
			}
		}
	}
	return w.errf(ranks.ErrArg, op, -1, "memory not attached")
}

// publish makes l this rank's list of regions (under attachMu). The
// previous list stays valid for peers that read it until they see the
// new version.
func (w *Win) publish(l *regionList) {
	if w.net != nil {
		w.lists[w.rank].Store(l) // read by this rank's server only
		return
	}
	tb := w.table(w.rank)
	var list uint64
	if len(l.r) > 0 {
		list = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(l.r))))
	}
	tb.version.Add(1)
	tb.list.Store(list)
	tb.count.Store(uint32(len(l.r)))
	tb.version.Add(1)
	w.lists[w.rank].Store(l)
}

// pin keeps buf where it is while the window exposes it (under attachMu,
// or before the window is returned).
func (w *Win) pin(buf []byte) {
	p := new(runtime.Pinner)
	p.Pin(unsafe.SliceData(buf))
	w.pins[addrOfBytes(buf)] = p
}

func addrOfBytes(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// where is the target memory of an operation: local bytes (shared
// memory, or this rank's own), or an address in the target's process.
type where struct {
	local []byte
	pid   int
	addr  uintptr
}

// locate finds n bytes of target t at displacement disp.
func (w *Win) locate(op string, t, disp, n int) (where, error) {
	if !w.remote {
		b, err := w.span(op, t, disp, n)
		return where{local: b}, err
	}
	if err := w.rmaTarget(op, t); err != nil {
		return where{}, err
	}
	if disp < 0 {
		return where{}, w.errf(ranks.ErrArg, op, t, "negative displacement %d", disp)
	}
	if w.net != nil {
		return w.netLocate(op, t, disp, n)
	}
	tb := w.table(t)
	if !w.dynamic {
		at, l := uint64(disp)*uint64(w.unit(t)), tb.len.Load()
		if at > l || uint64(n) > l-at {
			return where{}, w.errf(ranks.ErrArg, op, t, "%d bytes at displacement %d: not in memory the target exposes", n, disp)
		}
		if t == w.rank {
			return where{local: w.own[at : int(at)+n : int(at)+n]}, nil
		}
		return where{pid: int(tb.pid.Load()), addr: uintptr(tb.addr.Load() + at)}, nil
	}
	a := uint64(disp)
	if t == w.rank {
		l := w.lists[t].Load()
		i := l.find(a, n)
		if i < 0 {
			return where{}, w.errf(ranks.ErrArg, op, t, "%d bytes at address %#x: not in memory this rank attached", n, a)
		}
		off := int(a - l.r[i].addr)
		return where{local: l.bufs[i][off : off+n : off+n]}, nil
	}
	for {
		v := tb.version.Load()
		if v&1 != 0 {
			spin.Pause() // being rewritten: a few stores
			continue
		}
		l := w.lists[t].Load()
		if l == nil || l.version != v {
			var err error
			if l, err = w.readList(op, t, v); err != nil {
				return where{}, err
			}
			if l == nil {
				continue // rewritten meanwhile
			}
			w.lists[t].Store(l)
		}
		if l.find(a, n) < 0 {
			return where{}, w.errf(ranks.ErrArg, op, t, "%d bytes at address %#x: not in memory the target attached", n, a)
		}
		return where{pid: int(tb.pid.Load()), addr: uintptr(a)}, nil
	}
}

// readList reads peer t's list of regions as of version v, or returns
// nil if t rewrote its table meanwhile.
func (w *Win) readList(op string, t int, v uint64) (*regionList, error) {
	tb := w.table(t)
	count, list, pid := tb.count.Load(), tb.list.Load(), int(tb.pid.Load())
	l := &regionList{version: v, r: make([]region, count)}
	if count > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(l.r))), 16*int(count))
		if err := copyRaw(pid, uintptr(list), b, false); err != nil {
			if tb.version.Load() != v {
				return nil, nil // a list withdrawn under us
			}
			return nil, w.copyErr(op, t, err)
		}
	}
	if tb.version.Load() != v {
		return nil, nil
	}
	return l, nil
}

// read copies the target bytes into b.
func (w *Win) read(op string, t int, at where, b []byte) error {
	if at.local != nil || len(b) == 0 {
		w.copyLocal(t, b, at.local)
		return nil
	}
	if at.pid == netPid {
		return w.netRead(op, t, at.addr, b)
	}
	if err := copyRaw(at.pid, at.addr, b, false); err != nil {
		return w.copyErr(op, t, err)
	}
	return nil
}

// write copies b into the target bytes.
func (w *Win) write(op string, t int, at where, b []byte) error {
	if at.local != nil || len(b) == 0 {
		w.copyLocal(t, at.local, b)
		return nil
	}
	if at.pid == netPid {
		return w.netWrite(op, t, at.addr, b)
	}
	if err := copyRaw(at.pid, at.addr, b, true); err != nil {
		return w.copyErr(op, t, err)
	}
	return nil
}

// copyLocal copies between the origin and target t's part (mapped
// here), in cache-sized steps (spin.CopyCached): a target usually reads
// soon what a Put wrote. But when the target's part is
// larger than half the last-level cache (streamPart), its data cannot
// stay cached, and one copy with non-temporal stores saves reading each
// line before writing it (as glibc's memcpy does above a fraction of the
// cache). osu_put_bw at 4 MiB, -W 1 (a 4 MiB window) / -W 64 (256 MiB):
// 47 / 13 GB/s stepped, 24 / 20 GB/s in one call (2026-11-24).
func (w *Win) copyLocal(t int, dst, src []byte) {
	if w.length[t] > streamPart || len(src) == 0 {
		copy(dst, src)
		return
	}
	spin.CopyCached(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), min(len(dst), len(src)))
}

// streamPart is half the last-level cache as cpuid reports it, or 16 MiB
// where it does not say (this machine kind: L3 32 MiB).
var streamPart = func() int {
	if l3 := cpuid.CPU.Cache.L3; l3 > 0 {
		return l3 / 2
	}
	return 16 << 20
}()

// copyRaw copies b to (write) or from process pid's memory at addr
// with process_vm_writev/readv, resuming after partial copies.
func copyRaw(pid int, addr uintptr, b []byte, write bool) error {
	var iov [1]unix.Iovec
	var riov [1]unix.RemoteIovec
	for off := 0; off < len(b); {
		iov[0].Base = &b[off]
		iov[0].SetLen(len(b) - off)
		riov[0] = unix.RemoteIovec{Base: addr + uintptr(off), Len: len(b) - off}
		var k int
		var err error
		if write {
			k, err = unix.ProcessVMWritev(pid, iov[:], riov[:], 0)
		} else {
			k, err = unix.ProcessVMReadv(pid, iov[:], riov[:], 0)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if k <= 0 {
			return unix.EFAULT
		}
		off += k
	}
	return nil
}

// copyErr is the error of a cross-process copy with target t that
// failed with err: ErrProcFailed if t failed (ESRCH: its memory is gone,
// which the kernel does before it marks t's liveness word, so ranks
// waits for the mark and records the failure), ErrPeerFinalized if it
// finalized and left, else the kernel's error.
func (w *Win) copyErr(op string, t int, err error) error {
	switch ext.CopyFailed(w.c, t, err) {
	case ext.Failed:
		return w.procFailed(op, t, "the target has failed")
	case ext.Finalized:
		return w.errf(ranks.ErrPeerFinalized, op, t, "the target finalized and exited")
	}
	return w.errf(ranks.ErrOther, op, t, "cross-process copy: %v", err)
}

// lockAcc takes target t's accumulate lock.
func (w *Win) lockAcc(op string, t int) error {
	err := w.wait(op, t, untilAccLock, 0)
	if raceEnabled && err == nil {
		w.raceAcc.Add(1) // acquire, for the race detector (race.go)
	}
	return err
}

func (w *Win) unlockAcc(t int) {
	if raceEnabled {
		w.raceAcc.Add(1) // release, for the race detector
	}
	w.control(t).acc.CompareAndSwap(uint32(w.rank+1), 0)
	w.wake(t)
}
