// Package win is MPI's one-sided communication: windows of memory that
// the members of a communicator put to, get from and accumulate into,
// with the ULFM chapter's fault-tolerance rules.
//
// On one node the members share memory, as below. A window whose
// communicator spans nodes (under cmd/shmnode) keeps each part in its
// member's memory and has each member serve the others' operations with
// messages (span.go): every call works there but SharedQuery and View,
// and AllocateShared returns ranks.ErrUnsupported.
//
// A window from AllocateShared or Allocate lives in an anonymous memfd
// (shm.Mem) that one member creates and the others map, so Put and Get
// are copies between the caller's buffer and a peer's memory, with no
// message and no help from the target, and SharedQuery and View give a
// member's part to load and store directly. Create over memory the user
// has is the same when every member's memory is from ranks.AllocMem (the
// members map each other's memfds); over other memory, and for
// CreateDynamic, peers reach the target's memory with single-copy
// process_vm_readv/writev (create.go).
//
// Accumulates are element-wise atomic: in shared memory, compare-and-swap
// on an element of 1, 2, 4 or 8 bytes, or on the aligned 32-bit word that
// holds it; other elements (complex128, coll.ValLoc), and everything over
// memory reached by cross-process copies, under the target's accumulate
// lock. The synchronizations keep their state in shared memory: a lock
// word per target, post counters (with the exposure group) and complete
// counters; waiters sleep on a futex word there, and every wait watches
// the failure table and the window's revoke flag, so that a dead rank or
// a revoke ends it with an error rather than a hang. RMA calls need an access epoch to their target, as
// in MPI: after a Fence, between Start and Complete, Lock and Unlock,
// LockAll and UnlockAll; outside one they return ranks.ErrRMASync. Any
// goroutines of a rank may use a window at once.
//
// Creation takes hints (Info, Flag: MPI's info keys, info.go), which
// Win.Info reads back and Win.SetInfo changes; Fence, Lock, LockAll, Post
// and Start take asserts (the Mode constants), which say what each saves
// here. Win.Base, DispUnit, Flavor and Model are MPI's window attributes,
// and SetName and Name its name.
//
// Memory model: MPI_WIN_UNIFIED. Loads and stores through SharedQuery
// and the RMA calls act on the same memory; Go's atomics in every
// synchronization order them.
package win
