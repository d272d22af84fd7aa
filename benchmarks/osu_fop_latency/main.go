// Command osu_fop_latency is OSU's osu_fop_latency on a shmpi window: rank 0 the
// origin, rank 1 the target; -s lock|flush|fence|pscw picks the
// synchronization (benchmarks/internal/osurma):
//
//	shmrun -n 2 ./osu_fop_latency -s flush
package main

import "github.com/shmpi/shmpi/benchmarks/internal/osurma"

func main() { osurma.Run(osurma.FopLatency) }
