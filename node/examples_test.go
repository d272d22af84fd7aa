package node

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The spec's examples of section 15.5 (examples/ft_*) across 3 nodes of
// 3, 3 and 2 ranks, unchanged: without a failure, and with rank 3 (the
// first of node 1) SIGKILLed at every third entry into the runtime up to
// the 90th (SHMPI_KILL, as the examples' own tests on one node). Every
// other rank must exit 0, and the reporter must say ok.
func TestSpecExamplesAcrossNodes(t *testing.T) {
	dir := t.TempDir()
	for _, ex := range []string{"ft_failed_group_agree", "ft_failed_group_shrink", "ft_iterative", "ft_master_worker", "ft_split"} {
		bin := filepath.Join(dir, ex)
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/shmpi/shmpi/examples/"+ex).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", ex, err, out)
		}
		// Every third entry into the engine, from the first calls to
		// past the example's middle: where the kill lands decides which
		// operation it interrupts (a creation, an agreement, a
		// collective), and a fixed few of them missed a hang (a Split
		// across nodes whose node allocator died: ft_split at op 30).
		for op := 0; op <= 90; op += 3 {
			name := ex + "/no-kill"
			var env []string
			if op > 0 {
				name = fmt.Sprintf("%s/kill-3-at-op-%d", ex, op)
				env = []string{fmt.Sprintf("SHMPI_KILL=3@op=%d", op)}
			}
			t.Run(name, func(t *testing.T) {
				nr := runNodes(t, nodesOpts{Counts: []int{3, 3, 2}, Path: bin, FT: true, Env: env})
				var all strings.Builder
				for _, o := range nr.outs {
					all.WriteString(o.String())
				}
				for _, res := range nr.res {
					if res == nil {
						continue
					}
					for _, x := range res.Exits {
						if x.Rank == 3 {
							t.Logf("rank 3 %s", x.How())
						}
						if x.Abnormal() && (x.Rank != 3 || op == 0) {
							t.Errorf("rank %d %s\n%s", x.Rank, x.How(), nr.outs[x.Rank].String())
						}
					}
				}
				if !strings.Contains(all.String(), ": ok\n") || strings.Contains(all.String(), "WRONG") {
					t.Errorf("the reporter did not say ok:\n%s", all.String())
				}
			})
		}
	}
}
