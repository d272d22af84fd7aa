// Command agent_teardown prints, as wall-clock nanoseconds, when the node
// agent of a rank has ended and the kernel has torn its process down
// (its pidfd becomes readable): the point before which no MPI can report
// the death of that node. benchmarks/nodes_recovery.sh starts it beside
// a job whose rank kills its agent.
//
//	agent_teardown PROG RANK
//
// It waits for a process running PROG whose environment has
// SHMPI_RANK=RANK, takes its parent (the agent), and waits on that
// process's pidfd.
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: agent_teardown PROG RANK")
	}
	prog, rank := os.Args[1], os.Args[2]
	agent := 0
	deadline := time.Now().Add(60 * time.Second)
	for agent == 0 {
		if time.Now().After(deadline) {
			log.Fatalf("no process of %s with rank %s", prog, rank)
		}
		agent = parentOf(prog, rank)
		time.Sleep(time.Millisecond) // polling for a process to appear
	}
	fd, err := unix.PidfdOpen(agent, 0)
	if err != nil {
		log.Fatal(err)
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if n, err := unix.Poll(pfd, -1); err == nil && n > 0 {
			break
		}
	}
	fmt.Println(time.Now().UnixNano())
}

// parentOf is the parent pid of the process running prog with
// SHMPI_RANK=rank, or 0.
func parentOf(prog, rank string) int {
	out, _ := exec.Command("pgrep", "-f", prog).Output()
	for _, f := range strings.Fields(string(out)) {
		env, err := os.ReadFile("/proc/" + f + "/environ")
		if err != nil || !bytes.Contains(env, []byte("SHMPI_RANK="+rank+"\x00")) {
			continue
		}
		st, err := os.ReadFile("/proc/" + f + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		fs := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		var ppid int
		if len(fs) > 1 {
			fmt.Sscan(fs[1], &ppid)
		}
		return ppid
	}
	return 0
}
