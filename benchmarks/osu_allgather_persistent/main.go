// Command osu_allgather_persistent measures the persistent collective
// coll.AllgatherInit of n bytes from each rank, as OSU 7.x's
// osu_allgather_persistent does: the request made once per size, then
// Start and Wait timed together, the average over the ranks of each rank's
// mean, in the blocking benchmarks' table. With -compare each row holds
// instead the persistent, nonblocking and blocking forms measured in the
// same run. -t is the thread level, multiple by default.
// benchmarks/internal/osu (persistent.go, colls.go) has the loop and the
// data; after the timed calls of each size one more run is checked.
//
//	shmrun -n 8 ./osu_allgather_persistent -m 1:1048576
//	shmrun -n 8 ./osu_allgather_persistent -m 1:1048576 -compare
package main

import "github.com/shmpi/shmpi/benchmarks/internal/osu"

func main() { osu.RunPersistent(osu.Allgather()) }
