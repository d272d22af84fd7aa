// Package sysmon keeps the Go runtime's monitor thread from preempting
// the thread a process polls on (Batch).
package sysmon

import (
	"os"

	"golang.org/x/sys/unix"
)

// Batch puts the Go runtime's monitor thread (sysmon) under
// SCHED_BATCH, whose wake-ups do not preempt the thread running on the
// CPU: sysmon then runs at the next scheduler tick, or at once on an idle
// CPU, instead of taking the CPU from a spinning rank on every wake-up.
//
// Why: sysmon sleeps 20 µs between its rounds for the first 50 rounds
// after a process starts (and again after each time it takes a P back
// from a syscall), and only then doubles its sleep up to 10 ms. Here a
// 20 µs sleep lasts 70-100 µs, and a rank's threads share its CPU, so
// for the first 4-9 ms a spinning rank lost its CPU every 90 µs or so,
// for about 15 µs each time (a scheduler trace, 2026-11-27). A program
// that communicates at once paid for it. 12 interleaved runs each, 2
// ranks (2026-11-27): osu_mbw_mr's 1-byte rate over the first 100
// windows, median 2.58 million messages a second with 24 involuntary
// switches of the receiver, 4.77 with 1 under SCHED_BATCH; osu_bw 1 B
// 2.56 MB/s against 5.00 (Open MPI 5.54). SCHED_BATCH keeps sysmon's
// share of the CPU and its duties (retaking a P from a syscall,
// preemption, the network poll), a tick (4 ms here) late at worst when
// the CPU is busy; threads sysmon starts inherit the policy, which
// costs them only that same wake-up preemption. (SCHED_IDLE gave the
// same rate, but a thread started by sysmon could then run the rank's
// goroutines and be starved; nice 19 did not stop the preemptions.)
//
// shmnode's agents call it too: an agent shares its node's cores with
// the node's ranks, and every message across nodes passes through it.
// Cross-node osu_latency 8 B, 2 nodes of one core each (Open MPI 4.1.4,
// TCP), interleaved runs (2026-11-27): 30.4 µs without, 27.1 with (10
// rounds), and 34.6 against 31.1 (8 rounds).
//
// sysmon is the first thread the runtime starts (runtime.main starts it
// before any package's init), so it is the lowest thread id above the
// process id among the process's threads: Batch finds it with
// tgkill(pid, tid, 0), which reads no /proc entry. It used to list
// /proc/self/task and read each thread's syscall file until one was seen
// in nanosleep twice. After that reading, the kernel's invalidation of
// the process's /proc entries when its parent reaps it took up to 50 ms
// (prterun reaping a killed node agent, wait4 under strace -T: above 5
// ms in 8 of 12 kills after the reading with the policy set, and in 4 of
// 6 with it not set; at most 0.4 ms in 8 kills with tgkill), and a node
// agent's MPI reports its death only after that reaping (docs/nodes.md). Best effort: it reports
// whether it set the policy. SHMPI_SYSMON_BATCH=0 turns it off.
func Batch() bool {
	if os.Getenv(EnvBatch) == "0" {
		return false
	}
	tid := thread()
	if tid <= 0 {
		return false
	}
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_BATCH}, 0) == nil
}

// EnvBatch: "0" turns Batch off.
const EnvBatch = "SHMPI_SYSMON_BATCH"

// thread returns the id of this process's first thread after the main
// one (sysmon's), or 0 if none is found among the next 4,096 ids. Other
// processes may have taken ids in between (agents started together under
// mpirun: 1 to 14 apart here).
func thread() int {
	pid := unix.Getpid()
	for tid := pid + 1; tid <= pid+4096; tid++ {
		if unix.Tgkill(pid, tid, 0) == nil {
			return tid
		}
	}
	return 0
}
