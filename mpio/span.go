package mpio

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/shm"
)

// Files on a communicator that spans nodes (issue 27). Its members share
// no memory, so such a file keeps nothing in shared memory:
//
//   - The shared file pointer is 8 bytes (the word header.shared would
//     hold) in a hidden file beside the file, which member 0 creates and
//     every member opens; a change reads and writes it under an exclusive
//     byte-range lock, as ROMIO keeps its shared pointer. The hidden file
//     is unlinked as soon as every member has it open, so that nothing
//     is left behind whatever becomes of the job; the open descriptors
//     keep it alive (on NFS as a .nfs file that the last close removes).
//   - Collective reads and writes aggregate per node: each node has its
//     own shared memory (header and staging buffers, nodeMem), and its
//     members run collective.go's rounds over the pieces of the node's
//     members only (the others' ranges are left out of the plan), with
//     the node's own aggregators (cb_nodes per node); the Allreduce at
//     the end spans every node, so that the call's errors are everyone's
//     and it returns once every node's data is written. Pieces of
//     different nodes are written by different nodes' aggregators, each
//     only the bytes its members marked.
//   - Revoke revokes the file's private communicator, which reaches every
//     node (revoked asks it), besides the node's header.
//
// The file must be on a file system that every node sees, with
// byte-range locks (POSIX or OFD locks: NFSv4, Lustre, GPFS, BeeGFS) for
// the shared pointer and for atomic mode.

// nodeMem finds the members of this rank's node and gives them the
// node's shared memory: the node's first member creates it, the others
// map it. Every member calls it, ok (its Open went well so far) or not,
// since it runs collectives on the file's communicator.
func (f *File) nodeMem(op string, ok bool) error {
	nc, err := f.c.SplitType(ranks.TypeShared, 0)
	if err != nil {
		return relabel(err, op)
	}
	ng, err := nc.Group()
	nc.Free()
	if err != nil {
		return relabel(err, op)
	}
	fg, err := f.c.Group()
	if err != nil {
		return relabel(err, op)
	}
	f.node, err = ng.TranslateRanks(idents(ng.Size()), fg)
	if err != nil {
		return relabel(err, op)
	}
	f.onNode = make([]bool, f.size)
	for _, r := range f.node {
		f.onNode[r] = true
	}
	for i := range f.aggs {
		f.aggs[i] = min(f.aggs[i], len(f.node))
	}
	total := int64(shm.PageSize) + 2*f.round + 2*f.round/8
	lead := f.node[0]
	fd := int64(-1)
	var own error
	if f.rank == lead && ok {
		if m, err := shm.NewMem(int(total)); err != nil {
			own = errf(errnoClass(err), op, -1, "the file's shared memory on this node (%d bytes): %v", total, err)
		} else {
			f.mem, fd = m, int64(m.FD())
		}
	}
	fds := make([]int64, f.size)
	if err := coll.Allgather(f.c, []int64{fd}, fds); err != nil {
		return relabel(err, op)
	}
	if own != nil || f.rank == lead || !ok {
		return own
	}
	if fds[lead] < 0 {
		return errf(ErrIO, op, lead, "member %d made no shared memory for this node", lead)
	}
	m, err := shm.OpenMem(ext.Pid(f.c, lead), int(fds[lead]), int(total))
	if err != nil {
		return errf(errnoClass(err), op, -1, "mapping the file's shared memory: %v", err)
	}
	f.mem = m
	return nil
}

func idents(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// sharedPtrFile is the shared file pointer of a file that spans nodes.
type sharedPtrFile struct {
	mu   sync.Mutex // this rank's goroutines: they share the descriptor's lock
	fd   int
	path string // until unlinked
}

// ptrFileName is the hidden file beside name that holds its shared
// pointer; pid and tag (member 0's) make it unique.
func ptrFileName(name string, pid, tag int64) string {
	return filepath.Join(filepath.Dir(name), fmt.Sprintf(".%s.shmpi-ptr.%d.%x", filepath.Base(name), pid, uint64(tag)))
}

// createPtrFile creates the pointer file of name at member 0, holding
// start, and returns it with the pid and tag that name it.
func createPtrFile(op, name string, start int64) (p *sharedPtrFile, pid, tag int64, err error) {
	pid = int64(os.Getpid())
	for range 8 {
		tag = rand.Int64()
		path := ptrFileName(name, pid, tag)
		fd, oerr := openRetry(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if oerr == unix.EEXIST {
			continue
		}
		if oerr != nil {
			return nil, 0, 0, ioErr(op, "create the shared file pointer's file", path, oerr)
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(start))
		if werr := pwriteFull(fd, b[:], 0); werr != nil {
			unix.Close(fd)
			unix.Unlink(path)
			return nil, 0, 0, ioErr(op, "write", path, werr)
		}
		return &sharedPtrFile{fd: fd, path: path}, pid, tag, nil
	}
	return nil, 0, 0, ioErr(op, "create the shared file pointer's file beside", name, unix.EEXIST)
}

// openPtrFile opens the pointer file that member 0 created.
func openPtrFile(op, name string, pid, tag int64) (*sharedPtrFile, error) {
	path := ptrFileName(name, pid, tag)
	fd, err := openRetry(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, ioErr(op, "open the shared file pointer's file", path, err)
	}
	return &sharedPtrFile{fd: fd, path: path}, nil
}

// update is updateShared's form for a file that spans nodes.
func (p *sharedPtrFile) update(op, name string, next func(cur uint64) (uint64, bool)) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: 0, Len: 8}
	for {
		err := unix.FcntlFlock(uintptr(p.fd), unix.F_OFD_SETLKW, &lk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, ioErr(op, "lock the shared file pointer of", name, err)
		}
		break
	}
	defer func() {
		lk.Type = unix.F_UNLCK
		for unix.FcntlFlock(uintptr(p.fd), unix.F_OFD_SETLK, &lk) == unix.EINTR {
		}
	}()
	var b [8]byte
	if n, err := preadFull(p.fd, b[:], 0); err != nil || n != len(b) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return 0, ioErr(op, "read the shared file pointer of", name, err)
	}
	cur := binary.LittleEndian.Uint64(b[:])
	if v, ok := next(cur); ok && v != cur {
		binary.LittleEndian.PutUint64(b[:], v)
		if err := pwriteFull(p.fd, b[:], 0); err != nil {
			return 0, ioErr(op, "write the shared file pointer of", name, err)
		}
	}
	return cur, nil
}

// unlink removes the file's name (each member does it once all opened
// it; the first succeeds).
func (p *sharedPtrFile) unlink() {
	if p != nil && p.path != "" {
		unix.Unlink(p.path)
		p.path = ""
	}
}

func (p *sharedPtrFile) close() {
	if p != nil && p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}
