package mpio

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// Atomic mode. MPI's atomic mode (MPI_File_set_atomicity) makes
// conflicting accesses of different members sequentially consistent:
// each access is seen whole or not at all by the others'. Here each data
// access in atomic mode holds a kernel byte-range lock (an open file
// description lock, F_OFD_SETLKW) on the file range from its first byte
// to its last: shared for reads, exclusive for writes. Accesses of
// different members to disjoint ranges still run in parallel. The
// kernel drops a dead process's locks, so a member killed during an
// access never blocks the others; a lock is held only while this rank
// makes its pread and pwrite calls, so waits are short and end. Within
// a rank, where the members' locks cannot tell goroutines apart, a
// read-write mutex orders the rank's own accesses.

// lockRange locks the file range of stream bytes [p0, p1) of v and
// returns the unlock.
func (f *File) lockRange(op string, v *view, p0, p1 int64, write bool) (func(), error) {
	lo, hi := v.extent(p0, p1)
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: lo, Len: hi - lo}
	local := f.atomicMu.RLock
	unlocal := f.atomicMu.RUnlock
	if write {
		lk.Type = unix.F_WRLCK
		local, unlocal = f.atomicMu.Lock, f.atomicMu.Unlock
	}
	local()
	for {
		err := unix.FcntlFlock(uintptr(f.fd), unix.F_OFD_SETLKW, &lk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unlocal()
			return nil, ioErr(op, "lock a range of", f.name, err)
		}
		break
	}
	return func() {
		lk.Type = unix.F_UNLCK
		for unix.FcntlFlock(uintptr(f.fd), unix.F_OFD_SETLK, &lk) == unix.EINTR {
		}
		unlocal()
	}, nil
}

// SetAtomicity sets atomic mode on or off (MPI_File_set_atomicity). It is
// collective; every member passes the same flag (ErrNotSame).
func (f *File) SetAtomicity(flag bool) error {
	const op = "File.SetAtomicity"
	want := int64(0)
	if flag {
		want = 1
	}
	return f.collective(op, func() error {
		err := f.agreeValue(op, nil, want, "atomicity")
		if err == nil {
			f.atomicMode.Store(flag)
		}
		return err
	})
}

// GetAtomicity reports whether the file is in atomic mode.
func (f *File) GetAtomicity() (bool, error) {
	if err := f.local("File.GetAtomicity"); err != nil {
		return false, err
	}
	return f.atomicMode.Load(), nil
}

// agreeValue checks, in a collective call's job, that no member has an
// argument error and that every member passed v (ErrNotSame).
func (f *File) agreeValue(op string, local error, v int64, what string) error {
	if local == nil {
		local = f.usable(op)
	}
	all := make([]int64, 2*f.size)
	if err := coll.Allgather(f.c, []int64{codeOf(local), v}, all); err != nil {
		return relabel(err, op)
	}
	if err := agreeArgs(op, local, all, 2); err != nil {
		return err
	}
	for k := range f.size {
		if all[2*k+1] != v {
			return errf(ErrNotSame, op, k, "member %d passed %s %d, this member %d", k, what, all[2*k+1], v)
		}
	}
	return nil
}

// byMember0 runs do at member 0 and makes its error every member's
// (the Allreduce also keeps every member from going on before member 0
// is done).
func (f *File) byMember0(op string, do func() error) error {
	var own error
	if f.rank == 0 {
		own = do()
	}
	code, err := coll.AllreduceValue(f.c, codeOf(own), coll.Max[int64])
	switch {
	case err != nil:
		return relabel(err, op)
	case own != nil:
		return own
	case code != 0:
		return memberErr(op, 0, code, "failed")
	}
	return nil
}

// SetSize truncates or extends the file to size bytes (MPI_File_set_size).
// It is collective; every member passes the same size.
func (f *File) SetSize(size int64) error {
	const op = "File.SetSize"
	local := f.sizeArgs(op, size)
	return f.collective(op, func() error {
		if err := f.agreeValue(op, local, size, "size"); err != nil {
			return err
		}
		return f.byMember0(op, func() error {
			for {
				err := unix.Ftruncate(f.fd, size)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					return ioErr(op, "truncate", f.name, err)
				}
				return nil
			}
		})
	})
}

// Preallocate makes sure that the first size bytes of the file have
// storage (MPI_File_preallocate): the file grows to size if it is
// smaller, and never shrinks. It is collective; every member passes the
// same size. Where the file system cannot allocate ahead (no fallocate),
// the file is extended without it.
func (f *File) Preallocate(size int64) error {
	const op = "File.Preallocate"
	local := f.sizeArgs(op, size)
	return f.collective(op, func() error {
		if err := f.agreeValue(op, local, size, "size"); err != nil {
			return err
		}
		return f.byMember0(op, func() error {
			if size == 0 {
				return nil
			}
			for {
				err := unix.Fallocate(f.fd, 0, 0, size)
				switch err {
				case unix.EINTR:
					continue
				case nil:
					return nil
				case unix.EOPNOTSUPP:
					cur, serr := f.fileSize()
					if serr != nil {
						return ioErr(op, "stat", f.name, serr)
					}
					if cur < size {
						if terr := unix.Ftruncate(f.fd, size); terr != nil {
							return ioErr(op, "extend", f.name, terr)
						}
					}
					return nil
				}
				return ioErr(op, "allocate", f.name, err)
			}
		})
	})
}

func (f *File) sizeArgs(op string, size int64) error {
	if err := f.local(op); err != nil {
		return err
	}
	if size < 0 || size > maxOffset {
		return errf(ranks.ErrArg, op, -1, "size %d", size)
	}
	if err := f.canWrite(op); err != nil {
		return err
	}
	if f.amode&ModeSequential != 0 {
		return errf(ErrUnsupportedOperation, op, -1, "the file was opened ModeSequential")
	}
	return nil
}

// Sync makes every member's writes so far reach the storage device and
// be seen by every member's later reads (MPI_File_sync): each member
// flushes its writes (fdatasync), and no member returns before all
// have. It is collective.
func (f *File) Sync() error {
	const op = "File.Sync"
	return f.collective(op, func() error {
		own := f.usable(op)
		if own == nil {
			for {
				err := unix.Fdatasync(f.fd)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					own = ioErr(op, "sync", f.name, err)
				}
				break
			}
		}
		code, err := coll.AllreduceValue(f.c, codeOf(own), coll.Max[int64])
		switch {
		case err != nil:
			return relabel(err, op)
		case own != nil:
			return own
		case code != 0:
			return memberErr(op, -1, code, "another member's sync failed")
		}
		return nil
	})
}
