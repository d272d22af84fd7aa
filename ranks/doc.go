// Package ranks is a rank's life in a shmpi job: Init and Finalize, the
// world and its communicators, point-to-point messaging, requests, the
// progress engine, and failure detection.
//
// A program calls Init once; under shmrun (or another launcher built on
// package ranks/launch) it attaches to the job's shared segment, and
// without one it runs as a singleton, a world of one rank. Errors are Go
// errors: errors.Is(err, ErrProcFailed), ErrRevoked and the other
// classes; errors.As with *Error gives the operation and the rank.
// Buffers are slices of any plain type (numbers, bool, and arrays and
// structs of them); []byte always works.
//
// # Concurrency
//
// All operations are safe for concurrent use by any number of goroutines
// of a rank (MPI_THREAD_MULTIPLE, Init's level). The engine lock is
// biased toward the first goroutine that takes it, which then takes and
// releases it with plain stores (biaslock.go): a program that calls from
// one goroutine pays what ThreadSingle pays. The first time another
// goroutine calls in, the bias is withdrawn for good (one membarrier) and
// every call takes a mutex. InitThread(ThreadSerialized) drops the lock
// for programs that call from one goroutine at a time. Waiting goroutines
// spin briefly (only when the job has no more ranks than cores) and then
// sleep on the rank's futex doorbell; a goroutine that completes
// another's request wakes it.
//
// # Failures
//
// A rank that exits without Finalize, for any reason, has failed. Each
// rank holds a robust-futex liveness word from a dedicated OS thread; the
// kernel marks it when the process dies, and a watcher in every other
// rank (and the launcher, from the process's exit) records the failure in
// the shared table and wakes everyone. A rank asleep waiting for one peer
// also sleeps on one of that peer's direct liveness words, so the death
// wakes it at once rather than through a watcher. Operations that involve
// a failed rank return errors matching ErrProcFailed instead of blocking;
// package ulfm repairs the communicator.
package ranks
