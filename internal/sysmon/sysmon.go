// Package sysmon keeps the Go runtime's monitor thread from preempting
// the thread a process polls on (Batch).
package sysmon

import (
	"os"
	"strconv"
	"strings"

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
// A killed process whose sysmon is under SCHED_BATCH was reaped late by
// its parent (up to 50 ms, in the kernel's invalidation of its /proc
// entries). A rank's death is declared before its reaping (its robust
// list), but the other nodes hear of a node agent's from its MPI, which
// learns it from the reaping, so shmnode's agents do not call Batch
// (cmd/shmnode: node kills 8.2 ms at the median and 11.5 at worst
// without it, 9.9 and 44.4 with it). They did until then for cross-node
// latency: osu_latency 8 B, 2 nodes of one core each, 30.4 µs without,
// 27.1 with (10 rounds), and 34.6 against 31.1 (8 rounds), where a
// later measure found 38.5 against 37.7.
//
// sysmon is found as the thread sleeping in nanosleep: the runtime's
// usleep, which no other thread of a Go process calls for long. It must
// be seen there twice. Best effort: it reports whether it set the policy.
// SHMPI_SYSMON_BATCH=0 turns it off.
func Batch() bool {
	if os.Getenv(EnvBatch) == "0" {
		return false
	}
	tid := thread(200)
	if tid <= 0 {
		return false
	}
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_BATCH}, 0) == nil
}

// EnvBatch: "0" turns Batch off.
const EnvBatch = "SHMPI_SYSMON_BATCH"

// thread returns the id of this process's thread that is seen
// sleeping in nanosleep in two of at most passes looks at every thread
// but the caller's, or 0.
func thread(passes int) int {
	self := unix.Gettid()
	prefix := strconv.Itoa(unix.SYS_NANOSLEEP) + " "
	seen := map[int]bool{}
	for range passes {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return 0
		}
		for _, d := range ents {
			tid, err := strconv.Atoi(d.Name())
			if err != nil || tid == self {
				continue
			}
			b, err := os.ReadFile("/proc/self/task/" + d.Name() + "/syscall")
			if err != nil || !strings.HasPrefix(string(b), prefix) {
				continue
			}
			if seen[tid] {
				return tid
			}
			seen[tid] = true
		}
	}
	return 0
}
