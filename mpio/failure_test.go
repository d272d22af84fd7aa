package mpio_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// blockWrite writes the test pattern of total bytes block-distributed
// over c's members with WriteAtAll.
func blockWrite(f *mpio.File, c *ranks.Comm, total int64) error {
	per := (total + int64(c.Size()) - 1) / int64(c.Size())
	lo := min(int64(c.Rank())*per, total)
	hi := min(lo+per, total)
	_, err := mpio.WriteAtAll(f, lo, patternBytes(lo, hi-lo))
	return err
}

// A member killed (SIGKILL) in the middle of a collective write, an
// aggregator or not, in its first round or a later one: the survivors
// get ErrProcFailed, never a hang; they agree, shrink, close the file
// (which reports the failure and frees everything), open it again over
// the shrunk communicator and write it again, and the file is then what
// one process writing it sequentially gives. No descriptor is left open.
func TestMemberKilledInCollectiveWrite(t *testing.T) {
	for _, k := range []struct {
		victim, round int
		cb            string
	}{{2, 0, "enable"}, {2, 3, "enable"}, {1, 0, "enable"}, {1, 3, "enable"}, {2, 3, "automatic"}, {1, 2, "automatic"}} {
		what := "aggregator"
		if k.victim == 1 {
			what = "member"
		}
		t.Run(fmt.Sprintf("%s/round=%d/%s", what, k.round, k.cb), func(t *testing.T) {
			o := ranktest.Options{N: 4, Kill: &ranktest.KillAt{Rank: k.victim, Point: "round"}, Timeout: 30e9}
			job(t, o, func(r *ranktest.R, dir string) {
				before := fds(r)
				name := filepath.Join(dir, "killed")
				// 2 aggregators (members 0 and 2), 8 KiB rounds: the
				// write takes 8 rounds.
				info := hints(2, 4096, "romio_cb_write", k.cb)
				f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, info)
				mpio.SetRoundHook(func(op string, round int) {
					if op == "File.WriteAtAll" && round == k.round {
						r.Point("round")
					}
				})
				const total = 64 << 10
				err := blockWrite(f, r.Comm, total)
				mpio.SetRoundHook(nil)
				wantClass(r, err, ranks.ErrProcFailed, "WriteAtAll with a member killed")
				// The ULFM chapter's advice: agree on the outcome, then
				// repair.
				ok, aerr := ulfm.AgreeBool(r.Comm, err == nil)
				if ok && aerr == nil {
					r.Fatalf("Agree says the write succeeded everywhere")
				}
				next, serr := ulfm.Shrink(r.Comm)
				r.Check(serr, "Shrink")
				if next.Size() != 3 {
					r.Errorf("shrunk communicator of %d members, want 3", next.Size())
				}
				wantClass(r, f.Close(), ranks.ErrProcFailed, "Close after the failure")
				f = open(r, next, name, mpio.ModeRdwr, info)
				r.Check(blockWrite(f, next, total), "WriteAtAll over the shrunk communicator")
				r.Check(f.Close(), "Close")
				if next.Rank() == 0 {
					sameFile(r, name, patternBytes(0, total), "the file written again")
				}
				r.Check(next.Free(), "Free")
				if after := fds(r); after != before {
					r.Errorf("%d descriptors open before, %d after", before, after)
				}
			})
		})
	}
}

// A member killed with the file open: the survivors' collective calls
// return ErrProcFailed, their independent ones work, and Close reports
// the failure, frees this rank's resources and deletes a
// ModeDeleteOnClose file.
func TestCloseAfterFailure(t *testing.T) {
	job(t, ranktest.Options{N: 4, Dies: []int{3}}, func(r *ranktest.R, dir string) {
		before := fds(r)
		name := filepath.Join(dir, "doomed")
		f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr|mpio.ModeDeleteOnClose, nil)
		_, err := mpio.WriteAtAll(f, int64(r.Rank)*10, patternBytes(int64(r.Rank)*10, 10))
		r.Check(err, "WriteAtAll")
		if r.Rank == 3 {
			r.Kill()
		}
		_, err = ranks.Recv(r.Comm, make([]byte, 1), 3, 0) // returns once it is dead
		wantClass(r, err, ranks.ErrProcFailed, "Recv from the dead member")
		_, err = mpio.ReadAtAll(f, 0, make([]byte, 10))
		wantClass(r, err, ranks.ErrProcFailed, "ReadAtAll after a member died")
		wantClass(r, f.Sync(), ranks.ErrProcFailed, "Sync after a member died")
		_, err = mpio.WriteAt(f, 100+int64(r.Rank), []byte{1})
		r.Check(err, "WriteAt after a member died")
		got := make([]byte, 10)
		if _, err := mpio.ReadAt(f, 30, got); err != nil || got[0] != pattern(30) {
			r.Errorf("ReadAt after a member died: %v", err)
		}
		_, err = mpio.WriteShared(f, []byte{2})
		r.Check(err, "WriteShared after a member died")
		wantClass(r, f.Close(), ranks.ErrProcFailed, "Close after a member died")
		wantClass(r, f.Close(), mpio.ErrFile, "second Close")
		if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
			r.Errorf("a ModeDeleteOnClose file after Close: %v", err)
		}
		if after := fds(r); after != before {
			r.Errorf("%d descriptors open before, %d after", before, after)
		}
	})
}

// Revoke at one member while the others are blocked in a collective
// call on the file (which cannot complete: the revoker never joins):
// they return ErrRevoked; then every call on the file that is not local
// returns ErrRevoked at every member, the local ones work, Close frees
// the file, and the next file on the same communicator works.
func TestRevokeDuringCollective(t *testing.T) {
	for _, call := range []string{"WriteAtAll", "ReadAtAll", "SetView", "Sync", "WriteOrdered", "Close"} {
		t.Run(call, func(t *testing.T) {
			job(t, ranktest.Options{N: 4}, func(r *ranktest.R, dir string) {
				before := fds(r)
				name := filepath.Join(dir, "revoked")
				f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, nil)
				_, err := mpio.WriteAtAll(f, int64(r.Rank)*8, []int64{int64(r.Rank)})
				r.Check(err, "WriteAtAll")
				if r.Rank == 0 {
					// The others announce that they are about to block.
					for k := 1; k < r.Size; k++ {
						_, err := ranks.Recv(r.Comm, make([]byte, 1), k, 1)
						r.Check(err, "Recv")
					}
					r.Check(f.Revoke(), "Revoke")
					r.Check(f.Revoke(), "second Revoke")
				} else {
					r.Check(ranks.Send(r.Comm, []byte{1}, 0, 1), "Send")
					switch call {
					case "WriteAtAll":
						_, err = mpio.WriteAtAll(f, 0, make([]byte, 1<<20))
					case "ReadAtAll":
						_, err = mpio.ReadAtAll(f, 0, make([]byte, 8))
					case "SetView":
						err = f.SetView(0, 8, mpio.Contiguous)
					case "Sync":
						err = f.Sync()
					case "WriteOrdered":
						_, err = mpio.WriteOrdered(f, []byte{1})
					case "Close":
						err = f.Close()
					}
					wantClass(r, err, ranks.ErrRevoked, call+" when the file is revoked")
				}
				if call != "Close" || r.Rank == 0 {
					everyCallRevoked(r, f)
					wantClass(r, f.Close(), ranks.ErrRevoked, "Close of a revoked file")
				}
				if after := fds(r); after != before {
					r.Errorf("%d descriptors open before, %d after", before, after)
				}
				// The revoke does not leak into the next file.
				g := open(r, r.Comm, name, mpio.ModeRdwr|mpio.ModeDeleteOnClose, nil)
				got := make([]int64, 1)
				k, err := mpio.ReadAtAll(g, int64(r.Rank)*8, got)
				if err != nil || k != 1 || got[0] != int64(r.Rank) {
					r.Errorf("ReadAtAll on the next file: %d, %v, %d", k, err, got[0])
				}
				r.Check(g.Close(), "Close of the next file")
				r.Check(coll.Barrier(r.Comm), "barrier")
			})
		})
	}
}

func everyCallRevoked(r *ranktest.R, f *mpio.File) {
	b := make([]byte, 8)
	calls := map[string]func() error{
		"ReadAt":       func() error { _, err := mpio.ReadAt(f, 0, b); return err },
		"WriteAt":      func() error { _, err := mpio.WriteAt(f, 0, b); return err },
		"Read":         func() error { _, err := mpio.Read(f, b); return err },
		"Write":        func() error { _, err := mpio.Write(f, b); return err },
		"ReadShared":   func() error { _, err := mpio.ReadShared(f, b); return err },
		"WriteShared":  func() error { _, err := mpio.WriteShared(f, b); return err },
		"ReadOrdered":  func() error { _, err := mpio.ReadOrdered(f, b); return err },
		"WriteOrdered": func() error { _, err := mpio.WriteOrdered(f, b); return err },
		"ReadAtAll":    func() error { _, err := mpio.ReadAtAll(f, 0, b); return err },
		"WriteAtAll":   func() error { _, err := mpio.WriteAtAll(f, 0, b); return err },
		"ReadAll":      func() error { _, err := mpio.ReadAll(f, b); return err },
		"WriteAll":     func() error { _, err := mpio.WriteAll(f, b); return err },
		"SetView":      func() error { return f.SetView(0, 1, mpio.Contiguous) },
		"SetSize":      func() error { return f.SetSize(0) },
		"Preallocate":  func() error { return f.Preallocate(0) },
		"Sync":         func() error { return f.Sync() },
		"SetAtomicity": func() error { return f.SetAtomicity(true) },
		"SeekShared":   func() error { return f.SeekShared(0, mpio.SeekSet) },
		"IwriteAt": func() error {
			q, err := mpio.IwriteAt(f, 0, b, nil)
			if err != nil {
				return err
			}
			_, err = q.Wait()
			return err
		},
		"IreadAtAll": func() error {
			q, err := mpio.IreadAtAll(f, 0, b, nil)
			if err != nil {
				return err
			}
			_, err = q.Wait()
			return err
		},
	}
	for name, call := range calls {
		wantClass(r, call(), ranks.ErrRevoked, name+" on a revoked file")
	}
	// Local calls work.
	if _, err := f.Seek(3, mpio.SeekSet); err != nil {
		r.Errorf("Seek on a revoked file: %v", err)
	}
	if p, err := f.GetPosition(); err != nil || p != 3 {
		r.Errorf("GetPosition on a revoked file: %d, %v", p, err)
	}
	if _, err := f.GetSize(); err != nil {
		r.Errorf("GetSize on a revoked file: %v", err)
	}
	if _, _, _, err := f.GetView(); err != nil {
		r.Errorf("GetView on a revoked file: %v", err)
	}
}
