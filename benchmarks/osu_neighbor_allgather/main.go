// Command osu_neighbor_allgather measures the latency of
// coll.NeighborAllgather of n bytes as OSU 7.x's osu_neighbor_allgather
// does: on a distributed graph of each rank's neighbours in a periodic
// Cartesian grid (-N cart:dim:rad, OSU's default cart:1:1: the ranks
// before and after in a ring), each call timed on its own and followed by
// an untimed barrier; the average over the ranks of each rank's mean.
// benchmarks/internal/osu/neighbor.go builds the graph; after the timed
// calls of each size one more call is checked.
//
//	shmrun -n 8 ./osu_neighbor_allgather -m 1:65536
package main

import "github.com/shmpi/shmpi/benchmarks/internal/osu"

func main() { osu.RunNeighbor(osu.NeighborAllgather(), "Neighborhood Allgather Latency") }
