package job

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shmpi/shmpi/shm"
)

// Dynamic processes: the universe and the spawn mailbox.
//
// A segment has Layout.Ranks rank slots (the universe); the first job's
// world is the first Layout.World of them. The rest are reserved for
// ranks that running ranks spawn: a spawning root takes the next free
// slots (SpawnRec.next, by compare-and-swap, so two spawns never get the
// same slots and a spawn past the universe gets none), allocates the
// children's context slots itself (their hold bits are set while the
// children are still unstarted, so nothing of theirs can be reclaimed
// before they adopt it), and then asks the launcher, through the
// mailbox below, to start one process per slot. Only the launcher
// starts processes, so that spawned ranks are watched, reaped and
// reported exactly like the first ones, and die with it.
//
// A slot that was never given out stays StUnstarted: no liveness word is
// armed for it, no communicator holds it, the failure sweeps skip it (it
// is neither failed nor finalized) and the launcher reports only the
// ranks it started.
//
// The mailbox takes one request at a time. A root takes its lock (1 +
// its world rank; a lock whose holder failed or finalized is taken
// over), writes the request into the payload, moves state to
// SpawnPosted and wakes the launcher, which sleeps on state. The
// launcher starts the processes, writes the result and moves state to
// SpawnDone, and wakes the root, which reads the result, sets state back
// to SpawnIdle and frees the lock. A root that dies after posting still
// gets its children started (the launcher does not ask who posted); the
// next root that takes the lock over waits while the state is
// SpawnPosted (the launcher is reading that request's payload) and
// resets a SpawnDone left behind.

// SpawnRec is the mailbox header (64 bytes, at the global area +256):
//
//	+0  lock   uint32  1 + the world rank holding the mailbox, 0 if free
//	+4  state  uint32  SpawnIdle / SpawnPosted / SpawnDone / SpawnClosed;
//	                   the launcher sleeps on it while idle, the root
//	                   while posted
//	+8  served uint32  1 while a launcher serves requests (0: a singleton,
//	                   or a launcher that does not spawn)
//	+12 next   uint32  the first rank slot never given out
//	+16 base   uint32  the request's first slot
//	+20 count  uint32  the request's number of processes
//	+24 plen   uint32  bytes of payload
//	+28 result int32   0: every process started; else the errno-like
//	                   count of processes that could not be started
//	+32 (pad to 64)
//
// The payload (SpawnPayloadMax bytes) follows it: a JSON list, one entry
// per command, of its program, arguments, extra environment and number
// of processes.
type SpawnRec struct {
	lock   atomic.Uint32
	state  atomic.Uint32
	served atomic.Uint32
	next   atomic.Uint32
	base   atomic.Uint32
	count  atomic.Uint32
	plen   atomic.Uint32
	result atomic.Uint32
	_      [32]byte
}

// The mailbox states (SpawnRec.state).
const (
	SpawnIdle   = 0
	SpawnPosted = 1
	SpawnDone   = 2
	SpawnClosed = 3
)

const (
	spawnRecSize = 64
	// SpawnPayloadMax bounds a request's programs, arguments and
	// environment entries, all processes together.
	SpawnPayloadMax = 16 << 10
	// spawnOff is where the mailbox starts in the global area.
	spawnOff = globalStride
	// globalAreaSize is the whole global area: the Global record, the
	// mailbox header and its payload, the port table and the name table
	// (ports.go).
	globalAreaSize = globalStride + spawnRecSize + SpawnPayloadMax + MaxPorts*portRecSize + MaxNames*nameRecSize
)

func init() {
	if unsafe.Sizeof(SpawnRec{}) != spawnRecSize || unsafe.Offsetof(SpawnRec{}.result) != 28 {
		panic("job: SpawnRec drifted from its documentation")
	}
}

// Spawn is the job's spawn mailbox.
func (m *Map) Spawn() *SpawnRec { return m.spawn }

func (m *Map) spawnPayload() []byte {
	return unsafe.Slice((*byte)(m.Seg.Ptr(m.Seg.Area(areaGlobal).Off+spawnOff+spawnRecSize)), SpawnPayloadMax)
}

// Universe is the number of rank slots of the job (MPI_UNIVERSE_SIZE).
func (m *Map) Universe() int { return m.N }

// SpawnServed reports whether a launcher serves spawn requests.
func (m *Map) SpawnServed() bool { return m.spawn.served.Load() == 1 }

// ReserveSlots takes k rank slots for a spawn; ok is false, and nothing
// is taken, if fewer than k are left.
func (m *Map) ReserveSlots(k int) (base int, ok bool) {
	for {
		v := m.spawn.next.Load()
		if k <= 0 || int(v)+k > m.N {
			return int(v), false
		}
		if m.spawn.next.CompareAndSwap(v, v+uint32(k)) {
			return int(v), true
		}
	}
}

// UnreserveSlots gives back slots base to base+k-1 of a spawn that
// started nobody, if no spawn has taken slots after them (else they stay
// unused: unstarted slots cost nothing but their room).
func (m *Map) UnreserveSlots(base, k int) {
	m.spawn.next.CompareAndSwap(uint32(base+k), uint32(base))
}

// SlotsLeft is how many rank slots no spawn has taken yet.
func (m *Map) SlotsLeft() int { return m.N - int(m.spawn.next.Load()) }

// SpawnProc is one command of a spawn request: N processes of it.
type SpawnProc struct {
	Path string   `json:"p"`
	Args []string `json:"a,omitempty"`
	Env  []string `json:"e,omitempty"`
	N    int      `json:"n"`
}

// ErrNoLauncher: nobody serves spawn requests (a singleton).
var ErrNoLauncher = fmt.Errorf("no launcher serves spawn requests in this job")

// SpawnRequest asks the launcher to start the processes of procs, in
// order, as rank slots base, base+1, ...; me is the root's world rank. It waits for the launcher's
// answer and returns how many processes could not be started. dead(r)
// reports whether world rank r has ended (a lock holder that did is
// taken over).
func (m *Map) SpawnRequest(me, base int, procs []SpawnProc, dead func(int) bool) (notStarted int, err error) {
	s := m.spawn
	if s.served.Load() != 1 {
		return 0, ErrNoLauncher
	}
	payload, err := json.Marshal(procs)
	if err != nil {
		return 0, err
	}
	if len(payload) > SpawnPayloadMax {
		return 0, fmt.Errorf("the programs, arguments and environment take %d bytes, more than the %d a spawn can pass",
			len(payload), SpawnPayloadMax)
	}
	// Take the mailbox.
	for {
		v := s.lock.Load()
		if v == 0 {
			if s.lock.CompareAndSwap(0, uint32(me+1)) {
				break
			}
			continue
		}
		if dead(int(v) - 1) {
			if s.lock.CompareAndSwap(v, uint32(me+1)) {
				break
			}
			continue
		}
		// The holder is alive: it frees the lock once the launcher has
		// answered it (a few ms); the bound covers its death meanwhile.
		shm.FutexWait(&s.lock, v, 10*time.Millisecond)
	}
	defer func() {
		s.lock.Store(0)
		shm.FutexWake(&s.lock, 1<<30)
	}()
	// A holder that died after posting left its request with the
	// launcher, which is serving it (and reading its payload) while the
	// state is SpawnPosted, and always answers; or it left the answer.
	for {
		st := s.state.Load()
		if st == SpawnClosed {
			return 0, ErrNoLauncher
		}
		if st != SpawnPosted {
			break
		}
		shm.FutexWait(&s.state, st, 100*time.Millisecond)
	}
	s.state.Store(SpawnIdle)
	copy(m.spawnPayload(), payload)
	s.plen.Store(uint32(len(payload)))
	s.base.Store(uint32(base))
	s.count.Store(uint32(spawnCount(procs)))
	s.result.Store(0)
	if !s.state.CompareAndSwap(SpawnIdle, SpawnPosted) {
		return 0, ErrNoLauncher // closed meanwhile
	}
	shm.FutexWake(&s.state, 1<<30)
	for {
		st := s.state.Load()
		if st == SpawnDone {
			break
		}
		if st == SpawnClosed {
			return 0, ErrNoLauncher
		}
		// The launcher answers in the time it takes to fork; the bound
		// only makes a closed mailbox visible.
		shm.FutexWait(&s.state, st, 100*time.Millisecond)
	}
	n := int(s.result.Load())
	s.state.Store(SpawnIdle)
	return n, nil
}

func spawnCount(procs []SpawnProc) int {
	k := 0
	for _, p := range procs {
		k += max(p.N, 0)
	}
	return k
}

// ServeSpawns marks the mailbox served (a launcher calls it before it
// starts the first ranks).
func (m *Map) ServeSpawns() { m.spawn.served.Store(1) }

// WaitSpawn is the launcher's: it sleeps until a request is posted and
// returns it (ok), or until the mailbox is closed.
func (m *Map) WaitSpawn() (base int, procs []SpawnProc, ok bool, err error) {
	s := m.spawn
	for {
		switch st := s.state.Load(); st {
		case SpawnPosted:
			n := int(s.plen.Load())
			err := json.Unmarshal(m.spawnPayload()[:min(n, SpawnPayloadMax)], &procs)
			if k := spawnCount(procs); err == nil && k != int(s.count.Load()) {
				err = fmt.Errorf("spawn request of %d processes lists %d", s.count.Load(), k)
			}
			return int(s.base.Load()), procs, true, err
		case SpawnClosed:
			return 0, nil, false, nil
		default:
			shm.FutexWait(&s.state, st, 0)
		}
	}
}

// AnswerSpawn is the launcher's answer to the posted request: notStarted
// processes could not be started.
func (m *Map) AnswerSpawn(notStarted int) {
	s := m.spawn
	s.result.Store(uint32(notStarted))
	s.state.CompareAndSwap(SpawnPosted, SpawnDone)
	shm.FutexWake(&s.state, 1<<30)
}

// CloseSpawn closes the mailbox: the launcher no longer serves it.
func (m *Map) CloseSpawn() {
	m.spawn.state.Store(SpawnClosed)
	shm.FutexWake(&m.spawn.state, 1<<30)
}

// The environment of a spawned rank, beside RankEnv's: its world (it is
// not the first Layout.World slots) and its parents.
const (
	// EnvWorld: "BASE,SIZE,SLOT,GEN": the world is rank slots BASE to
	// BASE+SIZE-1, in context slot SLOT of generation GEN.
	EnvWorld = "SHMPI_WORLD"
	// EnvParent: "USLOT,UGEN,LSLOT,LGEN,P0 P1 ...": the intercommunicator
	// to the parents (MPI_Comm_get_parent) in context slot USLOT, its
	// local intracommunicator (the children's group) in LSLOT, and the
	// parents' world ranks in their group's order.
	EnvParent = "SHMPI_PARENT"
	// EnvAppNum: which command of a SpawnMultiple started this rank
	// (MPI_APPNUM).
	EnvAppNum = "SHMPI_APPNUM"
)

// SpawnedWorld is a spawned rank's world and parent, from EnvWorld and
// EnvParent.
type SpawnedWorld struct {
	Base, Size  int
	Slot, Gen   uint32
	USlot, UGen uint32
	LSlot, LGen uint32
	Parents     []int
	AppNum      int
	Spawned     bool // EnvWorld was set
	ParentOK    bool // EnvParent was set
}

// WorldEnv formats EnvWorld.
func WorldEnv(base, size int, slot, gen uint32) string {
	return fmt.Sprintf("%s=%d,%d,%d,%d", EnvWorld, base, size, slot, gen)
}

// ParentEnv formats EnvParent.
func ParentEnv(uslot, ugen, lslot, lgen uint32, parents []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%d,%d,%d,%d,", EnvParent, uslot, ugen, lslot, lgen)
	for i, p := range parents {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(p))
	}
	return b.String()
}

// ReadSpawned reads (and removes) EnvWorld, EnvParent and EnvAppNum.
func ReadSpawned() (SpawnedWorld, error) {
	var sw SpawnedWorld
	w, hasW := os.LookupEnv(EnvWorld)
	p, hasP := os.LookupEnv(EnvParent)
	a, hasA := os.LookupEnv(EnvAppNum)
	for _, k := range []string{EnvWorld, EnvParent, EnvAppNum} {
		os.Unsetenv(k)
	}
	sw.AppNum = -1
	if hasA {
		v, err := strconv.Atoi(a)
		if err != nil {
			return sw, fmt.Errorf("malformed %s=%q", EnvAppNum, a)
		}
		sw.AppNum = v
	}
	if !hasW {
		if hasP {
			return sw, fmt.Errorf("%s without %s", EnvParent, EnvWorld)
		}
		return sw, nil
	}
	sw.Spawned = true
	var f [4]uint64
	parts := strings.Split(w, ",")
	if len(parts) != 4 {
		return sw, fmt.Errorf("malformed %s=%q", EnvWorld, w)
	}
	for i, s := range parts {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return sw, fmt.Errorf("malformed %s=%q", EnvWorld, w)
		}
		f[i] = v
	}
	sw.Base, sw.Size, sw.Slot, sw.Gen = int(f[0]), int(f[1]), uint32(f[2]), uint32(f[3])
	if !hasP {
		return sw, nil
	}
	parts = strings.SplitN(p, ",", 5)
	if len(parts) != 5 {
		return sw, fmt.Errorf("malformed %s=%q", EnvParent, p)
	}
	for i, s := range parts[:4] {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return sw, fmt.Errorf("malformed %s=%q", EnvParent, p)
		}
		f[i] = v
	}
	sw.USlot, sw.UGen, sw.LSlot, sw.LGen = uint32(f[0]), uint32(f[1]), uint32(f[2]), uint32(f[3])
	for _, s := range strings.Fields(parts[4]) {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return sw, fmt.Errorf("malformed %s=%q", EnvParent, p)
		}
		sw.Parents = append(sw.Parents, v)
	}
	if len(sw.Parents) == 0 {
		return sw, fmt.Errorf("malformed %s=%q: no parents", EnvParent, p)
	}
	sw.ParentOK = true
	return sw, nil
}
