package ranks_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// spawnTimeout bounds every spawn test; past it ranktest says which rank
// slot is blocked where.
const spawnTimeout = 30 * time.Second

// Parents spawn children running the same body: point-to-point both ways
// on the intercommunicator, a Bcast and an Allreduce over it, its Merge,
// and Disconnect; the children's world is their own.
func TestSpawnBasics(t *testing.T) {
	const np, nc = 3, 4
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		if u := r.World.UniverseSize(); u != np+nc {
			r.Errorf("UniverseSize %d, want %d", u, np+nc)
		}
		if v, ok, _ := r.Comm.Attr(ranks.KeyUniverseSize); !ok || v.(int) != np+nc {
			r.Errorf("KeyUniverseSize %v %v", v, ok)
		}
		parent := r.World.Parent()
		var ic *ranks.Comm
		if parent == nil {
			if r.Size != np || r.World.AppNum() != -1 {
				r.Fatalf("parent world of %d, appnum %d", r.Size, r.World.AppNum())
			}
			cmd, args := r.SelfCommand()
			var err error
			ic, err = r.Comm.Spawn(cmd, args, nc, 1)
			r.Check(err, "Spawn")
			if !ic.IsInter() || ic.RemoteSize() != nc || ic.Size() != np || ic.Rank() != r.Rank {
				r.Fatalf("spawn intercomm: inter %v size %d remote %d rank %d", ic.IsInter(), ic.Size(), ic.RemoteSize(), ic.Rank())
			}
			// Every parent sends to child (rank % nc) and hears back.
			r.Check(ranks.Send(ic, []int{r.Rank}, r.Rank%nc, 5), "send to child")
			b := []int{-1}
			_, err = ranks.Recv(ic, b, r.Rank%nc, 6)
			r.Check(err, "recv from child")
			if b[0] != 100+r.Rank {
				r.Errorf("child answered %d", b[0])
			}
			// Bcast from parent 0 to the children.
			root := ranks.ProcNull
			if r.Rank == 0 {
				root = ranks.Root
			}
			r.Check(coll.Bcast(ic, []int{42}, root), "bcast")
		} else {
			ic = parent
			if r.Size != nc || r.World.AppNum() != 0 || ic.RemoteSize() != np || ic.Size() != nc || ic.Rank() != r.Rank {
				r.Fatalf("child world %d rank %d appnum %d; parent size %d remote %d", r.Size, r.Rank, r.World.AppNum(), ic.Size(), ic.RemoteSize())
			}
			// The children's world works on its own.
			sum := []int{0}
			r.Check(coll.Allreduce(r.Comm, []int{1}, sum, coll.Sum[int]), "child world allreduce")
			if sum[0] != nc {
				r.Errorf("child world sum %d", sum[0])
			}
			for p := range np {
				if p%nc != r.Rank {
					continue
				}
				b := []int{-1}
				_, err := ranks.Recv(ic, b, p, 5)
				r.Check(err, "recv from parent")
				r.Check(ranks.Send(ic, []int{100 + b[0]}, p, 6), "answer parent")
			}
			b := []int{0}
			r.Check(coll.Bcast(ic, b, 0), "bcast")
			if b[0] != 42 {
				r.Errorf("bcast gave %d", b[0])
			}
		}
		// Allreduce over the intercommunicator: each side gets the other's sum.
		got := []int{0}
		r.Check(coll.Allreduce(ic, []int{1}, got, coll.Sum[int]), "inter allreduce")
		want := nc
		if parent != nil {
			want = np
		}
		if got[0] != want {
			r.Errorf("inter allreduce %d, want %d", got[0], want)
		}
		// Merge: parents low, children high.
		m, err := ic.IntercommMerge(parent != nil)
		r.Check(err, "merge")
		wantRank := r.Rank
		if parent != nil {
			wantRank = np + r.Rank
		}
		if m.Size() != np+nc || m.Rank() != wantRank {
			r.Errorf("merged size %d rank %d, want %d %d", m.Size(), m.Rank(), np+nc, wantRank)
		}
		r.Check(coll.Barrier(m), "merged barrier")
		r.Check(m.Free(), "free merged")
		r.Check(ic.Disconnect(), "disconnect")
	})
}

// A spawn past the universe returns ErrSpawn at every parent and starts
// nothing; a spawn that fits afterwards works.
func TestSpawnPastUniverse(t *testing.T) {
	const np = 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + 2, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		if p := r.World.Parent(); p != nil {
			r.Check(p.Disconnect(), "child disconnect")
			return
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.Spawn(cmd, args, 3, 0)
		if !errors.Is(err, ranks.ErrSpawn) || ic != nil {
			r.Fatalf("spawn of 3 in 2 free slots: %v", err)
		}
		for _, f := range r.World.Fates()[np:] {
			if f.State != ranks.StateUnstarted || f.Pid != 0 {
				r.Errorf("slot %d after a refused spawn: %v", f.Rank, f)
			}
		}
		// A missing program: ErrSpawn too.
		if _, err := r.Comm.Spawn("/nonexistent/shmpi-prog", nil, 1, 1); !errors.Is(err, ranks.ErrSpawn) {
			r.Errorf("spawn of a missing program: %v", err)
		}
		ic, err = r.Comm.Spawn(cmd, args, 2, 0)
		r.Check(err, "spawn of 2 in 2 free slots")
		r.Check(ic.Disconnect(), "disconnect")
	})
}

// Children that finalize without calling Disconnect have disconnected
// (MPI_Finalize ends their connections): the parents' Disconnect
// returns nil, not an error (ulfm-testing's stress/connect_accept
// relies on it).
func TestDisconnectFromFinalizedChildren(t *testing.T) {
	const np, nc = 2, 2
	ranktest.RunOpts(t, ranktest.Options{N: np, Universe: np + nc, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		if r.World.Parent() != nil {
			return // finalize at once, without Disconnect
		}
		cmd, args := r.SelfCommand()
		ic, err := r.Comm.Spawn(cmd, args, nc, 0)
		r.Check(err, "Spawn")
		if err := ic.Disconnect(); err != nil {
			r.Errorf("Disconnect from children that finalized: %v, want nil", err)
		}
	})
}

// Spawning and disconnecting leaves no descriptor open in the parent
// (five spawns of a child that disconnects at once, its descriptors
// counted before and after) nor in the launcher once the job is over.
func TestSpawnLeavesNoDescriptors(t *testing.T) {
	const spawns = 5
	// The launcher is this process: it must close what it opened for
	// the spawned ranks (their pipes, pidfds) once the job is over.
	launcherFDs := func() int {
		d, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(d)
	}
	launcherBefore := launcherFDs()
	defer func() {
		if after := launcherFDs(); after != launcherBefore {
			t.Errorf("the launcher's open descriptors: %d before the job, %d after", launcherBefore, after)
		}
	}()
	ranktest.RunOpts(t, ranktest.Options{N: 1, Universe: 1 + spawns, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		if p := r.World.Parent(); p != nil {
			r.Check(p.Disconnect(), "child Disconnect")
			return
		}
		count := func() int {
			d, err := os.ReadDir("/proc/self/fd")
			r.Check(err, "read /proc/self/fd")
			return len(d)
		}
		cmd, args := r.SelfCommand()
		// The first spawn may open what the process keeps for good
		// (the runtime's netpoller, a port table): count after it.
		ic, err := r.Comm.Spawn(cmd, args, 1, 0)
		r.Check(err, "Spawn")
		r.Check(ic.Disconnect(), "Disconnect")
		before := count()
		for range spawns - 1 {
			ic, err := r.Comm.Spawn(cmd, args, 1, 0)
			r.Check(err, "Spawn")
			r.Check(ic.Disconnect(), "Disconnect")
		}
		if after := count(); after != before {
			r.Errorf("open descriptors: %d before %d spawns, %d after", before, spawns-1, after)
		}
	})
}
