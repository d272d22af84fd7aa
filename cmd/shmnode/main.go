//go:build mpi

// Command shmnode is the node agent of a shmpi world that spans nodes
// (package node, docs/nodes.md). The cluster's launcher starts one per
// node; each starts its node's ranks and joins them into one world:
//
//	mpirun --map-by ppr:1:node shmnode -n 8 ./app args...
//	srun --ntasks-per-node=1 shmnode -n 8 ./app args...
//
// It is built only with the build tag mpi and the system MPI's compiler
// wrapper as cgo's compiler (README.md, "Across nodes", has the command;
// node/test-mpi.sh builds it so).
//
// Without --ft, the first failure of a rank anywhere ends the job on
// every node, and shmnode exits non-zero. With --ft the survivors are
// told (ErrProcFailed naming the world rank) and go on. A rank's
// Comm.Abort ends every node's ranks.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shmpi/shmpi/internal/keeper"
	"github.com/shmpi/shmpi/internal/lineout"
	"github.com/shmpi/shmpi/internal/sysmon"
	"github.com/shmpi/shmpi/node"
	"github.com/shmpi/shmpi/ranks/launch"
)

func init() { runtime.LockOSThread() } // MPI_THREAD_FUNNELED: main keeps the thread

func main() {
	fs := flag.NewFlagSet("shmnode", flag.ContinueOnError)
	n := fs.Int("n", 1, "ranks on this node")
	ft := fs.Bool("ft", false, "tolerate failures: report them to the survivors instead of ending the job")
	bind := fs.Bool("bind", false, "bind each rank to a CPU, as shmrun does")
	timeout := fs.Duration("timeout", 0, "end the job after this long, saying which rank is stuck where")
	spin := fs.Duration("spin", node.DefaultIdleSpin, "how long the agent polls after the last message before it sleeps between polls")
	cores := fs.Int("cores", 0, "CPUs this node's ranks and agent run on (default: the machine's; split them when several agents share a machine)")
	tag := fs.Bool("tag-output", false, "prefix every output line with [rank], the world rank (mpirun's own tags the agent)")
	lateSkip := fs.Int("late-skip", node.DefaultLateSkip, "after a long message from another node that could not go straight into its receiver's buffer, how many more for that rank take the agent's buffer first (0: every one waits for its receiver's match)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: shmnode [-n N] [-cores C] [-spin D] [-late-skip K] [-ft] [-bind] [-timeout D] [-tag-output] program [args...]\n\nOne per node, under mpirun/prterun/srun; flags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(64)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		os.Exit(64)
	}
	os.Exit(run(*n, *cores, *lateSkip, *ft, *bind, *tag, *timeout, *spin, fs.Arg(0), fs.Args()[1:]))
}

func run(n, cores, lateSkip int, ft, bind, tag bool, timeout, spin time.Duration, prog string, args []string) int {
	sysmon.Batch() // this process's polling is every cross-node message's path
	// A killed agent's sockets then close before its memory is torn down
	// (internal/keeper): node kills, 4 x 2 ranks, 12 interleaved runs
	// (2026-11-27), the agent's death (its pidfd readable) 3.5 -> 2.7 ms
	// after the kill, the last survivor's allreduce 10.4 -> 8.5 ms.
	keeper.Start()
	// The MPI's start (MPI_Init, the agents' first allgather) comes
	// before the job's deadline runs: if it outlives that deadline, say
	// so rather than hang with nothing said (a CI run of the Open MPI
	// 4.1 suite, 2026-11-28, hung with no output at all).
	var started atomic.Bool
	if timeout > 0 {
		startWatch := time.AfterFunc(timeout, func() {
			if !started.Load() {
				fmt.Fprintf(os.Stderr, "shmnode: the MPI's start (MPI_Init, the agents' first exchange) did not end within %v\n", timeout)
				os.Exit(124)
			}
		})
		defer startWatch.Stop()
	}
	net, err := node.NewMPINet()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmnode:", err)
		return 71
	}
	var tagged []*lineout.Writer
	var outMu sync.Mutex
	output := func(r int) (io.Writer, io.Writer) {
		if !tag {
			return os.Stdout, os.Stderr
		}
		o, e := lineout.New(&outMu, os.Stdout, r), lineout.New(&outMu, os.Stderr, r)
		tagged = append(tagged, o, e)
		return o, e
	}
	res, err := node.Run(node.Config{Net: net, N: n, Path: prog, Args: args, Bind: bind, Cores: cores, FT: ft, Timeout: timeout, IdleSpin: cmp.Or(spin, -1), // -spin 0: never poll
		LateSkip: cmp.Or(lateSkip, -1), // -late-skip 0: every long message late
		Output:   output,
		Started:  func(*launch.Job, int, int) { started.Store(true) }})
	started.Store(true) // Run returned: its own deadline or error speaks
	for _, w := range tagged {
		w.Flush()
	}
	status := 0
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmnode:", err)
		status = 1
		if res != nil && res.Ended == "timeout" {
			status = 124
		}
	}
	if res != nil {
		switch {
		case res.Abort != nil:
			if res.Abort.Rank >= res.First && res.Abort.Rank < res.First+n {
				fmt.Fprintf(os.Stderr, "shmnode: %v\n", res.Abort)
			}
			status = res.Abort.Status()
		default:
			for _, x := range res.Exits {
				if x.Abnormal() {
					fmt.Fprintf(os.Stderr, "shmnode: rank %d %s\n", x.Rank, x.How())
					status = max(status, 1)
				}
			}
			if res.Ended != "" && status == 0 {
				status = 1
			}
		}
	}
	// After an agent's death, Open MPI 5.0.7's MPI_Finalize sometimes
	// never returns (it sleeps in a loop, waiting for the dead); this
	// node's ranks are all reaped by now, so a bounded wait is enough.
	limit := 30 * time.Second
	if res != nil && len(res.NodesFailed) > 0 {
		limit = 2 * time.Second
	}
	watchdog := time.AfterFunc(limit, func() {
		fmt.Fprintf(os.Stderr, "shmnode: MPI_Finalize did not return within %v; exiting without it\n", limit)
		os.Exit(status) // the ranks' verdict: the MPI's end is not theirs
	})
	if err := net.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "shmnode:", err)
		status = max(status, 1)
	}
	watchdog.Stop()
	return status
}
