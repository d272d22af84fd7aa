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
	pid, ok := rankPids(prog)[rank]
	if !ok {
		return 0
	}
	st, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces; it ends at the
	// last ')'.
	f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
	var ppid int
	if len(f) > 1 {
		fmt.Sscan(f[1], &ppid)
	}
	return ppid
}

// RanksUp reports whether processes running prog with world ranks 0 to
// n-1 in their environments all exist. A process's keeper
// (internal/keeper) shares its command line, so counting the processes
// that name prog is no measure of how many ranks have started.
func RanksUp(prog string, n int) bool {
	pids := rankPids(prog)
	for r := range n {
		if _, ok := pids[r]; !ok {
			return false
		}
	}
	return true
}

// rankPids maps the world rank in the environment of each process
// running prog to its pid (the first found, for a rank named twice).
func rankPids(prog string) map[int]string {
	out, _ := exec.Command("pgrep", "-f", prog).Output()
	key := []byte(job.EnvRank + "=")
	m := map[int]string{}
	for _, pid := range strings.Fields(string(out)) {
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, key); ok {
				var r int
				if _, err := fmt.Sscan(string(v), &r); err == nil {
					if _, dup := m[r]; !dup {
						m[r] = pid
					}
				}
				break
			}
		}
	}
	return m
}
