package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

// MPI-IO on a communicator that spans nodes: collective and independent
// accesses, a strided view, the shared file pointer (its claims from
// every node never overlap and leave no gap, the ordered calls, seek,
// append mode), atomic mode, delete on close, and Revoke reaching every
// node; no file is left beside the user's.
func TestFilesAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			// TMPDIR: rank 0's directory goes away with the test, even if it fails.
			runNodes(t, nodesOpts{Counts: counts, Body: "files", Env: []string{"TMPDIR=" + t.TempDir()}}).check(t)
		})
	}
}

func init() {
	bodies["files"] = func(w *ranks.World, c *ranks.Comm) error {
		me := c.Rank()
		dir, err := sharedDir(c)
		if err != nil {
			return err
		}
		if me == 0 {
			defer os.RemoveAll(dir)
		}
		for _, step := range []struct {
			name string
			run  func(*ranks.Comm, string) error
		}{
			{"blocks", filesBlocks}, {"strided", filesStrided}, {"shared", filesShared},
			{"append", filesAppend}, {"revoke", filesRevoke},
		} {
			if err := step.run(c, dir); err != nil {
				return fmt.Errorf("%s: %w", step.name, err)
			}
			if err := coll.Barrier(c); err != nil {
				return err
			}
			if me == 0 {
				if err := onlyFiles(dir); err != nil {
					return fmt.Errorf("after %s: %w", step.name, err)
				}
			}
		}
		return nil
	}
}

// sharedDir makes a directory at rank 0 of c and tells every member.
func sharedDir(c *ranks.Comm) (string, error) {
	var b [256]byte
	if c.Rank() == 0 {
		d, err := os.MkdirTemp("", "shmpi-files-")
		if err != nil {
			return "", err
		}
		copy(b[:], d)
	}
	if err := coll.Bcast(c, b[:], 0); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b[:], "\x00")), nil
}

// A member's SIGKILL (rank 3, on another node than rank 0) right after
// it opened a file: the survivors' collective write, or their Open if
// the death reached it first, returns ErrProcFailed (or ErrRevoked, once
// another survivor revoked the file); they revoke and
// close the file, shrink, open it again over the survivors, rewrite it
// and read it back; no file is left beside theirs.
func TestFilesFailureAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "files-fail", FT: true, Env: []string{"TMPDIR=" + t.TempDir()}}).check(t, 3)
		})
		// Member 1, an aggregator of rank 0's node, in the second round
		// of a collective write.
		t.Run(fmt.Sprint(counts, "/in-round"), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "files-fail-round", FT: true, Env: []string{"TMPDIR=" + t.TempDir()}}).check(t, 1)
		})
	}
}

func init() {
	bodies["files-fail"] = func(w *ranks.World, c *ranks.Comm) error { return filesFail(c, 3, false) }
	bodies["files-fail-round"] = func(w *ranks.World, c *ranks.Comm) error { return filesFail(c, 1, true) }
}

// filesFail: member victim dies right after Open, or (inRound) in the
// second round of the collective write through its node's aggregators,
// of which it is one; the survivors recover the file.
func filesFail(c *ranks.Comm, victim int, inRound bool) error {
	me, n := c.Rank(), c.Size()
	dir, err := sharedDir(c)
	if err != nil {
		return err
	}
	name := filepath.Join(dir, "ft")
	var hints *ranks.Info
	if inRound {
		hints = aggregating()
	}
	f, err := mpio.Open(c, name, mpio.ModeCreate|mpio.ModeRdwr, hints)
	if me == victim && (!inRound || err != nil) {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if me == victim {
		ext.IORoundHook = func(op string, round int) {
			if op == "File.WriteAtAll" && round == 1 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	}
	const bn = 20000 // several rounds of 8 KiB (aggregating)
	block := func(r int) []byte { return bytes.Repeat([]byte{filePattern(r, 0)}, bn) }
	if err == nil {
		// ErrRevoked if another survivor revoked the file first.
		if _, err := mpio.WriteAtAll(f, int64(me)*bn, block(me)); me == victim {
			return fmt.Errorf("the victim lived through its WriteAtAll: %v", err)
		} else if !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
			return fmt.Errorf("WriteAtAll without the victim: %v, want ErrProcFailed or ErrRevoked", err)
		}
		if err := f.Revoke(); err != nil {
			return err
		}
		if err := f.Close(); err != nil && !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
			return fmt.Errorf("Close after the failure: %v", err)
		}
	} else if !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
		return fmt.Errorf("Open: %v, want success, ErrProcFailed or ErrRevoked", err)
	}
	if err := ulfm.Revoke(c); err != nil {
		return err
	}
	s, err := ulfm.Shrink(c)
	if err != nil {
		return fmt.Errorf("Shrink: %w", err)
	}
	sr, sn := s.Rank(), s.Size()
	if sn != n-1 {
		return fmt.Errorf("Shrink: %d members, want %d", sn, n-1)
	}
	g, err := mpio.Open(s, name, mpio.ModeCreate|mpio.ModeRdwr, nil) // created again if a failed Open removed it
	if err != nil {
		return fmt.Errorf("Open over the survivors: %w", err)
	}
	if err := g.SetSize(0); err != nil {
		return err
	}
	if _, err := mpio.WriteAtAll(g, int64(sr)*bn, block(sr)); err != nil {
		return fmt.Errorf("WriteAtAll over the survivors: %w", err)
	}
	if err := g.SeekShared(int64(bn*sn), mpio.SeekSet); err != nil {
		return err
	}
	if _, err := mpio.WriteShared(g, block(sr)[:10]); err != nil {
		return fmt.Errorf("WriteShared over the survivors: %w", err)
	}
	if err := coll.Barrier(s); err != nil {
		return err
	}
	all := make([]byte, (bn+10)*sn)
	if k, err := mpio.ReadAt(g, 0, all); err != nil || k != len(all) {
		return fmt.Errorf("ReadAt: %d, %v", k, err)
	}
	for r := range sn {
		if !bytes.Equal(all[r*bn:(r+1)*bn], block(r)) {
			return fmt.Errorf("survivor %d's block differs", r)
		}
	}
	if err := g.Close(); err != nil {
		return err
	}
	if sr == 0 {
		defer os.RemoveAll(dir)
		return onlyFiles(dir)
	}
	return nil
}

// onlyFiles fails if dir holds anything but the tests' own files.
func onlyFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			return fmt.Errorf("%s left behind", e.Name())
		}
	}
	return nil
}

func filePattern(rank, i int) byte { return byte(rank*31 + i*7 + 1) }

// aggregating are hints that send every collective access through each
// node's aggregators, in rounds of a page per aggregator.
func aggregating() *ranks.Info {
	in := ranks.NewInfo()
	in.Set("romio_cb_write", "enable")
	in.Set("romio_cb_read", "enable")
	in.Set("cb_buffer_size", "4096")
	in.Set("cb_nodes", "2")
	return in
}

// filesBlocks: each member writes its block with WriteAtAll, reads its
// successor's with ReadAtAll and the whole file with ReadAt, through
// each node's aggregators and with the default hints; atomic mode and
// delete on close.
func filesBlocks(c *ranks.Comm, dir string) error {
	for _, info := range []*ranks.Info{aggregating(), nil} {
		if err := filesBlocksWith(c, dir, info); err != nil {
			return fmt.Errorf("hints %v: %w", info, err)
		}
	}
	return nil
}

func filesBlocksWith(c *ranks.Comm, dir string, hints *ranks.Info) error {
	me, n := c.Rank(), c.Size()
	name := filepath.Join(dir, "blocks")
	f, err := mpio.Open(c, name, mpio.ModeCreate|mpio.ModeRdwr|mpio.ModeDeleteOnClose, hints)
	if err != nil {
		return err
	}
	size := func(r int) int { return 1000 + 4099*r }
	at := func(r int) int64 {
		var o int64
		for k := range r {
			o += int64(size(k))
		}
		return o
	}
	block := func(r int) []byte {
		b := make([]byte, size(r))
		for i := range b {
			b[i] = filePattern(r, i)
		}
		return b
	}
	if _, err := mpio.WriteAtAll(f, at(me), block(me)); err != nil {
		return fmt.Errorf("WriteAtAll: %w", err)
	}
	next := (me + 1) % n
	got := make([]byte, size(next))
	if k, err := mpio.ReadAtAll(f, at(next), got); err != nil || k != len(got) || !bytes.Equal(got, block(next)) {
		return fmt.Errorf("ReadAtAll of member %d's block: %d bytes, %v (equal: %v)", next, k, err, bytes.Equal(got, block(next)))
	}
	all := make([]byte, at(n))
	if _, err := mpio.ReadAt(f, 0, all); err != nil {
		return err
	}
	for r := range n {
		if !bytes.Equal(all[at(r):at(r)+int64(size(r))], block(r)) {
			return fmt.Errorf("member %d's block differs in the file", r)
		}
	}
	// Atomic mode: every member overwrites the same range in turn, each
	// write whole; what is read is one member's.
	if err := f.SetAtomicity(true); err != nil {
		return err
	}
	if on, err := f.GetAtomicity(); err != nil || !on {
		return fmt.Errorf("GetAtomicity: %v, %v", on, err)
	}
	mine := bytes.Repeat([]byte{byte(me + 1)}, 8192)
	if _, err := mpio.WriteAtAll(f, 0, mine); err != nil {
		return fmt.Errorf("WriteAtAll in atomic mode: %w", err)
	}
	if _, err := mpio.ReadAt(f, 0, mine); err != nil {
		return err
	}
	if bytes.Count(mine, mine[:1]) != len(mine) || mine[0] == 0 || int(mine[0]) > n {
		return fmt.Errorf("atomic mode: the range mixes members' bytes")
	}
	if info, err := f.Info(); err != nil {
		return err
	} else if v, _, _ := info.Get("romio_cb_write"); hints != nil && v != "enable" {
		return fmt.Errorf("romio_cb_write %q, want the hint's enable", v)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ModeDeleteOnClose left %s: %v", name, err)
	}
	return nil
}

// filesStrided: a view of 8-byte blocks, the members' interleaved, so
// that every page holds bytes of every node, each node's aggregators
// writing only its members'.
func filesStrided(c *ranks.Comm, dir string) error {
	me, n := c.Rank(), c.Size()
	f, err := mpio.Open(c, filepath.Join(dir, "strided"), mpio.ModeCreate|mpio.ModeRdwr, aggregating())
	if err != nil {
		return err
	}
	const blk, nblk = 8, 1000
	if err := f.SetView(int64(me*blk), 1, mpio.Filetype{Block: blk, Stride: blk * n}); err != nil {
		return err
	}
	mine := make([]byte, blk*nblk)
	for i := range mine {
		mine[i] = filePattern(me, i)
	}
	if _, err := mpio.WriteAll(f, mine); err != nil {
		return fmt.Errorf("WriteAll: %w", err)
	}
	if err := f.SetView(0, 1, mpio.Filetype{}); err != nil {
		return err
	}
	all := make([]byte, blk*nblk*n)
	if k, err := mpio.ReadAtAll(f, 0, all); err != nil || k != len(all) {
		return fmt.Errorf("ReadAtAll: %d, %v", k, err)
	}
	for b := range nblk * n {
		r, i := b%n, b/n
		for j := range blk {
			if all[b*blk+j] != filePattern(r, i*blk+j) {
				return fmt.Errorf("block %d (member %d's %d-th) differs", b, r, i)
			}
		}
	}
	return f.Close()
}

// filesShared: the shared file pointer from every node.
func filesShared(c *ranks.Comm, dir string) error {
	me, n := c.Rank(), c.Size()
	const recs, rec = 6, 16
	f, err := mpio.Open(c, filepath.Join(dir, "shared"), mpio.ModeCreate|mpio.ModeRdwr, nil)
	if err != nil {
		return err
	}
	record := func(r, i int) []byte {
		b := make([]byte, rec)
		binary.LittleEndian.PutUint64(b, uint64(r))
		binary.LittleEndian.PutUint64(b[8:], uint64(i))
		return b
	}
	for i := range recs {
		if _, err := mpio.WriteShared(f, record(me, i)); err != nil {
			return fmt.Errorf("WriteShared: %w", err)
		}
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	if pos, err := f.GetPositionShared(); err != nil || pos != int64(recs*rec*n) {
		return fmt.Errorf("GetPositionShared after the writes: %d, %v; want %d", pos, err, recs*rec*n)
	}
	// The file holds every record once, no gap; each member's in its order.
	all := make([]byte, recs*rec*n)
	if _, err := mpio.ReadAt(f, 0, all); err != nil {
		return err
	}
	last := make([]int, n)
	for k := range recs * n {
		r := int(binary.LittleEndian.Uint64(all[k*rec:]))
		i := int(binary.LittleEndian.Uint64(all[k*rec+8:]))
		if r >= n || i != last[r] {
			return fmt.Errorf("record %d is (%d, %d): claims overlapped, left a gap or reordered", k, r, i)
		}
		last[r]++
	}
	// Read back with ReadShared from the start: each record goes to
	// exactly one member.
	if err := f.SeekShared(0, mpio.SeekSet); err != nil {
		return err
	}
	var seen []int64
	for range recs {
		b := make([]byte, rec)
		if k, err := mpio.ReadShared(f, b); err != nil || k != rec {
			return fmt.Errorf("ReadShared: %d, %v", k, err)
		}
		seen = append(seen, int64(binary.LittleEndian.Uint64(b))*recs+int64(binary.LittleEndian.Uint64(b[8:])))
	}
	every := make([]int64, recs*n)
	if err := coll.Allgather(c, seen, every); err != nil {
		return err
	}
	slices.Sort(every)
	for k, v := range every {
		if v != int64(k) {
			return fmt.Errorf("ReadShared: the members read %v, want every record once", every)
		}
	}
	// WriteOrdered after them: member r's part (r+1 bytes) in rank order.
	part := bytes.Repeat([]byte{byte(0x80 + me)}, me+1)
	if _, err := mpio.WriteOrdered(f, part); err != nil {
		return fmt.Errorf("WriteOrdered: %w", err)
	}
	end := int64(recs * rec * n)
	want := []byte{}
	for r := range n {
		want = append(want, bytes.Repeat([]byte{byte(0x80 + r)}, r+1)...)
	}
	got := make([]byte, len(want))
	if _, err := mpio.ReadAt(f, end, got); err != nil || !bytes.Equal(got, want) {
		return fmt.Errorf("WriteOrdered: the file has % x, want % x (%v)", got, want, err)
	}
	if pos, err := f.GetPositionShared(); err != nil || pos != end+int64(len(want)) {
		return fmt.Errorf("GetPositionShared after WriteOrdered: %d, %v", pos, err)
	}
	// ReadOrdered from a SeekShared to the first record of member 0.
	if err := f.SeekShared(0, mpio.SeekSet); err != nil {
		return err
	}
	b := make([]byte, rec)
	if _, err := mpio.ReadOrdered(f, b); err != nil || !bytes.Equal(b, all[me*rec:(me+1)*rec]) {
		return fmt.Errorf("ReadOrdered: %v", err)
	}
	return f.Close()
}

// filesAppend: ModeAppend puts both pointers at the end of the file.
func filesAppend(c *ranks.Comm, dir string) error {
	name := filepath.Join(dir, "append")
	if c.Rank() == 0 {
		if err := os.WriteFile(name, make([]byte, 777), 0o644); err != nil {
			return err
		}
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	f, err := mpio.Open(c, name, mpio.ModeRdwr|mpio.ModeAppend, nil)
	if err != nil {
		return err
	}
	if pos, err := f.GetPositionShared(); err != nil || pos != 777 {
		return fmt.Errorf("the shared pointer opens at %d (%v), want 777", pos, err)
	}
	if pos, err := f.GetPosition(); err != nil || pos != 777 {
		return fmt.Errorf("the individual pointer opens at %d (%v), want 777", pos, err)
	}
	if err := coll.Barrier(c); err != nil { // every member looked before any writes
		return err
	}
	if _, err := mpio.WriteShared(f, []byte{1, 2, 3}); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if st, err := os.Stat(name); err != nil || st.Size() != int64(777+3*c.Size()) {
		return fmt.Errorf("the file has %v bytes (%v), want %d", st.Size(), err, 777+3*c.Size())
	}
	return nil
}

// filesRevoke: the last member revokes the file; every member's next
// collective call on it, on every node, returns ErrRevoked, and Close
// still releases it.
func filesRevoke(c *ranks.Comm, dir string) error {
	me, n := c.Rank(), c.Size()
	f, err := mpio.Open(c, filepath.Join(dir, "revoke"), mpio.ModeCreate|mpio.ModeRdwr, nil)
	if err != nil {
		return err
	}
	// Every member has its file before the revoke (a revoke during Open's
	// last collective may fail it at some members, as ULFM allows).
	if err := coll.Barrier(c); err != nil {
		return err
	}
	if me == n-1 {
		if err := f.Revoke(); err != nil {
			return err
		}
	}
	// Either the revoke is known at the call or it ends the call.
	if _, err := mpio.WriteAtAll(f, int64(me), []byte{1}); !errors.Is(err, ranks.ErrRevoked) {
		return fmt.Errorf("WriteAtAll after Revoke: %v, want ErrRevoked", err)
	}
	if _, err := mpio.WriteShared(f, []byte{1}); !errors.Is(err, ranks.ErrRevoked) {
		return fmt.Errorf("WriteShared after Revoke: %v, want ErrRevoked", err)
	}
	if err := f.Close(); !errors.Is(err, ranks.ErrRevoked) {
		return fmt.Errorf("Close after Revoke: %v, want ErrRevoked", err)
	}
	return nil
}
