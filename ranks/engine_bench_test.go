package ranks

import (
	"testing"

	"github.com/shmpi/shmpi/internal/job"
)

// twoEngines builds a 2-rank segment and both ranks' engines in this
// process, to measure the software cost of the message paths without a
// cross-CPU transfer.
func twoEngines(tb testing.TB) (*Comm, *Comm) { return twoEnginesAt(tb, ThreadMultiple) }

func twoEnginesAt(tb testing.TB, level ThreadLevel) (*Comm, *Comm) {
	seg, err := job.NewSegment(job.DefaultLayout(2), 2)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { seg.Close() })
	var cs [2]*Comm
	for r := range 2 {
		e, err := newEngineWith(seg, r, false)
		if err != nil {
			tb.Fatal(err)
		}
		e.level, e.serial = level, level < ThreadMultiple
		e.initBias() // as InitThread does
		cs[r] = e.newComm(0, 1, identityGroup(2), "world")
	}
	return cs[0], cs[1]
}

// BenchmarkSendRecvInline: one 8-byte Send and its Recv, both on this
// CPU, at ThreadMultiple (the default) and at ThreadSingle (no engine
// lock). It is the software cost of a small message, all of it.
func BenchmarkSendRecvInline(b *testing.B) { benchSendRecv(b, ThreadMultiple) }

func BenchmarkSendRecvInlineSingle(b *testing.B) { benchSendRecv(b, ThreadSingle) }

func benchSendRecv(b *testing.B, level ThreadLevel) {
	c0, c1 := twoEnginesAt(b, level)
	buf := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := Send(c0, buf, 1, 3); err != nil {
			b.Fatal(err)
		}
		if _, err := Recv(c1, buf, 0, 3); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendThenRecv128: 128 sends, then their 128 receives, so
// the receives find their messages already there (ns per message).
func BenchmarkSendThenRecv128(b *testing.B) {
	c0, c1 := twoEngines(b)
	buf := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		for range 128 {
			if err := Send(c0, buf, 1, 3); err != nil {
				b.Fatal(err)
			}
		}
		for range 128 {
			if _, err := Recv(c1, buf, 0, 3); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*128), "ns/msg")
}

// BenchmarkIsendIrecvWait: the nonblocking forms, one of each and Waits.
func BenchmarkIsendIrecvWait(b *testing.B) {
	c0, c1 := twoEngines(b)
	sbuf := make([]byte, 8)
	rbuf := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		rr, _ := Irecv(c1, rbuf, 0, 3)
		sr, _ := Isend(c0, sbuf, 1, 3)
		if _, err := sr.Wait(); err != nil {
			b.Fatal(err)
		}
		if _, err := rr.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendRecvChunk: a 4 KiB message through an eager chunk.
func BenchmarkSendRecvChunk(b *testing.B) {
	c0, c1 := twoEngines(b)
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	b.ReportAllocs()
	for b.Loop() {
		if err := Send(c0, buf, 1, 3); err != nil {
			b.Fatal(err)
		}
		if _, err := Recv(c1, buf, 0, 3); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWindow64: osu_bw's and osu_mbw_mr's loop on one CPU: 64
// Isends of 1 byte, WaitAll, then 64 Irecvs and WaitAll (ns per
// message, both sides' software).
func BenchmarkWindow64(b *testing.B) {
	c0, c1 := twoEngines(b)
	sbuf := make([]byte, 1)
	rbuf := make([]byte, 64)
	sreqs := make([]*Request, 64)
	rreqs := make([]*Request, 64)
	b.ReportAllocs()
	for b.Loop() {
		for k := range sreqs {
			sreqs[k], _ = Isend(c0, sbuf, 1, 3)
		}
		if err := WaitAll(sreqs, nil); err != nil {
			b.Fatal(err)
		}
		for k := range rreqs {
			rreqs[k], _ = Irecv(c1, rbuf[k:k+1], 0, 3)
		}
		if err := WaitAll(rreqs, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/msg")
}
