#!/usr/bin/env bash
# Sweeps the nonblocking collectives (osu_iallreduce, osu_ibcast,
# osu_ireduce, osu_iallgather, osu_ialltoall, osu_igather, osu_iscatter)
# beside Open MPI's (benchmarks/ref/osu_nbc.c), as coll_sweep.sh sweeps
# the blocking ones, with the same settings:
#
#   [ROUNDS=3] [NS="2 8 16 64"] [COLLS=...] [MIN=8] [MAX=1048576]
#   [ITERS_SCALE=1] [JOB_MEM=8589934592] [TMO=1800] [QUICK=1]
#   benchmarks/nbc_sweep.sh [-json]
#
# Each point has OSU's Overall, Pure Comm. (the I-call and its Wait) and
# Overlap(%) for both; the ratio and flags are about Pure Comm.
# coll_sweep.sh has the details.
KIND=nbc exec "$(dirname "$0")/coll_sweep.sh" "$@"
