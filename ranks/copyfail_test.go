package ranks_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// A sender SIGKILLed from outside while its large message is being copied
// (process_vm_readv) gives the receiver ErrProcFailed, never the kernel's
// "no such process": the kernel drops a dying process's memory before it
// marks its liveness word. The failure is then known, so a later send to
// the dead rank fails too. Rank 2 streams 4 MiB messages to rank 0; rank 1
// kills it once rank 0 has received a few, while the next is in flight.
func TestSenderKilledDuringCopy(t *testing.T) {
	const size = 4 << 20
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{2}, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		switch r.Rank {
		case 2:
			b := make([]byte, size)
			for {
				if err := ranks.Send(c, b, 0, 1); err != nil {
					r.Fatalf("send: %v", err)
				}
			}
		case 1:
			_, err := ranks.Recv(c, make([]byte, 1), 0, 2)
			r.Check(err, "wait for rank 0")
			pid := r.World.Fates()[2].Pid
			if pid <= 0 { // kill(0 or -1) would reach the test runner
				r.Fatalf("rank 2's pid is %d", pid)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		case 0:
			b := make([]byte, size)
			for i := 0; ; i++ {
				if i == 3 {
					r.Check(ranks.Send(c, []byte{1}, 1, 2), "tell rank 1")
				}
				q, err := ranks.Irecv(c, b, 2, 1)
				r.Check(err, "irecv")
				if _, err = q.Wait(); err != nil {
					if !errors.Is(err, ranks.ErrProcFailed) {
						r.Errorf("receive %d from the killed sender: %v, want ErrProcFailed", i, err)
					}
					break
				}
			}
			if err := ranks.Send(c, make([]byte, size), 2, 3); !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("send to the dead rank after its failure was raised: %v, want ErrProcFailed", err)
			}
		}
	})
}
