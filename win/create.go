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
// Go never moves heap memory, and every exposed buffer is pinned
// (runtime.Pinner) while the window exposes it.

// maxRegions bounds the regions a member exposes at once (Attach).
const maxRegions = 16

// regionTable is a member's table (320 bytes, 64-byte aligned):
//
//	+0   version uint64  odd while the member rewrites the table (a
//	                     sequence lock: readers retry)
//	+8   pid     uint32  the member's process, for process_vm_readv/writev
//	+16  regions [16] {addr, len uint64}: exposed memory, len 0 if unused
type regionTable struct {
	version atomic.Uint64
	pid     atomic.Uint32
	_       uint32
	regions [maxRegions]struct{ addr, len atomic.Uint64 }
	_       [48]byte
}

const regionTableBytes = 320

func init() {
	if unsafe.Sizeof(regionTable{}) != regionTableBytes || unsafe.Offsetof(regionTable{}.regions) != 16 {
		panic("win: region table layout drifted from its documentation")
	}
}

func (w *Win) table(t int) *regionTable {
	return (*regionTable)(unsafe.Add(w.regions, t*regionTableBytes))
}

type pinned struct {
	runtime.Pinner
	buf []byte
}

// Create makes a window over buf, this rank's memory (any []byte: from
// make, or from ranks.AllocMem). It is collective over c. When every
// member's buf is from ranks.AllocMem, the members map each other's
// memory: the window is shared memory, SharedQuery works, and operations
// are loads, stores and hardware atomics. Otherwise peers reach it with
// single-copy process_vm_readv/writev, and SharedQuery is not available.
func Create(c *ranks.Comm, buf []byte, dispUnit int) (*Win, error) {
	const op = "Win.Create"
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	if dispUnit <= 0 {
		return nil, &ranks.Error{Class: ranks.ErrArg, Op: op, Rank: -1, Detail: fmt.Sprintf("displacement unit %d", dispUnit)}
	}
	w, err := newRemote(c, dispUnit, false)
	if err != nil {
		return nil, err
	}
	if len(buf) > 0 {
		w.expose(0, buf)
	}
	if err := w.mapAllocMem(buf); err != nil {
		w.Free()
		return nil, err
	}
	// Every member's region must be in its table before anyone uses it.
	if err := w.Fence(0); err != nil {
		w.Free()
		return nil, err
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
func CreateDynamic(c *ranks.Comm) (*Win, error) {
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: "Win.CreateDynamic", Rank: -1, Detail: "nil communicator"}
	}
	return newRemote(c, 1, true)
}

func newRemote(c *ranks.Comm, dispUnit int, dynamic bool) (*Win, error) {
	d, err := c.Dup()
	if err != nil {
		return nil, err
	}
	w, err := build(d, 0, dispUnit, true)
	if err != nil {
		d.Free()
		return nil, err
	}
	w.dynamic = dynamic
	w.pins = map[uintptr]*pinned{}
	return w, nil
}

// Address is the displacement of b's first byte in a dynamic window.
func Address(b []byte) int { return int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// Attach exposes buf in a dynamic window (local).
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
	tb := w.table(w.rank)
	for i := range tb.regions {
		if tb.regions[i].len.Load() == 0 {
			w.expose(i, buf)
			return nil
		}
	}
	return w.errf(ranks.ErrNoMem, op, -1, "%d regions attached already", maxRegions)
}

// Detach withdraws memory that Attach exposed (local). The caller makes
// sure, by its own synchronization, that no origin still accesses it.
func (w *Win) Detach(buf []byte) error {
	const op = "Win.Detach"
	if err := w.usable(op); err != nil {
		return err
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	tb := w.table(w.rank)
	for i := range tb.regions {
		if uintptr(tb.regions[i].addr.Load()) == addr && tb.regions[i].len.Load() != 0 {
			tb.version.Add(1)
			tb.regions[i].len.Store(0)
			tb.version.Add(1)
			if p := w.pins[addr]; p != nil {
				p.Unpin()
				delete(w.pins, addr)
			}
			return nil
		}
	}
	return w.errf(ranks.ErrArg, op, -1, "memory not attached")
}

func (w *Win) expose(i int, buf []byte) {
	p := &pinned{buf: buf}
	p.Pin(unsafe.SliceData(buf))
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	w.pins[addr] = p
	tb := w.table(w.rank)
	tb.version.Add(1)
	tb.regions[i].addr.Store(uint64(addr))
	tb.regions[i].len.Store(uint64(len(buf)))
	tb.version.Add(1)
}

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
	if err := w.target(op, t); err != nil {
		return where{}, err
	}
	if disp < 0 {
		return where{}, w.errf(ranks.ErrArg, op, t, "negative displacement %d", disp)
	}
	tb := w.table(t)
	for {
		v := tb.version.Load()
		if v&1 != 0 {
			continue // being rewritten: a few stores
		}
		var addr uintptr
		ok := false
		if w.dynamic {
			a := uint64(disp)
			for i := range tb.regions {
				base, l := tb.regions[i].addr.Load(), tb.regions[i].len.Load()
				if l != 0 && a >= base && a-base <= l && uint64(n) <= l-(a-base) {
					addr, ok = uintptr(a), true
					break
				}
			}
		} else {
			base, l := tb.regions[0].addr.Load(), tb.regions[0].len.Load()
			at := uint64(disp) * uint64(w.dispUnit[t])
			if at <= l && uint64(n) <= l-at {
				addr, ok = uintptr(base+at), true
			}
		}
		if tb.version.Load() != v {
			continue
		}
		if !ok {
			return where{}, w.errf(ranks.ErrArg, op, t, "%d bytes at displacement %d: not in memory the target exposes", n, disp)
		}
		if t == w.rank {
			// Our own memory: the exposed slice itself.
			for base, p := range w.pins {
				if addr >= base && addr-base+uintptr(n) <= uintptr(len(p.buf)) {
					off := int(addr - base)
					return where{local: p.buf[off : off+n : off+n], addr: addr}, nil
				}
			}
		}
		return where{pid: int(tb.pid.Load()), addr: addr}, nil
	}
}

// read copies the target bytes into b.
func (w *Win) read(op string, t int, at where, b []byte) error {
	if at.local != nil || len(b) == 0 {
		w.copyLocal(t, b, at.local)
		return nil
	}
	return w.cma(op, t, at, b, unix.ProcessVMReadv)
}

// write copies b into the target bytes.
func (w *Win) write(op string, t int, at where, b []byte) error {
	if at.local != nil || len(b) == 0 {
		w.copyLocal(t, at.local, b)
		return nil
	}
	return w.cma(op, t, at, b, unix.ProcessVMWritev)
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

func (w *Win) cma(op string, t int, at where, b []byte,
	rw func(int, []unix.Iovec, []unix.RemoteIovec, uint) (int, error)) error {
	var iov [1]unix.Iovec
	var riov [1]unix.RemoteIovec
	for off := 0; off < len(b); {
		iov[0].Base = &b[off]
		iov[0].SetLen(len(b) - off)
		riov[0] = unix.RemoteIovec{Base: at.addr + uintptr(off), Len: len(b) - off}
		k, err := rw(at.pid, iov[:], riov[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || k <= 0 {
			if w.failed(t) {
				return w.procFailed(op, t, "the target has failed")
			}
			return w.errf(ranks.ErrOther, op, t, "cross-process copy: %v", err)
		}
		off += k
	}
	return nil
}

// lockAcc takes target t's accumulate lock.
func (w *Win) lockAcc(op string, t int) error {
	return w.wait(op, t, untilAccLock, 0)
}

func (w *Win) unlockAcc(t int) {
	w.control(t).acc.CompareAndSwap(uint32(w.rank+1), 0)
	w.wake(t)
}
