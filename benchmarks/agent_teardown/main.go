// Command agent_teardown prints, as wall-clock nanoseconds, when the node
// agent of a rank has ended (its pidfd becomes readable): its sockets
// are closed by then, and its parent can reap it, so no MPI reports the
// death of that node before. The agent's memory may go later: its keeper
// (internal/keeper) holds it and tears it down in spare CPU time.
// benchmarks/nodes_recovery.sh starts it beside a job whose rank kills
// its agent.
//
//	agent_teardown PROG RANK
//
// It waits for a process running PROG whose environment has
// SHMPI_RANK=RANK, takes its parent (the agent), and waits on that
// process's pidfd.
package main

import (
	"fmt"
	"log"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/procs"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: agent_teardown PROG RANK")
	}
	prog := os.Args[1]
	rank, err := strconv.Atoi(os.Args[2])
	if err != nil {
		log.Fatalf("rank %q: %v", os.Args[2], err)
	}
	agent := 0
	deadline := time.Now().Add(60 * time.Second)
	for agent == 0 {
		if time.Now().After(deadline) {
			log.Fatalf("no process of %s with rank %d", prog, rank)
		}
		agent = procs.ParentOfRank(prog, rank)
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
