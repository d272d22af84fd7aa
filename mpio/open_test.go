package mpio_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// Open and Close at 1 to 16 members: ModeCreate makes the file,
// ModeExcl refuses an existing one, ModeDeleteOnClose deletes it,
// ModeAppend starts both pointers at the end; nothing is left open.
func TestOpenClose(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8, 16} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			job(t, ranktest.Options{N: n}, func(r *ranktest.R, dir string) {
				before := fds(r)
				name := filepath.Join(dir, "a")
				f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr|mpio.ModeExcl, nil)
				if _, err := os.Stat(name); err != nil {
					r.Errorf("after Open with ModeCreate: %v", err)
				}
				amode, err := f.GetAmode()
				r.Check(err, "GetAmode")
				if amode != mpio.ModeCreate|mpio.ModeRdwr|mpio.ModeExcl {
					r.Errorf("GetAmode: %#x", amode)
				}
				g, err := f.Group()
				r.Check(err, "Group")
				if g.Size() != n {
					r.Errorf("Group: %d members, want %d", g.Size(), n)
				}
				if r.Rank == 0 {
					_, err := mpio.WriteAt(f, 0, []byte("0123456789"))
					r.Check(err, "WriteAt")
				}
				r.Check(f.Close(), "Close")
				wantClass(r, f.Close(), mpio.ErrFile, "Close twice")
				_, err = mpio.WriteAt(f, 0, []byte{1})
				wantClass(r, err, mpio.ErrFile, "WriteAt on a closed file")
				_, err = f.GetSize()
				wantClass(r, err, mpio.ErrFile, "GetSize on a closed file")

				_, err = mpio.Open(r.Comm, name, mpio.ModeCreate|mpio.ModeWronly|mpio.ModeExcl, nil)
				wantClass(r, err, mpio.ErrFileExists, "ModeCreate|ModeExcl of an existing file")

				f = open(r, r.Comm, name, mpio.ModeRdonly|mpio.ModeAppend|mpio.ModeDeleteOnClose,
					hints(3, 5000, "romio_cb_write", "enable", "romio_cb_read", "nonsense"))
				in, err := f.Info()
				r.Check(err, "Info")
				for k, want := range map[string]string{"cb_nodes": strconv.Itoa(min(3, n)), "cb_nodes_read": strconv.Itoa(min(3, n)),
					"cb_buffer_size": "8192", "romio_cb_write": "enable", "romio_cb_read": "automatic"} {
					if v, ok, _ := in.Get(k); !ok || v != want {
						r.Errorf("Info: %s is %q, want %q", k, v, want)
					}
				}
				if p, err := f.GetPosition(); err != nil || p != 10 {
					r.Errorf("ModeAppend: individual pointer %d, %v; want 10", p, err)
				}
				if p, err := f.GetPositionShared(); err != nil || p != 10 {
					r.Errorf("ModeAppend: shared pointer %d, %v; want 10", p, err)
				}
				if s, err := f.GetSize(); err != nil || s != 10 {
					r.Errorf("GetSize: %d, %v; want 10", s, err)
				}
				r.Check(f.Close(), "Close")
				if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
					r.Errorf("after Close with ModeDeleteOnClose: %v", err)
				}
				if after := fds(r); after != before {
					r.Errorf("%d descriptors open before, %d after", before, after)
				}
			})
		})
	}
}

// Bad arguments give clear errors at every member, whether every member
// or only one passed them, and leave the communicator working.
func TestOpenBadArguments(t *testing.T) {
	job(t, ranktest.Options{N: 4}, func(r *ranktest.R, dir string) {
		before := fds(r)
		name := filepath.Join(dir, "b")
		for _, amode := range []int{
			mpio.ModeRdonly | mpio.ModeWronly,
			mpio.ModeRdonly | mpio.ModeCreate,
			mpio.ModeRdonly | mpio.ModeExcl,
			mpio.ModeRdwr | mpio.ModeSequential,
			mpio.ModeCreate,
			mpio.ModeRdwr | 1<<20,
		} {
			_, err := mpio.Open(r.Comm, name, amode, nil)
			wantClass(r, err, mpio.ErrAmode, "amode "+strconv.Itoa(amode))
		}
		_, err := mpio.Open(r.Comm, name, mpio.ModeRdonly, nil)
		wantClass(r, err, mpio.ErrNoSuchFile, "ModeRdonly of a missing file")
		_, err = mpio.Open(r.Comm, "", mpio.ModeRdonly, nil)
		wantClass(r, err, mpio.ErrBadFile, "empty name")
		_, err = mpio.Open(r.Comm, dir, mpio.ModeRdonly, nil)
		wantClass(r, err, mpio.ErrBadFile, "a directory")
		_, err = mpio.Open(r.Comm, filepath.Join(dir, "none", "x"), mpio.ModeCreate|mpio.ModeWronly, nil)
		wantClass(r, err, mpio.ErrNoSuchFile, "in a missing directory")
		_, err = mpio.Open(nil, name, mpio.ModeRdonly, nil)
		wantClass(r, err, ranks.ErrComm, "nil communicator")

		// One member's mode is bad: it gets ErrAmode, the others an
		// error naming it; nobody hangs.
		amode := mpio.ModeCreate | mpio.ModeRdwr
		if r.Rank == 2 {
			amode = mpio.ModeRdonly | mpio.ModeCreate
		}
		_, err = mpio.Open(r.Comm, name, amode, nil)
		wantClass(r, err, mpio.ErrAmode, "one member's bad mode")
		var re *ranks.Error
		if r.Rank != 2 && (!errors.As(err, &re) || re.Rank != 2) {
			r.Errorf("one member's bad mode: %v, want rank 2 named", err)
		}
		if _, serr := os.Stat(name); !errors.Is(serr, os.ErrNotExist) {
			r.Errorf("a failed Open left the file: %v", serr)
		}
		// One member's mode differs (each valid): ErrNotSame.
		amode = mpio.ModeCreate | mpio.ModeRdwr
		if r.Rank == 1 {
			amode = mpio.ModeCreate | mpio.ModeWronly
		}
		_, err = mpio.Open(r.Comm, name, amode, nil)
		wantClass(r, err, mpio.ErrNotSame, "modes differ")
		// One member's name differs.
		n := name
		if r.Rank == 3 {
			n = name + "x"
		}
		_, err = mpio.Open(r.Comm, n, mpio.ModeCreate|mpio.ModeRdwr, nil)
		wantClass(r, err, mpio.ErrNotSame, "names differ")
		// Only member 1 cannot open the file (it has no descriptor
		// left): every member fails, naming it, and nothing stays open.
		r.Check(os.WriteFile(name+strconv.Itoa(r.Rank), nil, 0o644), "write")
		f := open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, nil)
		r.Check(f.Close(), "Close")
		var lim syscall.Rlimit
		r.Check(syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim), "getrlimit")
		if r.Rank == 1 {
			low := lim
			low.Cur = uint64(fds(r) - 1) // fds counts its own, closed again
			r.Check(syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low), "setrlimit")
		}
		_, err = mpio.Open(r.Comm, name, mpio.ModeRdwr, nil)
		if r.Rank == 1 {
			r.Check(syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim), "setrlimit")
		}
		wantClass(r, err, mpio.ErrIO, "Open where member 1 has no descriptor left")
		if r.Rank != 1 && (!errors.As(err, &re) || re.Rank != 1) {
			r.Errorf("member 1 could not open: %v, want rank 1 named", err)
		}
		// The communicator works, and a good Open too.
		f = open(r, r.Comm, name, mpio.ModeCreate|mpio.ModeRdwr, nil)
		r.Check(f.Close(), "Close")
		if after := fds(r); after != before {
			r.Errorf("%d descriptors open before, %d after", before, after)
		}
		r.Check(mpio.Delete(name+strconv.Itoa(r.Rank), nil), "Delete")
		wantClass(r, mpio.Delete(name+strconv.Itoa(r.Rank), nil), mpio.ErrNoSuchFile, "Delete of a deleted file")
	})
}
