package ranks

import (
	"runtime"
	"strconv"
	"testing"
)

// A round of a partitioned pair allocates nothing once the handshake is
// done: Start, Pready and the internal operations reuse their state.
func TestPartitionedAllocs(t *testing.T) {
	c0, c1 := twoEngines(t)
	sbuf, rbuf := make([]uint16, 64), make([]uint16, 64)
	s, err := PsendInit(c0, sbuf, 8, 8, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	r, err := PrecvInit(c1, rbuf, 4, 16, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	round := func(i int) {
		sbuf[63] = uint16(i)
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		for p := 7; p >= 0; p-- {
			if err := Pready(s, p); err != nil {
				t.Fatal(err)
			}
		}
		// Both engines are in this goroutine: each needs its turn.
		for sdone, rdone := false, false; !sdone || !rdone; {
			var err error
			if !sdone {
				_, sdone, err = s.Test()
			}
			if err == nil && !rdone {
				_, rdone, err = r.Test()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if rbuf[63] != uint16(i) {
			t.Fatalf("round %d: got %d", i, rbuf[63])
		}
	}
	for i := range 100 {
		round(i)
	}
	const rounds = 2000
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := range rounds {
		round(i)
	}
	runtime.ReadMemStats(&m1)
	perRound := float64(m1.TotalAlloc-m0.TotalAlloc) / rounds
	t.Logf("%.1f bytes allocated per round of 8 partitions", perRound)
	if perRound > 8 {
		t.Errorf("%.1f bytes allocated per partitioned round, want none", perRound)
	}
	if err := s.Free(); err != nil {
		t.Fatal(err)
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPartitionedRound: one round of a partitioned pair between two
// engines of this process, 8 send partitions received as 4.
func BenchmarkPartitionedRound(b *testing.B) {
	for _, n := range []int{64, 64 << 10, 4 << 20} {
		b.Run(fmtBytes(n), func(b *testing.B) {
			c0, c1 := twoEngines(b)
			sbuf, rbuf := make([]byte, n), make([]byte, n)
			s, err := PsendInit(c0, sbuf, 8, n/8, 1, 3)
			if err != nil {
				b.Fatal(err)
			}
			r, err := PrecvInit(c1, rbuf, 4, n/4, 0, 3)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				r.Start()
				s.Start()
				PreadyRange(s, 0, 7)
				for sdone, rdone := false, false; !sdone || !rdone; {
					if !sdone {
						_, sdone, _ = s.Test()
					}
					if !rdone {
						_, rdone, _ = r.Test()
					}
				}
			}
			s.Free()
			r.Free()
		})
	}
}

func fmtBytes(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
