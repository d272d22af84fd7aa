package mpio_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// record is the etype of the shared-pointer tests.
type record struct {
	Rank int64
	Tag  int64
}

const (
	tagShared  = 1 << 20
	tagOrdered = 2 << 20
)

func readRecords(r *ranktest.R, name string) []record {
	b, err := os.ReadFile(name)
	r.Check(err, "read "+name)
	if len(b)%16 != 0 {
		r.Fatalf("%s: %d bytes, not a whole number of records", name, len(b))
	}
	if len(b) == 0 {
		return nil
	}
	return append([]record(nil), unsafe.Slice((*record)(unsafe.Pointer(&b[0])), len(b)/16)...)
}

// Shared-pointer writes from every member, alone and between ordered
// writes, cover the file exactly once with no gap; ordered writes land
// in rank order, each member's part of each call contiguous; a fast
// member's WriteShared right after an ordered call is never lost to a
// slow member's update of the pointer; shared-pointer reads give each
// record to exactly one member.
func TestSharedPointer(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8, 16} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			job(t, ranktest.Options{N: n}, func(r *ranktest.R, dir string) {
				name := filepath.Join(dir, "shared")
				f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, nil)
				r.Check(f.SetView(0, 16, mpio.Contiguous), "SetView")
				const iters = 20
				me := int64(r.Rank)
				written := 0
				for j := range iters {
					// Member k writes k%3 records in ordered call j (some
					// write nothing), then one with WriteShared.
					recs := make([]record, r.Rank%3)
					for i := range recs {
						recs[i] = record{me, tagOrdered + int64(j)<<8 + int64(i)}
					}
					k, err := mpio.WriteOrdered(f, recs)
					if err != nil || k != len(recs) {
						r.Fatalf("WriteOrdered: %d, %v", k, err)
					}
					k, err = mpio.WriteShared(f, []record{{me, tagShared + int64(j)}})
					if err != nil || k != 1 {
						r.Fatalf("WriteShared: %d, %v", k, err)
					}
					written += len(recs) + 1
				}
				// SeekShared sets the pointer at every member before any
				// member's next claim, and never after it: a fast member's
				// WriteShared right after it is never overwritten.
				for j := range iters {
					r.Check(f.SeekShared(0, mpio.SeekEnd), "SeekShared")
					_, err := mpio.WriteShared(f, []record{{me, tagShared + iters + int64(j)}})
					r.Check(err, "WriteShared")
					written++
				}
				total, err := coll.AllreduceValue(r.Comm, written, coll.Sum[int])
				r.Check(err, "allreduce")
				r.Check(f.Sync(), "Sync")
				if p, err := f.GetPositionShared(); err != nil || p != int64(total) {
					r.Errorf("GetPositionShared: %d, %v; want %d", p, err, total)
				}
				if r.Rank == 0 {
					recs := readRecords(r, name)
					if len(recs) != total {
						r.Errorf("%d records in the file, want %d", len(recs), total)
					}
					seen := map[record]int{}
					for i, x := range recs {
						seen[x]++
						if x.Tag&tagOrdered != 0 && x.Tag&0xff == 0 {
							// The first record of member x.Rank's part of
							// an ordered call: its part, then the next
							// members' parts, follow.
							at := i
							for k := x.Rank; k < int64(r.Size); k++ {
								for m := range k % 3 {
									want := record{k, x.Tag&^0xff + m}
									if at >= len(recs) || recs[at] != want {
										r.Errorf("ordered call %d: record %d is %+v, want %+v", (x.Tag>>8)&0xfff, at, recs[min(at, len(recs)-1)], want)
										k = int64(r.Size)
										break
									}
									at++
								}
							}
						}
					}
					for x, c := range seen {
						if c != 1 {
							r.Errorf("record %+v written %d times", x, c)
						}
					}
				}
				r.Check(coll.Barrier(r.Comm), "barrier")

				// Shared-pointer reads: each record to exactly one member.
				r.Check(f.SeekShared(0, mpio.SeekSet), "SeekShared")
				if p, _ := f.GetPositionShared(); p != 0 {
					r.Errorf("GetPositionShared after SeekShared(0): %d", p)
				}
				r.Check(coll.Barrier(r.Comm), "barrier") // every member looked before any reads
				counts := make([]int32, r.Size*iters*4+1)
				got := make([]record, 1)
				for {
					k, err := mpio.ReadShared(f, got)
					r.Check(err, "ReadShared")
					if k == 0 {
						break
					}
					x := got[0]
					idx := int(x.Rank)*iters*4 + int(x.Tag>>8&0xfff)*4
					if x.Tag&tagShared != 0 {
						idx = int(x.Rank)*iters*4 + int(x.Tag&0xfff)%iters*4 + 2 + int(x.Tag&0xfff)/iters
					} else {
						idx += int(x.Tag & 0xff)
					}
					counts[idx]++
				}
				sums := make([]int32, len(counts))
				r.Check(coll.Allreduce(r.Comm, counts, sums, coll.Sum[int32]), "allreduce")
				read := 0
				for _, c := range sums {
					if c > 1 {
						r.Errorf("a record read %d times", c)
					}
					read += int(c)
				}
				if read != total {
					r.Errorf("%d records read, want %d", read, total)
				}
				// SeekShared: relative forms and mismatched arguments.
				r.Check(f.SeekShared(-3, mpio.SeekEnd), "SeekShared(-3, SeekEnd)")
				if p, _ := f.GetPositionShared(); p != int64(total-3) {
					r.Errorf("SeekShared(-3, SeekEnd): %d, want %d", p, total-3)
				}
				r.Check(f.SeekShared(2, mpio.SeekCur), "SeekShared(2, SeekCur)")
				if p, _ := f.GetPositionShared(); p != int64(total-1) {
					r.Errorf("SeekShared(2, SeekCur): %d, want %d", p, total-1)
				}
				if r.Size > 1 {
					wantClass(r, f.SeekShared(int64(r.Rank), mpio.SeekSet), mpio.ErrNotSame, "SeekShared with different offsets")
				}
				// ReadOrdered from the start: member k gets the records
				// after those of members before it.
				r.Check(f.SeekShared(0, mpio.SeekSet), "SeekShared")
				part := make([]record, r.Rank+1)
				k, err := mpio.ReadOrdered(f, part)
				if err != nil || k != min(len(part), max(0, total-r.Rank*(r.Rank+1)/2)) {
					r.Errorf("ReadOrdered: %d, %v", k, err)
				}
				if r.Rank == 0 {
					all := readRecords(r, name)
					if k > 0 && part[0] != all[0] {
						r.Errorf("ReadOrdered: member 0 got %+v, want %+v", part[0], all[0])
					}
				}
				if p, _ := f.GetPositionShared(); p != int64(r.Size*(r.Size+1)/2) {
					r.Errorf("GetPositionShared after ReadOrdered: %d, want %d", p, r.Size*(r.Size+1)/2)
				}
				// SetView resets the shared pointer.
				r.Check(f.SetView(0, 1, mpio.Contiguous), "SetView")
				if p, _ := f.GetPositionShared(); p != 0 {
					r.Errorf("GetPositionShared after SetView: %d", p)
				}
				r.Check(f.Close(), "Close")
			})
		})
	}
}
