package mpio

import (
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
)

// Collective data access through shared memory (the two-phase idea of
// ROMIO, with no messages).
//
// The members first tell each other the file range each one's access
// touches and whether it is one contiguous range (an Allgather). The
// union is then covered in rounds of aggregators × domain bytes of the
// file, aligned to pages, skipping rounds that no member's range
// reaches. In a round, aggregator j owns the j-th domain: a contiguous
// file range. A write round: each member whose range reaches the round
// copies its pieces there into a staging buffer, at their place in the
// round, and marks their bytes in the buffer's coverage bitmap; then
// each aggregator writes each run of marked bytes of its domain with one
// pwrite (a whole domain when the members' data covers it) and clears
// the marks. A read round is the reverse: each aggregator reads its
// domain (the part some member wants, below the end of the file) with
// one pread, then each member copies its pieces out.
//
// There are two staging buffers, used by alternate rounds, so that the
// members fill round i+1 while the aggregators write round i (reads: the
// aggregators read round i+1 while the members copy round i out). No
// barrier separates rounds: two counters per buffer in the file's shared
// memory (rounds, in file.go) count the producers and the consumers
// done with it since the file was opened, every member keeps the counts
// they should reach (the plan is the same at every member), and a member
// waits (ext.Wait: spin, then sleep on the counter's futex; a failure or
// revoke ends it) only for the members its step needs: a producer for
// the consumers of the buffer's previous round, a consumer for the
// round's producers. A member with no part in a round does not wake for
// it. One Allreduce at the end gives every member the aggregators' I/O
// errors, and returns only when all the data is written (read).
//
// A domain that only one member's range reaches, where that member's
// access is contiguous, is that member's own in automatic mode (the
// default; plan.owner): it writes (reads) it itself, straight from
// (into) its buffer, since the aggregator would make the same single
// pwrite after a copy. The hints romio_cb_write and romio_cb_read
// "enable" send everything through the aggregators, "disable" nothing.
//
// Bytes that no member marked are never written: holes between the
// members' pieces keep the file's data. Members' pieces that overlap
// (undefined in MPI unless in atomic mode) leave one member's bytes.
//
// In atomic mode (SetAtomicity) a collective call is each member's
// independent access under its range lock (ops.go), then the Allreduce:
// aggregation would mix members' bytes within one write.

// plan is the rounds of a collective access.
type plan struct {
	mlo, mhi []int64 // each member's file range (empty: mlo >= mhi)
	contig   []bool  // the member's access is one contiguous range of the file
	auto     bool    // domains of one member's contiguous data are its own (owner)
	aggs     int
	domain   int64
	lo, hi   []int64 // the members' non-empty file ranges
	start    int64   // the first round's start
	end      int64   // the end of the union
	round    int64   // bytes per round
}

// next returns the start of the first round at or after x that some
// member's range reaches.
func (pl *plan) next(x int64) (int64, bool) {
	m, ok := int64(0), false
	for i := range pl.lo {
		if pl.hi[i] > x {
			s := max(pl.lo[i], x)
			if !ok || s < m {
				m, ok = s, true
			}
		}
	}
	if !ok {
		return 0, false
	}
	return pl.start + (m-pl.start)/pl.round*pl.round, true
}

// span is the part of file range [a, b) that some member's range reaches:
// from the lowest such byte to the highest; empty (lo == hi) if none.
func (pl *plan) span(a, b int64) (lo, hi int64) {
	if b <= a {
		return a, a
	}
	lo, hi = b, a
	for i := range pl.lo {
		if pl.hi[i] > a && pl.lo[i] < b {
			lo, hi = min(lo, max(pl.lo[i], a)), max(hi, min(pl.hi[i], b))
		}
	}
	if lo >= hi {
		return a, a
	}
	return lo, hi
}

// owner returns the member that reads or writes domain j of the round
// at rs itself, or -1 if the aggregator does. Aggregation gains nothing
// in a domain that holds one member's contiguous data and nobody else's:
// the aggregator would issue the same one pwrite (pread) of the same
// bytes after a copy through the staging buffer. So, in automatic mode
// (ROMIO's rule, at the grain of a domain), that member does it,
// straight from (into) its own buffer. A block-distributed array's
// large blocks are so written by their members (a domain at a time, in
// round order: two rounds at most in flight), and only the domains
// where members' pieces meet go through the staging buffer.
func (pl *plan) owner(j int, rs int64) int {
	if !pl.auto {
		return -1
	}
	a := rs + int64(j)*pl.domain
	b := a + pl.domain
	k := -1
	for m := range pl.mlo {
		if pl.mhi[m] > a && pl.mlo[m] < b && pl.mlo[m] < pl.mhi[m] {
			if k >= 0 {
				return -1
			}
			k = m
		}
	}
	if k >= 0 && !pl.contig[k] {
		return -1
	}
	return k
}

// aggregator is this member's aggregator index for writes or reads, or
// -1.
func (f *File) aggregator(write bool) int {
	n := f.aggs[b2i(write)]
	size, me := f.size, f.rank
	if f.span {
		// The node's members aggregate its data (span.go).
		size, me = len(f.node), slices.Index(f.node, f.rank)
	}
	for j := range n {
		if j*size/n == me {
			return j
		}
	}
	return -1
}

// accessAll is a collective read or write of a's buffer at stream
// position p0 (in the call's queue job). local is this member's argument
// error, if any: it still takes part, so that no member waits for it,
// and every member fails. A read returns the bytes it read (up to the
// end of the file).
func (f *File) accessAll(op string, a *access, p0 int64, local error, write bool) (int64, error) {
	if local == nil {
		local = f.usable(op)
	}
	n := int64(len(a.b))
	var lo, hi, size int64
	if local == nil && !write {
		var err error
		if size, err = f.fileSize(); err != nil {
			local = ioErr(op, "stat", f.name, err)
		}
	}
	var avail int64 // bytes of the access below the end of the file (reads)
	if local == nil && !write {
		avail = min(max(a.v.stream(size)-p0, 0), n)
	}
	p1 := p0 + n
	if !write {
		p1 = p0 + avail // nothing at or past the end of the file is read
	}
	if local == nil && p1 > p0 {
		lo, hi = a.v.extent(p0, p1)
	}
	var contig int64
	if p1 > p0 && a.v.contiguous(p0, p1) {
		contig = 1
	}
	all := make([]int64, 4*f.size)
	if err := coll.Allgather(f.c, []int64{codeOf(local), lo, hi, contig}, all); err != nil {
		return 0, relabel(err, op)
	}
	if err := agreeArgs(op, local, all, 4); err != nil {
		return 0, err
	}
	cb := f.cb[b2i(write)]
	if f.atomicMode.Load() || cb == cbDisable {
		return f.independentAll(op, a, p0, avail, write)
	}

	aggs := f.aggs[b2i(write)]
	pl := plan{round: int64(aggs) * f.domain, aggs: aggs, domain: f.domain, auto: cb == cbAuto,
		mlo: make([]int64, f.size), mhi: make([]int64, f.size), contig: make([]bool, f.size)}
	for k := range f.size {
		l, h := all[4*k+1], all[4*k+2]
		if f.span && !f.onNode[k] {
			l, h = 0, 0 // another node's aggregators take it
		}
		pl.mlo[k], pl.mhi[k], pl.contig[k] = l, h, all[4*k+3] == 1
		if h > l {
			if len(pl.lo) == 0 || l < pl.start {
				pl.start = l
			}
			pl.end = max(pl.end, h)
			pl.lo, pl.hi = append(pl.lo, l), append(pl.hi, h)
		}
	}
	pl.start &^= pageSize - 1
	agg := f.aggregator(write)
	sy := f.sync()

	// The rounds. In each, the producers (writes: the members whose
	// range reaches the round, copying in; reads: the aggregators,
	// reading) fill the round's staging buffer once its consumers of two
	// rounds ago are done with it, and the consumers (writes: the
	// aggregators; reads: the members, copying out) take it once every
	// producer is done. Counters in shared memory say how many have done
	// each (filled, drained: counts since the file was opened, which
	// every member also keeps locally: pcum, dcum), so a member waits
	// only for the members it needs, and one that has no part in a round
	// skips it.
	var ioerr error
	i := 0
	for rs, ok := pl.next(pl.start); ok; rs, ok = pl.next(rs + pl.round) {
		re := rs + pl.round
		b := int(f.nrounds & 1)
		f.nrounds++
		var copiers uint32
		for k := range f.size {
			if pl.mhi[k] > rs && pl.mlo[k] < re {
				copiers++
			}
		}
		mine := pl.mhi[f.rank] > rs && pl.mlo[f.rank] < re
		producers, consumers := copiers, uint32(aggs)
		produce, consume := mine, agg >= 0
		if !write {
			producers, consumers = uint32(aggs), copiers
			produce, consume = agg >= 0, mine
		}
		if produce {
			if err := f.await(op, &sy.drained[b], f.dcum[b]); err != nil {
				return 0, err
			}
			if write {
				if err := f.stageIn(op, &pl, a, p0, p1, rs, re, b); ioerr == nil {
					ioerr = err
				}
			} else if ioerr == nil {
				ioerr = f.fill(op, &pl, agg, rs, b)
			}
			sy.filled[b].Add(1)
			ext.Release(f.c, &sy.filled[b])
		}
		f.pcum[b] += producers
		if consume {
			if err := f.await(op, &sy.filled[b], f.pcum[b]); err != nil {
				return 0, err
			}
			if write {
				if err := f.flush(op, &pl, agg, rs, b, ioerr == nil); ioerr == nil {
					ioerr = err
				}
			} else if err := f.stageOut(op, &pl, a, p0, p1, rs, re, b); ioerr == nil {
				ioerr = err
			}
			sy.drained[b].Add(1)
			ext.Release(f.c, &sy.drained[b])
		}
		f.dcum[b] += consumers
		if ext.IORoundHook != nil {
			ext.IORoundHook(op, i)
		}
		i++
	}
	// Every member's data is written (read) once every aggregator is
	// here; the Allreduce also gives their errors to every member.
	code, err := coll.AllreduceValue(f.c, codeOf(ioerr), coll.Max[int64])
	switch {
	case err != nil:
		return 0, relabel(err, op)
	case ioerr != nil:
		return 0, ioerr
	case code != 0:
		return 0, memberErr(op, -1, code, "an aggregator's I/O failed")
	}
	return avail, nil
}

// await waits until counter c reaches target (counts wrap around), or
// the file's communicator fails or is revoked.
func (f *File) await(op string, c *atomic.Uint32, target uint32) error {
	reached := func() bool { return int32(c.Load()-target) >= 0 }
	if reached() {
		return nil
	}
	if err := ext.Wait(f.c, op, c, reached); err != nil {
		return relabel(err, op)
	}
	return nil
}

const pageSize = 4096

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// domainOf is aggregator j's domain of the round at rs: [d0, d1) bytes
// into the round, cut to the part some member's range reaches.
func (f *File) domainOf(pl *plan, j int, rs int64) (int64, int64) {
	a := rs + int64(j)*pl.domain
	b := min(a+pl.domain, pl.end)
	lo, hi := pl.span(a, b)
	return lo - rs, hi - rs
}

// stageIn copies the member's bytes of stream range [p0, p1) that fall
// in file range [rs, re) into staging buffer b and marks them, except
// in the domains it owns (plan.owner), which it writes itself.
func (f *File) stageIn(op string, pl *plan, a *access, p0, p1, rs, re int64, b int) error {
	stage, bm := f.stage[b], f.bits[b]
	for j := range pl.aggs {
		da := rs + int64(j)*pl.domain
		db := min(da+pl.domain, re)
		q0, q1 := max(p0, a.v.stream(da)), min(p1, a.v.stream(db))
		if q0 >= q1 {
			continue
		}
		if pl.owner(j, rs) == f.rank {
			if err := f.writeAt(op, &a.v, q0, a.b[q0-p0:q1-p0]); err != nil {
				return err
			}
			continue
		}
		a.v.pieces(q0, q1, func(x, p, n int64) error {
			copy(stage[x-rs:x-rs+n], a.b[p-p0:p-p0+n])
			setBits(bm, x-rs, x-rs+n)
			return nil
		})
	}
	return nil
}

// stageOut copies the member's bytes of stream range [p0, p1) that fall
// in file range [rs, re) out of staging buffer b, except in the domains
// it owns, which it reads itself.
func (f *File) stageOut(op string, pl *plan, a *access, p0, p1, rs, re int64, b int) error {
	stage := f.stage[b]
	for j := range pl.aggs {
		da := rs + int64(j)*pl.domain
		db := min(da+pl.domain, re)
		q0, q1 := max(p0, a.v.stream(da)), min(p1, a.v.stream(db))
		if q0 >= q1 {
			continue
		}
		if pl.owner(j, rs) == f.rank {
			if _, err := f.readAt(op, &a.v, q0, a.b[q0-p0:q1-p0]); err != nil {
				return err
			}
			continue
		}
		a.v.pieces(q0, q1, func(x, p, n int64) error {
			copy(a.b[p-p0:p-p0+n], stage[x-rs:x-rs+n])
			return nil
		})
	}
	return nil
}

// flush writes aggregator j's marked bytes of the round at rs from
// staging buffer b (unless !write, after an error), and clears its marks.
func (f *File) flush(op string, pl *plan, j int, rs int64, b int, write bool) error {
	d0, d1 := f.domainOf(pl, j, rs)
	if d0 >= d1 || pl.owner(j, rs) >= 0 {
		return nil // nothing, or its owner writes it
	}
	stage, bm := f.stage[b], f.bits[b]
	var err error
	for x := d0; x < d1 && write && err == nil; {
		s := nextBit(bm, x, d1, true)
		if s >= d1 {
			break
		}
		e := nextBit(bm, s, d1, false)
		if werr := pwriteFull(f.fd, stage[s:e], rs+s); werr != nil {
			err = ioErr(op, "write", f.name, werr)
		}
		x = e
	}
	clear(bm[d0>>6 : (d1+63)>>6])
	return err
}

// fill reads aggregator j's domain of the round at rs into staging
// buffer b (below the end of the file: pl.end is cut to it).
func (f *File) fill(op string, pl *plan, j int, rs int64, b int) error {
	d0, d1 := f.domainOf(pl, j, rs)
	if d0 >= d1 || pl.owner(j, rs) >= 0 {
		return nil // nothing, or its owner reads it
	}
	if _, err := preadFull(f.fd, f.stage[b][d0:d1], rs+d0); err != nil {
		return ioErr(op, "read", f.name, err)
	}
	return nil
}

// independentAll is a collective access in atomic mode, or without
// aggregation (the hint romio_cb_write or romio_cb_read "disable"): this
// member's own access (under its lock in atomic mode), then the barrier
// that reports errors.
func (f *File) independentAll(op string, a *access, p0, avail int64, write bool) (int64, error) {
	var ioerr error
	if write {
		ioerr = f.writeAt(op, &a.v, p0, a.b)
	} else {
		avail, ioerr = f.readAt(op, &a.v, p0, a.b)
	}
	if ext.IORoundHook != nil {
		ext.IORoundHook(op, 0)
	}
	code, err := coll.AllreduceValue(f.c, codeOf(ioerr), coll.Max[int64])
	switch {
	case err != nil:
		return 0, relabel(err, op)
	case ioerr != nil:
		return 0, ioerr
	case code != 0:
		return 0, memberErr(op, -1, code, "another member's I/O failed")
	}
	return avail, nil
}

// setBits marks bits [a, e) of bm. The words at the ends may be shared
// with another member's pieces: they are or-ed atomically. The words in
// between are this member's alone (unless members' pieces overlap, when
// any of their bytes may win anyway).
func setBits(bm []uint64, a, e int64) {
	if a >= e {
		return
	}
	wa, we := a>>6, (e-1)>>6
	ma := ^uint64(0) << (a & 63)
	me := ^uint64(0) >> (63 - (e-1)&63)
	if wa == we {
		atomic.OrUint64(&bm[wa], ma&me)
		return
	}
	atomic.OrUint64(&bm[wa], ma)
	for w := wa + 1; w < we; w++ {
		bm[w] = ^uint64(0)
	}
	atomic.OrUint64(&bm[we], me)
}

// nextBit returns the first bit at or after i and before to that is set
// (set) or clear (!set), or to.
func nextBit(bm []uint64, i, to int64, set bool) int64 {
	for i < to {
		w := bm[i>>6]
		if !set {
			w = ^w
		}
		if w >>= uint(i & 63); w != 0 {
			return min(i+int64(bits.TrailingZeros64(w)), to)
		}
		i = (i | 63) + 1
	}
	return to
}

// The collective calls. Each member passes its own buffer; the calls at
// an explicit offset take the member's own offset, in etypes of its view.

// collective runs job as a blocking collective call on f.
func (f *File) collective(op string, job func() error) error {
	if err := f.usable(op); err != nil {
		return err
	}
	var err error
	f.q.do(func() { err = job() })
	return err
}

// ReadAtAll reads into buf at etype offset off, collectively
// (MPI_File_read_at_all), through the aggregators.
func ReadAtAll[T any](f *File, off int64, buf []T) (int, error) {
	const op = "File.ReadAtAll"
	if err := f.usable(op); err != nil {
		return 0, err
	}
	a, local := prep(f, op, buf, false, byOffset)
	p0, local := atLocal(op, &a, off, local)
	return f.blockingAll(op, &a, p0, local, false)
}

// WriteAtAll writes buf at etype offset off, collectively
// (MPI_File_write_at_all), through the aggregators.
func WriteAtAll[T any](f *File, off int64, buf []T) (int, error) {
	const op = "File.WriteAtAll"
	if err := f.usable(op); err != nil {
		return 0, err
	}
	a, local := prep(f, op, buf, true, byOffset)
	p0, local := atLocal(op, &a, off, local)
	return f.blockingAll(op, &a, p0, local, true)
}

// ReadAll reads into buf at the individual file pointer, collectively
// (MPI_File_read_all).
func ReadAll[T any](f *File, buf []T) (int, error) {
	const op = "File.ReadAll"
	if err := f.usable(op); err != nil {
		return 0, err
	}
	a, local := prep(f, op, buf, false, byOffset)
	p0, local := pointerLocal(f, op, &a, local)
	return f.blockingAll(op, &a, p0, local, false)
}

// WriteAll writes buf at the individual file pointer, collectively
// (MPI_File_write_all).
func WriteAll[T any](f *File, buf []T) (int, error) {
	const op = "File.WriteAll"
	if err := f.usable(op); err != nil {
		return 0, err
	}
	a, local := prep(f, op, buf, true, byOffset)
	p0, local := pointerLocal(f, op, &a, local)
	return f.blockingAll(op, &a, p0, local, true)
}

func atLocal(op string, a *access, off int64, local error) (int64, error) {
	if local != nil {
		return 0, local
	}
	return a.at(op, off)
}

func pointerLocal(f *File, op string, a *access, local error) (int64, error) {
	if local != nil {
		return 0, local
	}
	return f.advance(op, a)
}

func (f *File) blockingAll(op string, a *access, p0 int64, local error, write bool) (int, error) {
	var n int64
	err := f.collective(op, func() error {
		var err error
		n, err = f.accessAll(op, a, p0, local, write)
		return err
	})
	if err != nil {
		return 0, err
	}
	if write {
		return a.elems, nil
	}
	return a.count(n), nil
}
