package coll

import (
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
func view[T any](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

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
	base := unsafe.Add(unsafe.Pointer(unsafe.SliceData(st.scratch)), off*sz)
	return unsafe.Slice((*T)(base), n)
}

// start validates T and the root, and begins the collective.
func start[T any](c *ranks.Comm, op string, root int) (*state, int, error) {
	sz, err := ranks.ElemSize[T]()
	if err != nil {
		return nil, 0, err
	}
	st, err := begin(c, op)
	if err != nil {
		return nil, 0, err
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

// waitAll waits for rs; the error is the collective's (see fail).
func (st *state) waitAll(rs []*ranks.Request, op string) error {
	if err := ranks.WaitAll(rs, nil); err != nil {
		return st.fail(err, op)
	}
	return nil
}

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
		return st.fail(err, op)
	}
	if s.Bytes != len(bytesOf(buf)) {
		return &ranks.Error{Class: ranks.ErrCount, Op: op, Rank: src, Detail: "a member sent a block of another size"}
	}
	return nil
}

// exchange posts, for every other member r, a receive into from(r) and a
// send of to(r) (a nil func: none of that kind), receives first so that
// sends find them posted, and waits for them all.
func exchange[T any](st *state, from, to func(r int) []T, name string) error {
	rs := make([]*ranks.Request, 0, 2*st.size)
	for _, recv := range []bool{true, false} {
		buf := to
		if recv {
			buf = from
		}
		if buf == nil {
			continue
		}
		for r := range st.size {
			if r == st.rank {
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
			rs = append(rs, q)
		}
	}
	return st.waitAll(rs, name)
}

func barrier(c *ranks.Comm) error {
	st, err := begin(c, "Barrier")
	if err != nil {
		return err
	}
	return st.arrive("Barrier")
}

func bcast[T any](c *ranks.Comm, buf []T, root int) error {
	const op = "Bcast"
	st, _, err := start[T](c, op, root)
	if err != nil {
		return err
	}
	b := bytesOf(buf)
	if len(b) <= inlineMax && st.spin {
		return st.bcastOneWay(op, b, root)
	}
	if len(b) <= inlineMax {
		if st.rank == root {
			if err := st.publish(op, b); err != nil {
				return err
			}
		}
		if err := st.arrive(op); err != nil {
			return err
		}
		if st.rank != root {
			d := st.read(root)
			if err := checkLen(op, root, len(d), len(b)); err != nil {
				return err
			}
			copy(b, d)
		}
		return nil
	}
	if st.rank != root {
		return recvExact(st, buf, root, op)
	}
	return exchange(st, nil, func(int) []T { return buf }, op)
}

func reduce[T any](c *ranks.Comm, send, recv []T, op Op[T], root int) error {
	const name = "Reduce"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if op == nil {
		return errf(ranks.ErrArg, name, "nil op")
	}
	mine := send
	if mine == nil && st.rank == root {
		mine = recv
	}
	n := len(mine)
	if st.rank == root && len(recv) < n {
		return errf(ranks.ErrBuffer, name, "receive buffer shorter than the contribution")
	}
	if b := bytesOf(mine); len(b) <= inlineMax {
		if err := st.publish(name, b); err != nil {
			return err
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		if st.rank == root {
			return reduceLines(st, recv[:n], op, st.size, name)
		}
		return nil
	}
	if st.rank != root {
		return st.fail(ranks.Send(st.cc, mine, root, st.tag()), name)
	}
	return reduceAtRoot(st, mine, recv[:n], op, name)
}

// reduceLines reduces the lines of members 0..upto-1, in rank order,
// into acc.
func reduceLines[T any](st *state, acc []T, op Op[T], upto int, name string) error {
	n := len(acc)
	nb := len(bytesOf(acc))
	for r := range upto {
		d := st.read(r)
		if err := checkLen(name, r, len(d), nb); err != nil {
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
// and reduces into acc (root's own is mine, which may alias acc).
func reduceAtRoot[T any](st *state, mine, acc []T, op Op[T], name string) error {
	n := len(acc)
	own := mine
	if st.rank != 0 && unsafe.SliceData(mine) == unsafe.SliceData(acc) {
		own = append([]T(nil), mine...) // in place: keep root's contribution
	}
	tmp := scratch[T](st, 0, n)
	for r := range st.size {
		var x []T
		switch {
		case r == st.rank:
			x = own
		default:
			if err := recvExact(st, tmp, r, name); err != nil {
				return err
			}
			x = tmp
		}
		if r == 0 {
			copy(acc, x)
		} else {
			op(acc, x)
		}
	}
	return nil
}

func allreduce[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	const name = "Allreduce"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	if op == nil {
		return errf(ranks.ErrArg, name, "nil op")
	}
	if send != nil && len(send) != len(recv) {
		return errf(ranks.ErrBuffer, name, "send and receive buffers differ in length")
	}
	mine := send
	if mine == nil {
		mine = recv
	}
	if b := bytesOf(mine); len(b) <= inlineMax {
		if err := st.publish(name, b); err != nil {
			return err
		}
		if st.spin || st.size == 1 {
			if err := st.arrive(name); err != nil {
				return err
			}
			return reduceLines(st, recv, op, st.size, name)
		}
		// Members sleep: the last to arrive reduces for all.
		last, err := st.arriveHold(name)
		if err != nil {
			return err
		}
		if !last {
			return st.result(name, bytesOf(recv))
		}
		if bad := st.firstSizeMismatch(); bad >= 0 {
			st.releaseWith(nil, bad)
			return checkLen(name, bad, -1, len(b))
		}
		err = reduceLines(st, recv, op, st.size, name)
		st.releaseWith(bytesOf(recv), -1)
		return err
	}
	if b := bytesOf(mine); st.staging(len(b)) {
		if err := st.stageArrive(name, b); err != nil {
			return err
		}
		for r := range st.size {
			d, err := st.staged(name, r, len(b))
			if err != nil {
				return err
			}
			if r == 0 {
				copy(bytesOf(recv), d)
			} else {
				op(recv, view[T](d, len(recv)))
			}
		}
		return nil
	}
	if st.useBig(len(bytesOf(mine))) {
		ok, err := st.bigArea(name)
		if err != nil {
			return err
		}
		if ok {
			return allreduceShared(st, mine, recv, op, name)
		}
	}
	return allreduceLarge(st, mine, recv, op, name)
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
	buf := []T{v}
	err := Allreduce(c, nil, buf, op)
	return buf[0], err
}

func gather[T any](c *ranks.Comm, send, recv []T, root int) error {
	const name = "Gather"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	m := len(send)
	if send == nil && st.rank == root {
		m = len(recv) / st.size
	}
	if st.rank == root && len(recv) < st.size*m {
		return errf(ranks.ErrBuffer, name, "receive buffer shorter than Size() blocks")
	}
	mine := send
	if send == nil && st.rank == root {
		mine = recv[root*m : (root+1)*m]
	}
	if nb := len(bytesOf(mine)); nb <= inlineMax {
		if err := st.publish(name, bytesOf(mine)); err != nil {
			return err
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		if st.rank != root {
			return nil
		}
		for r := range st.size {
			d := st.read(r)
			if err := checkLen(name, r, len(d), nb); err != nil {
				return err
			}
			copy(bytesOf(recv[r*m:(r+1)*m]), d)
		}
		return nil
	}
	if st.rank != root {
		return st.fail(ranks.Send(st.cc, send, root, st.tag()), name)
	}
	var rs []*ranks.Request
	for r := range st.size {
		if r == root {
			if send != nil {
				copy(recv[r*m:(r+1)*m], send)
			}
			continue
		}
		q, err := ranks.Irecv(st.cc, recv[r*m:(r+1)*m], r, st.tag())
		if err != nil {
			return relabel(err, name)
		}
		rs = append(rs, q)
	}
	return st.waitAll(rs, name)
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
	if st.rank != root {
		return st.fail(ranks.Send(st.cc, send, root, st.tag()), name)
	}
	if err := checkV(name, st.size, counts, displs, len(recv)); err != nil {
		return err
	}
	var rs []*ranks.Request
	for r := range st.size {
		dst := recv[displs[r] : displs[r]+counts[r]]
		if r == root {
			if send != nil {
				if len(send) != counts[r] {
					return errf(ranks.ErrCount, name, "root's send differs from its count")
				}
				copy(dst, send)
			}
			continue
		}
		q, err := ranks.Irecv(st.cc, dst, r, st.tag())
		if err != nil {
			return relabel(err, name)
		}
		rs = append(rs, q)
	}
	return st.waitAll(rs, name)
}

func scatter[T any](c *ranks.Comm, send, recv []T, root int) error {
	const name = "Scatter"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if st.rank != root {
		return recvExact(st, recv, root, name)
	}
	m := len(recv)
	if recv == nil {
		m = len(send) / st.size
	}
	if len(send) < st.size*m {
		return errf(ranks.ErrBuffer, name, "send buffer shorter than Size() blocks")
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
	if st.rank != root {
		s, err := ranks.Recv(st.cc, recv, root, st.tag())
		if err == nil && s.Bytes > len(bytesOf(recv)) {
			err = errf(ranks.ErrTruncate, name, "block longer than the receive buffer")
		}
		return st.fail(err, name)
	}
	if err := checkV(name, st.size, counts, displs, len(send)); err != nil {
		return err
	}
	return scattervSteps(st, send, counts, displs, recv, root, name)
}

func scattervSteps[T any](st *state, send []T, counts, displs []int, recv []T, root int, name string) error {
	var rs []*ranks.Request
	for r := range st.size {
		src := send[displs[r] : displs[r]+counts[r]]
		if r == root {
			if recv != nil {
				if len(recv) < len(src) {
					return errf(ranks.ErrBuffer, name, "root's receive buffer shorter than its block")
				}
				copy(recv, src)
			}
			continue
		}
		q, err := ranks.Isend(st.cc, src, r, st.tag())
		if err != nil {
			return relabel(err, name)
		}
		rs = append(rs, q)
	}
	return st.waitAll(rs, name)
}

func allgather[T any](c *ranks.Comm, send, recv []T) error {
	const name = "Allgather"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	m := len(send)
	mine := send
	if send == nil {
		m = len(recv) / st.size
		mine = recv[st.rank*m : (st.rank+1)*m]
	}
	if len(recv) < st.size*m {
		return errf(ranks.ErrBuffer, name, "receive buffer shorter than Size() blocks")
	}
	if b := bytesOf(mine); len(b) <= inlineMax {
		if err := st.publish(name, b); err != nil {
			return err
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		for r := range st.size {
			d := st.read(r)
			if err := checkLen(name, r, len(d), len(b)); err != nil {
				return err
			}
			copy(bytesOf(recv[r*m:(r+1)*m]), d)
		}
		return nil
	}
	if b := bytesOf(mine); st.staging(len(b)) {
		if err := st.stageArrive(name, b); err != nil {
			return err
		}
		for r := range st.size {
			d, err := st.staged(name, r, len(b))
			if err != nil {
				return err
			}
			copy(bytesOf(recv[r*m:(r+1)*m]), d)
		}
		return nil
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
	if err := checkV(name, st.size, counts, displs, len(recv)); err != nil {
		return err
	}
	mine := send
	if send == nil {
		mine = recv[displs[st.rank] : displs[st.rank]+counts[st.rank]]
	}
	return allgathervSteps(st, mine, recv, counts, displs, name)
}

func allgathervSteps[T any](st *state, mine, recv []T, counts, displs []int, name string) error {
	dst := recv[displs[st.rank] : displs[st.rank]+counts[st.rank]]
	if unsafe.SliceData(dst) != unsafe.SliceData(mine) {
		copy(dst, mine)
	}
	return exchange(st, func(r int) []T { return recv[displs[r] : displs[r]+counts[r]] },
		func(int) []T { return mine }, name)
}

func alltoall[T any](c *ranks.Comm, send, recv []T) error {
	const name = "Alltoall"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	src := send
	if send == nil {
		src = append([]T(nil), recv...)
	}
	if len(src) != len(recv) || len(recv)%st.size != 0 {
		return errf(ranks.ErrBuffer, name, "buffers must be Size() equal blocks, the same length")
	}
	m := len(recv) / st.size
	if b := bytesOf(src); len(b) <= inlineMax || st.staging(len(b)) {
		// Every member's blocks, inline or staged; each takes its own.
		var err error
		if len(b) <= inlineMax {
			if err := st.publish(name, b); err != nil {
				return err
			}
			err = st.arrive(name)
		} else {
			err = st.stageArrive(name, b)
		}
		if err != nil {
			return err
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
	if err := checkV(name, st.size, scounts, sdispls, len(send)); err != nil {
		return err
	}
	if err := checkV(name, st.size, rcounts, rdispls, len(recv)); err != nil {
		return err
	}
	return alltoallvSteps(st, send, scounts, sdispls, recv, rcounts, rdispls, name)
}

func alltoallvSteps[T any](st *state, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int, name string) error {
	me := st.rank
	if scounts[me] != rcounts[me] {
		return errf(ranks.ErrCount, name, "this rank's send and receive counts to itself differ")
	}
	copy(recv[rdispls[me]:rdispls[me]+rcounts[me]], send[sdispls[me]:sdispls[me]+scounts[me]])
	return exchange(st, func(r int) []T { return recv[rdispls[r] : rdispls[r]+rcounts[r]] },
		func(r int) []T { return send[sdispls[r] : sdispls[r]+scounts[r]] }, name)
}

func reduceScatterBlock[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	const name = "ReduceScatterBlock"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	m := len(recv)
	src := send
	if send == nil {
		m = len(recv) / st.size
		src = append([]T(nil), recv[:st.size*m]...)
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
	if len(counts) < st.size {
		return errf(ranks.ErrCount, name, "fewer counts than members")
	}
	total := 0
	for r := range st.size {
		if counts[r] < 0 {
			return errf(ranks.ErrCount, name, "negative count")
		}
		total += counts[r]
	}
	src := send
	if send == nil {
		if len(recv) < total {
			return errf(ranks.ErrBuffer, name, "in place: the receive buffer must hold the whole input")
		}
		src = append([]T(nil), recv[:total]...)
	}
	if len(src) != total || len(recv) < counts[st.rank] {
		return errf(ranks.ErrBuffer, name, "send must hold the sum of counts; recv this rank's count")
	}
	return reduceScatterSteps(st, src, recv[:counts[st.rank]], counts[:st.size], op, name)
}

func reduceScatterSteps[T any](st *state, send, recv []T, counts []int, op Op[T], name string) error {
	if op == nil {
		return errf(ranks.ErrArg, name, "nil op")
	}
	off := make([]int, st.size+1)
	for r := range st.size {
		off[r+1] = off[r] + counts[r]
	}
	me := st.rank
	scratch[T](st, 0, st.size*counts[me]) // grow once: the views below must not move
	tmp := func(r int) []T { return scratch[T](st, r*counts[me], counts[me]) }
	if err := exchange(st, tmp, func(r int) []T { return send[off[r]:off[r+1]] }, name); err != nil {
		return err
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
	if op == nil {
		return errf(ranks.ErrArg, name, "nil op")
	}
	mine := send
	if mine == nil {
		mine = append([]T(nil), recv...)
	}
	if len(recv) < len(mine) {
		return errf(ranks.ErrBuffer, name, "receive buffer shorter than the contribution")
	}
	n := len(mine)
	me := st.rank
	upto := me + 1
	if exclusive {
		upto = me
	}
	if b := bytesOf(mine); len(b) <= inlineMax {
		if err := st.publish(name, b); err != nil {
			return err
		}
		if err := st.arrive(name); err != nil {
			return err
		}
		if upto == 0 {
			return nil
		}
		return reduceLines(st, recv[:n], op, upto, name)
	}
	// A chain: member r gets the prefix of 0..r-1 from r-1 and passes on
	// the prefix of 0..r.
	prefix := make([]T, n)
	if me > 0 {
		if err := recvExact(st, prefix, me-1, name); err != nil {
			return err
		}
	}
	out := prefix
	if me == 0 {
		copy(out, mine)
	} else {
		if exclusive {
			copy(recv[:n], prefix)
			out = append([]T(nil), prefix...)
		}
		op(out, mine)
	}
	if !exclusive {
		copy(recv[:n], out)
	}
	if me+1 < st.size {
		return st.fail(ranks.Send(st.cc, out, me+1, st.tag()), name)
	}
	return nil
}
