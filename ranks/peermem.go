package ranks

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mappings of peers' AllocMem memory (allocmem.go). When a rendezvous
// buffer lies in memory from AllocMem, the owner names it in the
// handshake slot (memfd descriptor and allocation id, and the region's
// start), and the other side maps the region once and copies with
// memmove instead of process_vm_readv/writev. The mappings are cached:
// a sender that sends from the same buffer again costs no syscall.
//
// The cache holds peerMapSlots mappings, least recently used first out.
// Entries are used and replaced only under the engine lock, and a
// pointer from one is used only until the lock is let go, so an
// eviction never unmaps memory a copy is using. A cached mapping keeps
// a region the peer has freed alive until the entry is replaced: at
// most peerMapSlots regions, and an entry is replaced at once when the
// peer's descriptor number turns up with a new allocation id (the old
// one was closed, so the region was freed).
//
// A proxy that lends a mapped buffer to its agent (borrowRndv) pins its
// entry until the agent gives it back: a pinned entry is never replaced,
// since the agent's MPI reads the memory after the lock is let go.

const peerMapSlots = 8

type peerMap struct {
	rank int    // world rank of the owner
	fd   int    // the owner's descriptor
	id   uint32 // the owner's allocation id
	b    []byte // our mapping; nil: mapping failed, use process_vm_*
	used uint64 // last use, for eviction; 0: the slot is empty
	pins int    // buffers lent from this mapping and not given back
}

type peerMaps struct {
	slots [peerMapSlots]peerMap
	tick  uint64
}

// memWord packs a region's descriptor and allocation id into a handshake
// word; 0 means "not AllocMem memory" (ids start at 1).
func memWord(r memRegion) uint64 { return uint64(r.id)<<32 | uint64(uint32(r.fd)) }

// publishMem names the AllocMem region that holds [addr, addr+n), if any,
// in the two handshake words.
func publishMem(addr uintptr, n int, word, base interface{ Store(uint64) }) {
	if r, ok := findMem(addr, n); ok {
		word.Store(memWord(r))
		base.Store(uint64(r.start))
		return
	}
	word.Store(0)
}

// peerPtr returns where the peer's address raddr (in a region it named
// with word and base) is mapped here, for n bytes, or nil when the copy
// must go through process_vm_readv/writev instead.
func (e *engine) peerPtr(w int, word, base uint64, raddr uintptr, n int) unsafe.Pointer {
	p, _ := e.peerAt(w, word, base, raddr, n)
	return p
}

// peerAt is peerPtr that also returns the cache entry of the mapping.
func (e *engine) peerAt(w int, word, base uint64, raddr uintptr, n int) (unsafe.Pointer, *peerMap) {
	if word == 0 {
		return nil, nil
	}
	s := e.peerMap(w, int(uint32(word)), uint32(word>>32))
	if s == nil {
		return nil, nil
	}
	m := s.b
	off := raddr - uintptr(base)
	if m == nil || off+uintptr(n) > uintptr(len(m)) || raddr < uintptr(base) {
		return nil, nil
	}
	return unsafe.Pointer(unsafe.SliceData(m[off:])), s
}

// peerMap returns the cache entry of rank w's region (fd, id), mapping it
// the first time (its b is nil if it cannot be mapped); nil when every
// entry that could make room is pinned.
func (e *engine) peerMap(w, fd int, id uint32) *peerMap {
	pm := &e.pmaps
	pm.tick++
	var victim *peerMap
	for i := range pm.slots {
		s := &pm.slots[i]
		if s.used != 0 && s.rank == w && s.fd == fd {
			if s.id == id {
				s.used = pm.tick
				return s
			}
			if s.pins == 0 {
				victim = s // the descriptor was reused: that region is freed
				break
			}
			continue // lent out: it goes when it is given back
		}
		if s.pins == 0 && (victim == nil || s.used < victim.used) {
			victim = s
		}
	}
	if victim == nil {
		return nil
	}
	e.dropPeerMap(victim)
	b, err := mapPeerMem(e.pid(w), fd)
	if err != nil {
		b = nil // remembered, so that the next piece does not retry
	}
	*victim = peerMap{rank: w, fd: fd, id: id, b: b, used: pm.tick}
	return victim
}

func (e *engine) dropPeerMap(s *peerMap) {
	if s.b != nil {
		unix.Munmap(s.b)
	}
	*s = peerMap{}
}

// dropPeerMaps unmaps every cached mapping (Finalize).
func (e *engine) dropPeerMaps() {
	for i := range e.pmaps.slots {
		e.dropPeerMap(&e.pmaps.slots[i])
	}
}

// mapPeerMem maps the whole memfd that process pid holds as descriptor
// fd, with its pages populated (a fresh mapping otherwise pays a fault
// per page on first touch).
func mapPeerMem(pid, fd int) ([]byte, error) {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Size <= 0 || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, unix.EINVAL
	}
	return unix.Mmap(int(f.Fd()), 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
}
