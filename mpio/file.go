package mpio

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/shm"
)

// Access modes (MPI_MODE_*, with the MPI 5.0 ABI's values): Open's amode
// is a bit-or of these. Exactly one of ModeRdonly, ModeWronly and
// ModeRdwr; ModeCreate and ModeExcl not with ModeRdonly; ModeSequential
// not with ModeRdwr (MPI's rules). ModeUniqueOpen is a hint, accepted
// and ignored.
const (
	ModeAppend        = 1   // both file pointers start at the end of the file
	ModeCreate        = 2   // create the file if it does not exist
	ModeDeleteOnClose = 4   // Close deletes the file
	ModeExcl          = 8   // with ModeCreate: fail (ErrFileExists) if it exists
	ModeRdonly        = 16  // read only
	ModeRdwr          = 32  // read and write
	ModeSequential    = 64  // only the shared file pointer (and ordered) calls
	ModeUniqueOpen    = 128 // no other program opens the file meanwhile
	ModeWronly        = 256 // write only

	modeMask = ModeAppend | ModeCreate | ModeDeleteOnClose | ModeExcl | ModeRdonly | ModeRdwr |
		ModeSequential | ModeUniqueOpen | ModeWronly
)

// Whence values of Seek and SeekShared (those of package io).
const (
	SeekSet = 0 // from the start of the view
	SeekCur = 1 // from the file pointer
	SeekEnd = 2 // from the end of the file, in the view
)

// The file's shared memory (one memfd, mapped by every member; member 0
// creates it at Open and the others open it through /proc):
//
//	header (64 bytes, at 0)
//	  +0   revoked uint32  1 once any member revoked the file
//	  +4   _       uint32
//	  +8   shared  uint64  the shared file pointer: bits 0-47 its
//	                       position in etypes of the view; bits 48-63
//	                       how many collective calls have set it (the
//	                       install epoch, shared.go)
//	staging buffer 0, at PageSize            round bytes (collective.go)
//	staging buffer 1, at PageSize + round
//	coverage bitmap 0, at PageSize + 2*round round/8 bytes: a bit per
//	                                         staged byte
//	coverage bitmap 1, after it
//
// round = aggregators * domain, domain a multiple of the page size; the
// buffers' pages are allocated by the kernel when a collective first
// touches them.
type header struct {
	revoked atomic.Uint32
	_       uint32
	shared  atomic.Uint64
	_       [48]byte
}

type rounds struct {
	filled  [2]atomic.Uint32
	drained [2]atomic.Uint32
	_       [48]byte
}

func init() {
	if unsafe.Sizeof(header{}) != 64 || unsafe.Offsetof(header{}.shared) != 8 ||
		unsafe.Sizeof(rounds{}) != 64 || unsafe.Offsetof(rounds{}.drained) != 8 {
		panic("mpio: file header layout drifted from its documentation")
	}
}

// Defaults of the collective buffering hints (Open's info).
const (
	defaultDomain  = 4 << 20 // cb_buffer_size: bytes an aggregator writes per round
	maxAggregators = 8       // cb_nodes by default: min(members, CPUs, this)
)

// File is an open file: this rank's handle on a file that the members of
// a communicator opened together.
//
// Any goroutines of a rank may use a File at once. Collective calls
// (and the nonblocking collective ones) run one at a time, in the order
// this rank called them (queue.go), as every member must call them in
// the same order.
type File struct {
	c     *ranks.Comm // a private duplicate: its failures and revoke are the file's
	size  int
	rank  int
	name  string
	amode int
	fd    int
	mem   *shm.Mem
	hdr   *header

	// span: the communicator spans nodes; ptr holds the shared file
	// pointer, and mem is this node's (span.go). onNode says which
	// members share this rank's node, node lists them.
	span   bool
	ptr    *sharedPtrFile
	ptrErr error // why ptr is nil across nodes
	onNode []bool
	node   []int

	stage  [2][]byte   // the staging buffers
	bits   [2][]uint64 // and their coverage bitmaps
	aggs   [2]int      // aggregators of reads ([0]) and writes ([1]) (cb_nodes)
	domain int64       // bytes per aggregator per round (cb_buffer_size)
	round  int64       // bytes of a staging buffer: the larger aggs times domain
	cb     [2]int      // collective buffering of reads and writes: cbAuto, cbEnable, cbDisable

	// The rounds of the collective calls so far, and the producers and
	// consumers of each staging buffer they had (the same at every
	// member; collective.go). Used by the queue's jobs only.
	nrounds    uint64
	pcum, dcum [2]uint32

	mu    sync.Mutex // guards view, pos and epoch
	view  view
	pos   int64  // the individual file pointer, in etypes
	epoch uint16 // install epoch of the shared file pointer (shared.go)

	atomicMode atomic.Bool
	atomicMu   sync.RWMutex // serializes this rank's own accesses in atomic mode

	closed  atomic.Bool
	q       queue
	pending sync.WaitGroup // this rank's independent nonblocking calls in flight
}

// checkAmode reports what is wrong with amode.
func checkAmode(amode int) string {
	switch {
	case amode&^modeMask != 0:
		return fmt.Sprintf("bits %#x are not Mode constants", amode&^modeMask)
	case countBits(amode&(ModeRdonly|ModeWronly|ModeRdwr)) != 1:
		return "exactly one of ModeRdonly, ModeWronly and ModeRdwr is needed"
	case amode&ModeRdonly != 0 && amode&(ModeCreate|ModeExcl) != 0:
		return "ModeCreate and ModeExcl need write access"
	case amode&ModeSequential != 0 && amode&ModeRdwr != 0:
		return "ModeSequential is not allowed with ModeRdwr"
	}
	return ""
}

func countBits(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// Open opens file name on every member of c (MPI_File_open): a
// collective call, where every member passes the same name and amode.
// info may carry hints (nil: none; member 0's are used, and Info
// reports those in use): "cb_nodes", the number of aggregators of
// collective reads and writes (default: 1 for writes; for reads, the
// CPUs of the node, at most 8 and at most the members; hints says why);
// "cb_buffer_size", the bytes each aggregator writes or reads at a time
// (default 4 MiB, rounded up to pages); "romio_cb_write" and
// "romio_cb_read", "automatic" (the default), "enable" or "disable"
// (collective.go says what each does). The file's shared memory is
// 4 KiB plus two staging buffers of the larger number of aggregators
// times cb_buffer_size, and their bitmaps (an eighth of that); its pages
// are taken when a collective call first uses them.
//
// If anything is wrong at any member (a bad mode or name there, a name
// or mode that differs between members, a file that one member cannot
// open), Open fails at every member, with that member's error class and
// rank, and nothing stays open. A file that Open created with
// ModeCreate is then removed again.
func Open(c *ranks.Comm, name string, amode int, info *ranks.Info) (*File, error) {
	const op = "File.Open"
	if c == nil {
		return nil, errf(ranks.ErrComm, op, -1, "nil communicator")
	}
	var local error
	if why := checkAmode(amode); why != "" {
		local = errf(ErrAmode, op, -1, "amode %#x: %s", amode, why)
	} else if name == "" {
		local = errf(ErrBadFile, op, -1, "empty file name")
	}
	span := ext.AcrossNodes(c, op) != nil
	d, err := c.Dup()
	if err != nil {
		return nil, relabel(err, op)
	}
	f, err := open(d, op, name, amode, info, local, span)
	if err != nil {
		if errors.Is(err, ranks.ErrProcFailed) || errors.Is(err, ranks.ErrRevoked) {
			// A failure can end a step of open at some members while
			// others still wait in it for a live member that left (a
			// creation ignores deaths it does not need): revoking the
			// private communicator, which the program cannot reach,
			// ends their wait with ErrRevoked.
			ext.Revoke(d)
		}
		d.Free()
		return nil, err
	}
	return f, nil
}

func nameHash(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64() >> 1)
}

func open(c *ranks.Comm, op, name string, amode int, info *ranks.Info, local error, span bool) (*File, error) {
	size, me := c.Size(), c.Rank()
	// 1. Every member's arguments, so that all fail alike if any is bad.
	args := make([]int64, 3*size)
	if err := coll.Allgather(c, []int64{codeOf(local), int64(amode), nameHash(name)}, args); err != nil {
		return nil, relabel(err, op)
	}
	if local != nil {
		return nil, local
	}
	for k := range size {
		a := args[3*k : 3*k+3]
		switch {
		case a[0] != 0:
			return nil, memberErr(op, k, a[0], "invalid arguments")
		case a[1] != int64(amode):
			return nil, errf(ErrNotSame, op, k, "member %d passed amode %#x, this member %#x", k, a[1], amode)
		case a[2] != args[2]:
			return nil, errf(ErrNotSame, op, k, "members 0 and %d passed different file names", k)
		}
	}

	flags := unix.O_CLOEXEC
	switch {
	case amode&ModeRdonly != 0:
		flags |= unix.O_RDONLY
	case amode&ModeWronly != 0:
		flags |= unix.O_WRONLY
	default:
		flags |= unix.O_RDWR
	}
	f := &File{c: c, size: size, rank: me, name: name, amode: amode, fd: -1, view: byteView, span: span}

	// 2. Member 0 opens (and perhaps creates) the file and the shared
	// memory, and tells the others: its error code, the memory's
	// descriptor and size (across nodes: the pid and tag that name the
	// shared pointer's file), the aggregators and their domain.
	var from0 [8]int64
	var created bool
	var own error
	if me == 0 {
		h := hints(info, size)
		round := int64(max(h.aggs[0], h.aggs[1])) * h.domain
		total := int64(shm.PageSize) + 2*round + 2*round/8
		from0 = [8]int64{0, -1, total, int64(h.aggs[0]), int64(h.aggs[1]), h.domain, int64(h.cb[0]), int64(h.cb[1])}
		f.fd, created, own = openFile(op, name, flags, amode)
		if own == nil && span {
			var start int64
			if amode&ModeAppend != 0 {
				start, _ = f.fileSize() // the shared pointer at the end of the file
			}
			// A directory this rank may not write to leaves the file
			// without a shared pointer: its calls return the error.
			var perr error
			if f.ptr, from0[1], from0[2], perr = createPtrFile(op, name, start); perr != nil {
				f.ptrErr = perr
				from0[1], from0[2] = -1, codeOf(perr)
			}
		} else if own == nil {
			if m, err := shm.NewMem(int(total)); err != nil {
				own = errf(errnoClass(err), op, -1, "the file's shared memory (%d bytes): %v", total, err)
			} else {
				f.mem = m
				from0[1] = int64(m.FD())
				if amode&ModeAppend != 0 {
					// The shared pointer at the end of the file, before
					// any other member maps the memory.
					end, _ := f.fileSize()
					(*header)(unsafe.Pointer(unsafe.SliceData(m.B))).shared.Store(uint64(end))
				}
			}
		}
		from0[0] = codeOf(own)
	}
	if err := coll.Bcast(c, from0[:], 0); err != nil {
		f.release(created)
		return nil, relabel(err, op)
	}
	if from0[0] != 0 {
		f.release(created)
		if own != nil {
			return nil, own
		}
		return nil, memberErr(op, 0, from0[0], "could not open "+name)
	}
	f.aggs, f.domain = [2]int{int(from0[3]), int(from0[4])}, from0[5]
	f.cb = [2]int{int(from0[6]), int(from0[7])}
	f.round = int64(max(f.aggs[0], f.aggs[1])) * f.domain
	// 3. The others open the file and map the memory; all agree that
	// everyone did.
	if me != 0 {
		f.fd, _, own = openFile(op, name, flags, 0)
		if own == nil && span && from0[1] < 0 {
			f.ptrErr = memberErr(op, 0, from0[2], "no file for the shared file pointer beside "+name)
		} else if own == nil && span {
			f.ptr, own = openPtrFile(op, name, from0[1], from0[2])
		} else if own == nil {
			m, err := shm.OpenMem(ext.Pid(c, 0), int(from0[1]), int(from0[2]))
			if err != nil {
				own = errf(errnoClass(err), op, -1, "mapping the file's shared memory: %v", err)
			} else {
				f.mem = m
			}
		}
	}
	if span {
		if err := f.nodeMem(op, own == nil); own == nil {
			own = err
		}
	}
	codes := make([]int64, size)
	err := coll.Allgather(c, []int64{codeOf(own)}, codes)
	if err == nil && own == nil {
		for k, code := range codes {
			if code != 0 {
				err = memberErr(op, k, code, "could not open "+name)
				break
			}
		}
	}
	if err != nil || own != nil {
		f.release(created)
		if own != nil {
			return nil, own
		}
		return nil, relabel(err, op)
	}
	f.ptr.unlink()  // across nodes: every member has it open, the descriptors keep it
	f.mem.CloseFD() // every member has mapped it: the mappings keep it alive
	f.layout()
	if amode&ModeAppend != 0 {
		// The individual pointer at the end of the file (an error of
		// fstat here leaves it at 0: the file works anyway).
		f.pos, _ = f.fileSize()
	}
	return f, nil
}

// openFile opens name with flags. With ModeCreate it creates the file
// first (O_EXCL), so that it knows whether it did: created says so.
func openFile(op, name string, flags, amode int) (fd int, created bool, err error) {
	if amode&ModeCreate != 0 {
		fd, err = openRetry(name, flags|unix.O_CREAT|unix.O_EXCL, 0o666)
		if err == nil {
			created = true
		} else if err == unix.EEXIST && amode&ModeExcl == 0 {
			fd, err = openRetry(name, flags, 0)
		}
	} else {
		fd, err = openRetry(name, flags, 0)
	}
	if err != nil {
		return -1, false, ioErr(op, "open", name, err)
	}
	var st unix.Stat_t
	if serr := unix.Fstat(fd, &st); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		unix.Close(fd)
		return -1, false, errf(ErrBadFile, op, -1, "%s is a directory", name)
	}
	return fd, created, nil
}

// Collective buffering modes (the hints romio_cb_read and
// romio_cb_write, as ROMIO names them).
const (
	cbAuto    = iota // "automatic": aggregate, but a domain of one member's contiguous data is its own (plan.owner)
	cbEnable         // "enable": everything through the aggregators
	cbDisable        // "disable": every member reads and writes its own data
)

// fileHints are the collective buffering hints of a file.
type fileHints struct {
	aggs   [2]int // aggregators of reads and of writes
	domain int64  // bytes per aggregator per round
	cb     [2]int // modes of reads and of writes
}

func openRetry(name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(name, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// hints reads the collective buffering hints of info. A write has one
// aggregator unless cb_nodes says otherwise, as in ROMIO (one per node):
// Linux file systems serialize buffered writes to a file (its inode
// lock), so more writers only contend, while the members' copying into
// the staging buffer already overlaps the aggregator's writing
// (collective.go). Reads run in parallel in the kernel: they get one
// aggregator per CPU (at most maxAggregators).
func hints(info *ranks.Info, members int) fileHints {
	h := fileHints{aggs: [2]int{min(members, onlineCPUs(), maxAggregators), 1}, domain: defaultDomain}
	if info == nil {
		return h
	}
	if v, ok, _ := info.Get("cb_nodes"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			h.aggs = [2]int{min(n, members), min(n, members)}
		}
	}
	if v, ok, _ := info.Get("cb_buffer_size"); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 && n <= 1<<30 {
			h.domain = (n + shm.PageSize - 1) &^ (shm.PageSize - 1)
		}
	}
	for i, key := range []string{"romio_cb_read", "romio_cb_write"} {
		if v, ok, _ := info.Get(key); ok {
			switch strings.TrimSpace(v) {
			case "automatic":
				h.cb[i] = cbAuto
			case "enable":
				h.cb[i] = cbEnable
			case "disable":
				h.cb[i] = cbDisable
			}
		}
	}
	return h
}

// onlineCPUs is the number of CPUs of the node (not of this process's
// affinity mask, which shmrun narrows to one CPU per rank).
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		if !isRange {
			hi = lo
		}
		z, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	return max(n, 1)
}

// layout finds the header, staging buffers and bitmaps in the memory.
func (f *File) layout() {
	b := f.mem.B
	f.hdr = (*header)(unsafe.Pointer(unsafe.SliceData(b)))
	round := f.round
	at := int64(shm.PageSize)
	for i := range 2 {
		f.stage[i] = b[at : at+round : at+round]
		at += round
	}
	for i := range 2 {
		f.bits[i] = unsafe.Slice((*uint64)(unsafe.Pointer(&b[at])), round/64)
		at += round / 8
	}
}

// release frees what a failed Open got; removed says whether to remove
// the file it created.
func (f *File) release(remove bool) {
	if f.fd >= 0 {
		unix.Close(f.fd)
		f.fd = -1
	}
	if f.mem != nil {
		f.mem.Close()
		f.mem = nil
	}
	f.ptr.unlink()
	f.ptr.close()
	if remove {
		unix.Unlink(f.name)
	}
}

// Close closes the file at every member (MPI_File_close): collective.
// It waits for this rank's nonblocking calls on the file first. With
// ModeDeleteOnClose the file is then deleted. After a failure of a
// member, or a revoke, Close returns ErrProcFailed or ErrRevoked and
// still releases this rank's resources (descriptor, shared memory,
// communicator); whether the other members closed is then unknown, and a
// ModeDeleteOnClose file is deleted by each member that gets here.
func (f *File) Close() error {
	const op = "File.Close"
	if f == nil || !f.closed.CompareAndSwap(false, true) {
		return errf(ErrFile, op, -1, "file closed or nil")
	}
	f.pending.Wait()
	var err error
	f.q.do(func() {
		// No member may leave while another still writes through the
		// staging memory or the shared pointer.
		err = coll.Barrier(f.c)
		if f.amode&ModeDeleteOnClose != 0 {
			if err == nil {
				// Deleted before any member returns.
				err = f.byMember0(op, f.unlink)
			} else {
				f.unlink() // each member that gets here: some may be dead
			}
		}
		if f.revoked() && err == nil {
			err = errf(ranks.ErrRevoked, op, -1, "the file was revoked")
		}
		unix.Close(f.fd)
		f.fd = -1
		if f.mem != nil {
			f.mem.Close()
		}
		f.ptr.close()
		f.mem, f.hdr, f.ptr = nil, nil, nil
		f.stage, f.bits = [2][]byte{}, [2][]uint64{}
		if ferr := f.c.Free(); err == nil && ferr != nil {
			err = ferr
		}
	})
	if err != nil {
		return relabel(err, op)
	}
	return nil
}

func (f *File) unlink() error {
	if err := unix.Unlink(f.name); err != nil && err != unix.ENOENT {
		return ioErr("File.Close", "delete", f.name, err)
	}
	return nil
}

// Delete deletes file name (MPI_File_delete). It is not collective.
// info is ignored.
func Delete(name string, info *ranks.Info) error {
	const op = "File.Delete"
	if name == "" {
		return errf(ErrBadFile, op, -1, "empty file name")
	}
	for {
		err := unix.Unlink(name)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ioErr(op, "delete", name, err)
		}
		return nil
	}
}

// Revoke revokes the file at every member (MPI_File_revoke, the ULFM
// chapter's 15.3.3): it is not collective. From then on, at every
// member, every call on the file that is not local (the data accesses,
// the collective calls, the shared file pointer's) returns ErrRevoked,
// and so do the ones blocked in a collective call on the file now. The
// local calls (GetPosition, Seek, GetSize, GetView, the Get... of modes
// and hints) still work, and Close releases the file. Idempotent.
func (f *File) Revoke() error {
	const op = "File.Revoke"
	if f == nil || f.closed.Load() {
		return errf(ErrFile, op, -1, "file closed or nil")
	}
	f.hdr.revoked.Store(1)
	// Revoking the file's private communicator wakes every member asleep
	// in one of its collectives, which then return ErrRevoked.
	return ext.Revoke(f.c)
}

func (f *File) sync() *rounds { return (*rounds)(unsafe.Add(unsafe.Pointer(f.hdr), 64)) }

func (f *File) revoked() bool {
	if f.hdr == nil {
		return false
	}
	// Across nodes the revoke of the private communicator carries it.
	return f.hdr.revoked.Load() != 0 || f.span && ext.Revoked(f.c)
}

// local is the check of a local call: the file is open.
func (f *File) local(op string) error {
	if f == nil || f.closed.Load() {
		return errf(ErrFile, op, -1, "file closed or nil")
	}
	return nil
}

// usable is the check at the start of every call that is not local: the
// file is open and not revoked.
func (f *File) usable(op string) error {
	if err := f.local(op); err != nil {
		return err
	}
	if f.revoked() {
		return errf(ranks.ErrRevoked, op, -1, "the file was revoked")
	}
	return nil
}

// GetAmode returns the mode the file was opened with.
func (f *File) GetAmode() (int, error) {
	if err := f.local("File.GetAmode"); err != nil {
		return 0, err
	}
	return f.amode, nil
}

// Group returns the group of the members that opened the file
// (MPI_File_get_group): the group to Agree over (with a communicator of
// that group) after a failure, as the ULFM chapter's 15.2.5 advises.
func (f *File) Group() (ranks.Group, error) {
	if err := f.local("File.Group"); err != nil {
		return ranks.Group{}, err
	}
	return f.c.Group()
}

// Info returns the hints in use (MPI_File_get_info): cb_nodes (of
// writes), cb_nodes_read, cb_buffer_size, romio_cb_read and
// romio_cb_write.
func (f *File) Info() (*ranks.Info, error) {
	if err := f.local("File.Info"); err != nil {
		return nil, err
	}
	in := ranks.NewInfo()
	modes := [...]string{cbAuto: "automatic", cbEnable: "enable", cbDisable: "disable"}
	in.Set("cb_nodes", strconv.Itoa(f.aggs[1]))
	in.Set("cb_nodes_read", strconv.Itoa(f.aggs[0]))
	in.Set("romio_cb_read", modes[f.cb[0]])
	in.Set("romio_cb_write", modes[f.cb[1]])
	in.Set("cb_buffer_size", strconv.FormatInt(f.domain, 10))
	return in, nil
}

// GetSize returns the file's size in bytes (MPI_File_get_size).
func (f *File) GetSize() (int64, error) {
	if err := f.local("File.GetSize"); err != nil {
		return 0, err
	}
	n, err := f.fileSize()
	if err != nil {
		return 0, ioErr("File.GetSize", "stat", f.name, err)
	}
	return n, nil
}

func (f *File) fileSize() (int64, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstat(f.fd, &st)
		if err == unix.EINTR {
			continue
		}
		return st.Size, err
	}
}

// canRead and canWrite check the access mode for a data access.
func (f *File) canRead(op string) error {
	if f.amode&ModeWronly != 0 {
		return errf(ErrAccess, op, -1, "the file was opened ModeWronly")
	}
	return nil
}

func (f *File) canWrite(op string) error {
	if f.amode&ModeRdonly != 0 {
		return errf(ErrAccess, op, -1, "the file was opened ModeRdonly")
	}
	return nil
}

// notSequential refuses explicit offsets and the individual file
// pointer on a ModeSequential file.
func (f *File) notSequential(op string) error {
	if f.amode&ModeSequential != 0 {
		return errf(ErrUnsupportedOperation, op, -1, "the file was opened ModeSequential: only the shared file pointer")
	}
	return nil
}
