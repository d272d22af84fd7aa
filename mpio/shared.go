package mpio

import (
	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// The shared file pointer is one word in the file's shared memory
// (header.shared), in etypes of the view, which every member must have
// the same for these calls (MPI's rule; not checked). An independent
// call (ReadShared, WriteShared and their nonblocking forms) claims its
// range with one compare-and-swap that moves the pointer past it, then
// reads or writes there: the accesses of all members are serialized in
// the order of their claims, never overlap, and leave no gap.
//
// The collective calls that set the pointer (SetView, SeekShared,
// ReadOrdered, WriteOrdered) must give it one new value at every member,
// set before any member's next shared-pointer call and never after it.
// Each member learns the others' views of the pointer in the call's
// first collective (an Allgather), by which time every member's earlier
// claims are done and no later one has begun: the pointer's value is the
// largest of them (claims only move it forward). Each member then
// installs the new value itself before it returns, and a word of 16 bits
// beside the position, the install epoch, numbers the collective calls
// that installed: a member installs only over an older epoch, so the
// first member's install counts and a late member's install never
// undoes a claim that an early member made after returning.
const (
	ptrBits = 48
	ptrMask = 1<<ptrBits - 1
)

// sharedPos is the shared pointer's position.
func (f *File) sharedPos(op string) (int64, error) {
	cur, err := f.updateShared(op, func(uint64) (uint64, bool) { return 0, false })
	return int64(cur & ptrMask), err
}

// install sets the shared pointer to v for the collective call this
// member is in (in a queue job: f.epoch is the queue's).
func (f *File) install(op string, v int64) error {
	f.epoch++
	want := uint64(f.epoch)<<ptrBits | uint64(v)
	_, err := f.updateShared(op, func(cur uint64) (uint64, bool) {
		// Over an older epoch only: else a member installed it already.
		return want, int16(uint16(cur>>ptrBits)-f.epoch) < 0
	})
	return err
}

// claim moves the shared pointer past n etypes and returns where it was.
func (f *File) claim(op string, n int64) (int64, error) {
	over := false
	cur, err := f.updateShared(op, func(cur uint64) (uint64, bool) {
		over = n > ptrMask-int64(cur&ptrMask)
		return cur + uint64(n), !over
	})
	pos := int64(cur & ptrMask)
	switch {
	case err != nil:
		return 0, err
	case over:
		return 0, errf(ranks.ErrArg, op, -1, "the shared file pointer (%d) would pass 2^%d etypes", pos, ptrBits)
	}
	return pos, nil
}

// updateShared replaces the shared pointer's word cur with next(cur)'s
// first result if its second is true, atomically, and returns cur: with
// compare-and-swap in the file's shared memory, or under the pointer
// file's lock when the file spans nodes (span.go).
func (f *File) updateShared(op string, next func(cur uint64) (uint64, bool)) (uint64, error) {
	if f.span {
		if f.ptr == nil {
			return 0, relabel(f.ptrErr, op)
		}
		return f.ptr.update(op, f.name, next)
	}
	for {
		cur := f.hdr.shared.Load()
		v, ok := next(cur)
		if !ok || f.hdr.shared.CompareAndSwap(cur, v) {
			return cur, nil
		}
	}
}

// ReadShared reads into buf at the shared file pointer
// (MPI_File_read_shared), which it moves past len(buf)'s etypes.
func ReadShared[T any](f *File, buf []T) (int, error) {
	const op = "File.ReadShared"
	a, err := prep(f, op, buf, false, byShared)
	if err != nil {
		return 0, err
	}
	start, err := f.claim(op, a.etypes())
	if err != nil {
		return 0, err
	}
	n, err := f.readAt(op, &a.v, start*a.v.etype, a.b)
	return a.count(n), err
}

// WriteShared writes buf at the shared file pointer
// (MPI_File_write_shared), which it moves past it.
func WriteShared[T any](f *File, buf []T) (int, error) {
	const op = "File.WriteShared"
	a, err := prep(f, op, buf, true, byShared)
	if err != nil {
		return 0, err
	}
	start, err := f.claim(op, a.etypes())
	if err != nil {
		return 0, err
	}
	if err := f.writeAt(op, &a.v, start*a.v.etype, a.b); err != nil {
		return 0, err
	}
	return a.elems, nil
}

// ReadOrdered reads at the shared file pointer, collectively
// (MPI_File_read_ordered): the members' parts follow each other in rank
// order from the pointer, which ends past all of them. The read goes
// through the aggregators, as ReadAtAll's.
func ReadOrdered[T any](f *File, buf []T) (int, error) {
	const op = "File.ReadOrdered"
	if err := f.usable(op); err != nil {
		return 0, err
	}
	a, local := prep(f, op, buf, false, byShared)
	var n int64
	err := f.collective(op, func() error {
		var err error
		n, err = f.ordered(op, &a, local, false)
		return err
	})
	return a.count(n), err
}

// WriteOrdered writes at the shared file pointer, collectively
// (MPI_File_write_ordered): the members' parts land in rank order from
// the pointer, which ends past all of them. The write goes through the
// aggregators, as WriteAtAll's.
func WriteOrdered[T any](f *File, buf []T) (int, error) {
	const op = "File.WriteOrdered"
	if err := f.usable(op); err != nil {
		return 0, err
	}
	a, local := prep(f, op, buf, true, byShared)
	err := f.collective(op, func() error {
		_, err := f.ordered(op, &a, local, true)
		return err
	})
	if err != nil {
		return 0, err
	}
	return a.elems, nil
}

// ordered runs an ordered call (in its queue job): the members' places
// from the shared pointer, the pointer's new value, then the collective
// access.
func (f *File) ordered(op string, a *access, local error, write bool) (int64, error) {
	var count int64
	if local == nil {
		count = a.etypes()
	}
	pos, perr := f.sharedPos(op)
	if local == nil {
		local = perr
	}
	all := make([]int64, 3*f.size)
	if err := coll.Allgather(f.c, []int64{codeOf(local), count, pos}, all); err != nil {
		return 0, relabel(err, op)
	}
	if err := agreeArgs(op, local, all, 3); err != nil {
		return 0, err
	}
	var base, before, total int64
	for k := range f.size {
		base = max(base, all[3*k+2])
		if k < f.rank {
			before += all[3*k+1]
		}
		total += all[3*k+1]
	}
	if total > ptrMask-base {
		return 0, errf(ranks.ErrArg, op, -1, "the shared file pointer (%d) would pass 2^%d etypes", base, ptrBits)
	}
	if err := f.install(op, base+total); err != nil {
		return 0, err
	}
	p0, err := a.at(op, base+before)
	// Every member takes part in the access, even one whose place is
	// out of range, so that no one waits for it.
	return f.accessAll(op, a, p0, err, write)
}

// SeekShared moves the shared file pointer (MPI_File_seek_shared): as
// Seek does the individual one. It is collective; every member passes
// the same off and whence (ErrNotSame).
func (f *File) SeekShared(off int64, whence int) error {
	const op = "File.SeekShared"
	if err := f.usable(op); err != nil {
		return err
	}
	var local error
	if whence != SeekSet && whence != SeekCur && whence != SeekEnd {
		local = errf(ranks.ErrArg, op, -1, "whence %d: want SeekSet, SeekCur or SeekEnd", whence)
	} else if f.amode&ModeSequential != 0 {
		local = errf(ErrUnsupportedOperation, op, -1, "the file was opened ModeSequential")
	}
	return f.collective(op, func() error {
		here, perr := f.sharedPos(op)
		if local == nil {
			local = perr
		}
		all := make([]int64, 4*f.size)
		if err := coll.Allgather(f.c, []int64{codeOf(local), off, int64(whence), here}, all); err != nil {
			return relabel(err, op)
		}
		if err := agreeArgs(op, local, all, 4); err != nil {
			return err
		}
		var base int64
		for k := range f.size {
			if all[4*k+1] != off || all[4*k+2] != int64(whence) {
				return errf(ErrNotSame, op, k, "member %d passed offset %d, whence %d; this member %d, %d", k, all[4*k+1], all[4*k+2], off, whence)
			}
			base = max(base, all[4*k+3])
		}
		switch whence {
		case SeekSet:
			base = 0
		case SeekEnd:
			// The end now, when every member's writes before this call
			// are done, and no member's after it has begun (none
			// begins before a member installed the new position).
			f.mu.Lock()
			v := f.view
			f.mu.Unlock()
			end, err := f.endEtypes(&v)
			if err != nil {
				return ioErr(op, "stat", f.name, err)
			}
			base = end
		}
		pos := base + off
		if (off > 0 && pos < base) || pos < 0 || pos > ptrMask {
			return errf(ranks.ErrArg, op, -1, "position %d%+d", base, off)
		}
		return f.install(op, pos)
	})
}

// GetPositionShared returns the shared file pointer, in etypes of the
// view (MPI_File_get_position_shared). It is local.
func (f *File) GetPositionShared() (int64, error) {
	const op = "File.GetPositionShared"
	if err := f.local(op); err != nil {
		return 0, err
	}
	return f.sharedPos(op)
}
