//go:build race

package win

// raceEnabled: the race detector is on. It sees no order in atomics on
// memory outside the Go heap, such as a window's locks, so the accesses
// to this rank's own heap memory that they order look like races to it;
// lockAcc and unlockAcc then also touch a heap word it does see.
const raceEnabled = true
