package ranks

import (
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory for large messages and windows (MPI_Alloc_mem / MPI_Free_mem).
//
// Each allocation is its own anonymous memfd, mapped MAP_SHARED, so that
// peers can map it too: a window created over it (win.Create) is loaded
// and stored directly by every member, and a large message from or into
// it is copied by the peer with memcpy through that mapping instead of
// process_vm_readv/writev (peermem.go). That matters for speed: shmem
// gets no transparent huge pages here (shmem_enabled = never), and the
// kernel's per-page pinning of process_vm_readv on 4 KiB pages halves
// its bandwidth (8–12 GB/s at 4 MiB), while memcpy from a mapping of the
// same memory runs at 25–27 GB/s.
//
// A peer opens the memfd through /proc/PID/fd/FD while this process keeps
// the descriptor open, that is until FreeMem. Nothing can leak: the
// memory has no name and goes when the last descriptor and mapping do.

// memRegion is one live allocation.
type memRegion struct {
	p             unsafe.Pointer // the mapping (outside the Go heap)
	start, length uintptr        // the same, as numbers: page aligned
	fd            int            // the memfd, open until FreeMem
	id            uint32         // unique in this process; tells reused fds apart
}

var allocs struct {
	sync.Mutex // serializes AllocMem and FreeMem; readers take none
	nextID     uint32
	// live is the sorted list of live regions, replaced whole on each
	// change so that the send path looks regions up without a lock.
	live atomic.Pointer[[]memRegion]
}

// AllocMem returns n bytes of zeroed memory for message buffers and
// windows, outside the Go heap: the garbage collector neither moves nor
// frees it, and it must not hold Go pointers. Release it with FreeMem. It
// may be used with any communicator and from any goroutine, before Init
// and after Finalize. Peers can map it (see win.Create), and large
// messages from or into it are copied through such mappings.
func AllocMem(n int) ([]byte, error) {
	if n <= 0 {
		return nil, newErr(ErrCount, "AllocMem", -1, "size %d, want > 0", n)
	}
	length := (uintptr(n) + pageSize - 1) &^ (pageSize - 1)
	fd, err := unix.MemfdCreate("shmpi-mem", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, newErr(ErrNoMem, "AllocMem", -1, "memfd_create: %v", err)
	}
	if err := unix.Ftruncate(fd, int64(length)); err != nil {
		unix.Close(fd)
		return nil, newErr(ErrNoMem, "AllocMem", -1, "ftruncate memfd to %d bytes: %v", length, err)
	}
	raw, err := unix.MmapPtr(fd, 0, nil, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, newErr(ErrNoMem, "AllocMem", -1, "mmap of %d bytes: %v", length, err)
	}
	b := unsafe.Slice((*byte)(raw), length)
	// Faulting it in now puts the cost here rather than in the first
	// transfer. Advice only: where the kernel lacks it, pages fault later.
	unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	allocs.Lock()
	allocs.nextID++
	reg := memRegion{p: raw, start: uintptr(raw), length: length, fd: fd, id: allocs.nextID}
	var next []memRegion
	if old := allocs.live.Load(); old != nil {
		next = append(next, *old...)
	}
	i := sort.Search(len(next), func(i int) bool { return next[i].start > reg.start })
	next = append(next, memRegion{})
	copy(next[i+1:], next[i:])
	next[i] = reg
	allocs.live.Store(&next)
	allocs.Unlock()
	return b[:n:n], nil
}

const pageSize = 4 << 10

// FreeMem releases memory from AllocMem. b must be the slice AllocMem
// returned, or any slice that starts where it starts. Using the memory
// afterwards is a fault, as after MPI_Free_mem. A peer that still maps
// it (a window not yet freed, a cached mapping of a past message) keeps
// the pages alive until it unmaps them.
func FreeMem(b []byte) error {
	if cap(b) == 0 {
		return newErr(ErrBuffer, "FreeMem", -1, "empty slice")
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	allocs.Lock()
	var reg memRegion
	found := false
	if old := allocs.live.Load(); old != nil {
		next := make([]memRegion, 0, len(*old))
		for _, r := range *old {
			if r.start == start && !found {
				reg, found = r, true
				continue
			}
			next = append(next, r)
		}
		if found {
			allocs.live.Store(&next)
		}
	}
	allocs.Unlock()
	if !found {
		return newErr(ErrBuffer, "FreeMem", -1, "memory at %#x is not from AllocMem, or already freed", start)
	}
	unix.Close(reg.fd)
	if err := unix.MunmapPtr(reg.p, reg.length); err != nil {
		return newErr(ErrOther, "FreeMem", -1, "munmap: %v", err)
	}
	return nil
}

// findMem returns the live AllocMem region that holds [addr, addr+n), if
// any. It takes no lock and allocates nothing.
func findMem(addr uintptr, n int) (memRegion, bool) {
	live := allocs.live.Load()
	if live == nil || n <= 0 {
		return memRegion{}, false
	}
	regs := *live
	lo, hi := 0, len(regs)
	for lo < hi { // first region starting above addr
		m := int(uint(lo+hi) >> 1)
		if regs[m].start <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return memRegion{}, false
	}
	r := regs[lo-1]
	if addr+uintptr(n) > r.start+r.length {
		return memRegion{}, false
	}
	return r, true
}

// MemRef says where a slice of AllocMem memory lives, so that another
// process can map it: it opens /proc/Pid/fd/FD (while this process has
// not freed the memory), maps it, and finds the slice Offset bytes in.
// ID tells allocations that reused a descriptor number apart.
type MemRef struct {
	FD     int
	ID     uint32
	Offset uintptr
	Size   uintptr // of the whole allocation
}

// MemOf reports whether b lies wholly in memory from AllocMem, and where.
func MemOf(b []byte) (MemRef, bool) {
	if len(b) == 0 {
		return MemRef{}, false
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r, ok := findMem(addr, len(b))
	if !ok {
		return MemRef{}, false
	}
	return MemRef{FD: r.fd, ID: r.id, Offset: addr - r.start, Size: r.length}, true
}
