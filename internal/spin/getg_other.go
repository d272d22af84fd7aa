//go:build !amd64 || race

package spin

func getg() uintptr { return 0 }

// Without it (and under the race detector, which cannot see the
// asymmetric fence that makes a biased lock safe) callers fall back.
const haveGoroutineID = false
