package ranks_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"shmpi/ranks"
	"shmpi/ranks/ranktest"
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
	start := uintptr(unsafe.Pointer(&b[0]))
	if start%(2<<20) != 0 {
		t.Errorf("start %#x is not 2 MiB aligned", start)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d, want zeroed memory", i, b[i])
		}
		b[i] = byte(i)
	}
	if mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil && !strings.Contains(string(mode), "[never]") {
		if got := thpEligible(t, start); got != "1" {
			t.Errorf("THPeligible %q for the mapping, want 1 (huge pages advised)", got)
		}
	}
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

// thpEligible reads the THPeligible field of the mapping that holds addr.
func thpEligible(t *testing.T, addr uintptr) string {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	in := false
	for _, l := range strings.Split(string(smaps), "\n") {
		// A mapping's first line is "lo-hi perms ...", its fields "Key: value".
		var lo, hi uintptr
		if f := strings.Fields(l); len(f) > 1 && !strings.HasSuffix(f[0], ":") {
			if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err == nil {
				in = lo <= addr && addr < hi
				continue
			}
		}
		if v, ok := strings.CutPrefix(l, "THPeligible:"); ok && in {
			return strings.TrimSpace(v)
		}
	}
	return "not found"
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
