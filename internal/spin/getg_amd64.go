//go:build amd64 && !race

package spin

// getg returns the running goroutine's g (the runtime keeps it in
// thread-local storage).
func getg() uintptr

const haveGoroutineID = true
