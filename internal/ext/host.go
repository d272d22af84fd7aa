package ext

// CHost is set by the C interface (package cabi) before it starts the
// runtime: the rank's calls come from C threads, each one a cgo callback
// on a goroutine locked to its thread. Such a goroutine cannot hand its P
// to another goroutine on the same thread, so a runtime.Gosched in a
// polling wait parks the thread and wakes another (ten times the context
// switches of a Go rank, perf stat); ranks' waits then never offer the P.
var CHost bool
