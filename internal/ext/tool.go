package ext

// Functions of package ranks for the tool information interface (MPI_T in
// cabi), installed by ranks' init. comm is any communicator of the rank:
// they describe its engine, not that communicator. They take the engine
// lock and may be called from any goroutine, also after Finalize (the
// values then stay those of the moment the rank finalized).
var (
	// ToolCounters reads the rank's counters.
	ToolCounters func(comm any) Counters
	// ToolSettings reads the engine's settings.
	ToolSettings func(comm any) Settings
	// SetTuning sets one of the settings that may change at run time
	// (TuneSpin...) to v, for the rank's next waits and sends. It reports
	// false, changing nothing, if v is out of range, the setting has no
	// effect on this rank (TuneSpin where ranks outnumber cores) or the
	// rank has finalized.
	SetTuning func(comm any, k, v int) bool
)

// Counters are a rank's counts since Init.
type Counters struct {
	// Point-to-point messages (those of collectives built on them
	// included) this rank sent, to any rank and itself, and their bytes.
	// A send counts when it starts towards a destination not known to
	// have failed.
	MsgsSent, BytesSent uint64
	// Messages that reached this rank (matched or not), and their bytes.
	MsgsRecv, BytesRecv uint64
	// Unexpected is the number of messages that arrived and wait for a
	// receive (on any communicator, or for one not created here yet).
	Unexpected uint64
	// Sleeps are the waits' futex sleeps; SleepTimeouts those that ended
	// by their timeout with what they waited for there (a missed wake);
	// Yields the sched_yield calls of oversubscribed collective waits.
	Sleeps, SleepTimeouts, Yields uint64
	// FailuresKnown is the number of failed processes this rank knows of.
	FailuresKnown uint64
}

// Settings are the engine's settings.
type Settings struct {
	Spin           bool // waits poll before they sleep (ranks do not outnumber cores)
	SpinUs         int  // how long, in microseconds (TuneSpin)
	SleepTimeoutMs int  // the bound of every sleep (TuneSleepTimeout)
	Yields         int  // oversubscribed collective waits: yields before sleeping (TuneYields)
	EagerMax       int  // the largest message sent through a chunk (TuneEager)
	InlineMax      int  // the largest message carried in the inbox record itself
	ShortMax       int  // the largest one that a streaming sender packs two to a line
	ChunkSize      int
	ChunkCount     int // chunks per rank
	InboxSlots     int
	HSSlots        int  // handshake slots per rank (synchronous sends, rendezvous)
	CMA            bool // large messages are copied by process_vm_readv/writev
	Cores          int  // the cores the job's segment was made for
}

// Settings that SetTuning changes.
const (
	TuneSpin = iota
	TuneSleepTimeout
	TuneYields
	TuneEager
)
