package ranks

import (
	"math"
	"os"
	"time"

	"github.com/shmpi/shmpi/internal/job"
)

// launched is set by Init when a launcher started this process (it is
// not a singleton): Abort then asks the launcher to end the job.
var launched bool

// abortGrace bounds how long Abort waits for the launcher to kill this
// rank; past it (a launcher that stopped watching, which a correct one
// never does) the rank exits with the code by itself, and the other ranks
// see it fail.
const abortGrace = 10 * time.Second

// Abort ends the whole job, as MPI_Abort: every rank of the job is
// killed, whatever it is doing, and the launcher exits with code (shmrun's
// exit status is code's low 8 bits, as exit(3) takes them, but never 0
// for a code that is not 0; code is taken as a C int, clamped) after
// reporting "rank R called Abort(code)".
// It works on any communicator, freed or revoked ones included: all
// ranks of a shmpi job share one node, and MPI allows an implementation
// to end every process of the job rather than only the communicator's
// members, which is what shmpi does. It works with and without
// failure tolerance (shmrun --ft), and in ranks started by ranktest or by
// a node agent through package ranks/launch. A singleton exits with the
// code.
//
// Abort does not return when it succeeds. The other ranks see no failure
// and no error: they are killed (SIGKILL) within moments, as is this one;
// deferred functions do not run. If several ranks abort, the first call
// decides the code. Abort returns ErrFinalized after Finalize, and
// ErrComm for a nil communicator.
func (c *Comm) Abort(code int) error {
	if c == nil {
		return newErr(ErrComm, "Abort", -1, "nil communicator")
	}
	e := c.e
	// The table rather than e.closed, which needs the engine lock: a
	// goroutine of this rank may hold it, and Abort must not wait for it.
	if e.t.State(e.me) == job.StFinalized {
		return newErr(ErrFinalized, "Abort", -1, "")
	}
	// As a C int, which is what the launcher records.
	code = max(min(code, math.MaxInt32), math.MinInt32)
	if !launched {
		os.Exit(job.AbortStatus(code))
	}
	// The first call is recorded; a later one (another rank's, or another
	// goroutine's) waits for the same end.
	e.t.Abort(e.me, int32(code))
	time.Sleep(abortGrace)
	os.Exit(job.AbortStatus(code))
	return nil
}
