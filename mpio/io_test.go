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

// Independent access at 1 to 16 members: each writes its block with
// WriteAt and Write (individual pointer), reads another's back with
// ReadAt and Read; short reads at the end of the file; Seek and
// GetPosition; the errors of bad calls, which harm nothing.
func TestIndependent(t *testing.T) {
	for _, n := range []int{1, 2, 5, 16} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			job(t, ranktest.Options{N: n}, func(r *ranktest.R, dir string) {
				before := fds(r)
				name := filepath.Join(dir, "f")
				f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, nil)
				const blk = 1000 // int32s per member: 4000 bytes
				me := int64(r.Rank)
				// First half with WriteAt at byte offsets, second half
				// with Seek and Write.
				data := make([]int32, blk)
				for i := range data {
					data[i] = int32(r.Rank*blk + i)
				}
				k, err := mpio.WriteAt(f, me*4*blk, data[:blk/2])
				if err != nil || k != blk/2 {
					r.Errorf("WriteAt: %d, %v", k, err)
				}
				pos, err := f.Seek(me*4*blk+2*blk, mpio.SeekSet)
				r.Check(err, "Seek")
				if pos != me*4*blk+2*blk {
					r.Errorf("Seek returned %d", pos)
				}
				k, err = mpio.Write(f, data[blk/2:])
				if err != nil || k != blk/2 {
					r.Errorf("Write: %d, %v", k, err)
				}
				if p, _ := f.GetPosition(); p != (me+1)*4*blk {
					r.Errorf("GetPosition after Write: %d, want %d", p, (me+1)*4*blk)
				}
				r.Check(f.Sync(), "Sync")
				// Read the next member's block.
				next := (r.Rank + 1) % r.Size
				got := make([]int32, blk)
				k, err = mpio.ReadAt(f, int64(next)*4*blk, got)
				if err != nil || k != blk {
					r.Errorf("ReadAt: %d, %v", k, err)
				}
				for i, v := range got {
					if v != int32(next*blk+i) {
						r.Errorf("ReadAt: element %d is %d, want %d", i, v, next*blk+i)
						break
					}
				}
				// Read through the end of the file: fewer elements.
				_, err = f.Seek(int64(r.Size)*4*blk-40, mpio.SeekSet)
				r.Check(err, "Seek")
				k, err = mpio.Read(f, got)
				if err != nil || k != 10 {
					r.Errorf("Read at the end: %d elements, %v; want 10", k, err)
				}
				if p, _ := f.GetPosition(); p != int64(r.Size)*4*blk-40+4*blk {
					r.Errorf("GetPosition after a short Read: %d (moves by what was asked)", p)
				}
				if p, err := f.Seek(-8, mpio.SeekEnd); err != nil || p != int64(r.Size)*4*blk-8 {
					r.Errorf("Seek(-8, SeekEnd): %d, %v", p, err)
				}
				if p, err := f.Seek(4, mpio.SeekCur); err != nil || p != int64(r.Size)*4*blk-4 {
					r.Errorf("Seek(4, SeekCur): %d, %v", p, err)
				}
				// Bad calls.
				_, err = mpio.WriteAt(f, -1, data)
				wantClass(r, err, ranks.ErrArg, "negative offset")
				_, err = mpio.ReadAt(f, 1<<62, got)
				wantClass(r, err, ranks.ErrArg, "offset past the largest")
				_, err = f.Seek(-1, mpio.SeekSet)
				wantClass(r, err, ranks.ErrArg, "Seek to -1")
				_, err = f.Seek(0, 7)
				wantClass(r, err, ranks.ErrArg, "bad whence")
				_, err = mpio.WriteAt(f, 0, []*int{nil})
				wantClass(r, err, ranks.ErrType, "a buffer of pointers")
				r.Check(f.Close(), "Close")

				// Read only and write only.
				ro := open(r, r.Comm, name, mpio.ModeRdonly, nil)
				_, err = mpio.WriteAt(ro, 0, data)
				wantClass(r, err, mpio.ErrAccess, "WriteAt on a ModeRdonly file")
				_, err = mpio.Write(ro, data)
				wantClass(r, err, mpio.ErrAccess, "Write on a ModeRdonly file")
				_, err = mpio.WriteAtAll(ro, 0, data)
				wantClass(r, err, mpio.ErrAccess, "WriteAtAll on a ModeRdonly file")
				wantClass(r, ro.SetSize(0), mpio.ErrAccess, "SetSize on a ModeRdonly file")
				if _, err := mpio.ReadAt(ro, me*4*blk, got); err != nil || got[0] != int32(r.Rank*blk) {
					r.Errorf("ReadAt on a ModeRdonly file: %v, %d", err, got[0])
				}
				r.Check(ro.Close(), "Close")
				wo := open(r, r.Comm, name, mpio.ModeWronly, nil)
				_, err = mpio.ReadAt(wo, 0, got)
				wantClass(r, err, mpio.ErrAccess, "ReadAt on a ModeWronly file")
				_, err = mpio.ReadAll(wo, got)
				wantClass(r, err, mpio.ErrAccess, "ReadAll on a ModeWronly file")
				r.Check(wo.Close(), "Close")

				// Sequential: the shared pointer only.
				sq := open(r, r.Comm, name, mpio.ModeRdonly|mpio.ModeSequential, nil)
				_, err = mpio.ReadAt(sq, 0, got)
				wantClass(r, err, mpio.ErrUnsupportedOperation, "ReadAt on a ModeSequential file")
				_, err = sq.Seek(0, mpio.SeekSet)
				wantClass(r, err, mpio.ErrUnsupportedOperation, "Seek on a ModeSequential file")
				k, err = mpio.ReadOrdered(sq, got[:1])
				if err != nil || k != 1 || got[0] != int32(r.Rank) {
					r.Errorf("ReadOrdered on a ModeSequential file: %d, %v, %d", k, err, got[0])
				}
				r.Check(sq.Close(), "Close")
				r.Check(coll.Barrier(r.Comm), "barrier")
				if after := fds(r); after != before {
					r.Errorf("%d descriptors open before, %d after", before, after)
				}
			})
		})
	}
}
