// Package coll is MPI's collective operations over a ranks.Comm: Barrier,
// Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v),
// Alltoall(v), ReduceScatter(Block), Scan and Exscan, with nonblocking
// forms returning a *ranks.Request, on slices of any plain type, with
// typed reduction ops (op.go).
//
// Small collectives (up to 24 bytes a member) meet in the communicator's
// lines in shared memory: one arrival per member, no message (shared.go);
// medium ones (up to 2 KiB a member) stage their data in per-member
// scratch areas of the segment. Larger ones move their data with
// point-to-point messages on the communicator's collective context, which
// never matches a user's receive, so that the single-copy and pipelined
// protocols of package ranks carry them. Allreduce above the staging size
// goes through a shared area the communicator's members map (big.go):
// each member copies its data in, reduces its slice of everyone's data in
// rank order, and copies the result out, so every rank reduces and both
// cores work.
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
// Mismatched sizes between members are reported (ErrCount or
// ErrTruncate) where a member receives data: by the receiver of a block
// of the wrong size. A mismatch that no member receives goes unnoticed.
package coll
