//go:build mpi

package node

// The agents' Net over the system MPI: one process per node, started by
// mpirun/prterun/srun. Built only with the build tag mpi and CC=mpicc
// (README.md, "Across nodes"), so that nothing else of shmpi links libmpi.

/*
#include <mpi.h>
#include <stdlib.h>
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#include <mpi-ext.h>
#endif

static MPI_Comm agents = MPI_COMM_NULL;

// ULFM (Open MPI 5's ftmpi extension, MPICH's MPIX_): a dead agent is
// reported as an error of class MPIX_ERR_PROC_FAILED(_PENDING) instead of
// ending the job.
#if defined(OMPI_HAVE_MPI_EXT_FTMPI) || (defined(MPICH) && defined(MPIX_ERR_PROC_FAILED))
#define HAVE_ULFM 1
static int net_is_failure(int rc) {
	int cls = 0;
	MPI_Error_class(rc, &cls);
	return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
}
// net_failed acknowledges the failures known and lists the failed agents.
static int net_failed(int *out, int max) {
	MPI_Group fg, wg;
	int n = 0, i;
	MPIX_Comm_failure_ack(agents);
	if (MPIX_Comm_failure_get_acked(agents, &fg) != MPI_SUCCESS) return -1;
	MPI_Group_size(fg, &n);
	if (n > max) n = max;
	MPI_Comm_group(agents, &wg);
	int *in = malloc(sizeof(int) * (n + 1));
	for (i = 0; i < n; i++) in[i] = i;
	MPI_Group_translate_ranks(fg, n, in, wg, out);
	free(in);
	MPI_Group_free(&fg);
	MPI_Group_free(&wg);
	return n;
}
#else
#define HAVE_ULFM 0
static int net_is_failure(int rc) { return 0; }
static int net_failed(int *out, int max) { return -1; }
#endif
static int net_have_ulfm(void) { return HAVE_ULFM; }

static int net_init(int *rank, int *size) {
	int provided, rc;
#if defined(OPEN_MPI)
	// The agent's loop yields the CPU itself between polls (node/agent.go,
	// idle); the MPI's own yield in every progress call that finds
	// nothing, which Open MPI turns on when processes outnumber cores,
	// only adds switches to it. Unless the user chose otherwise.
	setenv("OMPI_MCA_mpi_yield_when_idle", "0", 0);
#endif
	rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	rc = MPI_Comm_dup(MPI_COMM_WORLD, &agents);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(agents, MPI_ERRORS_RETURN);
	MPI_Comm_rank(agents, rank);
	return MPI_Comm_size(agents, size);
}

static int net_allgather(int v, int *out) {
	return MPI_Allgather(&v, 1, MPI_INT, out, 1, MPI_INT, agents);
}

// net_test and net_poll return their results by value: out-parameters
// in Go memory would be allocated on every call of the agent's loop.
typedef struct { int rc, done; } net_test_res;

static net_test_res net_test(MPI_Request *req) {
	net_test_res r = {0, 0};
	r.rc = MPI_Test(req, &r.done, MPI_STATUS_IGNORE);
	return r;
}

// Frames up to RBUF bytes arrive in one message, into a receive posted
// in advance (a test of a posted receive is what makes the MPI progress
// its transport at once; a probe was 20 times slower here). Longer ones
// (more than longData bytes after the header; RBUF = longData +
// frameHeader) come as their header there, then their bytes with tag 1,
// which the agent receives when it knows where they go (RecvData).
#define RBUF (64 * 1024)
static MPI_Request rreq = MPI_REQUEST_NULL;
static char rbuf[RBUF];

static int net_post(void) {
	if (rreq != MPI_REQUEST_NULL) return MPI_SUCCESS; // still posted (a failure left it pending)
	return MPI_Irecv(rbuf, RBUF, MPI_BYTE, MPI_ANY_SOURCE, 0, agents, &rreq);
}

typedef struct { int rc, found, from, count; } net_poll_res;

static net_poll_res net_poll(void) {
	net_poll_res r = {0, 0, 0, 0};
	MPI_Status st;
	r.rc = MPI_Test(&rreq, &r.found, &st);
	if (r.rc != MPI_SUCCESS || !r.found) return r;
	r.from = st.MPI_SOURCE;
	r.rc = MPI_Get_count(&st, MPI_BYTE, &r.count);
	return r;
}

static char *net_rbuf(void) { return rbuf; }

static int net_isend_tag(void *buf, int n, int to, int tag, MPI_Request *req) {
	return MPI_Isend(buf, n, MPI_BYTE, to, tag, agents, req);
}

static int net_recv(void *buf, int n, int from) {
	return MPI_Recv(buf, n, MPI_BYTE, from, 1, agents, MPI_STATUS_IGNORE);
}

static int net_finalize(void) {
	if (rreq != MPI_REQUEST_NULL) {
		MPI_Cancel(&rreq);
		MPI_Wait(&rreq, MPI_STATUS_IGNORE);
	}
	if (agents != MPI_COMM_NULL) MPI_Comm_free(&agents);
	return MPI_Finalize();
}

static void net_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static int net_errstr(int code, char *buf) {
	int n = 0;
	MPI_Error_string(code, buf, &n);
	return n;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// MPINet is the Net of an agent started by the system MPI's launcher.
// Every call must come from the goroutine that called NewMPINet, locked
// to its thread (MPI_THREAD_FUNNELED).
type MPINet struct {
	rank, size int
	sends      []mpiSend
	pinners    []*runtime.Pinner // of completed sends, for the next ones
	inflight   int               // bytes of sends not yet complete (Backlog)
	gone       []bool            // agents known failed
}

type mpiSend struct {
	req  C.MPI_Request
	pin  *runtime.Pinner // the frame stays where it is until the send completes
	b    []byte          // what is sent, back to bufs when done
	sent func()          // or, if not nil, to call instead: b is lent
}

// errAgentFailed is an MPI error of a ULFM failure class: some agent died.
var errAgentFailed = errors.New("an agent failed")

func mpiErr(op string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	if C.net_is_failure(rc) != 0 {
		return errAgentFailed
	}
	var buf [C.MPI_MAX_ERROR_STRING]C.char
	n := C.net_errstr(rc, &buf[0])
	return fmt.Errorf("node: %s: %s", op, C.GoStringN(&buf[0], n))
}

// NewMPINet initialises the system MPI. The caller's goroutine must be
// locked to its thread (runtime.LockOSThread) and make every later call.
func NewMPINet() (*MPINet, error) {
	var rank, size C.int
	if err := mpiErr("MPI_Init_thread", C.net_init(&rank, &size)); err != nil {
		return nil, err
	}
	if err := mpiErr("MPI_Irecv", C.net_post()); err != nil {
		return nil, err
	}
	return &MPINet{rank: int(rank), size: int(size), gone: make([]bool, int(size))}, nil
}

func (n *MPINet) Rank() int { return n.rank }
func (n *MPINet) Size() int { return n.size }

func (n *MPINet) Allgather(v int) ([]int, error) {
	out := make([]C.int, n.size)
	if err := mpiErr("MPI_Allgather", C.net_allgather(C.int(v), &out[0])); err != nil {
		return nil, err
	}
	vals := make([]int, n.size)
	for i, x := range out {
		vals[i] = int(x)
	}
	return vals, nil
}

func (n *MPINet) Send(to int, header, data []byte, sent func()) error {
	if len(data) <= longData {
		b := bufs.get(len(header) + len(data))
		copy(b[copy(b, header):], data)
		bufs.put(header)
		giveBack(data, sent)
		return n.isend(to, 0, b, nil)
	}
	// The header alone, marked, then the bytes, from where they are.
	header[1] = 1
	if err := n.isend(to, 0, header, nil); err != nil {
		giveBack(data, sent)
		return err
	}
	return n.isend(to, 1, data, sent)
}

// isend starts sending b, which goes back to bufs when done, or to its
// lender (sent, if not nil).
func (n *MPINet) isend(to, tag int, b []byte, sent func()) error {
	if n.gone[to] {
		giveBack(b, sent)
		return nil // its node is gone, and what was for it with it
	}
	n.sends = append(n.sends, mpiSend{pin: n.pinner(), b: b, sent: sent})
	s := &n.sends[len(n.sends)-1]
	p := unsafe.Pointer(unsafe.SliceData(b))
	s.pin.Pin(p)
	err := mpiErr("MPI_Isend", C.net_isend_tag(p, C.int(len(b)), C.int(to), C.int(tag), &s.req))
	if err != nil {
		n.unpin(s.pin)
		giveBack(b, sent)
		n.sends = n.sends[:len(n.sends)-1]
		if err == errAgentFailed {
			return nil // Recv reports it
		}
	}
	if err == nil {
		n.inflight += len(b)
	}
	return err
}

func (n *MPINet) Backlog() int { return n.inflight }

// pinner returns a Pinner for a send: one that a completed send left, or
// a new one. Reused, they allocate nothing once warm (a new Pinner a send
// was one allocation a message).
func (n *MPINet) pinner() *runtime.Pinner {
	if k := len(n.pinners); k > 0 {
		p := n.pinners[k-1]
		n.pinners = n.pinners[:k-1]
		return p
	}
	return new(runtime.Pinner)
}

func (n *MPINet) unpin(p *runtime.Pinner) {
	p.Unpin()
	n.pinners = append(n.pinners, p)
}

// reap completes the sends that are done, in order; a send to an agent
// that failed is done.
func (n *MPINet) reap() error {
	k := 0
	for k < len(n.sends) {
		r := C.net_test(&n.sends[k].req)
		if err := mpiErr("MPI_Test", r.rc); err != nil && err != errAgentFailed {
			return err
		} else if err == nil && r.done == 0 {
			break
		}
		n.unpin(n.sends[k].pin)
		n.inflight -= len(n.sends[k].b)
		giveBack(n.sends[k].b, n.sends[k].sent)
		k++
	}
	if k > 0 {
		m := copy(n.sends, n.sends[k:])
		clear(n.sends[m:])
		n.sends = n.sends[:m]
	}
	return nil
}

// failures returns the agents newly known failed, as a *NodesFailed.
func (n *MPINet) failures() error {
	out := make([]C.int, n.size)
	k := C.net_failed(&out[0], C.int(n.size))
	if k < 0 {
		return errors.New("node: an agent failed, and this MPI has no ULFM to go on without it")
	}
	var nf NodesFailed
	for _, a := range out[:k] {
		if !n.gone[a] {
			n.gone[a] = true
			nf.Agents = append(nf.Agents, int(a))
		}
	}
	if len(nf.Agents) == 0 {
		return nil
	}
	return &nf
}

func (n *MPINet) Recv() (int, []byte, bool, error) {
	if err := n.reap(); err != nil {
		return 0, nil, false, err
	}
	r := C.net_poll()
	found, from, count := r.found, r.from, r.count
	err := mpiErr("MPI_Test", r.rc)
	if err == errAgentFailed {
		err = n.failures()
		if perr := mpiErr("MPI_Irecv", C.net_post()); perr != nil && err == nil {
			err = perr
		}
		return 0, nil, false, err
	}
	if err != nil || found == 0 {
		return 0, nil, false, err
	}
	b := bufs.get(int(count))
	copy(b, unsafe.Slice((*byte)(unsafe.Pointer(C.net_rbuf())), int(count)))
	if err := mpiErr("MPI_Irecv", C.net_post()); err != nil {
		return 0, nil, false, err
	}
	return int(from), b, true, nil
}

// RecvData receives a long frame's bytes, which follow its header with
// tag 1 (Send).
func (n *MPINet) RecvData(from int, dst []byte) error {
	if n.gone[from] {
		return errDataLost
	}
	err := mpiErr("MPI_Recv", C.net_recv(unsafe.Pointer(unsafe.SliceData(dst)), C.int(len(dst)), C.int(from)))
	if err == errAgentFailed {
		if err = n.failures(); err == nil {
			err = errDataLost
		}
	}
	return err
}

// ULFM reports whether the MPI tolerates an agent's death (then Recv
// returns *NodesFailed), rather than ending the job.
func (n *MPINet) ULFM() bool { return C.net_have_ulfm() != 0 }

func (n *MPINet) Idle() { n.reap() }

// Close waits for the sends in flight and finalizes the MPI.
func (n *MPINet) Close() error {
	for len(n.sends) > 0 {
		if err := n.reap(); err != nil {
			return err
		}
	}
	return mpiErr("MPI_Finalize", C.net_finalize())
}

// Abort ends every agent of the job (MPI_Abort).
func (n *MPINet) Abort(code int) { C.net_abort(C.int(code)) }
