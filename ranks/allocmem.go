package ranks

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory for large messages (MPI_Alloc_mem / MPI_Free_mem).
//
// A large message moves with process_vm_readv/writev, and the kernel pins
// and copies it one page at a time: on 4 KiB pages it costs about as much
// as the copy itself (osu_bw -mem heap against -mem alloc shows the
// difference; README has the figures). The Go heap gets no transparent huge
// pages where the kernel grants them only on request
// (/sys/kernel/mm/transparent_hugepage/enabled = madvise), so AllocMem
// hands out memory that asks for them: an anonymous private mapping,
// aligned to 2 MiB and advised MADV_HUGEPAGE. Where huge pages are not
// available the memory works the same, on small pages.

const hugePage = 2 << 20

var allocs struct {
	sync.Mutex
	sizes map[uintptr]uintptr // start of each live allocation → mapped length
}

// AllocMem returns n bytes of zeroed memory for message buffers, outside
// the Go heap: the garbage collector neither moves nor frees it, and it
// must not hold Go pointers. Release it with FreeMem. It may be used with
// any communicator and from any goroutine, before Init and after Finalize.
func AllocMem(n int) ([]byte, error) {
	if n <= 0 {
		return nil, newErr(ErrCount, "AllocMem", -1, "size %d, want > 0", n)
	}
	length := (uintptr(n) + hugePage - 1) &^ (hugePage - 1)
	// Map one huge page more than needed, keep the aligned part and give
	// back the ends.
	raw, err := unix.MmapPtr(-1, 0, nil, length+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, newErr(ErrNoMem, "AllocMem", -1, "mmap of %d bytes: %v", length+hugePage, err)
	}
	base := uintptr(raw)
	start := (base + hugePage - 1) &^ (hugePage - 1)
	if head := start - base; head > 0 {
		unix.MunmapPtr(raw, head)
	}
	if tail := base + hugePage - start; tail > 0 {
		unix.MunmapPtr(unsafe.Add(raw, start-base+length), tail)
	}
	p := unsafe.Add(raw, start-base)
	b := unsafe.Slice((*byte)(p), length)
	// Advice only: without THP support the memory stays on small pages.
	// Faulting it in now puts the cost (and the huge-page allocation) here
	// rather than in the first transfer.
	unix.Madvise(b, unix.MADV_HUGEPAGE)
	unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	allocs.Lock()
	if allocs.sizes == nil {
		allocs.sizes = map[uintptr]uintptr{}
	}
	allocs.sizes[start] = length
	allocs.Unlock()
	return b[:n:n], nil
}

// FreeMem releases memory from AllocMem. b must be the slice AllocMem
// returned, or any slice that starts where it starts. Using the memory
// afterwards is a fault, as after MPI_Free_mem.
func FreeMem(b []byte) error {
	if cap(b) == 0 {
		return newErr(ErrBuffer, "FreeMem", -1, "empty slice")
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	allocs.Lock()
	length, ok := allocs.sizes[start]
	delete(allocs.sizes, start)
	allocs.Unlock()
	if !ok {
		return newErr(ErrBuffer, "FreeMem", -1, "memory at %#x is not from AllocMem, or already freed", start)
	}
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), length); err != nil {
		return newErr(ErrOther, "FreeMem", -1, "munmap: %v", err)
	}
	return nil
}
