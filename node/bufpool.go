package node

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// bufs recycles the agents' large message buffers: what a proxy takes
// from a rank (until the Net has sent it) and the long frames a Net
// receives (until the proxy's send to the rank completes). Without it
// every 4 MiB message cost two fresh allocations, whose zeroing, page
// faults and garbage collections took a third of the bandwidth across
// nodes.
//
// Buffers come in power-of-two classes from 64 KiB up, plus poolSlack
// bytes so that a frame's header and a power-of-two message fit the
// message's class. They are carved from arenas of AllocMem memory
// (poolArena bytes each, up to poolBytes in all), which the ranks map:
// they copy a message into or out of the agent with memmove through that
// mapping, not process_vm_readv/writev, and one arena is one mapping in
// a rank's cache of eight (peermem.go), however many buffers it holds.
// Arena buffers are kept for good; past poolBytes, buffers come from the
// Go heap and go back to it.
//
// Smaller buffers (a small message's bytes, a frame's header, a frame
// as it leaves or arrives) come from the Go heap in power-of-two classes
// from 64 bytes, and up to smallKeep(c) of each class are kept for reuse
// (256, and no more than 1 MiB of a class: 16 of 64 KiB):
// an agent forwards every small message without allocating once its
// classes are warm, so it makes no garbage while a job runs, and its
// heap (which the kernel tears down when the agent is killed, before any
// MPI can hear of its node's death) stays at what it holds. A small
// buffer that is not given back is the collector's. The mutex is for
// agents that share a process (Loopback).
var bufs bufPool

// getBuf is bufs.get as a function value that allocates nothing: a
// method value passed on (Proxy.Take's alloc) is a closure made anew at
// every call, which the agent's poll of each proxy would allocate.
func getBuf(n int) []byte { return bufs.get(n) }

const (
	poolMinShift = 16 // 64 KiB: smaller buffers are small classes
	poolClasses  = 12 // up to 128 MiB
	poolBytes    = 256 << 20
	poolArena    = 32 << 20
	poolSlack    = frameHeader

	smallMinShift  = 6                                // 64 bytes: a frame's header, a short message's frame
	smallClasses   = poolMinShift - smallMinShift + 1 // up to 64 KiB
	smallKeepMax   = 256                              // kept buffers of a small class
	smallKeepBytes = 1 << 20                          // and no more bytes than this
)

type bufPool struct {
	mu     sync.Mutex
	free   [poolClasses][][]byte
	small  [smallClasses][][]byte
	arenas [][2]uintptr // each arena's first byte and its end
	bytes  int          // in arenas
}

// smallClass returns the small class of a buffer of n bytes (cap(b) ==
// smallCap of it), or -1 if n is beyond them.
func smallClass(n int) int {
	switch {
	case n > 1<<poolMinShift:
		return -1
	case n <= 1<<smallMinShift:
		return 0
	}
	return bits.Len(uint(n-1)) - smallMinShift
}

func smallCap(c int) int { return 1 << (c + smallMinShift) }

// smallKeep is how many buffers of small class c the pool keeps.
func smallKeep(c int) int { return min(smallKeepMax, smallKeepBytes/smallCap(c)) }

// class returns the class of a buffer of n bytes, or -1 if n is below
// the pool's sizes or above them.
func poolClass(n int) int {
	if n < 1<<poolMinShift {
		return -1
	}
	c := max(bits.Len(uint(n-poolSlack-1))-poolMinShift, 0)
	if c >= poolClasses {
		return -1
	}
	return c
}

func poolCap(c int) int { return 1<<(c+poolMinShift) + poolSlack }

// get returns a buffer of n bytes. Its contents are undefined.
func (p *bufPool) get(n int) []byte {
	if n < 1<<poolMinShift {
		return p.getSmall(n)
	}
	c := poolClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free[c]) == 0 {
		p.grow(c)
	}
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		return b[:n]
	}
	return make([]byte, n)
}

// grow adds an arena's buffers to class c, unless the arenas have reached
// poolBytes or the memory cannot be had.
func (p *bufPool) grow(c int) {
	size := poolCap(c)
	k := max(poolArena/size, 1)
	if p.bytes+k*size > poolBytes {
		return
	}
	a, err := ranks.AllocMem(k * size)
	if err != nil {
		return
	}
	p.bytes += k * size
	start := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	p.arenas = append(p.arenas, [2]uintptr{start, start + uintptr(k*size)})
	for i := range k {
		p.free[c] = append(p.free[c], a[i*size:i*size:(i+1)*size])
	}
}

// put gives back a buffer that nothing uses any longer. Those of the
// heap are left to the collector.
func (p *bufPool) put(b []byte) {
	if cap(b) <= 1<<poolMinShift {
		p.putSmall(b)
		return
	}
	c := poolClass(cap(b))
	if c < 0 || cap(b) != poolCap(c) {
		return
	}
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b[:1])))
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.arenas {
		if a[0] <= at && at < a[1] {
			p.free[c] = append(p.free[c], b[:0])
			return
		}
	}
}

func (p *bufPool) getSmall(n int) []byte {
	c := smallClass(n)
	p.mu.Lock()
	if l := p.small[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.small[c] = l[:len(l)-1]
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n, smallCap(c))
}

// putSmall keeps b if its capacity is a small class's and the class has
// room; a buffer of another capacity (a slice of something larger, a
// header made elsewhere) is left to the collector.
func (p *bufPool) putSmall(b []byte) {
	if cap(b) == 0 {
		return
	}
	c := smallClass(cap(b))
	if cap(b) != smallCap(c) {
		return
	}
	p.mu.Lock()
	if len(p.small[c]) < smallKeep(c) {
		p.small[c] = append(p.small[c], b[:0])
	}
	p.mu.Unlock()
}
