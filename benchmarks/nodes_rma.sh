#!/usr/bin/env bash
# One-sided communication across nodes against the system MPI's own over
# the same transport, interleaved: two "nodes" on this machine, each an
# agent (cmd/shmnode) with one rank, the agents talking over TCP (--mca
# btl tcp,self); and benchmarks/ref/osu_rma.c as two processes of the
# system MPI with the one-sided component that goes through its
# point-to-point layer (--mca osc pt2pt, Open MPI 4.1): its default
# component (sm) and Open MPI 5's rdma do not cross TCP between two
# processes of one machine. Each node gets half the cores (-cores).
#
#   [ROUNDS=5] benchmarks/nodes_rma.sh [-json]
#
# Each round: the hand-off; osu_latency 8 B across nodes and with the MPI
# alone (the message the operations are made of); osu_put_latency,
# osu_get_latency and osu_acc_latency 8 B with MPI_Win_flush, and
# osu_put_latency with lock/unlock; osu_put_bw 8 B (64 Puts a flush) and
# 1 MiB (16). The summary is the median of each, and of each round's
# ratio to the MPI's.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline nodes_rma.sh ROUNDS)
ROUNDS=${ROUNDS:-5}
if ! have_mpi; then
	echo "nodes_rma.sh: needs an MPI (apt-get install openmpi-bin libopenmpi-dev)" >&2
	exit 1
fi
if ! ompi_info 2>/dev/null | grep -q "MCA osc: pt2pt"; then
	echo "nodes_rma.sh: needs Open MPI's osc pt2pt component (Open MPI 4.1: apt-get install openmpi-bin libopenmpi-dev)" >&2
	exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log() { [ "$JSON" = 1 ] || echo "$@"; }
CC=$(command -v "$MPICC") CGO_CFLAGS="-O2 -g -DSHMPI_MPICC=$(command -v "$MPICC")" go build -tags mpi -o "$tmp/shmnode" ./cmd/shmnode
"$MPICC" -O2 -o "$tmp/ref_latency" benchmarks/ref/osu_latency.c
"$MPICC" -O2 -o "$tmp/ref_rma" benchmarks/ref/osu_rma.c
cores=$(( $(nproc) / 2 ))
[ "$cores" -ge 1 ] || cores=1
mpi=("$MPIRUN" --oversubscribe --mca btl tcp,self -n 2)
nodes() { "${mpi[@]}" "$tmp/shmnode" -cores "$cores" -n 1 "$@" 2>/dev/null; }
alone() { "${mpi[@]}" --mca osc pt2pt "$@" 2>/dev/null; }
at() { awk -v s="$1" '$1==s {print $2}'; }

log "# RMA across 2 nodes (agents over TCP, 1 rank each, $cores cores a node) vs $(mpi_version) alone over TCP (osc pt2pt); $ROUNDS rounds; latencies in us, bandwidths in MB/s"
log "# round handoff_ns lat mpi_lat put mpi_put get mpi_get acc mpi_acc putlock mpi_putlock bw8 mpi_bw8 bw1M mpi_bw1M"
: >"$tmp/rounds"
for round in $(seq "$ROUNDS"); do
	h=$(handoff)
	lat=$(nodes bin/osu_latency -m 8:8 | at 8)
	mlat=$(alone "$tmp/ref_latency" 8 | at 8)
	put=$(nodes bin/osu_put_latency -s flush -m 8:8 -i 2000 | at 8)
	mput=$(alone "$tmp/ref_rma" put flush 8 2000 | at 8)
	get=$(nodes bin/osu_get_latency -s flush -m 8:8 -i 2000 | at 8)
	mget=$(alone "$tmp/ref_rma" get flush 8 2000 | at 8)
	acc=$(nodes bin/osu_acc_latency -s flush -m 8:8 -i 2000 | at 8)
	macc=$(alone "$tmp/ref_rma" acc flush 8 2000 | at 8)
	pl=$(nodes bin/osu_put_latency -s lock -m 8:8 -i 2000 | at 8)
	mpl=$(alone "$tmp/ref_rma" put lock 8 2000 | at 8)
	bw8=$(nodes bin/osu_put_bw -s flush -W 64 -m 8:8 -i 200 | at 8)
	mbw8=$(alone "$tmp/ref_rma" putbw flush 8 200 64 | at 8)
	bw1m=$(nodes bin/osu_put_bw -s flush -W 16 -m 1048576:1048576 -il 20 | at 1048576)
	mbw1m=$(alone "$tmp/ref_rma" putbw flush 1048576 20 16 | at 1048576)
	echo "$round $h $lat $mlat $put $mput $get $mget $acc $macc $pl $mpl $bw8 $mbw8 $bw1m $mbw1m" >>"$tmp/rounds"
	log "$(tail -1 "$tmp/rounds")"
done
med() { awk -v c="$1" '{print $c}' "$tmp/rounds" | median; }
# ratio A B: the median over rounds of column A / column B.
ratio() { awk -v a="$1" -v b="$2" '$b > 0 {printf "%.2f\n", $a / $b}' "$tmp/rounds" | median; }
names=(latency_8B put_8B get_8B acc_8B put_lock_8B put_bw_8B put_bw_1MiB)
if [ "$JSON" = 1 ]; then
	json_open nodes_rma "$command"
	printf ', "nodes": 2, "ranks_per_node": 1, "cores_per_node": %d, "transport": "tcp", "mpi_osc": "pt2pt", "rounds": %d, "handoff_ns": %s' \
		"$cores" "$ROUNDS" "$(jnum "$(med 2)")"
	for i in "${!names[@]}"; do
		c=$((3 + 2 * i))
		printf ',\n "%s": %s, "mpi_%s": %s, "%s_ratio": %s' "${names[$i]}" "$(jnum "$(med $c)")" \
			"${names[$i]}" "$(jnum "$(med $((c + 1)))")" "${names[$i]}" "$(jnum "$(ratio $c $((c + 1)))")"
	done
	printf '}\n'
else
	echo "# median: handoff $(med 2) ns"
	for i in "${!names[@]}"; do
		c=$((3 + 2 * i))
		echo "# median: ${names[$i]} $(med $c) vs $(med $((c + 1))) alone (ratio $(ratio $c $((c + 1))))"
	done
fi
