package mpio_test

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// Collective writes of a block-distributed array (blocks of unequal,
// unaligned sizes) give the same file, byte for byte, as one process
// writing the array sequentially, at 1 to 16 members, with the default
// hints and with tiny rounds (many rounds, several aggregators, domains
// that cut members' blocks). Collective reads give each member its block
// back, and count only the bytes before the end of the file.
func TestCollectiveBlocks(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8, 16} {
		for _, h := range []struct {
			aggs, buf int
			cb        string
		}{{0, 0, "automatic"}, {2, 4096, "automatic"}, {2, 4096, "enable"}, {3, 8192, "enable"}, {n, 4096, "automatic"}, {0, 0, "disable"}} {
			t.Run(fmt.Sprintf("n=%d/aggs=%d/buf=%d/%s", n, h.aggs, h.buf, h.cb), func(t *testing.T) {
				job(t, ranktest.Options{N: n}, func(r *ranktest.R, dir string) {
					before := fds(r)
					block := func(k int) int64 { return 5000 + int64(k)*1237 }
					var off, total int64
					for k := range r.Size {
						if k < r.Rank {
							off += block(k)
						}
						total += block(k)
					}
					name := filepath.Join(dir, "coll")
					f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, hints(h.aggs, h.buf, "romio_cb_write", h.cb, "romio_cb_read", h.cb))
					mine := patternBytes(off, block(r.Rank))
					k, err := mpio.WriteAtAll(f, off, mine)
					if err != nil || k != len(mine) {
						r.Fatalf("WriteAtAll: %d, %v", k, err)
					}
					if r.Rank == 0 {
						ref := filepath.Join(dir, "ref")
						r.Check(os.WriteFile(ref, patternBytes(0, total), 0o644), "write the reference")
						refb, err := os.ReadFile(ref)
						r.Check(err, "read the reference")
						sameFile(r, name, refb, "collective write")
					}
					// Read back the next member's block, and a block
					// that runs past the end of the file.
					next := (r.Rank + 1) % r.Size
					var noff int64
					for k := range next {
						noff += block(k)
					}
					got := make([]byte, block(next))
					k, err = mpio.ReadAtAll(f, noff, got)
					if err != nil || k != len(got) {
						r.Errorf("ReadAtAll: %d, %v", k, err)
					}
					if !bytes.Equal(got, patternBytes(noff, block(next))) {
						r.Errorf("ReadAtAll: the block of member %d differs", next)
					}
					tail := make([]byte, 3000)
					from := total - 1000*int64(r.Rank+1)
					k, err = mpio.ReadAtAll(f, from, tail)
					want := min(int64(len(tail)), total-from)
					if err != nil || int64(k) != want || !bytes.Equal(tail[:k], patternBytes(from, int64(k))) {
						r.Errorf("ReadAtAll at the end: %d bytes, %v; want %d", k, err, want)
					}
					// Members with nothing to do take part too.
					var empty []byte
					if r.Rank%2 == 1 {
						empty = patternBytes(off, 10)
					}
					_, err = mpio.WriteAtAll(f, off, empty)
					r.Check(err, "WriteAtAll where some members write nothing")
					r.Check(f.Close(), "Close")
					r.Check(coll.Barrier(r.Comm), "barrier")
					if after := fds(r); after != before {
						r.Errorf("%d descriptors open before, %d after", before, after)
					}
				})
			})
		}
	}
}

// Bytes between the members' pieces are not written: a collective write
// with holes leaves the file's data there.
func TestCollectiveHoles(t *testing.T) {
	for _, cb := range []string{"automatic", "enable"} {
		t.Run(cb, func(t *testing.T) { testCollectiveHoles(t, cb) })
	}
}

func testCollectiveHoles(t *testing.T, cb string) {
	job(t, ranktest.Options{N: 4}, func(r *ranktest.R, dir string) {
		name := filepath.Join(dir, "holes")
		f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, hints(2, 4096, "romio_cb_write", cb))
		const total = 64 << 10
		old := bytes.Repeat([]byte{0xAA}, total)
		if r.Rank == 0 {
			_, err := mpio.WriteAt(f, 0, old)
			r.Check(err, "WriteAt")
		}
		r.Check(f.Sync(), "Sync")
		// Member k writes pieces of 100 bytes every 1000 bytes, shifted
		// by 250*k: holes of 0-150 bytes between them.
		want := bytes.Clone(old)
		var bufs [][]byte
		for k := range r.Size {
			for i := range 65 {
				at := int64(250*k + 1000*i)
				copy(want[at:at+100], patternBytes(at, 100))
				if k == r.Rank {
					bufs = append(bufs, patternBytes(at, 100))
				}
			}
		}
		// One collective call per piece index (every member has the
		// same number of pieces).
		for i, b := range bufs {
			_, err := mpio.WriteAtAll(f, int64(250*r.Rank+1000*i), b)
			r.Check(err, "WriteAtAll")
		}
		r.Check(f.Sync(), "Sync")
		if r.Rank == 0 {
			sameFile(r, name, want, "collective write with holes")
		}
		r.Check(f.Close(), "Close")
	})
}

// A block-cyclic array of float64 through strided views: member r's
// view shows blocks r, r+P, r+2P... of b elements; WriteAll of the
// member's blocks gives the array in order, as one sequential write of
// it would; ReadAll through the same views gives each member its blocks.
func TestStridedView(t *testing.T) {
	for _, n := range []int{1, 3, 4, 8} {
		for _, buf := range []int{0, 4096} {
			t.Run(fmt.Sprintf("n=%d/buf=%d", n, buf), func(t *testing.T) {
				cb := "automatic"
				if buf == 0 {
					cb = "enable"
				}
				job(t, ranktest.Options{N: n}, func(r *ranktest.R, dir string) {
					const b, blocks = 37, 50 // elements per block, blocks per member
					p := r.Size
					name := filepath.Join(dir, "cyclic")
					f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, hints(2, buf, "romio_cb_write", cb, "romio_cb_read", cb))
					esz := mpio.Etype[float64]()
					const disp = 128 // a header before the array
					r.Check(f.SetView(disp+int64(r.Rank*b*esz), esz, mpio.Filetype{Block: b, Stride: p * b}), "SetView")
					mine := make([]float64, b*blocks)
					for j := range blocks {
						for i := range b {
							mine[j*b+i] = float64((j*p+r.Rank)*b + i)
						}
					}
					k, err := mpio.WriteAll(f, mine)
					if err != nil || k != len(mine) {
						r.Fatalf("WriteAll: %d, %v", k, err)
					}
					if pos, _ := f.GetPosition(); pos != int64(len(mine)) {
						r.Errorf("GetPosition after WriteAll: %d, want %d", pos, len(mine))
					}
					if r.Rank == 0 {
						all := make([]float64, p*b*blocks)
						for i := range all {
							all[i] = float64(i)
						}
						want := append(make([]byte, disp), unsafe.Slice((*byte)(unsafe.Pointer(&all[0])), 8*len(all))...)
						sameFile(r, name, want, "block-cyclic write")
					}
					if o, err := f.GetByteOffset(int64(b + 1)); err != nil || o != disp+int64((p*b+r.Rank*b+1)*esz) {
						r.Errorf("GetByteOffset(%d): %d, %v", b+1, o, err)
					}
					// Read back through the view, from the start.
					_, err = f.Seek(0, mpio.SeekSet)
					r.Check(err, "Seek")
					got := make([]float64, len(mine))
					k, err = mpio.ReadAll(f, got)
					if err != nil || k != len(got) {
						r.Errorf("ReadAll: %d, %v", k, err)
					}
					for i := range got {
						if got[i] != mine[i] {
							r.Errorf("ReadAll: element %d is %v, want %v", i, got[i], mine[i])
							break
						}
					}
					// The end of the file in the view: every member's
					// view ends after its blocks.
					if end, err := f.Seek(0, mpio.SeekEnd); err != nil || end != int64(len(mine)) {
						r.Errorf("Seek(0, SeekEnd): %d, %v; want %d", end, err, len(mine))
					}
					// A buffer that is not a whole number of etypes.
					_, err = mpio.WriteAt(f, 0, []byte{1, 2, 3})
					wantClass(r, err, ranks.ErrType, "3 bytes through a view of float64")
					// Mismatched etypes.
					wantClass(r, f.SetView(0, 8+r.Rank%2*8, mpio.Contiguous), func() error {
						if r.Size > 1 {
							return mpio.ErrNotSame
						}
						return nil
					}(), "SetView with different etypes")
					wantClass(r, f.SetView(0, 8, mpio.Filetype{Block: 4, Stride: 2}), ranks.ErrArg, "Stride < Block")
					r.Check(f.Close(), "Close")
				})
			})
		}
	}
}

// 64 members on the machine's few cores: open, a collective write and
// read of a block-distributed array, ordered writes, close.
func TestManyMembers(t *testing.T) {
	job(t, ranktest.Options{N: 64}, func(r *ranktest.R, dir string) {
		name := filepath.Join(dir, "many")
		f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, hints(0, 4096))
		const per = 3000
		off := int64(r.Rank) * per
		_, err := mpio.WriteAtAll(f, off, patternBytes(off, per))
		r.Check(err, "WriteAtAll")
		got := make([]byte, per)
		next := int64((r.Rank+1)%r.Size) * per
		k, err := mpio.ReadAtAll(f, next, got)
		if err != nil || k != per || !bytes.Equal(got, patternBytes(next, per)) {
			r.Errorf("ReadAtAll: %d, %v", k, err)
		}
		r.Check(f.SeekShared(0, mpio.SeekEnd), "SeekShared")
		_, err = mpio.WriteOrdered(f, []byte{byte(r.Rank)})
		r.Check(err, "WriteOrdered")
		r.Check(f.Sync(), "Sync")
		if r.Rank == 0 {
			want := append(patternBytes(0, 64*per), make([]byte, 64)...)
			for i := range 64 {
				want[64*per+i] = byte(i)
			}
			sameFile(r, name, want, "64 members")
		}
		r.Check(f.Close(), "Close")
	})
}

// An aggregator whose writes fail (a file size limit at that process:
// EFBIG) makes the collective write fail at every member with ErrIO, and
// the file still works afterwards: the next collective write, within the
// limit again, gives the right bytes, and none of the failed one's.
func TestAggregatorWriteFails(t *testing.T) {
	job(t, ranktest.Options{N: 4}, func(r *ranktest.R, dir string) {
		name := filepath.Join(dir, "efbig")
		// One write aggregator (member 0), 4 KiB domains.
		f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, hints(1, 4096, "romio_cb_write", "enable"))
		const per = 3000 // half blocks leave holes inside 4 KiB domains
		off := int64(r.Rank) * per
		var lim syscall.Rlimit
		r.Check(syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim), "getrlimit")
		if r.Rank == 0 {
			signal.Ignore(syscall.SIGXFSZ)
			low := lim
			low.Cur = 6000
			r.Check(syscall.Setrlimit(syscall.RLIMIT_FSIZE, &low), "setrlimit")
		}
		_, err := mpio.WriteAtAll(f, off, patternBytes(off, per))
		wantClass(r, err, mpio.ErrIO, "WriteAtAll past the aggregator's file size limit")
		if r.Rank == 0 {
			r.Check(syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim), "setrlimit")
		}
		r.Check(f.SetSize(0), "SetSize")
		// Half blocks now: the bytes staged for the failed call must not
		// reach the file in the holes.
		_, err = mpio.WriteAtAll(f, off, patternBytes(off, per/2))
		r.Check(err, "WriteAtAll after the error")
		r.Check(f.Sync(), "Sync")
		if r.Rank == 0 {
			want := make([]byte, int64(r.Size-1)*per+per/2)
			for k := range int64(r.Size) {
				copy(want[k*per:], patternBytes(k*per, per/2))
			}
			sameFile(r, name, want, "the file written after the error")
		}
		r.Check(f.Close(), "Close")
	})
}

// Views of any shape (Filetype.Runs): a 2-D array of int32 split by
// column blocks, each member's view a subarray (one tile, a run per
// row); WriteAll gives the array in row order, ReadAll each member its
// part. Then an irregular tile (1 and 2 etypes of every 5) read across
// tiles against a reference map, and tiles refused as MPI says.
func TestRunsView(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			job(t, ranktest.Options{N: n}, func(r *ranktest.R, dir string) {
				const rows, cols = 9, 5 // a member's part: rows x cols
				p := r.Size
				name := filepath.Join(dir, "grid")
				f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, hints(2, 4096))
				runs := make([]mpio.Run, rows)
				for i := range runs {
					runs[i] = mpio.Run{Off: int64(4 * (i*cols*p + r.Rank*cols)), Len: 4 * cols}
				}
				ft := mpio.Filetype{Runs: runs, Extent: int64(4 * rows * cols * p)}
				r.Check(f.SetView(0, 4, ft), "SetView")
				mine := make([]int32, rows*cols)
				for i := range rows {
					for j := range cols {
						mine[i*cols+j] = int32(i*cols*p + r.Rank*cols + j)
					}
				}
				if k, err := mpio.WriteAll(f, mine); err != nil || k != len(mine) {
					r.Fatalf("WriteAll: %d, %v", k, err)
				}
				if r.Rank == 0 {
					all := make([]int32, rows*cols*p)
					for i := range all {
						all[i] = int32(i)
					}
					sameFile(r, name, unsafe.Slice((*byte)(unsafe.Pointer(&all[0])), 4*len(all)), "subarray write")
				}
				if o, err := f.GetByteOffset(int64(cols + 1)); err != nil || o != int64(4*(cols*p+r.Rank*cols+1)) {
					r.Errorf("GetByteOffset(%d): %d, %v", cols+1, o, err)
				}
				_, err := f.Seek(0, mpio.SeekSet)
				r.Check(err, "Seek")
				got := make([]int32, len(mine))
				if k, err := mpio.ReadAll(f, got); err != nil || k != len(got) || !slices.Equal(got, mine) {
					r.Errorf("ReadAll: %d, %v, %v", k, err, got)
				}
				if end, err := f.Seek(0, mpio.SeekEnd); err != nil || end != int64(len(mine)) {
					r.Errorf("Seek(0, SeekEnd): %d, %v; want %d", end, err, len(mine))
				}
				// Ints 0, 3, 4 of every 5, from the second visible one on:
				// pieces cross runs and tiles.
				odd := mpio.Filetype{Runs: []mpio.Run{{Off: 0, Len: 4}, {Off: 12, Len: 8}}, Extent: 20}
				r.Check(f.SetView(0, 4, odd), "SetView")
				want := []int32{3, 4, 5, 8, 9, 10, 13, 14}
				part := make([]int32, len(want))
				if k, err := mpio.ReadAt(f, 1, part); err != nil || k != len(part) || !slices.Equal(part, want) {
					r.Errorf("ReadAt through 1+2 of every 5: %d, %v, %v; want %v", k, err, part, want)
				}
				if o, err := f.GetByteOffset(4); err != nil || o != 4*8 {
					r.Errorf("GetByteOffset(4) in 1+2 of every 5: %d, %v; want 32", o, err)
				}
				for _, bad := range []mpio.Filetype{
					{Runs: []mpio.Run{{Off: 0, Len: 8}, {Off: 4, Len: 4}}, Extent: 16}, // overlap
					{Runs: []mpio.Run{{Off: 0, Len: 6}}, Extent: 16},                   // half an etype
					{Runs: []mpio.Run{{Off: 12, Len: 8}}, Extent: 16},                  // past the tile
					{Runs: []mpio.Run{{Off: 0, Len: 4}}, Extent: 16, Block: 1, Stride: 4},
				} {
					wantClass(r, f.SetView(0, 4, bad), ranks.ErrArg, fmt.Sprintf("SetView(%+v)", bad))
				}
				r.Check(f.Close(), "Close")
			})
		})
	}
}
