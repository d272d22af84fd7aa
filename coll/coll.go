package coll

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

func errf(class error, op string, detail string) error {
	return &ranks.Error{Class: class, Op: op, Rank: -1, Detail: detail}
}

// bytesOf views s as bytes.
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// view sees b as n elements of T (b comes from a line: 8-byte aligned).
// Elements of size zero (MPI allows them) need no memory.
func view[T any](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	if len(b) == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(&zeroSized)), n)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// zeroSized is where slices of zero-size elements point.
var zeroSized [8]byte

// scratch returns n elements of T from the communicator's scratch memory
// starting at element offset off (in units of T), growing it as needed
// (which moves it: grow to the whole size before taking several views):
// temporary buffers are reused across calls, since fresh memory costs a
// page fault per page (the allreduce of large vectors showed it). Valid
// until the next collective on the communicator.
func scratch[T any](st *state, off, n int) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	need := (off + n) * sz
	if len(st.scratch)*8 < need {
		st.scratch = make([]uint64, (need+7)/8*5/4+8) // 8-byte aligned
	}
	if n == 0 {
		return nil
	}
	if sz == 0 {
		return view[T](nil, n)
	}
	base := unsafe.Add(unsafe.Pointer(unsafe.SliceData(st.scratch)), off*sz)
	return unsafe.Slice((*T)(base), n)
}

// start begins the collective and validates T and the root. The
// collective counts as begun even when they are bad (as at every member:
// the same code passes the same type and root everywhere).
func start[T any](c *ranks.Comm, op string, root int) (*state, int, error) {
	st, err := begin(c, op)
	if err != nil {
		return nil, 0, err
	}
	sz, err := ranks.ElemSize[T]()
	if err != nil {
		return nil, 0, relabel(err, op)
	}
	if st.ic != nil {
		if root != noRoot {
			if err := st.interRoot(op, root); err != nil {
				return nil, 0, err
			}
		}
		return st, sz, nil
	}
	if root != noRoot && (root < 0 || root >= st.size) {
		return nil, 0, &ranks.Error{Class: ranks.ErrRank, Op: op, Rank: -1, Detail: "root out of range"}
	}
	return st, sz, nil
}

const noRoot = -1 << 40

// check reports a member's contribution of the wrong size.
func checkLen(op string, r, got, want int) error {
	if got != want {
		return &ranks.Error{Class: ranks.ErrCount, Op: op, Rank: r, Detail: "contribution of a size that differs from this rank's"}
	}
	return nil
}

// Bad arguments. A member whose arguments are invalid still takes its
// part in the collective, so that no other member waits for it forever:
// it records the error (argErr), joins the phases without data, sends
// empty messages where it owes some and receives where it is owed
// (absorb), and returns its error. The others return that error too
// (verdict) once their part is done, or a size error where they read its
// missing data first: every member whose part depends on the faulty one
// learns of it; one whose part did not (an eager send to a root) may
// return nil.

// conclude is the end of a member's collective: its own argument error
// first (bad), then an error of its part (err: a failure explains a
// peer's missing data), then another member's argument error.
func (st *state) conclude(op string, bad, err error) error {
	if bad != nil {
		return bad
	}
	if err != nil {
		if errors.Is(err, ranks.ErrCount) || errors.Is(err, ranks.ErrTruncate) {
			if v := st.verdict(op); v != nil {
				return v
			}
		}
		return st.fail(err, op)
	}
	return st.verdict(op)
}

// absorb is the part of a member that cannot take its normal part: it
// receives (and drops) what members from(r) owe it and sends an empty
// message to every member to(r) that waits for one, so that no peer
// waits for it. It returns an error only for a failure or a revoke.
func (st *state) absorb(op string, from, to func(r int) bool) error {
	rs := make([]*ranks.Request, 0, 2*st.size)
	for r := range st.size {
		if r == st.rank {
			continue
		}
		if from != nil && from(r) {
			q, err := ranks.Irecv[byte](st.cc, nil, r, st.tag())
			if err != nil {
				return relabel(err, op)
			}
			rs = append(rs, q)
		}
		if to != nil && to(r) {
			q, err := ranks.Isend[byte](st.cc, nil, r, st.tag())
			if err != nil {
				return relabel(err, op)
			}
			rs = append(rs, q)
		}
	}
	var ferr error
	for _, q := range rs {
		if _, err := q.Wait(); err != nil && !errors.Is(err, ranks.ErrTruncate) && ferr == nil {
			ferr = err
		}
	}
	if ferr != nil {
		return st.fail(ferr, op)
	}
	return nil
}

func all(int) bool { return true }

// fail turns an error of a point-to-point step into the collective's: a
// member's failure explains the others (a member that saw it first
// returns and finalizes, so its peers see "finalized" or a truncated
// step), so ErrProcFailed wins when a member is known to have failed.
func (st *state) fail(err error, op string) error {
	if err == nil {
		return nil
	}
	if cerr := ext.Check(st.c, op); cerr != nil && errors.Is(cerr, ranks.ErrProcFailed) {
		return cerr
	}
	return relabel(err, op)
}

func relabel(err error, op string) error {
	for e := err; e != nil; {
		if re, ok := e.(*ranks.Error); ok {
			out := *re
			out.Op = op
			return &out
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return err
}

// recvExact receives exactly len(buf) elements from src.
func recvExact[T any](st *state, buf []T, src int, op string) error {
	s, err := ranks.Recv(st.cc, buf, src, st.tag())
	if err != nil {
		return err
	}
	if s.Bytes != len(bytesOf(buf)) {
		return &ranks.Error{Class: ranks.ErrCount, Op: op, Rank: src, Detail: "a member sent a block of another size"}
	}
	return nil
}

// exchange posts, for every other member r, a receive into from(r) and a
// send of to(r) (a nil func: none of that kind), receives first so that
// sends find them posted, and waits for them all. A receive whose block
// has another size than expected is ErrCount.
func exchange[T any](st *state, from, to func(r int) []T, name string) error {
	return exchangeLocal(st, from, to, nil, name)
}

// copyOwn copies a member's own block where it goes, in cache-sized
// steps up to 16 MiB (copyCached): in one call Go's copy turns to
// non-temporal stores from 1 MiB, which made Alltoall of 1 MiB at 2
// ranks 236.8 µs against 180.1 in steps (5 rounds, Open MPI 188.0;
// 2026-11-28). Larger blocks would only evict the cache: one call.
func copyOwn[T any](dst, src []T) {
	var z T
	n := min(len(dst), len(src))
	if n*int(unsafe.Sizeof(z)) > 16<<20 {
		copy(dst, src)
		return
	}
	copyCached(dst[:n], src[:n])
}

// exchangeLocal is exchange that runs local (this member's own block,
// copied where it goes), if not nil, once the transfers are posted: a
// peer reading this member's buffer (process_vm_readv) or taking pieces
// of the copy then works while this member copies its own block, instead
// of after.
func exchangeLocal[T any](st *state, from, to func(r int) []T, local func(), name string) error {
	// The communicator's collectives run one at a time, so its state's
	// slice serves every exchange (no allocation a call).
	rs := st.reqs[:0]
	defer func() {
		clear(rs)
		st.reqs = rs[:0]
	}()
	// A root's fan-out (Bcast, Scatter) where members sleep: each member
	// copies its block from the root's buffer (ranks' pullMin has the
	// figures), and the root copies nothing.
	pull := from == nil && !st.spin
	if pull {
		ext.PullSends(st.cc, true)
	}
	err := postTransfers(st, st.size, st.rank, from, to, &rs, name)
	if pull {
		ext.PullSends(st.cc, false)
	}
	if err != nil {
		return err
	}
	if local != nil {
		local()
	}
	nrecv := 0
	if from != nil {
		nrecv = st.size - 1
	}
	var ferr error
	for i, q := range rs {
		s, err := q.Wait()
		if err == nil && i < nrecv {
			r := i
			if r >= st.rank {
				r++
			}
			if s.Bytes != len(bytesOf(from(r))) {
				err = &ranks.Error{Class: ranks.ErrCount, Op: name, Rank: r, Detail: "a member sent a block of another size"}
			}
		}
		if err != nil && ferr == nil {
			ferr = err
		}
	}
	return ferr
}

// postTransfers posts a receive into from(r) and a send of to(r) (nil
// funcs: none of that kind) on the collective twin for each member r of n
// but skip, receives first, and appends the requests to *rs.
func postTransfers[T any](st *state, n, skip int, from, to func(r int) []T, rs *[]*ranks.Request, name string) error {
	for _, recv := range []bool{true, false} {
		buf := to
		if recv {
			buf = from
		}
		if buf == nil {
			continue
		}
		for r := range n {
			if r == skip {
				continue
			}
			var q *ranks.Request
			var err error
			if recv {
				q, err = ranks.Irecv(st.cc, buf(r), r, st.tag())
			} else {
				q, err = ranks.Isend(st.cc, buf(r), r, st.tag())
			}
			if err != nil {
				return relabel(err, name)
			}
			*rs = append(*rs, q)
		}
	}
	return nil
}

func barrier(c *ranks.Comm) error {
	if h, err := hierOf(c); err != nil || h != nil {
		if err != nil {
			return err
		}
		return hierBarrier(c, h)
	}
	st, err := begin(c, "Barrier")
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interBarrier(st)
	}
	if st.span {
		return spanBarrier(st)
	}
	return st.arrive("Barrier")
}

func bcast[T any](c *ranks.Comm, buf []T, root int) error { return bcastErr(c, buf, root, nil) }

// bcastErr is Bcast whose root may carry an error of its own (rootErr):
// it still broadcasts, and every member returns that error (argErr; an
// intercommunicator's leader hands its group the outcome of its exchange
// so).
func bcastErr[T any](c *ranks.Comm, buf []T, root int, rootErr error) error {
	const op = "Bcast"
	if h, err := hierOf(c); err != nil || h != nil {
		if err != nil {
			return err
		}
		// Every member takes this path or none (rootErr, which only the
		// root has, is not carried across nodes, as spanBcast does not).
		if _, err := ranks.ElemSize[T](); err == nil {
			return hierBcast(c, h, bytesOf(buf), root)
		}
	}
	st, _, err := start[T](c, op, root)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interBcast(st, buf, root, op)
	}
	if st.span {
		return spanBcast(st, bytesOf(buf), root, op)
	}
	if rootErr != nil && st.rank == root {
		st.argErr(rootErr)
	}
	b := bytesOf(buf)
	if st.spin && (len(b) <= inlineMax || st.staging(len(b))) {
		if err := st.bcastOneWay(op, b, root); err != nil {
			return err
		}
		return st.verdict(op)
	}
	// Members sleep (they outnumber the cores): the root sends to each,
	// whatever the size. A phase that every member joins (the lines'
	// counter) made each call wait for the slowest member to be
	// scheduled: 11.7 µs at 8 B against 4.0 at 64 B by message at 8
	// ranks on 2 cores, 34.6 against 8.9 at 16 ranks (coll_sweep,
	// 2026-11-27); and members whose lengths differed took different
	// paths and hung, where now they get ErrCount or ErrTruncate.
	if st.rank != root {
		return st.conclude(op, nil, recvExact(st, buf, root, op))
	}
	return st.conclude(op, nil, exchange(st, nil, func(int) []T { return buf }, op))
}

func reduce[T any](c *ranks.Comm, send, recv []T, op Op[T], root int) error {
	const name = "Reduce"
	if h, err := hierOf(c); err != nil || h != nil {
		if err != nil {
			return err
		}
		return hierReduce(c, h, send, recv, op, root)
	}
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if st.ic != nil {
		if op == nil {
			return errf(ranks.ErrArg, name, "nil op")
		}
		return interReduce(st, send, recv, op, root, name)
	}
	if st.span {
		return spanReduce(st, send, recv, op, root, name)
	}
	mine := send
	if mine == nil && st.rank == root {
		mine = recv
	}
	n := len(mine)
	var bad error
	switch {
	case op == nil:
		bad = st.argErr(errf(ranks.ErrArg, name, "nil op"))
	case st.rank == root && len(recv) < n:
		bad = st.argErr(errf(ranks.ErrBuffer, name, "receive buffer shorter than the contribution"))
	}
	// Through the lines or the scratch, one way to the root, only where
	// members spin: where they sleep, a phase every member joins costs
	// more than the messages to the root (Bcast has the figures). At 2
	// ranks, 32 B to 1 KiB, by message took 0.69-1.08 µs a call against
	// Open MPI's 0.30-0.57 (osu_reduce, 2026-11-27).
	if b := bytesOf(mine); (len(b) <= inlineMax || st.staging(len(b))) && !st.span && st.spin {
		if st.rank != root {
			if err := st.gatherOneWay(name, b, root, len(b), nil); err != nil || bad != nil {
				return st.conclude(name, bad, err)
			}
			return nil // done once written, as after an eager send
		}
		acc := recv[:min(n, len(recv))]
		if bad == nil && root != 0 && unsafe.SliceData(mine) == unsafe.SliceData(acc) {
			// In place: keep root's contribution, which acc's first
			// members overwrite.
			own := scratch[T](st, 0, n)
			copy(own, mine)
			b = bytesOf(own)
		}
		err := st.gatherOneWay(name, b, root, len(b), func(r int, d []byte) {
			switch {
			case bad != nil:
			case r == 0:
				copy(bytesOf(acc), d)
			default:
				op(acc, view[T](d, n))
			}
		})
		return st.conclude(name, bad, err)
	}
	if nb := len(bytesOf(mine)); st.reduceBig(nb) {
		// As Allreduce's large path: a phase that shows every member's
		// length first, so that all see a mismatch alike.
		if err := st.announce(name, nb); err != nil || bad != nil {
			return st.conclude(name, bad, err)
		}
		if v := st.verdict(name); v != nil {
			return v
		}
		ok, err := st.bigArea(name)
		if err != nil {
			return err
		}
		if ok {
			return reduceShared(st, mine, recv, op, root, name)
		}
	}
	if st.rank != root {
		return st.conclude(name, bad, ranks.Send(st.cc, mine, root, st.tag()))
	}
	if bad != nil {
		return st.conclude(name, bad, st.absorb(name, all, nil))
	}
	return st.conclude(name, nil, reduceAtRoot(st, mine, recv[:n], op, name))
}

// reduceLines reduces the lines (or, above inlineMax bytes, the staged
// data) of members 0..upto-1, in rank order, into acc.
func reduceLines[T any](st *state, acc []T, op Op[T], upto int, name string) error {
	n := len(acc)
	nb := len(bytesOf(acc))
	for r := range upto {
		var d []byte
		var err error
		if nb <= inlineMax {
			d = st.read(r)
			err = checkLen(name, r, len(d), nb)
		} else {
			d, err = st.staged(name, r, nb)
		}
		if err != nil {
			return err
		}
		if r == 0 {
			copy(bytesOf(acc), d)
		} else {
			op(acc, view[T](d, n))
		}
	}
	return nil
}

// reduceAtRoot receives every other member's contribution in rank order
// and reduces into acc (root's own is mine, which may alias acc). Every
// contribution is received, whatever goes wrong, so that no sender waits.
func reduceAtRoot[T any](st *state, mine, acc []T, op Op[T], name string) error {
	n := len(acc)
	own := mine
	if st.rank != 0 && unsafe.SliceData(mine) == unsafe.SliceData(acc) {
		own = append([]T(nil), mine...) // in place: keep root's contribution
	}
	tmp := scratch[T](st, 0, n)
	var ferr error
	for r := range st.size {
		var x []T
		switch {
		case r == st.rank:
			x = own
		default:
			if err := recvExact(st, tmp, r, name); err != nil {
				if ferr == nil {
					ferr = err
				}
				continue
			}
			x = tmp
		}
		if ferr != nil {
			continue
		}
		if r == 0 {
			copy(acc, x)
		} else {
			op(acc, x)
		}
	}
	return ferr
}

func allreduce[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	const name = "Allreduce"
	if h, err := hierOf(c); err != nil || h != nil {
		if err != nil {
			return err
		}
		return hierAllreduce(c, h, send, recv, op)
	}
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		if op == nil {
			return errf(ranks.ErrArg, name, "nil op")
		}
		return interAllreduce(st, send, recv, op, name)
	}
	if st.span {
		return spanAllreduce(st, send, recv, op, name)
	}
	mine := send
	if mine == nil {
		mine = recv
	}
	var bad error
	switch {
	case op == nil:
		bad = st.argErr(errf(ranks.ErrArg, name, "nil op"))
	case send != nil && len(send) != len(recv):
		bad = st.argErr(errf(ranks.ErrBuffer, name, "send and receive buffers differ in length"))
	}
	// Every path begins with a phase that shows each member's kind of
	// contribution and its length to the others (inline data, a staged
	// length, an announced length: the lines' kinds), so that members
	// whose lengths differ, and so may have taken different paths, all
	// see it after that one phase and return ErrCount alike.
	b := bytesOf(mine)
	if len(b) <= inlineMax {
		if err := st.publish(name, b); err != nil {
			return err
		}
		if st.spin || st.size == 1 {
			if err := st.arrive(name); err != nil {
				return err
			}
			if bad != nil || st.verdict(name) != nil {
				return st.conclude(name, bad, nil)
			}
			return reduceLines(st, recv, op, st.size, name)
		}
		// Members sleep: the last to arrive reduces for all.
		last, err := st.arriveHold(name)
		if err != nil {
			return err
		}
		if !last {
			if bad != nil || st.verdict(name) != nil {
				return st.conclude(name, bad, nil)
			}
			return st.result(name, bytesOf(recv))
		}
		if mis := st.firstSizeMismatch(); mis >= 0 || bad != nil || st.verdict(name) != nil {
			return st.releaseBad(name, bad, mis, len(b))
		}
		err = reduceLines(st, recv, op, st.size, name)
		st.releaseWith(bytesOf(recv), -1)
		return err
	}
	if st.staging(len(b)) {
		if err := st.stageArrive(name, b); err != nil {
			return err
		}
		if bad != nil || st.verdict(name) != nil {
			return st.conclude(name, bad, nil)
		}
		return reduceLines(st, recv, op, st.size, name)
	}
	if err := st.announce(name, len(b)); err != nil || bad != nil {
		return st.conclude(name, bad, err)
	}
	if v := st.verdict(name); v != nil {
		return v
	}
	if st.useBig(len(b)) {
		ok, err := st.bigArea(name)
		if err != nil {
			return err
		}
		if ok {
			return reduceShared(st, mine, recv, op, noRoot, name)
		}
	}
	return st.conclude(name, nil, allreduceLarge(st, mine, recv, op, name))
}

// releaseBad ends a small Allreduce's phase at its last member when a
// contribution's size differs (member mis) or a member's arguments were
// invalid (bad: ours): the others get the error too.
func (st *state) releaseBad(name string, bad error, mis, n int) error {
	st.releaseWith(nil, max(mis, 0))
	if bad != nil || st.verdict(name) != nil {
		return st.conclude(name, bad, nil)
	}
	return checkLen(name, mis, -1, n)
}

// announce is the first phase of a large Allreduce: every member shows
// the length of its contribution (n bytes), and each returns ErrCount if
// any differs from its own. Members that spin each read every line;
// members that sleep let the last to arrive compare them (arriveHold).
func (st *state) announce(op string, n int) error {
	if err := st.reuse(op); err != nil {
		return err
	}
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], uint64(n))
	st.write(lineAnnounce, w[:])
	if st.spin || st.size == 1 {
		if err := st.arrive(op); err != nil {
			return err
		}
		if mis := st.firstSizeMismatch(); mis >= 0 {
			return checkLen(op, mis, -1, n)
		}
		return nil
	}
	last, err := st.arriveHold(op)
	if err != nil {
		return err
	}
	if last {
		mis := st.firstSizeMismatch()
		st.releaseWith(nil, mis)
		if mis >= 0 {
			return checkLen(op, mis, -1, n)
		}
		return nil
	}
	if r := st.hdr.resN; r == resBad || r == resNone {
		return checkLen(op, int(st.hdr.resBad), -1, n)
	}
	return nil
}

// blocks splits n elements into size nearly equal blocks: block r is
// [off[r], off[r+1]).
func blocks(n, size int) []int {
	off := make([]int, size+1)
	for r := range size {
		off[r+1] = off[r] + n/size
		if r < n%size {
			off[r+1]++
		}
	}
	return off
}

// allreduceLarge is a reduce-scatter (rank r reduces block r of every
// member's contribution, in rank order) then an allgather of the blocks.
func allreduceLarge[T any](st *state, mine, recv []T, op Op[T], name string) error {
	off := blocks(len(recv), st.size)
	me := st.rank
	blk := func(s []T, r int) []T { return s[off[r]:off[r+1]] }
	// Reduce-scatter.
	nb := off[me+1] - off[me]
	scratch[T](st, 0, (st.size+1)*nb) // grow once: the views below must not move
	acc := scratch[T](st, 0, nb)
	tmp := func(r int) []T { return scratch[T](st, (r+1)*nb, nb) }
	if err := exchange(st, tmp, func(r int) []T { return blk(mine, r) }, name); err != nil {
		return err
	}
	for r := range st.size {
		x := blk(mine, me)
		if r != me {
			x = tmp(r)
		}
		if r == 0 {
			copy(acc, x)
		} else {
			op(acc, x)
		}
	}
	// Allgather of the reduced blocks (a second tag: a new collective
	// step whose messages must not match the first's).
	st.k++
	copy(blk(recv, me), acc)
	return exchange(st, func(r int) []T { return blk(recv, r) }, func(int) []T { return acc }, name)
}

// AllreduceValue is Allreduce of one value.
func AllreduceValue[T any](c *ranks.Comm, v T, op Op[T]) (T, error) {
	buf := [2]T{v}
	err := Allreduce(c, buf[:1], buf[1:], op)
	return buf[1], err
}

func gather[T any](c *ranks.Comm, send, recv []T, root int) error {
	const name = "Gather"
	if h, err := hierOf(c); err != nil || h != nil {
		if err != nil {
			return err
		}
		return hierGather(c, h, send, recv, root)
	}
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interGatherv(st, send, recv, nil, nil, root, name)
	}
	if st.span {
		return spanGather(st, send, recv, root, name)
	}
	m := len(send)
	if send == nil && st.rank == root {
		m = len(recv) / st.size
	}
	var bad error
	mine := send
	if st.rank == root {
		if len(recv) < st.size*m {
			bad = st.argErr(errf(ranks.ErrBuffer, name, "receive buffer shorter than Size() blocks"))
		} else if send == nil {
			mine = recv[root*m : (root+1)*m]
		}
	}
	// Where members spin, through the lines or the scratch, one way to
	// the root (as Reduce). By message the root matched one message a
	// member: at 2 ranks, 32 B to 2 KiB, 0.87-1.31 µs a call against
	// Open MPI's 0.50-1.60 (osu_gather, 2026-11-27).
	if nb := len(bytesOf(mine)); (nb <= inlineMax || st.staging(nb)) && st.spin {
		if st.rank != root {
			if err := st.gatherOneWay(name, bytesOf(mine), root, nb, nil); err != nil || bad != nil {
				return st.conclude(name, bad, err)
			}
			return nil // done once written, as after an eager send
		}
		err := st.gatherOneWay(name, bytesOf(mine), root, nb, func(r int, d []byte) {
			if bad == nil {
				copy(bytesOf(recv[r*m:(r+1)*m]), d)
			}
		})
		return st.conclude(name, bad, err)
	}
	if st.rank != root {
		return st.conclude(name, nil, ranks.Send(st.cc, send, root, st.tag()))
	}
	if bad != nil {
		return st.conclude(name, bad, st.absorb(name, all, nil))
	}
	var local func()
	if send != nil {
		local = func() { copyOwn(recv[root*m:(root+1)*m], send) }
	}
	return st.conclude(name, nil, exchangeLocal(st, func(r int) []T { return recv[r*m : (r+1)*m] }, nil, local, name))
}

// checkV validates counts and displacements of a v-collective over a
// buffer of n elements.
func checkV(name string, size int, counts, displs []int, n int) error {
	if len(counts) < size || len(displs) < size {
		return errf(ranks.ErrCount, name, "fewer counts or displacements than members")
	}
	for r := range size {
		if counts[r] < 0 || displs[r] < 0 || displs[r] > n || counts[r] > n-displs[r] {
			return errf(ranks.ErrCount, name, "count or displacement out of the buffer")
		}
	}
	return nil
}

func gatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int, root int) error {
	const name = "Gatherv"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interGatherv(st, send, recv, counts, displs, root, name)
	}
	if st.rank != root {
		return st.conclude(name, nil, ranks.Send(st.cc, send, root, st.tag()))
	}
	bad := checkV(name, st.size, counts, displs, len(recv))
	if bad == nil && send != nil && len(send) != counts[root] {
		bad = errf(ranks.ErrCount, name, "root's send differs from its count")
	}
	if bad != nil {
		return st.conclude(name, st.argErr(bad), st.absorb(name, all, nil))
	}
	var local func()
	if send != nil {
		local = func() { copyOwn(recv[displs[root]:displs[root]+counts[root]], send) }
	}
	return st.conclude(name, nil, exchangeLocal(st, func(r int) []T { return recv[displs[r] : displs[r]+counts[r]] }, nil, local, name))
}

func scatter[T any](c *ranks.Comm, send, recv []T, root int) error {
	const name = "Scatter"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interScatterv(st, send, nil, nil, recv, root, true, name)
	}
	if st.span {
		return spanScatter(st, send, recv, root, name)
	}
	m := len(recv)
	if recv == nil && st.rank == root {
		m = len(send) / st.size
	}
	if st.spin && st.size > 1 {
		// Every block in the root's line or scratch, one way (as Bcast):
		// each member copies its own.
		esz := int(unsafe.Sizeof(*new(T)))
		if all := st.size * m * esz; all <= inlineMax || st.staging(all) {
			var p []byte
			var bad error
			if st.rank == root {
				// A short send buffer goes as it is: the others see a
				// length that is not theirs, and conclude finds the
				// root's error (verdict).
				if len(send) < st.size*m {
					bad = st.argErr(errf(ranks.ErrBuffer, name, "send buffer shorter than Size() blocks"))
					p = bytesOf(send)
				} else {
					p = bytesOf(send[:st.size*m])
					if recv != nil {
						copy(recv, send[root*m:(root+1)*m])
					}
				}
			}
			err := st.oneWayPhase(name, p, root, all, st.rank*m*esz, bytesOf(recv))
			return st.conclude(name, bad, err)
		}
	}
	if st.rank != root {
		return st.conclude(name, nil, recvExact(st, recv, root, name))
	}
	if len(send) < st.size*m {
		bad := st.argErr(errf(ranks.ErrBuffer, name, "send buffer shorter than Size() blocks"))
		return st.conclude(name, bad, st.absorb(name, nil, all))
	}
	counts, displs := make([]int, st.size), make([]int, st.size)
	for r := range st.size {
		counts[r], displs[r] = m, r*m
	}
	return scattervSteps(st, send, counts, displs, recv, root, name)
}

func scatterv[T any](c *ranks.Comm, send []T, counts, displs []int, recv []T, root int) error {
	const name = "Scatterv"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interScatterv(st, send, counts, displs, recv, root, false, name)
	}
	if st.rank != root {
		s, err := ranks.Recv(st.cc, recv, root, st.tag())
		if err == nil && s.Bytes > len(bytesOf(recv)) {
			err = errf(ranks.ErrTruncate, name, "block longer than the receive buffer")
		}
		return st.conclude(name, nil, err)
	}
	if bad := checkV(name, st.size, counts, displs, len(send)); bad != nil {
		return st.conclude(name, st.argErr(bad), st.absorb(name, nil, all))
	}
	return scattervSteps(st, send, counts, displs, recv, root, name)
}

func scattervSteps[T any](st *state, send []T, counts, displs []int, recv []T, root int, name string) error {
	src := send[displs[root] : displs[root]+counts[root]]
	if recv != nil && len(recv) < len(src) {
		bad := st.argErr(errf(ranks.ErrBuffer, name, "root's receive buffer shorter than its block"))
		return st.conclude(name, bad, st.absorb(name, nil, all))
	}
	var local func()
	if recv != nil {
		local = func() { copyOwn(recv, src) }
	}
	return st.conclude(name, nil, exchangeLocal(st, nil, func(r int) []T { return send[displs[r] : displs[r]+counts[r]] }, local, name))
}

func allgather[T any](c *ranks.Comm, send, recv []T) error {
	const name = "Allgather"
	if h, err := hierOf(c); err != nil || h != nil {
		if err != nil {
			return err
		}
		return hierAllgather(c, h, send, recv)
	}
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interAllgatherv(st, send, recv, nil, nil, name)
	}
	if st.span {
		return spanAllgather(st, send, recv, name)
	}
	m := len(send)
	mine := send
	if send == nil {
		m = len(recv) / st.size
		mine = recv[st.rank*m : (st.rank+1)*m]
	}
	var bad error
	if len(recv) < st.size*m {
		bad = st.argErr(errf(ranks.ErrBuffer, name, "receive buffer shorter than Size() blocks"))
	}
	if b := bytesOf(mine); len(b) <= inlineMax || st.staging(len(b)) {
		var err error
		if len(b) <= inlineMax {
			if err = st.publish(name, b); err == nil {
				err = st.arrive(name)
			}
		} else {
			err = st.stageArrive(name, b)
		}
		if err != nil {
			return err
		}
		if bad != nil || st.verdict(name) != nil {
			return st.conclude(name, bad, nil)
		}
		for r := range st.size {
			var d []byte
			if len(b) <= inlineMax {
				d = st.read(r)
				err = checkLen(name, r, len(d), len(b))
			} else {
				d, err = st.staged(name, r, len(b))
			}
			if err != nil {
				return err
			}
			copy(bytesOf(recv[r*m:(r+1)*m]), d)
		}
		return nil
	}
	// Members that sleep: through the shared area, as Alltoall, when a
	// member's block fits its part (docs/performance.md, 2026-11-28).
	if b := bytesOf(mine); !st.spin && st.size > 2 && st.exchangeFits(len(b), true) {
		ok, err := st.bigArea(name)
		if err != nil {
			return err
		}
		if ok {
			return exchangeShared(st, b, bytesOf(recv), true, bad, name)
		}
	}
	if bad != nil {
		return st.conclude(name, bad, st.absorb(name, all, all))
	}
	counts, displs := make([]int, st.size), make([]int, st.size)
	for r := range st.size {
		counts[r], displs[r] = m, r*m
	}
	return allgathervSteps(st, mine, recv, counts, displs, name)
}

func allgatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int) error {
	const name = "Allgatherv"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interAllgatherv(st, send, recv, counts, displs, name)
	}
	if bad := checkV(name, st.size, counts, displs, len(recv)); bad != nil {
		return st.conclude(name, st.argErr(bad), st.absorb(name, all, all))
	}
	mine := send
	if send == nil {
		mine = recv[displs[st.rank] : displs[st.rank]+counts[st.rank]]
	}
	return allgathervSteps(st, mine, recv, counts, displs, name)
}

func allgathervSteps[T any](st *state, mine, recv []T, counts, displs []int, name string) error {
	dst := recv[displs[st.rank] : displs[st.rank]+counts[st.rank]]
	var local func()
	if unsafe.SliceData(dst) != unsafe.SliceData(mine) {
		local = func() { copyOwn(dst, mine) }
	}
	return st.conclude(name, nil, exchangeLocal(st, func(r int) []T { return recv[displs[r] : displs[r]+counts[r]] },
		func(int) []T { return mine }, local, name))
}

func alltoall[T any](c *ranks.Comm, send, recv []T) error {
	const name = "Alltoall"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interAlltoallv(st, send, nil, nil, recv, nil, nil, name)
	}
	if st.span {
		return spanAlltoall(st, send, recv, name)
	}
	// In place, the blocks are read from recv: the paths through shared
	// memory copy all of them in before they write any (the area's
	// rounds copy slice j of every block in before they write slice j),
	// and only the message path needs them aside.
	src := send
	if send == nil {
		src = recv
	}
	var bad error
	if len(src) != len(recv) || len(recv)%st.size != 0 {
		bad = st.argErr(errf(ranks.ErrBuffer, name, "buffers must be Size() equal blocks, the same length"))
	}
	m := len(recv) / st.size
	if b := bytesOf(src); len(b) <= inlineMax || st.staging(len(b)) {
		// Every member's blocks, inline or staged; each takes its own.
		var err error
		if len(b) <= inlineMax {
			if err = st.publish(name, b); err == nil {
				err = st.arrive(name)
			}
		} else {
			err = st.stageArrive(name, b)
		}
		if err != nil {
			return err
		}
		if bad != nil || st.verdict(name) != nil {
			return st.conclude(name, bad, nil)
		}
		mb := len(b) / st.size
		for r := range st.size {
			var d []byte
			if len(b) <= inlineMax {
				d = st.read(r)
				err = checkLen(name, r, len(d), len(b))
			} else {
				d, err = st.staged(name, r, len(b))
			}
			if err != nil {
				return err
			}
			copy(bytesOf(recv[r*m:(r+1)*m]), d[st.rank*mb:(st.rank+1)*mb])
		}
		return nil
	}
	// Members that sleep: through the shared area (big.go) when a
	// member's blocks fit its part. By message every pair of members must
	// be scheduled in turn: 4,032 messages a call at 64 ranks, 6.9-9.7
	// ms from 128 B to 2 KiB blocks on 2 cores (coll_sweep, 2026-11-27).
	if !st.spin && st.size > 2 && st.exchangeFits(len(bytesOf(src)), false) {
		ok, err := st.bigArea(name)
		if err != nil {
			return err
		}
		if ok {
			return exchangeShared(st, bytesOf(src), bytesOf(recv), false, bad, name)
		}
	}
	if bad != nil {
		return st.conclude(name, bad, st.absorb(name, all, all))
	}
	if send == nil {
		src = append([]T(nil), recv...)
	}
	counts, displs := make([]int, st.size), make([]int, st.size)
	for r := range st.size {
		counts[r], displs[r] = m, r*m
	}
	return alltoallvSteps(st, src, counts, displs, recv, counts, displs, name)
}

func alltoallv[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	const name = "Alltoallv"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return interAlltoallv(st, send, scounts, sdispls, recv, rcounts, rdispls, name)
	}
	bad := checkV(name, st.size, scounts, sdispls, len(send))
	if bad == nil {
		bad = checkV(name, st.size, rcounts, rdispls, len(recv))
	}
	if bad == nil && scounts[st.rank] != rcounts[st.rank] {
		bad = errf(ranks.ErrCount, name, "this rank's send and receive counts to itself differ")
	}
	if bad != nil {
		return st.conclude(name, st.argErr(bad), st.absorb(name, all, all))
	}
	return alltoallvSteps(st, send, scounts, sdispls, recv, rcounts, rdispls, name)
}

func alltoallvSteps[T any](st *state, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int, name string) error {
	me := st.rank
	local := func() { copyOwn(recv[rdispls[me]:rdispls[me]+rcounts[me]], send[sdispls[me]:sdispls[me]+scounts[me]]) }
	return st.conclude(name, nil, exchangeLocal(st, func(r int) []T { return recv[rdispls[r] : rdispls[r]+rcounts[r]] },
		func(r int) []T { return send[sdispls[r] : sdispls[r]+scounts[r]] }, local, name))
}

func alltoallw(c *ranks.Comm, send, recv [][]byte) error {
	const name = "Alltoallw"
	st, _, err := start[byte](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		if len(send) < st.ic.rsize || len(recv) < st.ic.rsize {
			return errf(ranks.ErrCount, name, "fewer send or receive blocks than remote members")
		}
		return st.fail(interExchange(st, func(r int) []byte { return recv[r] }, func(r int) []byte { return send[r] }, name), name)
	}
	if len(send) < st.size || len(recv) < st.size {
		bad := st.argErr(errf(ranks.ErrCount, name, "fewer send or receive blocks than members"))
		return st.conclude(name, bad, st.absorb(name, all, all))
	}
	me := st.rank
	if len(send[me]) != len(recv[me]) {
		bad := st.argErr(errf(ranks.ErrCount, name, "this rank's send and receive blocks to itself differ"))
		return st.conclude(name, bad, st.absorb(name, all, all))
	}
	copy(recv[me], send[me])
	return st.conclude(name, nil, exchange(st, func(r int) []byte { return recv[r] }, func(r int) []byte { return send[r] }, name))
}

func reduceScatterBlock[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	const name = "ReduceScatterBlock"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		if op == nil {
			return errf(ranks.ErrArg, name, "nil op")
		}
		counts := make([]int, st.size)
		for r := range counts {
			counts[r] = len(recv)
		}
		return interReduceScatter(st, send, recv, counts, op, name)
	}
	m := len(recv)
	src := send
	if send == nil {
		m = len(recv) / st.size
		src = append([]T(nil), recv[:st.size*m]...)
	}
	var bad error
	switch {
	case op == nil:
		bad = errf(ranks.ErrArg, name, "nil op")
	case len(src) != st.size*m:
		bad = errf(ranks.ErrBuffer, name, "send must hold Size() blocks of len(recv) elements")
	}
	if bad != nil {
		return st.conclude(name, st.argErr(bad), st.absorb(name, all, all))
	}
	counts := make([]int, st.size)
	for r := range counts {
		counts[r] = m
	}
	return reduceScatterSteps(st, src, recv[:m], counts, op, name)
}

func reduceScatter[T any](c *ranks.Comm, send, recv []T, counts []int, op Op[T]) error {
	const name = "ReduceScatter"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		if op == nil {
			return errf(ranks.ErrArg, name, "nil op")
		}
		return interReduceScatter(st, send, recv, counts, op, name)
	}
	var bad error
	total := 0
	if op == nil {
		bad = errf(ranks.ErrArg, name, "nil op")
	} else if len(counts) < st.size {
		bad = errf(ranks.ErrCount, name, "fewer counts than members")
	} else {
		for r := range st.size {
			if counts[r] < 0 {
				bad = errf(ranks.ErrCount, name, "negative count")
			}
			total += counts[r]
		}
	}
	src := send
	if bad == nil && send == nil {
		if len(recv) < total {
			bad = errf(ranks.ErrBuffer, name, "in place: the receive buffer must hold the whole input")
		} else {
			src = append([]T(nil), recv[:total]...)
		}
	}
	if bad == nil && (len(src) != total || len(recv) < counts[st.rank]) {
		bad = errf(ranks.ErrBuffer, name, "send must hold the sum of counts; recv this rank's count")
	}
	if bad != nil {
		return st.conclude(name, st.argErr(bad), st.absorb(name, all, all))
	}
	return reduceScatterSteps(st, src, recv[:counts[st.rank]], counts[:st.size], op, name)
}

func reduceScatterSteps[T any](st *state, send, recv []T, counts []int, op Op[T], name string) error {
	off := make([]int, st.size+1)
	for r := range st.size {
		off[r+1] = off[r] + counts[r]
	}
	me := st.rank
	scratch[T](st, 0, st.size*counts[me]) // grow once: the views below must not move
	tmp := func(r int) []T { return scratch[T](st, r*counts[me], counts[me]) }
	if err := exchange(st, tmp, func(r int) []T { return send[off[r]:off[r+1]] }, name); err != nil {
		return st.conclude(name, nil, err)
	}
	if v := st.verdict(name); v != nil {
		return v
	}
	for r := range st.size {
		x := send[off[me]:off[me+1]]
		if r != me {
			x = tmp(r)
		}
		if r == 0 {
			copy(recv, x)
		} else {
			op(recv, x)
		}
	}
	return nil
}

func scan[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	return prefix(c, send, recv, op, false, "Scan")
}

func exscan[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	return prefix(c, send, recv, op, true, "Exscan")
}

func prefix[T any](c *ranks.Comm, send, recv []T, op Op[T], exclusive bool, name string) error {
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if st.ic != nil {
		return errNotInter(name)
	}
	mine := send
	if mine == nil {
		mine = append([]T(nil), recv...)
	}
	var bad error
	switch {
	case op == nil:
		bad = st.argErr(errf(ranks.ErrArg, name, "nil op"))
	case len(recv) < len(mine):
		bad = st.argErr(errf(ranks.ErrBuffer, name, "receive buffer shorter than the contribution"))
	}
	n := len(mine)
	me := st.rank
	upto := me + 1
	if exclusive {
		upto = me
	}
	if b := bytesOf(mine); len(b) <= inlineMax && !st.span {
		if err := st.publish(name, b); err != nil {
			return err
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		if bad != nil || st.verdict(name) != nil {
			return st.conclude(name, bad, nil)
		}
		if upto == 0 {
			return nil
		}
		return reduceLines(st, recv[:n], op, upto, name)
	}
	// A chain: member r gets the prefix of 0..r-1 from r-1 and passes on
	// the prefix of 0..r. A member with bad arguments passes an empty
	// message on, which its successor reports.
	if bad != nil {
		return st.conclude(name, bad, st.absorb(name, func(r int) bool { return r == me-1 }, func(r int) bool { return r == me+1 }))
	}
	acc := make([]T, n)
	if me > 0 {
		if err := recvExact(st, acc, me-1, name); err != nil {
			if me+1 < st.size {
				// Pass the trouble on: the rest of the chain waits.
				st.absorb(name, nil, func(r int) bool { return r == me+1 })
			}
			return st.conclude(name, nil, err)
		}
	}
	out := acc
	if me == 0 {
		copy(out, mine)
	} else {
		if exclusive {
			copy(recv[:n], acc)
			out = append([]T(nil), acc...)
		}
		op(out, mine)
	}
	if !exclusive {
		copy(recv[:n], out)
	}
	if me+1 < st.size {
		return st.conclude(name, nil, ranks.Send(st.cc, out, me+1, st.tag()))
	}
	return st.verdict(name)
}
