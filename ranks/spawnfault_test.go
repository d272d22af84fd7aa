package ranks_test

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// The kill tests of dynamic processes (ULFM chapter 15.2.3), with real
// SIGKILLs. ranktest checks that every rank not in Dies finalized and
// exited 0, and that no process and no /dev/shm file is left.

// noChildren checks that no rank slot past the first world was started.
func noChildren(r *ranktest.R, np int) {
	for _, f := range r.World.Fates()[np:] {
		if f.State != ranks.StateUnstarted || f.Pid != 0 {
			r.Errorf("slot %d was started: %v", f.Rank, f)
		}
	}
}

// The root dies after taking the slots but before asking the launcher:
// the other parents get ErrProcFailed and nobody is started.
func TestSpawnRootKilledBeforeStart(t *testing.T) {
	const np, nc = 3, 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true, Dies: []int{1},
		Env: []string{"SHMPI_SPAWN_KILL=1@before-request"}}, func(r *ranktest.R) {
		if r.World.Parent() != nil {
			r.Fatalf("a child was started")
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.Spawn(cmd, args, nc, 1)
		if !errors.Is(err, ranks.ErrProcFailed) || ic != nil {
			r.Fatalf("spawn whose root died: %v", err)
		}
		noChildren(r, np)
	})
}

// The root dies once the children run, before it told the other
// parents: they get ErrProcFailed; the children get their parent
// intercommunicator, and a receive from the root on it reports the
// failure rather than hanging.
func TestSpawnRootKilledAfterStart(t *testing.T) {
	const np, nc = 3, 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true, Dies: []int{1},
		Env: []string{"SHMPI_SPAWN_KILL=1@after-start"}}, func(r *ranktest.R) {
		if p := r.World.Parent(); p != nil {
			_, err := ranks.Recv(p, make([]byte, 1), 1, 0)
			if !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("child's receive from the dead root: %v", err)
			}
			// The children's own world is whole.
			r.Check(coll.Barrier(r.Comm), "children's barrier")
			return
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.Spawn(cmd, args, nc, 1)
		if !errors.Is(err, ranks.ErrProcFailed) || ic != nil {
			r.Fatalf("spawn whose root died: %v", err)
		}
	})
}

// A spawned child is killed: the parents see ErrProcFailed from it and
// from a collective over the intercommunicator, and Disconnect returns
// an error instead of hanging, at both sides.
func TestSpawnChildKilled(t *testing.T) {
	const np, nc = 2, 3
	const victim = 1 // child world rank, rank slot np+1
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true, Dies: []int{np + victim}},
		func(r *ranktest.R) {
			if p := r.World.Parent(); p != nil {
				if r.Rank == victim {
					r.Kill()
				}
				// The survivors learn of it in their world.
				err := coll.Barrier(r.Comm)
				if !errors.Is(err, ranks.ErrProcFailed) {
					r.Errorf("children's barrier with a dead child: %v", err)
				}
				// Disconnect from the parents, who are alive: they
				// disconnect too, so this completes.
				if err := p.Disconnect(); err != nil {
					r.Errorf("child's disconnect: %v", err)
				}
				return
			}
			cmd, args := r.SelfCommand()
			ic, err := r.Comm.Spawn(cmd, args, nc, 0)
			r.Check(err, "spawn")
			_, err = ranks.Recv(ic, make([]byte, 1), victim, 0)
			if !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("receive from the dead child: %v", err)
			}
			if err := coll.Barrier(ic); !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("barrier over the intercommunicator: %v", err)
			}
			if err := ic.Disconnect(); !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("disconnect after the failure: %v", err)
			}
		})
}

// A parent has failed and the others know it: the spawn fails at every
// live parent with ErrProcFailed and nobody is started.
func TestSpawnFailedParentKnown(t *testing.T) {
	const np, nc = 3, 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true, Dies: []int{2}},
		func(r *ranktest.R) {
			if r.Rank == 2 {
				r.Kill()
			}
			if _, err := ranks.Recv(r.Comm, make([]byte, 1), 2, 0); !errors.Is(err, ranks.ErrProcFailed) {
				r.Fatalf("receive from the dead parent: %v", err)
			}
			cmd, args := r.SelfCommand()
			ic, err := r.Comm.Spawn(cmd, args, nc, 0)
			if !errors.Is(err, ranks.ErrProcFailed) || ic != nil {
				r.Fatalf("spawn with a failed parent: %v", err)
			}
			noChildren(r, np)
		})
}

// A parent other than the root dies as it enters the spawn. Whether the
// root saw it before starting the children decides the outcome, and the
// live parents agree with the root: either every live parent has ErrProcFailed
// and nobody was started, or every live parent has the intercommunicator and
// the children answer on it.
func TestSpawnParentKilledDuring(t *testing.T) {
	const np, nc = 3, 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Dies: []int{2},
		Env: []string{"SHMPI_SPAWN_KILL=2@member"}}, func(r *ranktest.R) {
		if p := r.World.Parent(); p != nil {
			// Answer the root, then disconnect from it and the other live parent.
			r.Check(ranks.Send(p, []int{r.Rank}, 0, 9), "answer the root")
			if err := p.Disconnect(); !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("disconnect with a dead parent: %v", err)
			}
			return
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.Spawn(cmd, args, nc, 0)
		// Tell the other live parent what happened, over the world.
		outcome := []int{0}
		if err == nil {
			outcome[0] = 1
		} else if !errors.Is(err, ranks.ErrProcFailed) {
			r.Fatalf("spawn: %v", err)
		}
		other := 1 - r.Rank
		got := []int{-1}
		_, serr := ranks.Sendrecv(r.Comm, outcome, other, 3, got, other, 3)
		r.Check(serr, "compare outcomes")
		if got[0] != outcome[0] {
			r.Fatalf("parent %d's spawn %v, the other's outcome %d", r.Rank, err, got[0])
		}
		r.Logf("spawn outcome: %v", err) // which of the two cases ran (go test -v)
		if err != nil {
			noChildren(r, np)
			return
		}
		if r.Rank == 0 {
			for range nc {
				b := []int{-1}
				_, err := ranks.Recv(ic, b, ranks.AnySource, 9)
				r.Check(err, "hear from a child")
			}
		}
		if err := ic.Disconnect(); !errors.Is(err, ranks.ErrProcFailed) {
			// The dead parent is in the local group only; the children
			// it never joined are alive, so this may succeed too.
			r.Check(err, "disconnect")
		}
	})
}

// A spawned job outlives its parents: they disconnect, finalize and
// exit; the children wait for the parents' processes to be gone (their
// pidfds), then still work together.
func TestSpawnOutlivesParent(t *testing.T) {
	const np, nc = 2, 3
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		if p := r.World.Parent(); p != nil {
			r.Check(p.Disconnect(), "child disconnect")
			for _, f := range r.World.Fates()[:np] {
				fd, err := unix.PidfdOpen(f.Pid, 0)
				if err != nil {
					continue // gone already
				}
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				for {
					if _, err := unix.Poll(pfd, -1); err != unix.EINTR {
						break
					}
				}
				unix.Close(fd)
			}
			for _, f := range r.World.Fates()[:np] {
				if f.State != ranks.StateFinalized {
					r.Errorf("parent %d after its exit: %v", f.Rank, f)
				}
			}
			sum := []int{0}
			r.Check(coll.Allreduce(r.Comm, []int{r.Rank}, sum, coll.Sum[int]), "children's allreduce")
			if sum[0] != nc*(nc-1)/2 {
				r.Errorf("sum %d", sum[0])
			}
			return
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.Spawn(cmd, args, nc, 0)
		r.Check(err, "spawn")
		r.Check(ic.Disconnect(), "parent disconnect")
	})
}

// A spawn tree: the first world spawns children, each child world
// spawns grandchildren; every level talks to its parents.
func TestSpawnTree(t *testing.T) {
	const np, nc, ng = 2, 2, 3
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc + ng, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		depth, _ := strconv.Atoi(os.Getenv("SPAWN_TREE_DEPTH"))
		if p := r.World.Parent(); p != nil {
			wantSize := map[int]int{1: nc, 2: ng}[depth]
			if r.Size != wantSize {
				r.Fatalf("depth %d world of %d, want %d", depth, r.Size, wantSize)
			}
			got := []int{0}
			r.Check(coll.Allreduce(p, []int{depth}, got, coll.Sum[int]), "allreduce with the parents")
			if want := (depth - 1) * p.RemoteSize(); got[0] != want {
				r.Errorf("depth %d: parents' sum %d, want %d", depth, got[0], want)
			}
			if depth == 1 {
				cmd, args := r.SelfCommand()
				ic, err := r.Comm.SpawnMultiple([]ranks.SpawnCmd{{Command: cmd, Args: args, MaxProcs: ng,
					Env: []string{"SPAWN_TREE_DEPTH=2"}}}, 0)
				r.Check(err, "spawn the grandchildren")
				got := []int{0}
				r.Check(coll.Allreduce(ic, []int{depth}, got, coll.Sum[int]), "allreduce with the grandchildren")
				if got[0] != 2*ng {
					r.Errorf("grandchildren's sum %d", got[0])
				}
				r.Check(ic.Disconnect(), "disconnect the grandchildren")
			}
			r.Check(p.Disconnect(), "disconnect the parents")
			return
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.SpawnMultiple([]ranks.SpawnCmd{{Command: cmd, Args: args, MaxProcs: nc,
			Env: []string{"SPAWN_TREE_DEPTH=1"}}}, 0)
		r.Check(err, "spawn the children")
		got := []int{0}
		r.Check(coll.Allreduce(ic, []int{0}, got, coll.Sum[int]), "allreduce with the children")
		if got[0] != nc {
			r.Errorf("children's sum %d", got[0])
		}
		r.Check(ic.Disconnect(), "disconnect the children")
	})
}

// SpawnMultiple: one world of two commands' processes, in order, each
// knowing its command (AppNum); and spawns from several roots at once
// (each parent on its own self communicator) share the mailbox.
func TestSpawnMultipleAndConcurrent(t *testing.T) {
	const np = 3
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + 3 + np, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		if p := r.World.Parent(); p != nil {
			if os.Getenv("SPAWN_KIND") == "self" {
				if r.Size != 1 || p.RemoteSize() != 1 {
					r.Errorf("self spawn: world %d, remote %d", r.Size, p.RemoteSize())
				}
			} else {
				want := map[int]int{0: 0, 1: 1, 2: 1}[r.Rank]
				if r.Size != 3 || r.World.AppNum() != want || os.Getenv("SPAWN_APP") != strconv.Itoa(want) {
					r.Errorf("rank %d of %d: appnum %d, SPAWN_APP %q", r.Rank, r.Size, r.World.AppNum(), os.Getenv("SPAWN_APP"))
				}
				if v, ok, _ := r.Comm.Attr(ranks.KeyAppNum); !ok || v.(int) != want {
					r.Errorf("KeyAppNum %v %v", v, ok)
				}
			}
			r.Check(ranks.Send(p, []int{r.Rank}, 0, 4), "hello")
			r.Check(p.Disconnect(), "disconnect")
			return
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.SpawnMultiple([]ranks.SpawnCmd{
			{Command: cmd, Args: args, MaxProcs: 1, Env: []string{"SPAWN_APP=0"}},
			{Command: cmd, Args: args, MaxProcs: 2, Env: []string{"SPAWN_APP=1"}},
		}, 2)
		r.Check(err, "SpawnMultiple")
		if r.Rank == 0 {
			for range 3 {
				_, err := ranks.Recv(ic, make([]int, 1), ranks.AnySource, 4)
				r.Check(err, "hello from a child")
			}
		}
		r.Check(ic.Disconnect(), "disconnect")
		self, err := r.World.Self()
		r.Check(err, "self")
		sc, err := self.SpawnMultiple([]ranks.SpawnCmd{{Command: cmd, Args: args, MaxProcs: 1, Env: []string{"SPAWN_KIND=self"}}}, 0)
		r.Check(err, "spawn from self")
		_, err = ranks.Recv(sc, make([]int, 1), 0, 4)
		r.Check(err, "hello from the self-spawned child")
		r.Check(sc.Disconnect(), "disconnect self child")
	})
}

// A spawned program that exits without calling Init (not an MPI
// program) is a failure for its parents: a receive from it returns
// ErrProcFailed rather than hanging.
func TestSpawnNonMPIChild(t *testing.T) {
	const np = 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + 1, Timeout: spawnTimeout, Quiet: true, Dies: []int{np}},
		func(r *ranktest.R) {
			ic, err := r.Comm.Spawn("true", nil, 1, 0)
			r.Check(err, "spawn true")
			if _, err := ranks.Recv(ic, make([]byte, 1), 0, 0); !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("receive from a child that never called Init: %v", err)
			}
			if err := ic.Disconnect(); !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("disconnect: %v", err)
			}
		})
}

// ULFM's recovery on a spawn intercommunicator: a child is killed; the
// parents and the other children see ErrProcFailed, revoke, agree
// (acknowledging the failure) and shrink to an intercommunicator
// without the dead child, on which a barrier and an allreduce work.
func TestSpawnULFMRecovery(t *testing.T) {
	const np, nc = 2, 3
	const victim = 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true, Dies: []int{np + victim}},
		func(r *ranktest.R) {
			ic := r.World.Parent()
			if ic != nil && r.Rank == victim {
				r.Kill()
			}
			if ic == nil {
				cmd, args := r.SelfCommand()
				var err error
				ic, err = r.Comm.Spawn(cmd, args, nc, 0)
				r.Check(err, "spawn")
			}
			if err := coll.Barrier(ic); !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("barrier with a dead child: %v", err)
			}
			r.Check(ulfm.Revoke(ic), "revoke")
			ok, err := ulfm.AgreeBool(ic, true)
			if errors.Is(err, ranks.ErrProcFailed) {
				r.Check(ic.FailureAck(), "ack")
				ok, err = ulfm.AgreeBool(ic, true)
			}
			r.Check(err, "agree")
			if !ok {
				r.Errorf("agree gave false")
			}
			s, err := ulfm.Shrink(ic)
			r.Check(err, "shrink")
			wantRemote := nc - 1
			if r.World.Parent() != nil {
				wantRemote = np
			}
			if !s.IsInter() || s.RemoteSize() != wantRemote {
				r.Fatalf("shrunk: inter %v remote %d, want %d", s.IsInter(), s.RemoteSize(), wantRemote)
			}
			r.Check(coll.Barrier(s), "barrier after shrink")
			sum := []int{0}
			r.Check(coll.Allreduce(s, []int{1}, sum, coll.Sum[int]), "allreduce after shrink")
			if sum[0] != wantRemote {
				r.Errorf("allreduce %d, want %d", sum[0], wantRemote)
			}
			r.Check(s.Disconnect(), "disconnect the shrunk intercommunicator")
			if err := ic.Disconnect(); !errors.Is(err, ranks.ErrRevoked) && !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("disconnect of the revoked intercommunicator: %v", err)
			}
		})
}
