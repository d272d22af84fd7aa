package mpio

import (
	"errors"
	"io"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/ranks"
)

// Independent data access: at an explicit offset (ReadAt, WriteAt) or at
// the individual file pointer (Read, Write). Offsets and the pointer
// count etypes of the view; a call moves the bytes of buf, which must be
// a whole number of etypes. A read stops at the end of the file and says
// how many elements of buf it filled. Read and Write move the individual
// file pointer by len(buf)'s etypes when they start (MPI: to the etype
// after the last one the call will access), so a read that meets the end
// of the file still moves it by what it asked for.

// access is a data access being set up: the buffer's bytes, the view it
// goes through, the size of an element of the buffer.
type access struct {
	v     view
	b     []byte
	esize int
	elems int // len of the buffer
}

// count is the number of whole elements in n bytes.
func (a *access) count(n int64) int {
	if a.esize == 0 {
		return a.elems
	}
	return int(n / int64(a.esize))
}

// etypes is the number of etypes of the buffer.
func (a *access) etypes() int64 { return int64(len(a.b)) / a.v.etype }

func bytesOf[T any](s []T, esize int) []byte {
	if len(s) == 0 || esize == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*esize)
}

// How a data call addresses the file.
const (
	byOffset = iota // explicit offset, or the individual pointer
	byShared        // the shared file pointer (and ordered calls)
)

// prep checks a data access of buf on f; it is the first thing every
// data call does, and returns the access with the rank's view.
func prep[T any](f *File, op string, buf []T, write bool, how int) (access, error) {
	if err := f.usable(op); err != nil {
		return access{}, err
	}
	if write {
		if err := f.canWrite(op); err != nil {
			return access{}, err
		}
	} else if err := f.canRead(op); err != nil {
		return access{}, err
	}
	if how == byOffset {
		if err := f.notSequential(op); err != nil {
			return access{}, err
		}
	}
	esize, err := ranks.ElemSize[T]()
	if err != nil {
		return access{}, errf(ranks.ErrType, op, -1, "%v", err)
	}
	f.mu.Lock()
	a := access{v: f.view, esize: esize, elems: len(buf)}
	f.mu.Unlock()
	a.b = bytesOf(buf, esize)
	if int64(len(a.b))%a.v.etype != 0 {
		return access{}, errf(ranks.ErrType, op, -1, "a buffer of %d bytes is not a whole number of the view's %d-byte etypes", len(a.b), a.v.etype)
	}
	return a, nil
}

// at is the stream position of etype offset off, checked.
func (a *access) at(op string, off int64) (int64, error) {
	if off < 0 {
		return 0, errf(ranks.ErrArg, op, -1, "negative offset %d", off)
	}
	if off > maxOffset/a.v.etype || !a.v.fits(off*a.v.etype+int64(len(a.b))) {
		return 0, errf(ranks.ErrArg, op, -1, "offset %d: the access would end past the largest file offset", off)
	}
	return off * a.v.etype, nil
}

// advance returns the individual file pointer's position as a stream
// position and moves the pointer past the access.
func (f *File) advance(op string, a *access) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p0, err := a.at(op, f.pos)
	if err != nil {
		return 0, err
	}
	f.pos += a.etypes()
	return p0, nil
}

var errEOF = errors.New("end of file")

// readAt reads b from stream position p0 of v: the bytes it read, up to
// the end of the file.
func (f *File) readAt(op string, v *view, p0 int64, b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p1 := p0 + int64(len(b))
	if f.atomicMode.Load() {
		unlock, err := f.lockRange(op, v, p0, p1, false)
		if err != nil {
			return 0, err
		}
		defer unlock()
	}
	var got int64
	err := v.pieces(p0, p1, func(x, p, n int64) error {
		k, err := preadFull(f.fd, b[p-p0:p-p0+n], x)
		got += int64(k)
		if err != nil {
			return ioErr(op, "read", f.name, err)
		}
		if int64(k) < n {
			return errEOF
		}
		return nil
	})
	if err == errEOF {
		err = nil
	}
	return got, err
}

// writeAt writes b at stream position p0 of v.
func (f *File) writeAt(op string, v *view, p0 int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p1 := p0 + int64(len(b))
	if f.atomicMode.Load() {
		unlock, err := f.lockRange(op, v, p0, p1, true)
		if err != nil {
			return err
		}
		defer unlock()
	}
	return v.pieces(p0, p1, func(x, p, n int64) error {
		if err := pwriteFull(f.fd, b[p-p0:p-p0+n], x); err != nil {
			return ioErr(op, "write", f.name, err)
		}
		return nil
	})
}

// preadFull reads len(b) bytes at off, or up to the end of the file.
func preadFull(fd int, b []byte, off int64) (int, error) {
	got := 0
	for got < len(b) {
		n, err := unix.Pread(fd, b[got:], off+int64(got))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
		got += n
	}
	return got, nil
}

// pwriteFull writes all of b at off.
func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// ReadAt reads buf from etype offset off of the view (MPI_File_read_at)
// and returns the number of elements read: fewer than len(buf) at the
// end of the file.
func ReadAt[T any](f *File, off int64, buf []T) (int, error) {
	const op = "File.ReadAt"
	a, err := prep(f, op, buf, false, byOffset)
	if err != nil {
		return 0, err
	}
	p0, err := a.at(op, off)
	if err != nil {
		return 0, err
	}
	n, err := f.readAt(op, &a.v, p0, a.b)
	return a.count(n), err
}

// WriteAt writes buf at etype offset off of the view (MPI_File_write_at)
// and returns the elements written.
func WriteAt[T any](f *File, off int64, buf []T) (int, error) {
	const op = "File.WriteAt"
	a, err := prep(f, op, buf, true, byOffset)
	if err != nil {
		return 0, err
	}
	p0, err := a.at(op, off)
	if err != nil {
		return 0, err
	}
	if err := f.writeAt(op, &a.v, p0, a.b); err != nil {
		return 0, err
	}
	return a.elems, nil
}

// Read reads into buf at the individual file pointer (MPI_File_read).
func Read[T any](f *File, buf []T) (int, error) {
	const op = "File.Read"
	a, err := prep(f, op, buf, false, byOffset)
	if err != nil {
		return 0, err
	}
	p0, err := f.advance(op, &a)
	if err != nil {
		return 0, err
	}
	n, err := f.readAt(op, &a.v, p0, a.b)
	return a.count(n), err
}

// Write writes buf at the individual file pointer (MPI_File_write).
func Write[T any](f *File, buf []T) (int, error) {
	const op = "File.Write"
	a, err := prep(f, op, buf, true, byOffset)
	if err != nil {
		return 0, err
	}
	p0, err := f.advance(op, &a)
	if err != nil {
		return 0, err
	}
	if err := f.writeAt(op, &a.v, p0, a.b); err != nil {
		return 0, err
	}
	return a.elems, nil
}

// Seek moves the individual file pointer (MPI_File_seek): to off etypes
// from the view's start (SeekSet), from the pointer (SeekCur) or from
// the end of the file as the view sees it (SeekEnd), and returns the new
// position (io.Seeker's form). It is local. After an error of a data
// call the pointer's position is undefined (the ULFM chapter's 15.2.5);
// Seek with SeekSet puts it where the program wants.
func (f *File) Seek(off int64, whence int) (int64, error) {
	const op = "File.Seek"
	if err := f.local(op); err != nil {
		return 0, err
	}
	if err := f.notSequential(op); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var base int64
	switch whence {
	case SeekSet:
	case SeekCur:
		base = f.pos
	case SeekEnd:
		end, err := f.endEtypes(&f.view)
		if err != nil {
			return 0, ioErr(op, "stat", f.name, err)
		}
		base = end
	default:
		return 0, errf(ranks.ErrArg, op, -1, "whence %d: want SeekSet, SeekCur or SeekEnd", whence)
	}
	pos := base + off
	if (off > 0 && pos < base) || pos < 0 || pos > maxOffset/f.view.etype {
		return 0, errf(ranks.ErrArg, op, -1, "position %d%+d", base, off)
	}
	f.pos = pos
	return pos, nil
}

// GetPosition returns the individual file pointer, in etypes of the view
// (MPI_File_get_position).
func (f *File) GetPosition() (int64, error) {
	const op = "File.GetPosition"
	if err := f.local(op); err != nil {
		return 0, err
	}
	if err := f.notSequential(op); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos, nil
}

// endEtypes is the end of the file in etypes of view v: the etypes of
// the view that start before it.
func (f *File) endEtypes(v *view) (int64, error) {
	size, err := f.fileSize()
	if err != nil {
		return 0, err
	}
	return (v.stream(size) + v.etype - 1) / v.etype, nil
}
