package job

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/shm"
)

// The environment protocol: a launcher makes a child process rank r of a
// job by passing it the segment as an inherited descriptor and these
// variables (RankEnv); the rank's Init reads them (Attach) and removes
// them, so that a program the rank starts is not taken for a rank.
const (
	EnvFD   = "SHMPI_FD"   // descriptor number of the inherited segment
	EnvJob  = "SHMPI_JOB"  // the job id, hex, checked against the segment
	EnvRank = "SHMPI_RANK" // this process's rank
	// EnvFT: "0" when the launcher ends the job at the first failure
	// (shmrun without --ft), "1" otherwise; World.FT reports it.
	EnvFT = "SHMPI_FT"
)

// Tuning variables, read by ranks and launchers (documented in docs/guide.md#tuning-variables).
const (
	// EnvSpin: "0" never spins before sleeping; otherwise the spin budget
	// in microseconds (default 20) when ranks do not outnumber cores. It
	// is checked every 256 polling rounds (ranks' blockOn), so an idle
	// wait polls longer: about 0.4 ms where a PAUSE takes 25 ns.
	EnvSpin = "SHMPI_SPIN"
	// EnvYields: the sched_yield calls a collective wait makes before it
	// sleeps when ranks outnumber cores (default: max(16, 2 × ranks per
	// core); "0" sleeps at once).
	EnvYields = "SHMPI_YIELDS"
	// EnvP2PYields: the sched_yield calls any other wait (a receive, a
	// Wait on requests) makes before it sleeps when ranks outnumber cores
	// (default 8; "0" sleeps at once).
	EnvP2PYields = "SHMPI_P2P_YIELDS"
	// EnvSleepTimeout: the bound of every sleep of a waiting rank in
	// milliseconds (default 100), after which it checks its peers'
	// liveness itself. Tests of lost wake-ups make it long, so that only
	// a missed wake (never a slow machine) can end a sleep by timeout.
	EnvSleepTimeout = "SHMPI_SLEEP_TIMEOUT_MS"
	// EnvNoCMA: "1" forbids process_vm_readv, forcing the pipelined copy
	// through the segment for large messages (for tests and for hosts
	// where ptrace_scope forbids it).
	EnvNoCMA = "SHMPI_NO_CMA"
	// EnvEagerMax: the largest message sent eagerly through a chunk (at
	// most the segment's chunk size); larger ones use the rendezvous.
	EnvEagerMax = "SHMPI_EAGER_MAX"
	// EnvChunkSize: read by launchers, the eager chunk size of the segment
	// they create (a multiple of 4096).
	EnvChunkSize = "SHMPI_CHUNK_SIZE"
	// EnvChunkCount: read by launchers, the number of chunks per rank.
	EnvChunkCount = "SHMPI_CHUNK_COUNT"
	// EnvFenceSends: "1" makes this rank fence between publishing a
	// message and reading the receiver's doorbell even where the
	// kernel's global membarrier makes that fence unnecessary (to
	// measure what it costs).
	EnvFenceSends = "SHMPI_FENCE_SENDS"
	// EnvKill: fault injection, read by every rank at Init: a comma-
	// separated list of RANK@DURATION (SIGKILL that long after Init) and
	// RANK@op=N (SIGKILL at the N-th entry into the engine, that is
	// inside the rank's N-th shmpi call, counting from 1; a call that
	// waits counts once, a collective once per step).
	EnvKill = "SHMPI_KILL"
	// EnvConnectTimeout: how long a Connect's root waits for the port's
	// owner to accept, in seconds (default 180, as MPICH's; "0" waits
	// for ever), before it gives up with ErrPort (MPI_ERR_PORT). A
	// Connect's "timeout" info key overrides it.
	EnvConnectTimeout = "SHMPI_CONNECT_TIMEOUT"
	// EnvEvacuate: "0" leaves the ranks that share a dead rank's CPU
	// there while the kernel tears the dead process down (to measure
	// what moving them saves; ranks/evacuate.go).
	EnvEvacuate = "SHMPI_EVACUATE"
)

// RankEnv returns the environment entries that make a child process rank
// r of the job whose segment the child inherits as descriptor fd; ft says
// whether the job tolerates failures.
func RankEnv(seg *shm.Segment, r, fd int, ft bool) []string {
	f := "0"
	if ft {
		f = "1"
	}
	return []string{
		EnvFD + "=" + strconv.Itoa(fd),
		EnvJob + "=" + strconv.FormatUint(seg.JobID(), 16),
		EnvRank + "=" + strconv.Itoa(r),
		EnvFT + "=" + f,
	}
}

// IsRank reports whether this process was started as a rank of a job (a
// launcher set EnvFD), as opposed to a singleton.
func IsRank() bool { return os.Getenv(EnvFD) != "" }

// Attach attaches this process to the job its environment names, and
// removes the protocol's variables from the environment. ft is false only
// when the launcher said failures end the job.
func Attach() (seg *shm.Segment, rank int, ft bool, err error) {
	fd, err1 := strconv.Atoi(os.Getenv(EnvFD))
	jobID, err2 := strconv.ParseUint(os.Getenv(EnvJob), 16, 64)
	rank, err3 := strconv.Atoi(os.Getenv(EnvRank))
	if err1 != nil || err2 != nil || err3 != nil || fd < 0 {
		return nil, 0, false, fmt.Errorf("malformed %s/%s/%s environment", EnvFD, EnvJob, EnvRank)
	}
	ft = os.Getenv(EnvFT) != "0"
	// A program this rank starts must not think it is a rank of the job.
	for _, k := range []string{EnvFD, EnvJob, EnvRank, EnvFT} {
		os.Unsetenv(k)
	}
	unix.CloseOnExec(fd)
	seg, err = shm.AttachFD(fd, jobID)
	if err != nil {
		return nil, 0, false, err
	}
	if n := seg.Ranks(); rank < 0 || rank >= n {
		seg.Close()
		return nil, 0, false, fmt.Errorf("rank %d outside a job of %d", rank, n)
	}
	return seg, rank, ft, nil
}
