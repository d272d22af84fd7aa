#!/usr/bin/env bash
# The C interface against the Go API and the system MPI, interleaved:
# the same C programs (benchmarks/ref, OSU's loops) built once with
# bin/shmpicc and run on shmpi, and built with the system MPI's mpicc;
# the Go benchmarks of bin/ beside them; and the floors a call from C
# sits on (bin/cgo_floor: one crossing with warm caches, and with cold
# ones as 4 processes sharing a CPU leave them).
#
#   [ROUNDS=7] benchmarks/c_report.sh [-json]
#
# Each round: the hand-off; osu_latency 8 B (C, Go, system MPI, and C
# with SHMPI_C_FASTPATH=0: every call through Go, as before the C fast
# paths of MPI_Send and MPI_Recv);
# osu_allreduce 8 B at 2 ranks (C, Go, system MPI) and at 8 ranks (C,
# Go), each also with SHMPI_C_FASTPATH=0 (as before the fast
# collectives); osu_bw 4 MiB (C, Go); cgo_floor warm and -cold 4. The summary is
# the median of each figure and of each round's difference or ratio, and
# the 8-rank floor: the Go figure plus 4 ranks a core × 2 calls an
# iteration (the allreduce and the barrier after it) × the cold
# crossing's extra cost, over the Go figure.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline c_report.sh ROUNDS)
ROUNDS=${ROUNDS:-7}
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log() { [ "$JSON" = 1 ] || echo "$@"; }

bin/shmpicc -O2 -o "$tmp/c_latency" benchmarks/ref/osu_latency.c 2>/dev/null
bin/shmpicc -O2 -o "$tmp/c_bw" benchmarks/ref/osu_bw.c 2>/dev/null
bin/shmpicc -O2 -o "$tmp/c_coll" benchmarks/ref/osu_coll.c 2>/dev/null
ompi=0
if have_mpi; then
	"$MPICC" -O2 -o "$tmp/ompi_latency" benchmarks/ref/osu_latency.c
	"$MPICC" -O2 -o "$tmp/ompi_coll" benchmarks/ref/osu_coll.c
	ompi=1
fi
run_mpi() { "$MPIRUN" --allow-run-as-root --bind-to core -n "$@" 2>/dev/null; }
at() { awk -v s="$1" '$1==s {print $2}'; }

for r in $(seq "$ROUNDS"); do
	h=$(handoff)
	cl=$(bin/shmrun -n 2 "$tmp/c_latency" 8 20000 | at 8)
	cn=$(SHMPI_C_FASTPATH=0 bin/shmrun -n 2 "$tmp/c_latency" 8 20000 | at 8)
	gl=$(bin/shmrun -n 2 bin/osu_latency -m 8:8 -i 20000 -x 2000 | at 8)
	ol=-
	[ $ompi = 1 ] && ol=$(run_mpi 2 "$tmp/ompi_latency" 8 20000 | at 8)
	c2=$(bin/shmrun -n 2 "$tmp/c_coll" allreduce -m 8:8 -i 20000 -x 2000 | at 8)
	g2=$(bin/shmrun -n 2 bin/osu_allreduce -m 8:8 -i 20000 -x 2000 | at 8)
	o2=-
	[ $ompi = 1 ] && o2=$(run_mpi 2 "$tmp/ompi_coll" allreduce -m 8:8 -i 20000 -x 2000 | at 8)
	n2=$(SHMPI_C_FASTPATH=0 bin/shmrun -n 2 "$tmp/c_coll" allreduce -m 8:8 -i 20000 -x 2000 | at 8)
	c8=$(bin/shmrun -n 8 "$tmp/c_coll" allreduce -m 8:8 -i 5000 -x 500 | at 8)
	n8=$(SHMPI_C_FASTPATH=0 bin/shmrun -n 8 "$tmp/c_coll" allreduce -m 8:8 -i 5000 -x 500 | at 8)
	g8=$(bin/shmrun -n 8 bin/osu_allreduce -m 8:8 -i 5000 -x 500 | at 8)
	cb=$(bin/shmrun -n 2 "$tmp/c_bw" 4194304 4194304 | at 4194304)
	gb=$(bin/shmrun -n 2 bin/osu_bw -m 4194304:4194304 | at 4194304)
	warm=$(bin/cgo_floor -n 1000000 -r 3 | awk '{print $6}')
	cold=$(bin/cgo_floor -cold 4 -n 100000 -r 3 | awk '/C thread -> Go/ {a=$5} /Go -> Go/ {b=$4} END {print a-b}')
	echo "$h $cl $gl $ol $c2 $g2 $o2 $c8 $g8 $cb $gb $warm $cold $cn $n2 $n8" >>"$tmp/runs"
	log "round $r: hand-off $h ns | latency 8 B C $cl (through Go $cn) Go $gl sys $ol µs | allreduce 8 B 2 ranks C $c2 (through Go $n2) Go $g2 sys $o2, 8 ranks C $c8 (through Go $n8) Go $g8 µs | bw 4 MiB C $cb Go $gb MB/s | crossing warm $warm ns, cold $cold ns over a Go call"
done

# col N: the median of column N; expr EXPR [FORMAT]: the median of an
# awk expression over the columns, per round.
col() { awk -v n="$1" '$n != "-" {print $n}' "$tmp/runs" | median; }
expr() { awk -v f="${2:-%.3f}" "{printf f \"\\n\", $1}" "$tmp/runs" | median; }
lat_d=$(expr '($2-$3)*1000' %.0f)
ar2_d=$(expr '($5-$6)*1000' %.0f)
ar8_r=$(expr '$8/$9')
bw_r=$(expr '$10/$11')
floor8=$(expr '($9+8*$13/1000)/$9')
if [ "$JSON" = 0 ]; then
	echo
	echo "medians of $ROUNDS rounds (hand-off $(col 1) ns):"
	echo "  osu_latency 8 B: C $(col 2) µs (through Go: $(col 14) µs), Go $(col 3) µs, system MPI $(col 4) µs; C-Go $lat_d ns (warm crossing $(col 12) ns)"
	echo "  osu_allreduce 8 B, 2 ranks: C $(col 5) µs (through Go: $(col 15) µs), Go $(col 6) µs, system MPI $(col 7) µs; C-Go $ar2_d ns"
	echo "  osu_allreduce 8 B, 8 ranks: C $(col 8) µs (through Go: $(col 16) µs), Go $(col 9) µs; C/Go $ar8_r (through Go, floor $floor8: a cold crossing $(col 13) ns over a Go call)"
	echo "  osu_bw 4 MiB: C $(col 10) MB/s, Go $(col 11) MB/s; C/Go $bw_r"
	exit 0
fi
json_open c_report "$command"
printf ',\n "rounds": ['
awk 'NR > 1 {printf ","} {printf "\n  {\"handoff_ns\": %s, \"latency_us\": {\"c\": %s, \"c_through_go\": %s, \"go\": %s, \"system_mpi\": %s}, \"allreduce2_us\": {\"c\": %s, \"c_through_go\": %s, \"go\": %s, \"system_mpi\": %s}, \"allreduce8_us\": {\"c\": %s, \"c_through_go\": %s, \"go\": %s}, \"bw4m_mbs\": {\"c\": %s, \"go\": %s}, \"crossing_warm_ns\": %s, \"crossing_cold_extra_ns\": %s}", $1, $2, $14, $3, ($4=="-"?"null":$4), $5, $15, $6, ($7=="-"?"null":$7), $8, $16, $9, $10, $11, $12, $13}' "$tmp/runs"
printf '],\n "summary": {"latency_c_minus_go_ns": %s, "allreduce2_c_minus_go_ns": %s, "allreduce8_c_over_go": %s, "allreduce8_floor": %s, "bw4m_c_over_go": %s}}\n' \
	"$(jnum "$lat_d")" "$(jnum "$ar2_d")" "$(jnum "$ar8_r")" "$(jnum "$floor8")" "$(jnum "$bw_r")"
