package ext

// Functions of package ranks for package win, installed by ranks' init.
var (
	// Pid is the process id of comm's member r (0 if it never started).
	Pid func(comm any, r int) int
	// CopyFailed judges a cross-process copy (process_vm_readv/writev)
	// with comm's member r that failed with err: it returns Failed or
	// Finalized if r has ended, and Alive otherwise. ESRCH means that r's
	// memory is gone, which the kernel may do before it marks r's
	// liveness word: CopyFailed then waits for r's process to end (a
	// pidfd) and records the failure in the job's table, so that every
	// later operation sees it.
	CopyFailed func(comm any, r int, err error) int
)
