package ranks_test

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

func TestAllocMem(t *testing.T) {
	if _, err := ranks.AllocMem(0); !errors.Is(err, ranks.ErrCount) {
		t.Fatalf("AllocMem(0): %v, want ErrCount", err)
	}
	const n = 3<<20 + 5
	b, err := ranks.AllocMem(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != n {
		t.Fatalf("len %d want %d", len(b), n)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d, want zeroed memory", i, b[i])
		}
		b[i] = byte(i)
	}
	// Another process reaches it the way a peer does: through the memfd
	// that MemOf names, mapped anew (here by this process, through /proc).
	ref, ok := ranks.MemOf(b[5:100])
	if !ok || ref.Offset != 5 || ref.Size < n || ref.ID == 0 {
		t.Fatalf("MemOf: %+v, %v", ref, ok)
	}
	if _, ok := ranks.MemOf(make([]byte, 10)); ok {
		t.Error("MemOf of heap memory says it is AllocMem memory")
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", ref.FD), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := syscall.Mmap(int(f.Fd()), 0, int(ref.Size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if peer[n-1] != byte((n-1)%256) || peer[77] != 77 {
		t.Errorf("the second mapping sees %d, %d", peer[n-1], peer[77])
	}
	peer[12345] = 99
	if b[12345] != 99 {
		t.Error("a store through the second mapping is not seen through the first")
	}
	syscall.Munmap(peer)
	if err := ranks.FreeMem(b); err != nil {
		t.Fatal(err)
	}
	if err := ranks.FreeMem(b); !errors.Is(err, ranks.ErrBuffer) {
		t.Errorf("second FreeMem: %v, want ErrBuffer", err)
	}
	if err := ranks.FreeMem(make([]byte, 10)); !errors.Is(err, ranks.ErrBuffer) {
		t.Errorf("FreeMem of heap memory: %v, want ErrBuffer", err)
	}
	if err := ranks.FreeMem(nil); !errors.Is(err, ranks.ErrBuffer) {
		t.Errorf("FreeMem(nil): %v, want ErrBuffer", err)
	}
}

// Large messages between AllocMem and heap buffers, at sizes that make
// the cooperative copy cut pieces with a short last one.
func TestLargeAllocMem(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		for _, n := range []int{16385, 16384 + 4*64<<10 + 1, 16384 + 20*16<<10 + 3, 3<<20 + 5} {
			mem, err := ranks.AllocMem(n)
			r.Check(err, "AllocMem")
			heap := make([]byte, n)
			if r.Rank == 0 {
				for i := range mem {
					mem[i] = byte(i*7 + n)
				}
				r.Check(ranks.Send(c, mem, 1, 1), "send from AllocMem")
				_, err := ranks.Recv(c, heap, 1, 2)
				r.Check(err, "recv into heap")
				for i := range heap {
					if heap[i] != byte(i*7+n+1) {
						r.Fatalf("size %d: byte %d is %d", n, i, heap[i])
					}
				}
			} else {
				st, err := ranks.Recv(c, mem, 0, 1)
				r.Check(err, "recv into AllocMem")
				if st.Bytes != n {
					r.Errorf("got %d bytes want %d", st.Bytes, n)
				}
				for i := range mem {
					if mem[i] != byte(i*7+n) {
						r.Fatalf("size %d: byte %d is %d", n, i, mem[i])
					}
					heap[i] = mem[i] + 1
				}
				r.Check(ranks.Send(c, heap, 0, 2), "send from heap")
			}
			r.Check(ranks.FreeMem(mem), "FreeMem")
		}
	})
}

// What AllocMem and FreeMem cost together (memfd, mapping, populating
// the pages, unmapping), by size.
func BenchmarkAllocMem(b *testing.B) {
	for _, n := range []int{64 << 10, 4 << 20} {
		b.Run(fmt.Sprint(n>>10, "KiB"), func(b *testing.B) {
			for b.Loop() {
				m, err := ranks.AllocMem(n)
				if err != nil {
					b.Fatal(err)
				}
				ranks.FreeMem(m)
			}
		})
	}
}
