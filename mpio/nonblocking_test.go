package mpio_test

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// The nonblocking forms: many independent ones in flight at once, the
// file pointers moved when they start, counts through n; collective ones
// queued behind each other and before a blocking collective call, in
// the order each member made them.
func TestNonblocking(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			job(t, ranktest.Options{N: n}, func(r *ranktest.R, dir string) {
				before := fds(r)
				name := filepath.Join(dir, "nb")
				f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, hints(2, 4096))
				const piece, pieces = 1000, 16
				base := int64(r.Rank) * piece * pieces
				// IwriteAt: 8 pieces at once; Iwrite: 8 more through the
				// individual pointer, which moves at each call.
				var reqs []*ranks.Request
				counts := make([]int, pieces)
				for i := range pieces / 2 {
					q, err := mpio.IwriteAt(f, base+int64(i)*piece, patternBytes(base+int64(i)*piece, piece), &counts[i])
					r.Check(err, "IwriteAt")
					reqs = append(reqs, q)
				}
				_, err := f.Seek(base+pieces/2*piece, mpio.SeekSet)
				r.Check(err, "Seek")
				for i := pieces / 2; i < pieces; i++ {
					q, err := mpio.Iwrite(f, patternBytes(base+int64(i)*piece, piece), &counts[i])
					r.Check(err, "Iwrite")
					reqs = append(reqs, q)
				}
				if p, _ := f.GetPosition(); p != base+pieces*piece {
					r.Errorf("GetPosition after the Iwrites started: %d, want %d", p, base+pieces*piece)
				}
				r.Check(ranks.WaitAll(reqs, nil), "WaitAll")
				for i, c := range counts {
					if c != piece {
						r.Errorf("write %d: count %d", i, c)
					}
				}
				r.Check(f.Sync(), "Sync")
				// IreadAt and Iread of the next member's pieces.
				next := int64((r.Rank + 1) % r.Size)
				nbase := next * piece * pieces
				bufs := make([][]byte, pieces)
				reqs = reqs[:0]
				_, err = f.Seek(nbase+pieces/2*piece, mpio.SeekSet)
				r.Check(err, "Seek")
				for i := range pieces {
					bufs[i] = make([]byte, piece)
					var q *ranks.Request
					if i < pieces/2 {
						q, err = mpio.IreadAt(f, nbase+int64(i)*piece, bufs[i], &counts[i])
					} else {
						q, err = mpio.Iread(f, bufs[i], &counts[i])
					}
					r.Check(err, "IreadAt/Iread")
					reqs = append(reqs, q)
				}
				for _, q := range reqs {
					_, err := q.Wait()
					r.Check(err, "Wait")
				}
				for i := range pieces {
					if counts[i] != piece || !bytes.Equal(bufs[i], patternBytes(nbase+int64(i)*piece, piece)) {
						r.Errorf("read %d of member %d: count %d, data differs: %v", i, next, counts[i], !bytes.Equal(bufs[i], patternBytes(nbase+int64(i)*piece, piece)))
					}
				}
				// Bad arguments are reported at once.
				_, err = mpio.IwriteAt(f, -5, []byte{1}, nil)
				wantClass(r, err, ranks.ErrArg, "IwriteAt at a negative offset")

				// Collective: two IwriteAtAll calls, then a blocking
				// ReadAtAll that must see both, then IreadAtAll and
				// IreadAll, completed in reverse order.
				total := int64(r.Size) * piece * pieces
				a := bytes.Repeat([]byte{byte(r.Rank + 1)}, piece)
				b := bytes.Repeat([]byte{byte(r.Rank + 101)}, piece)
				q1, err := mpio.IwriteAtAll(f, total+int64(r.Rank)*piece, a, nil)
				r.Check(err, "IwriteAtAll")
				q2, err := mpio.IwriteAtAll(f, total+int64(r.Size+r.Rank)*piece, b, &counts[0])
				r.Check(err, "IwriteAtAll")
				got := make([]byte, 2*piece)
				k, err := mpio.ReadAtAll(f, total+int64(r.Rank)*piece, got[:piece])
				if err != nil || k != piece || !bytes.Equal(got[:piece], a) {
					r.Errorf("ReadAtAll after IwriteAtAll: %d, %v", k, err)
				}
				_, err = q2.Wait()
				r.Check(err, "Wait")
				_, err = q1.Wait()
				r.Check(err, "Wait")
				if counts[0] != piece {
					r.Errorf("IwriteAtAll count %d", counts[0])
				}
				_, err = f.Seek(total+int64(r.Size+r.Rank)*piece, mpio.SeekSet)
				r.Check(err, "Seek")
				var c1, c2 int
				q1, err = mpio.IreadAtAll(f, total+int64(r.Rank)*piece, got[:piece], &c1)
				r.Check(err, "IreadAtAll")
				q2, err = mpio.IreadAll(f, got[piece:], &c2)
				r.Check(err, "IreadAll")
				r.Check(ranks.WaitAll([]*ranks.Request{q2, q1}, nil), "WaitAll")
				if c1 != piece || c2 != piece || !bytes.Equal(got[:piece], a) || !bytes.Equal(got[piece:], b) {
					r.Errorf("IreadAtAll, IreadAll: %d, %d bytes", c1, c2)
				}
				// Shared pointer.
				r.Check(f.SeekShared(0, mpio.SeekSet), "SeekShared")
				q1, err = mpio.IwriteShared(f, []byte{byte(r.Rank)}, &c1)
				r.Check(err, "IwriteShared")
				_, err = q1.Wait()
				r.Check(err, "Wait")
				r.Check(f.Sync(), "Sync")
				r.Check(f.SeekShared(0, mpio.SeekSet), "SeekShared")
				q1, err = mpio.IreadShared(f, got[:1], &c1)
				r.Check(err, "IreadShared")
				_, err = q1.Wait()
				r.Check(err, "Wait")
				if c1 != 1 {
					r.Errorf("IreadShared: %d", c1)
				}
				seen := make([]int32, r.Size)
				seen[got[0]]++
				sum := make([]int32, r.Size)
				r.Check(coll.Allreduce(r.Comm, seen, sum, coll.Sum[int32]), "allreduce")
				for k, c := range sum {
					if c != 1 {
						r.Errorf("IwriteShared/IreadShared: member %d's byte read %d times", k, c)
					}
				}
				// Close waits for what is in flight.
				_, err = mpio.IwriteAt(f, 0, patternBytes(0, piece), nil)
				r.Check(err, "IwriteAt")
				_, err = mpio.IwriteAtAll(f, 0, patternBytes(0, 0), nil)
				r.Check(err, "IwriteAtAll")
				r.Check(f.Close(), "Close")
				if after := fds(r); after != before {
					r.Errorf("%d descriptors open before, %d after", before, after)
				}
			})
		})
	}
}
