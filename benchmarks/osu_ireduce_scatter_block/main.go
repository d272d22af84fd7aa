// Command osu_ireduce_scatter_block measures coll.IreduceScatterBlock with
// coll.Sum over n bytes of float32 elements, (n/4)/Size() to each rank, by
// OSU 7.x's method for nonblocking collectives: the pure communication
// time of the call and its Wait, then the same with a dummy compute of
// about that time between them, and how much of the communication the
// compute hid (Overall, Compute, Pure Comm., Overlap; with -f also Coll.
// Init, MPI_Test, MPI_Wait and the minimum and maximum communication time;
// -t N spreads N Tests through the compute; -thread is the thread level,
// multiple by default). benchmarks/internal/osu/nbc.go has the method,
// colls.go the data; after the timed calls of each size one more call is
// checked.
//
//	shmrun -n 8 ./osu_ireduce_scatter_block -m 4:1048576
package main

import "github.com/shmpi/shmpi/benchmarks/internal/osu"

func main() { osu.RunNonblocking(osu.ReduceScatterBlock()) }
