// Package coll is MPI's collective operations over a ranks.Comm: Barrier,
// Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v),
// Alltoall(v), ReduceScatter(Block), Scan and Exscan, with nonblocking
// forms returning a *ranks.Request, on slices of any plain type, with
// typed reduction ops (op.go).
//
// Small collectives (up to 24 bytes a member) meet in the communicator's
// lines in shared memory: one arrival per member, no message (shared.go);
// medium ones (up to 2 KiB a member, 8 KiB in a job of at most 64 ranks
// that do not outnumber its cores) stage their data in per-member scratch
// areas of the segment. Larger ones move their data with
// point-to-point messages on the communicator's collective context, which
// never matches a user's receive, so that the single-copy and pipelined
// protocols of package ranks carry them. Allreduce above the staging size
// goes through a shared area the communicator's members map (big.go):
// each member copies its data in, reduces its slice of everyone's data in
// rank order, and copies the result out, so every rank reduces and both
// cores work. Reduce from 128 KiB a member (64 KiB at 2 members) does
// the same, but only the root copies the result out. Where members sleep,
// Alltoall and Allgather go through the same area, in rounds when a
// member's data exceeds its part (Alltoall only while a round's slice of
// a block is at least 32 KiB), so that no pair of members waits for the
// other's turn on a CPU. By message, each member copies its own block
// while its transfers run.
//
// Failures. A collective on a communicator with a member known to have
// failed returns ErrProcFailed at once, every time, acknowledged or not,
// until the communicator is shrunk; a member that dies during one makes
// it return ErrProcFailed at the members waiting for it, never a hang.
// A revoked communicator gives ErrRevoked.
//
// In place: where MPI has MPI_IN_PLACE, pass a nil send buffer; the data
// is then taken from (and the result left in) the receive buffer, as MPI
// says for each operation.
//
// Bad arguments. A member whose arguments are invalid (a short buffer, a
// negative count, a nil op; at a root, those only the root uses) returns
// ErrBuffer, ErrCount or ErrArg, and still takes its part, so no member
// waits for it: every member whose part depends on it returns its error
// too (with its rank), and one whose part did not (a member whose data
// went to a root eagerly) may return nil. Mismatched sizes between
// members are reported (ErrCount or ErrTruncate) where a member receives
// data: by the receiver of a block of the wrong size; Allreduce compares
// every member's length in its first phase, so that a mismatch is
// ErrCount at every member whatever the lengths. The communicator keeps
// working after any of these. Elements of size zero are allowed (a
// zero-size datatype: nothing moves).
package coll
