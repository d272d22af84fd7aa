// Package procs finds a job's processes from outside the job, for tests
// and benchmarks that kill or watch them (a node's agent, say).
package procs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/shmpi/shmpi/internal/job"
)

// ParentOfRank is the pid of the parent (under a node agent, the agent)
// of the process running prog whose environment gives it world rank
// rank, or 0 if there is none.
func ParentOfRank(prog string, rank int) int {
	out, _ := exec.Command("pgrep", "-f", prog).Output()
	want := []byte(fmt.Sprintf("%s=%d\x00", job.EnvRank, rank))
	for _, pid := range strings.Fields(string(out)) {
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil || !bytes.HasPrefix(env, want) && !bytes.Contains(env, append([]byte{0}, want...)) {
			continue
		}
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; it ends at
		// the last ')'.
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		var ppid int
		if len(f) > 1 {
			fmt.Sscan(f[1], &ppid)
		}
		return ppid
	}
	return 0
}

// RanksUp reports whether processes running prog with world ranks 0 to
// n-1 in their environments all exist. A process's keeper
// (internal/keeper) shares its command line, so counting the processes
// that name prog is no measure of how many ranks have started.
func RanksUp(prog string, n int) bool {
	out, _ := exec.Command("pgrep", "-f", prog).Output()
	seen := make([]bool, n)
	k := 0
	for _, pid := range strings.Fields(string(out)) {
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil {
			continue
		}
		for r := range n {
			want := []byte(fmt.Sprintf("%s=%d\x00", job.EnvRank, r))
			if !seen[r] && (bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
				seen[r] = true
				k++
			}
		}
	}
	return k == n
}
