package job

import (
	"github.com/shmpi/shmpi/shm"
	"sync/atomic"
	"unsafe"
)

// The failure table: each rank's State in its control block, and the
// epoch that every change bumps. Ranks, their watchers and the launcher
// all write it, each change by compare-and-swap, so the first to see a
// death declares it and the others find it declared.

// Liveness is rank r's liveness word.
func (m *Map) Liveness(r int) *shm.LivenessEntry { return &m.CB(r).Liveness }

// Direct is the liveness word of rank r that rank j sleeps on.
func (m *Map) Direct(r, j int) *shm.LivenessEntry { return &m.CB(r).Direct[j%DirectSlots] }

// LivenessList is rank r's robust list: the direct words, then liveness.
func (m *Map) LivenessList(r int) []*shm.LivenessEntry {
	l := make([]*shm.LivenessEntry, 0, DirectSlots+1)
	for j := range DirectSlots {
		l = append(l, m.Direct(r, j))
	}
	return append(l, m.Liveness(r))
}

// Doorbell is rank r's doorbell.
func (m *Map) Doorbell(r int) shm.Doorbell { return shm.NewDoorbell(&m.CB(r).Doorbell) }

// State is rank r's state (St*).
func (m *Map) State(r int) uint32 { return m.CB(r).State.Load() }

// Bump publishes a change of the table: every waiter re-checks. Every
// rank asleep in a wait sleeps on the epoch's low word too (EpochWord),
// so one futex wake reaches them all: ringing each doorbell cost a
// syscall per rank (a revoke at 64 ranks spent most of its time there).
func (m *Map) Bump() {
	m.Epoch.Add(1)
	shm.FutexWake(m.EpochWord(), 1<<30)
}

// EpochWord is the epoch's low 32 bits as a futex word (little-endian),
// for sleepers: it changes on every Bump (and wraps only after 2^32).
func (m *Map) EpochWord() *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(m.Epoch)) }
