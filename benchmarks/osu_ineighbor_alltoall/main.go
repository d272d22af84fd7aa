// Command osu_ineighbor_alltoall measures coll.INeighborAlltoall with
// blocks of n bytes on osu_neighbor_alltoall's graph (-N cart:dim:rad) by
// OSU 7.x's method for nonblocking collectives
// (benchmarks/internal/osu/nbc.go): pure communication time, then the
// same with a dummy compute between the call and its Wait, and the
// overlap. After the timed calls of each size one more call is checked.
//
//	shmrun -n 8 ./osu_ineighbor_alltoall -m 1:65536
package main

import "github.com/shmpi/shmpi/benchmarks/internal/osu"

func main() { osu.RunINeighbor(osu.NeighborAlltoall()) }
