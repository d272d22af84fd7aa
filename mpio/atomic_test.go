package mpio_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// In atomic mode, members that write the same range at once through a
// strided view (hundreds of pwrite calls each) and members that read it
// meanwhile see each write whole: every read finds one writer's value
// in every element, and so does the file at the end; collective writes
// of the same range too.
func TestAtomicMode(t *testing.T) {
	job(t, ranktest.Options{N: 4}, func(r *ranktest.R, dir string) {
		name := filepath.Join(dir, "atomic")
		f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, nil)
		if a, _ := f.GetAtomicity(); a {
			r.Errorf("a new file is in atomic mode")
		}
		r.Check(f.SetAtomicity(true), "SetAtomicity")
		if a, _ := f.GetAtomicity(); !a {
			r.Errorf("GetAtomicity after SetAtomicity(true): false")
		}
		// Every member sees 512 blocks of one int64, one every two.
		const blocks = 512
		r.Check(f.SetView(0, 8, mpio.Filetype{Block: 1, Stride: 2}), "SetView")
		mine := make([]int64, blocks)
		for i := range mine {
			mine[i] = int64(r.Rank + 1)
		}
		got := make([]int64, blocks)
		uniform := func(what string) {
			for i := range got {
				if got[i] != got[0] {
					r.Errorf("%s: element %d is %d, element 0 is %d: a torn write", what, i, got[i], got[0])
					return
				}
			}
		}
		if r.Rank == 0 {
			_, err := mpio.WriteAt(f, 0, mine)
			r.Check(err, "WriteAt")
		}
		r.Check(f.Sync(), "Sync")
		for it := range 30 {
			if r.Rank%2 == 0 {
				_, err := mpio.WriteAt(f, 0, mine)
				r.Check(err, "WriteAt")
			} else {
				k, err := mpio.ReadAt(f, 0, got)
				if err != nil || k != blocks {
					r.Fatalf("ReadAt: %d, %v", k, err)
				}
				uniform("ReadAt " + strconv.Itoa(it))
			}
		}
		for range 10 {
			_, err := mpio.WriteAtAll(f, 0, mine)
			r.Check(err, "WriteAtAll")
		}
		r.Check(f.Sync(), "Sync")
		_, err := mpio.ReadAtAll(f, 0, got)
		r.Check(err, "ReadAtAll")
		uniform("the file at the end")
		// The flag must be the same at every member.
		if r.Size > 1 {
			wantClass(r, f.SetAtomicity(r.Rank == 0), mpio.ErrNotSame, "SetAtomicity with different flags")
		}
		r.Check(f.SetAtomicity(false), "SetAtomicity")
		r.Check(f.Close(), "Close")
	})
}

// SetSize, Preallocate, GetSize and their errors.
func TestSize(t *testing.T) {
	job(t, ranktest.Options{N: 3}, func(r *ranktest.R, dir string) {
		name := filepath.Join(dir, "size")
		f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, nil)
		size := func(want int64, what string) {
			if s, err := f.GetSize(); err != nil || s != want {
				r.Errorf("%s: GetSize %d, %v; want %d", what, s, err, want)
			}
		}
		size(0, "new file")
		r.Check(f.SetSize(10000), "SetSize(10000)")
		size(10000, "after SetSize(10000)")
		r.Check(f.SetSize(100), "SetSize(100)")
		size(100, "after SetSize(100)")
		r.Check(f.Preallocate(5000), "Preallocate(5000)")
		size(5000, "after Preallocate(5000)")
		r.Check(f.Preallocate(10), "Preallocate(10)")
		size(5000, "after Preallocate(10): it never shrinks")
		wantClass(r, f.SetSize(-1), ranks.ErrArg, "SetSize(-1)")
		wantClass(r, f.Preallocate(-1), ranks.ErrArg, "Preallocate(-1)")
		wantClass(r, f.SetSize(int64(r.Rank)), mpio.ErrNotSame, "SetSize with different sizes")
		// A bad size at one member only: all fail, nobody hangs.
		s := int64(7)
		if r.Rank == 1 {
			s = -7
		}
		err := f.SetSize(s)
		if err == nil {
			r.Errorf("SetSize with one member's size negative succeeded")
		}
		size(5000, "after failed SetSize calls")
		r.Check(coll.Barrier(r.Comm), "barrier")
		r.Check(f.Close(), "Close")
	})
}
