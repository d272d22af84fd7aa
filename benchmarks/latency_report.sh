#!/usr/bin/env bash
# Small-message latency that cannot mislead: every latency run is paired
# with the cache-line hand-off measured right before and right after it
# (shm_limits -handoff, ≈60 ms), and kept only when the two agree (within
# 15 ns or 15%), because the host moves the two vCPUs between a near
# placement (hand-off ≈30 ns) and a far one (≈170 ns), sometimes within a
# second. Kept runs are classed by placement (near below 80 ns) and
# summarized per placement: medians of the latency, of the latency minus
# the hand-off around it (the software on top of the one transfer), and of
# their ratio.
#
#   [ROUNDS=9] [ITERS=50000] benchmarks/latency_report.sh [-json]
#
# Each round runs osu_latency (8 B to 8 KiB) at ThreadSingle and at the
# default level (ThreadMultiple), and the same loop against the system MPI
# if mpicc and mpirun are installed (benchmarks/ref/osu_latency.c), each
# between two hand-offs; then osu_bw at 1 to 64 B and the 1-byte message
# rate (osu_mbw_mr, one pair; 1,000 and 20,000 windows of 64), ours and
# the system MPI's; and once,
# line_protocols with 0 and 20 ns of work between receive and reply. With
# -json it prints every run and the summary as one JSON object, for
# plotting (small_messages: bandwidth in MB/s, rate in messages/s; the
# envelope is benchmarks/lib.sh's).
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline latency_report.sh ROUNDS ITERS)
ROUNDS=${ROUNDS:-9}
ITERS=${ITERS:-50000}
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log() { [ "$JSON" = 1 ] || echo "$@"; }

ompi=0
if have_mpi; then
	"$MPICC" -O2 -o "$tmp/ompi_latency" benchmarks/ref/osu_latency.c
	"$MPICC" -O2 -o "$tmp/ompi_bw" benchmarks/ref/osu_bw.c
	"$MPICC" -O2 -o "$tmp/ompi_mbw" benchmarks/ref/osu_mbw_mr.c
	ompi=1
fi
run_mpi() { "$MPIRUN" --allow-run-as-root --bind-to core -n 2 "$@" 2>/dev/null; }

# measure KIND CMD...: one latency run between two hand-offs; appends
# "kind hb ha lat8 lat1k lat8k" (ns) to runs.
measure() {
	local kind=$1
	shift
	local hb ha out
	hb=$(handoff)
	out=$("$@")
	ha=$(handoff)
	awk -v k="$kind" -v hb="$hb" -v ha="$ha" '
		$1==8 {a=$2*1000} $1==1024 {b=$2*1000} $1==8192 {c=$2*1000}
		END {printf "%s %s %s %.1f %.1f %.1f\n", k, hb, ha, a, b, c}' <<<"$out" >>"$tmp/runs"
}

for r in $(seq "$ROUNDS"); do
	measure ours_single bin/shmrun -n 2 bin/osu_latency -digits 4 -m 8:8192 -i "$ITERS" -x $((ITERS / 10))
	measure ours_default bin/shmrun -n 2 bin/osu_latency -digits 4 -t multiple -m 8:8192 -i "$ITERS" -x $((ITERS / 10))
	if [ "$ompi" = 1 ]; then
		measure ompi run_mpi "$tmp/ompi_latency" 8192 "$ITERS"
	fi
	bin/shmrun -n 2 bin/osu_bw -m 1:64 | awk '$1 ~ /^[0-9]+$/ {print "ours_bw", $1, $2}' >>"$tmp/bw"
	bin/shmrun -n 2 bin/osu_mbw_mr -m 1:1 -i 1000 | awk '$1==1 {print "ours_rate", 1, $3}' >>"$tmp/bw"
	bin/shmrun -n 2 bin/osu_mbw_mr -m 1:1 -i 20000 | awk '$1==1 {print "ours_rate20k", 1, $3}' >>"$tmp/bw"
	if [ "$ompi" = 1 ]; then
		run_mpi "$tmp/ompi_bw" 1 64 | awk '$1 ~ /^[0-9]+$/ && $1 >= 1 {print "ompi_bw", $1, $2}' >>"$tmp/bw"
		run_mpi "$tmp/ompi_mbw" 1 1 1000 | awk '$1==1 {print "ompi_rate", 1, $3}' >>"$tmp/bw"
		run_mpi "$tmp/ompi_mbw" 1 1 20000 | awk '$1==1 {print "ompi_rate20k", 1, $3}' >>"$tmp/bw"
	fi
	log "round $r done"
done
# What a message can cost in line moves once software sits between a
# receive and the reply (line_protocols: two pinned threads, a hand-off
# word, a one-line pair box and per-direction rings, with 0 and 20 ns of
# work): the floor the latencies above are judged against.
bin/line_protocols -runs 3 -trips 100000 -work 0,20 | awk '$1 ~ /^[0-9]+$/' >"$tmp/lp"

# Keep a run when its two hand-offs agree; class it by placement.
awk '{hb=$2; ha=$3; d=hb-ha; if (d<0) d=-d; lo=(hb<ha)?hb:ha
	keep = (d <= 15 || d <= 0.15*lo); h=(hb+ha)/2
	print $1, (h < 80 ? "near" : "far"), h, $4, $5, $6, keep}' "$tmp/runs" >"$tmp/classed"

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) printf "%.2f\n", a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
pick() { awk -v k="$1" -v p="$2" -v c="$3" '$1==k && $2==p && $7==1 {print $c}' "$tmp/classed" | median; }
pickexpr() { awk -v k="$1" -v p="$2" "\$1==k && \$2==p && \$7==1 {print $3}" "$tmp/classed" | median; }
count() { awk -v k="$1" -v p="$2" '$1==k && $2==p && $7==1' "$tmp/classed" | wc -l; }
dropped=$(awk '$7==0' "$tmp/classed" | wc -l)
bwmed() { awk -v k="$1" -v s="$2" '$1==k && $2==s {print $3}' "$tmp/bw" | median; }

kinds="ours_single ours_default"
[ "$ompi" = 1 ] && kinds="$kinds ompi"

if [ "$JSON" = 1 ]; then
	json_open latency "$command"
	printf ',\n "rounds": %d, "iters": %d, "dropped_runs": %d,\n "runs": [' "$ROUNDS" "$ITERS" "$dropped"
	awk 'NR>1 {printf ","} {printf "\n  {\"kind\":\"%s\",\"placement\":\"%s\",\"handoff_ns\":%s,\"lat8_ns\":%s,\"lat1k_ns\":%s,\"lat8k_ns\":%s,\"kept\":%s}", $1, $2, $3, $4, $5, $6, ($7?"true":"false")}' "$tmp/classed"
	printf '],\n "summary": ['
	first=1
	for p in near far; do
		for k in $kinds; do
			n=$(count "$k" "$p")
			[ "$n" -eq 0 ] && continue
			[ "$first" = 1 ] || printf ','
			first=0
			printf '\n  {"kind":"%s","placement":"%s","runs":%d,"handoff_ns":%s,"lat8_ns":%s,"lat1k_ns":%s,"lat8k_ns":%s,"lat8_minus_handoff_ns":%s,"lat8_over_handoff":%s}' \
				"$k" "$p" "$n" "$(pick "$k" "$p" 3)" "$(pick "$k" "$p" 4)" "$(pick "$k" "$p" 5)" "$(pick "$k" "$p" 6)" \
				"$(pickexpr "$k" "$p" '$4-$3')" "$(pickexpr "$k" "$p" '$4/$3')"
		done
	done
	printf '],\n "small_messages": ['
	first=1
	for k in ours_bw ompi_bw ours_rate ompi_rate ours_rate20k ompi_rate20k; do
		for s in 1 2 4 8 16 32 64; do
			v=$(bwmed "$k" "$s")
			[ "$v" = "-" ] && continue
			[ "$first" = 1 ] || printf ','
			first=0
			printf '\n  {"kind":"%s","size":%d,"value":%s}' "$k" "$s" "$v"
		done
	done
	printf '],\n "line_protocols": ['
	awk 'NR>1 {printf ","} {printf "\n  {\"work\":%s,\"work_ns\":%s,\"handoff_ns\":%s,\"box_ns\":%s,\"rings_ns\":%s,\"handoff_no_work_ns\":%s}", $1, $2, $3, $4, $5, $6}' "$tmp/lp"
	printf ']}\n'
	exit 0
fi

echo
echo "latency runs kept: $(awk '$7==1' "$tmp/classed" | wc -l) of $(wc -l <"$tmp/classed") (dropped: hand-offs before and after disagreed)"
printf "%-6s %-13s %5s %11s %9s %10s %10s %14s %12s\n" placement kind runs handoff_ns lat8_ns lat1k_ns lat8k_ns lat8-handoff lat8/handoff
for p in near far; do
	for k in $kinds; do
		n=$(count "$k" "$p")
		[ "$n" -eq 0 ] && continue
		printf "%-6s %-13s %5d %11s %9s %10s %10s %14s %12s\n" "$p" "$k" "$n" "$(pick "$k" "$p" 3)" "$(pick "$k" "$p" 4)" \
			"$(pick "$k" "$p" 5)" "$(pick "$k" "$p" 6)" "$(pickexpr "$k" "$p" '$4-$3')" "$(pickexpr "$k" "$p" '$4/$3')"
	done
done
echo
echo "osu_bw, small messages (MB/s, median over rounds):"
printf "%6s %12s %12s\n" size ours system_mpi
for s in 1 2 4 8 16 32 64; do
	printf "%6s %12s %12s\n" "$s" "$(bwmed ours_bw "$s")" "$(bwmed ompi_bw "$s")"
done
echo
echo "osu_mbw_mr, 1 pair, 1 B (messages/s, median over rounds), 1,000 windows: ours $(bwmed ours_rate 1), system MPI $(bwmed ompi_rate 1)"
echo "  20,000 windows (past the first garbage collection): ours $(bwmed ours_rate20k 1), system MPI $(bwmed ompi_rate20k 1)"
echo
echo "line_protocols, one-way ns with work between receive and reply (two pinned threads):"
printf "%6s %8s %9s %8s %8s %12s\n" work work_ns handoff box rings handoff_0
awk '{printf "%6s %8s %9s %8s %8s %12s\n", $1, $2, $3, $4, $5, $6}' "$tmp/lp"
