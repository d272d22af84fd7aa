#!/usr/bin/env bash
# Across nodes against the system MPI's own transport, interleaved (issue
# 27's bar): two "nodes" on this machine, each an agent (cmd/shmnode)
# with one rank, the agents talking over TCP (--mca btl tcp,self); and
# the same loops in C (benchmarks/ref) as two processes of the system
# MPI over the same transport. Each node gets half the cores (-cores), as
# on one machine that plays two nodes.
#
#   [ROUNDS=5] [MPI_PREFIX=dir] benchmarks/nodes_report.sh [-json]
#
# MPI_PREFIX names another MPI (Open MPI 5: node/build-ompi5.sh);
# otherwise the system's mpicc and mpirun. Each round: the hand-off;
# osu_latency 8 B and osu_bw 4 MiB across nodes (Go ranks; osu_bw with
# heap buffers, as OSU's malloc, and with AllocMem ones, as
# MPI_Alloc_mem, whose bytes cross without a copy on either node) and
# with the MPI alone, and the latency floor of any design that forwards through a
# process beside each rank (ref/forward_floor.c: a rank and an agent per
# node, polling with sched_yield, the agents on the same MPI and TCP); osu_allreduce 8 B over 4 nodes of 8 ranks, against the bar's
# reference: the MPI's own allreduce over 4 processes on TCP plus shmpi's
# 8-rank allreduce on one node (shmrun), its floor (ref/allreduce_floor.c:
# 4 agents of 8 ranks, the ranks' values added in shared memory and the
# agents' sums by MPI_Allreduce, every waiter polling with sched_yield or
# sleeping on a futex, whichever is faster),
# and, for scale, the MPI's own allreduce over all 32 processes on TCP on
# the same cores; and how long a rank's SIGKILL
# takes to reach a rank of another node blocked on it (bin/node_fail, 2
# nodes of 2 ranks), beside the same on one node (bin/fail_detect, the
# median of 5 kills). The summary is the median of each, and of each
# round's ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline nodes_report.sh ROUNDS MPI_PREFIX)
ROUNDS=${ROUNDS:-5}
if [ -n "${MPI_PREFIX:-}" ]; then
	MPICC=$MPI_PREFIX/bin/mpicc MPIRUN=$MPI_PREFIX/bin/mpirun
	export PATH="$MPI_PREFIX/bin:$PATH"
fi
if ! have_mpi; then
	echo "nodes_report.sh: needs an MPI (apt-get install openmpi-bin libopenmpi-dev, or MPI_PREFIX)" >&2
	exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log() { [ "$JSON" = 1 ] || echo "$@"; }
# Go's build cache does not hash the MPI's headers: name the MPI in the C
# flags, so that an object built against another MPI is not reused.
CC=$(command -v "$MPICC") CGO_CFLAGS="-O2 -g -DSHMPI_MPICC=$(command -v "$MPICC")" go build -tags mpi -o "$tmp/shmnode" ./cmd/shmnode
"$MPICC" -O2 -o "$tmp/ref_latency" benchmarks/ref/osu_latency.c
"$MPICC" -O2 -o "$tmp/ref_bw" benchmarks/ref/osu_bw.c
"$MPICC" -O2 -o "$tmp/ref_coll" benchmarks/ref/osu_coll.c
"$MPICC" -O2 -o "$tmp/forward_floor" benchmarks/ref/forward_floor.c
"$MPICC" -O2 -o "$tmp/allreduce_floor" benchmarks/ref/allreduce_floor.c
cores=$(( $(nproc) / 2 ))
[ "$cores" -ge 1 ] || cores=1
mpi=("$MPIRUN" --oversubscribe --mca btl tcp,self -n 2)
nodes() { "${mpi[@]}" "$tmp/shmnode" -cores "$cores" -n 1 "$@" 2>/dev/null; }
alone() { "${mpi[@]}" "$@" 2>/dev/null; }
nodes_ft() { "${mpi[@]}" "$tmp/shmnode" -ft -cores "$cores" -n 2 "$@" 2>/dev/null || true; }
at() { awk -v s="$1" '$1==s {print $2}'; }

log "# across 2 nodes (agents over TCP, 1 rank each, $cores cores a node) vs $(mpi_version) alone over TCP; $ROUNDS rounds"
log "# round  handoff_ns  lat_us  mpi_lat_us  lat_ratio  bw_MBs  mpi_bw_MBs  bw_ratio  ar4x8_us  mpi_ar4_us  local_ar8_us  ar_ratio  detect_us  local_detect_us  mpi_ar32_us  ar32_ratio  floor_lat_us  lat_floor_ratio  floor_ar_us  ar_floor_ratio  bw_allocmem_MBs  bw_allocmem_ratio"
: >"$tmp/rounds"
for round in $(seq "$ROUNDS"); do
	h=$(handoff)
	lat=$(nodes bin/osu_latency -m 8:8 | at 8)
	mlat=$(alone "$tmp/ref_latency" 8 | at 8)
	flat=$(alone "$tmp/forward_floor" 10000 | at 8)
	bw=$(nodes bin/osu_bw -m 4194304:4194304 | at 4194304)
	bwa=$(nodes bin/osu_bw -mem alloc -m 4194304:4194304 | at 4194304)
	mbw=$(alone "$tmp/ref_bw" 4194304 4194304 | at 4194304)
	ar=$("$MPIRUN" --oversubscribe --mca btl tcp,self -n 4 "$tmp/shmnode" -cores 1 -n 8 bin/osu_allreduce -m 8:8 2>/dev/null | at 8)
	mar=$("$MPIRUN" --oversubscribe --mca btl tcp,self -n 4 "$tmp/ref_coll" allreduce -m 8:8 -i 2000 -x 200 2>/dev/null | at 8)
	lar=$(bin/shmrun -n 8 bin/osu_allreduce -m 8:8 | at 8)
	# The floor: the faster of its two ways of waiting.
	fary=$("$MPIRUN" --oversubscribe --mca btl tcp,self -n 4 "$tmp/allreduce_floor" 8 2000 2>/dev/null | at 8)
	farf=$("$MPIRUN" --oversubscribe --mca btl tcp,self -n 4 "$tmp/allreduce_floor" 8 2000 futex 2>/dev/null | at 8)
	far=$(awk -v a="$fary" -v b="$farf" 'BEGIN {print (a < b ? a : b)}')
	mar32=$("$MPIRUN" --oversubscribe --mca btl tcp,self -n 32 "$tmp/ref_coll" allreduce -m 8:8 -i 200 -x 20 2>/dev/null | at 8)
	det=$(nodes_ft bin/node_fail -t0 "$tmp/t0" | awk '/^detect_us/ {print $2}')
	ldet=$(bin/fail_detect -kills 5 2>/dev/null | awk '$1 == "sigkill" {print $3}')
	lr=$(awk -v a="$lat" -v b="$mlat" 'BEGIN {printf "%.2f", a / b}')
	br=$(awk -v a="$bw" -v b="$mbw" 'BEGIN {printf "%.2f", a / b}')
	bar=$(awk -v a="$bwa" -v b="$mbw" 'BEGIN {printf "%.2f", a / b}')
	arr=$(awk -v a="$ar" -v b="$mar" -v c="$lar" 'BEGIN {printf "%.2f", a / (b + c)}')
	ar32r=$(awk -v a="$ar" -v b="$mar32" 'BEGIN {printf "%.2f", a / b}')
	lfr=$(awk -v a="$lat" -v b="$flat" 'BEGIN {printf "%.2f", a / b}')
	afr=$(awk -v a="$ar" -v b="$far" 'BEGIN {printf "%.2f", a / b}')
	echo "$round $h $lat $mlat $lr $bw $mbw $br $ar $mar $lar $arr ${det:--} ${ldet:--} $mar32 $ar32r $flat $lfr $far $afr $bwa $bar" >>"$tmp/rounds"
	log "$(tail -1 "$tmp/rounds")"
done
med() { awk -v c="$1" '{print $c}' "$tmp/rounds" | median; }
if [ "$JSON" = 1 ]; then
	json_open nodes_report "$command"
	printf ', "nodes": 2, "ranks_per_node": 1, "cores_per_node": %d, "transport": "tcp", "rounds": %d,\n' "$cores" "$ROUNDS"
	printf ' "handoff_ns": %s, "latency_8B_us": %s, "mpi_latency_8B_us": %s, "latency_ratio": %s,\n' \
		"$(jnum "$(med 2)")" "$(jnum "$(med 3)")" "$(jnum "$(med 4)")" "$(jnum "$(med 5)")"
	printf ' "bw_4MiB_MBs": %s, "mpi_bw_4MiB_MBs": %s, "bw_ratio": %s,\n' \
		"$(jnum "$(med 6)")" "$(jnum "$(med 7)")" "$(jnum "$(med 8)")"
	printf ' "bw_4MiB_allocmem_MBs": %s, "bw_allocmem_ratio": %s,\n' "$(jnum "$(med 21)")" "$(jnum "$(med 22)")"
	printf ' "allreduce_8B_4x8_us": %s, "mpi_allreduce_8B_4_us": %s, "local_allreduce_8B_8_us": %s, "allreduce_ratio": %s,\n' \
		"$(jnum "$(med 9)")" "$(jnum "$(med 10)")" "$(jnum "$(med 11)")" "$(jnum "$(med 12)")"
	printf ' "mpi_allreduce_8B_32_us": %s, "allreduce_vs_mpi_32_ratio": %s,\n' "$(jnum "$(med 15)")" "$(jnum "$(med 16)")"
	printf ' "forward_floor_latency_8B_us": %s, "latency_vs_floor_ratio": %s,\n' "$(jnum "$(med 17)")" "$(jnum "$(med 18)")"
	printf ' "allreduce_floor_8B_4x8_us": %s, "allreduce_vs_floor_ratio": %s,\n' "$(jnum "$(med 19)")" "$(jnum "$(med 20)")"
	printf ' "detect_across_nodes_us": %s, "detect_one_node_us": %s}\n' "$(jnum "$(med 13)")" "$(jnum "$(med 14)")"
else
	echo "# median: handoff $(med 2) ns; latency 8 B $(med 3) us vs $(med 4) us alone (ratio $(med 5), bar <= 1.3); the forwarding floor $(med 17) us (ours / floor $(med 18)); bw 4 MiB $(med 6) vs $(med 7) MB/s (ratio $(med 8), bar >= 0.8), from AllocMem $(med 21) MB/s (ratio $(med 22))"
	echo "# median: allreduce 8 B 4x8 $(med 9) us vs $(med 10) + $(med 11) us (ratio $(med 12), bar <= 1.5); the floor $(med 19) us (ours / floor $(med 20)); the MPI alone over 32 processes on TCP $(med 15) us (ratio $(med 16))"
	echo "# median: a SIGKILL reaches another node's rank in $(med 13) us; on one node $(med 14) us"
fi
