package ranks

import (
	"errors"
	"fmt"
	"strings"
)

// Error classes. Every error an operation returns matches exactly one of
// them with errors.Is; errors.As with *Error gives the details. (The one
// exception is a context-bounded wait whose context ended first, such as
// Request.WaitContext: its class is the context's error.)
var (
	// ErrProcFailed: a process involved in the operation has failed.
	ErrProcFailed = errors.New("process failed")
	// ErrProcFailedPending: a nonblocking AnySource receive has not been
	// matched and a potential sender has failed; the request stays
	// pending until the failure is acknowledged (Comm.FailureAck).
	ErrProcFailedPending = errors.New("process failed; AnySource receive still pending")
	// ErrRevoked: the communicator has been revoked.
	ErrRevoked = errors.New("communicator revoked")
	// ErrPeerFinalized: the peer finalized, so the operation can never
	// complete (an erroneous program in MPI terms; reported, not hung).
	ErrPeerFinalized = errors.New("peer has finalized")
	// ErrRMASync: a window's RMA call or synchronization out of its
	// order (MPI_ERR_RMA_SYNC): an operation outside an access epoch to
	// its target, a flush or unlock of a target this rank has not locked,
	// an epoch ended that was never started or started twice.
	ErrRMASync = errors.New("RMA synchronization error")

	ErrRank      = errors.New("invalid rank")
	ErrTag       = errors.New("invalid tag")
	ErrCount     = errors.New("invalid count")
	ErrBuffer    = errors.New("invalid buffer")
	ErrType      = errors.New("invalid element type")
	ErrTruncate  = errors.New("message truncated")
	ErrRequest   = errors.New("invalid request")
	ErrComm      = errors.New("invalid communicator")
	ErrWin       = errors.New("invalid window")
	ErrFinalized = errors.New("shmpi already finalized")
	ErrInit      = errors.New("shmpi initialisation failed")
	ErrArg       = errors.New("invalid argument")
	ErrNoMem     = errors.New("out of memory")
	ErrOther     = errors.New("internal error")
	// ErrSpawn: a spawn could not start its processes (MPI_ERR_SPAWN):
	// past the universe, a missing program, no launcher. Nothing was
	// started.
	ErrSpawn = errors.New("could not spawn")
	// ErrUnsupported: the operation exists but cannot be done on this
	// object here (MPI_ERR_UNSUPPORTED_OPERATION): for now, on a
	// communicator that spans nodes, what needs the members' shared
	// memory (creation, Agree, Shrink, Revoke, windows, the collectives
	// coll does not run on messages alone).
	ErrUnsupported = errors.New("operation not supported")
)

// Error is the concrete type of every error the runtime returns.
type Error struct {
	Class  error  // one of the Err* classes above
	Op     string // the operation that failed, e.g. "Recv"
	Rank   int    // the peer in the communicator, or -1
	Failed []int  // for ErrProcFailed: failed ranks of the communicator known here
	Detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("shmpi: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Class.Error())
	if e.Rank >= 0 {
		fmt.Fprintf(&b, " (rank %d)", e.Rank)
	}
	if len(e.Failed) > 0 && !(len(e.Failed) == 1 && e.Failed[0] == e.Rank) {
		fmt.Fprintf(&b, " (failed: %v)", e.Failed)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrProcFailed) and friends work.
func (e *Error) Unwrap() error { return e.Class }

func newErr(class error, op string, rank int, detail string, args ...any) *Error {
	if len(args) > 0 {
		detail = fmt.Sprintf(detail, args...)
	}
	return &Error{Class: class, Op: op, Rank: rank, Detail: detail}
}

// Error classes of info objects and attribute keys (MPI_ERR_INFO,
// MPI_ERR_INFO_KEY, MPI_ERR_INFO_VALUE, MPI_ERR_INFO_NOKEY,
// MPI_ERR_KEYVAL), kept apart from ErrArg so that a C interface can
// return MPI's own codes.
var (
	ErrInfo      = errors.New("invalid info object")
	ErrInfoKey   = errors.New("invalid info key")
	ErrInfoValue = errors.New("invalid info value")
	ErrInfoNoKey = errors.New("info key not set")
	ErrKeyval    = errors.New("invalid attribute key")
)
