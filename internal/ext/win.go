package ext

// Functions of package ranks for package win, installed by ranks' init.
var (
	// Pid is the process id of comm's member r (0 if it never started).
	Pid func(comm any, r int) int
)
