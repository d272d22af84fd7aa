// Command osu_ialltoallw measures coll.Ialltoallw with a block of n bytes
// per peer, by OSU 7.x's method for nonblocking collectives: the pure
// communication time of the call and its Wait, then the same with a dummy
// compute of about that time between them, and how much of the
// communication the compute hid (Overall, Compute, Pure Comm., Overlap;
// with -f also Coll. Init, MPI_Test, MPI_Wait and the minimum and maximum
// communication time; -t N spreads N Tests through the compute; -thread is
// the thread level, multiple by default). benchmarks/internal/osu/nbc.go
// has the method, colls.go the data; after the timed calls of each size
// one more call is checked.
//
//	shmrun -n 8 ./osu_ialltoallw -m 1:1048576
package main

import "github.com/shmpi/shmpi/benchmarks/internal/osu"

func main() { osu.RunNonblocking(osu.Alltoallw()) }
