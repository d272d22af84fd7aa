package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// A large message to a rank of another node arrives while its sender
// computes outside any call of ours: the sender's agent, which leaves the
// copy to a sender that is in a call, copies it itself once the sender
// has stopped moving pieces (ranks.patience).
func TestLargeWhileSenderComputesAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "large-while-computing", Env: []string{"TMPDIR=" + t.TempDir()}}).check(t)
}

func init() {
	bodies["large-while-computing"] = func(w *ranks.World, c *ranks.Comm) error {
		dir, err := sharedDir(c)
		if err != nil {
			return err
		}
		marker := filepath.Join(dir, "arrived")
		const n = 4 << 20
		switch c.Rank() {
		case 0:
			q, err := ranks.Isend(c, pattern(0, 2, 9, n), 2, 9)
			if err != nil {
				return err
			}
			// Compute, never calling us, until the receiver says it has it.
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(marker); err == nil {
					break
				} else if !errors.Is(err, os.ErrNotExist) {
					return err
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("rank 2 did not get the %d bytes while this rank computed", n)
				}
			}
			if _, err := q.Wait(); err != nil {
				return err
			}
		case 2:
			got := make([]byte, n)
			if _, err := ranks.Recv(c, got, 0, 9); err != nil {
				return err
			}
			if !bytes.Equal(got, pattern(0, 2, 9, n)) {
				return fmt.Errorf("the %d bytes differ", n)
			}
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				return err
			}
		}
		return coll.Barrier(c)
	}
}
