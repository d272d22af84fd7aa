package node

import "testing"

// A buffer of each size comes back from its class, and the pool gives it
// out again; sizes outside the classes are not kept.
func TestBufPool(t *testing.T) {
	var p bufPool
	for _, n := range []int{1 << 16, 1<<16 + frameHeader, 1<<16 + frameHeader + 1, 4 << 20, 4<<20 + frameHeader} {
		b := p.get(n)
		if len(b) != n || cap(b) < n {
			t.Fatalf("get(%d): len %d cap %d", n, len(b), cap(b))
		}
		p.put(b)
		c := p.get(n)
		if &c[:1][0] != &b[:1][0] {
			t.Errorf("get(%d) after put: a new buffer", n)
		}
		p.put(c)
	}
	if c := poolClass(4<<20 + frameHeader); c != poolClass(4<<20) {
		t.Errorf("a 4 MiB frame is in class %d, its message in %d", c, poolClass(4<<20))
	}
	small := p.get(100)
	p.put(small)
	if n := len(p.free[0]); n != poolArena/poolCap(0) {
		t.Errorf("class 0 holds %d buffers, want an arena's %d", n, poolArena/poolCap(0))
	}
	heap := make([]byte, 1<<16, poolCap(0))
	p.put(heap)
	if n := len(p.free[0]); n != poolArena/poolCap(0) {
		t.Errorf("a heap buffer was kept: class 0 holds %d buffers", n)
	}
}
