#!/usr/bin/env bash
# Measures the collectives side by side with the system MPI, in one
# session, and prints medians and the ratio ours/theirs per row:
#
#   [ROUNDS=3] [NS="2 8 64"] [WHAT=...] [TMO=180] [ITERS_SCALE=1] benchmarks/coll_report.sh [-json]
#   WHAT="barrier allreduce_8B" NS="8 16" ROUNDS=7 benchmarks/coll_report.sh
#
# For each job size N in NS and each of ROUNDS rounds it runs, each of
# ours followed at once by the same loop against the system MPI
# (benchmarks/ref/osu_coll.c, only if mpicc and mpirun are installed):
# osu_barrier, osu_allreduce at 8 B and at 1 MiB (float32 / MPI_FLOAT,
# sum), osu_bcast at 8 B, osu_alltoall at 8 B (per-rank blocks), and
# comm_create (Dup, Split(rank%2, rank) and Free, each in µs per call).
# Every figure is OSU's: the average over the ranks of each rank's mean
# time per call, in µs. The iteration counts fall with N (see counts
# below) so that 64 ranks on 2 cores finish. Each run is cut after TMO
# seconds (default 180). If one of ours fails, the script stops and
# prints the command and its output. ITERS_SCALE divides every iteration
# count (ITERS_SCALE=100 for a quick check that everything runs; its
# figures mean little). The cache-line hand-off is measured before and
# after the run. With -json the text goes to stderr and stdout gets one
# JSON object: every measurement, and per job size and row the medians,
# ours over the system MPI's (benchmarks/lib.sh has the envelope).
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline coll_report.sh ROUNDS NS WHAT TMO ITERS_SCALE)
ROUNDS=${ROUNDS:-3}
NS=${NS:-"2 8 64"}
# WHAT: the rows to measure, a subset of the default.
WHAT=${WHAT:-"barrier allreduce_8B allreduce_1MiB bcast_8B alltoall_8B comm_create"}
want() { [[ " $WHAT " == *" $1 "* ]]; }
TMO=${TMO:-180}
ITERS_SCALE=${ITERS_SCALE:-1}
if [ "$JSON" = 1 ]; then
	exec 3>&1 1>&2 # the text to stderr, the JSON to the original stdout
fi
t0=$(date +%s)
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ompi=0
if have_mpi; then
	"$MPICC" -O2 -o "$tmp/ompi_coll" benchmarks/ref/osu_coll.c
	ompi=1
else
	echo "$MPICC or $MPIRUN not installed: the system MPI columns are skipped"
fi
cores=$(nproc)

# counts N sets it (iterations of the small tests and of comm_create's
# loops: ic) and il (iterations at 1 MiB); warm-up is a tenth.
counts() {
	# Short runs leave start-up effects in the means: 200 iterations at
	# 16 ranks gave barrier 34-45 us against 17-27 with 2000
	# (2026-11-24); 10,000 at 2 ranks gave allreduce 8 B 0.26-0.44 us
	# against 0.22-0.29 with 100,000, and 2,000 at 8 ranks once a
	# barrier of 12.7 us against 5-7 (2026-11-25).
	if [ "$1" -le 2 ]; then
		it=100000 il=100 ic=1000
	elif [ "$1" -le 8 ]; then
		it=20000 il=50 ic=500
	elif [ "$1" -le 16 ]; then
		it=5000 il=20 ic=200
	else
		it=200 il=10 ic=50
	fi
	it=$(((it + ITERS_SCALE - 1) / ITERS_SCALE))
	il=$(((il + ITERS_SCALE - 1) / ITERS_SCALE))
	ic=$(((ic + ITERS_SCALE - 1) / ITERS_SCALE))
}

# ours N program args...: prints the program's output; stops the report
# if it fails.
ours() {
	local n=$1
	shift
	if ! bin/shmrun --timeout "${TMO}s" -n "$n" "bin/$1" "${@:2}" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAILED: bin/shmrun --timeout ${TMO}s -n $n bin/$*" >&2
		cat "$tmp/out" "$tmp/err" >&2
		exit 1
	fi
	cat "$tmp/out"
}

# theirs N mode args...: the same loop on the system MPI, bound to cores
# as shmrun binds (core when N <= cores, else none); nothing on failure.
theirs() {
	local n=$1 bind=none
	shift
	[ "$ompi" = 1 ] || return 0
	[ "$n" -le "$cores" ] && bind=core
	if ! timeout "$TMO" "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to "$bind" -n "$n" "$tmp/ompi_coll" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "system MPI failed: $MPIRUN -n $n osu_coll $*" >&2
		tail -5 "$tmp/err" >&2
		return 0
	fi
	cat "$tmp/out"
}

# pick KEY: the value of the row whose first field is KEY (the size, or
# dup_us...), or of the first row for KEY "-" (osu_barrier); "-" if none.
pick() { awk -v k="$1" '/^#/ {next} (k=="-" && NF==1) || $1==k {v=$NF; exit} END {print (v=="" ? "-" : v)}'; }

# row N ROUND NAME OURS THEIRS: records one measurement and shows it.
row() {
	printf "%-5s %-6s %-16s %14s %14s\n" "$@" | tee -a "$tmp/rows"
}

hand_before=$(handoff)
printf "%-5s %-6s %-16s %14s %14s\n" ranks round what ours_us system_us
for n in $NS; do
	counts "$n"
	x=$((it / 10)) xl=$(((il + 9) / 10)) xc=$(((ic + 9) / 10))
	for r in $(seq "$ROUNDS"); do
		if want barrier; then
			a=$(ours "$n" osu_barrier -i "$it" -x "$x" | pick -)
			b=$(theirs "$n" barrier -i "$it" -x "$x" | pick -)
			row "$n" "$r" barrier "$a" "$b"
		fi
		if want allreduce_8B; then
			a=$(ours "$n" osu_allreduce -m 8:8 -i "$it" -x "$x" | pick 8)
			b=$(theirs "$n" allreduce -m 8:8 -i "$it" -x "$x" | pick 8)
			row "$n" "$r" allreduce_8B "$a" "$b"
		fi
		if want allreduce_1MiB; then
			a=$(ours "$n" osu_allreduce -m 1048576:1048576 -il "$il" -xl "$xl" | pick 1048576)
			b=$(theirs "$n" allreduce -m 1048576:1048576 -il "$il" -xl "$xl" | pick 1048576)
			row "$n" "$r" allreduce_1MiB "$a" "$b"
		fi
		if want bcast_8B; then
			a=$(ours "$n" osu_bcast -m 8:8 -i "$it" -x "$x" | pick 8)
			b=$(theirs "$n" bcast -m 8:8 -i "$it" -x "$x" | pick 8)
			row "$n" "$r" bcast_8B "$a" "$b"
		fi
		if want alltoall_8B; then
			a=$(ours "$n" osu_alltoall -m 8:8 -i "$it" -x "$x" | pick 8)
			b=$(theirs "$n" alltoall -m 8:8 -i "$it" -x "$x" | pick 8)
			row "$n" "$r" alltoall_8B "$a" "$b"
		fi
		if want comm_create; then
			ours "$n" comm_create -i "$ic" -x "$xc" >"$tmp/cc_ours"
			theirs "$n" comm_create -i "$ic" -x "$xc" >"$tmp/cc_theirs"
			for k in dup_us split_us free_us; do
				row "$n" "$r" "${k%_us}" "$(pick "$k" <"$tmp/cc_ours")" "$(pick "$k" <"$tmp/cc_theirs")"
			done
		fi
	done
done

hand_after=$(handoff)
echo
echo "cache-line hand-off: $hand_before ns before the run, $hand_after ns after"
echo "medians over $ROUNDS rounds (µs per call; ratio = ours / system MPI):"
printf "%-5s %-16s %14s %14s %10s\n" ranks what ours_us system_us ratio
for n in $NS; do
	for w in barrier allreduce_8B allreduce_1MiB bcast_8B alltoall_8B dup split free; do
		grep -q "^$n *[0-9]* *$w " "$tmp/rows" || continue
		a=$(awk -v n="$n" -v w="$w" '$1==n && $3==w && $4!="-" {print $4}' "$tmp/rows" | median)
		b=$(awk -v n="$n" -v w="$w" '$1==n && $3==w && $5!="-" {print $5}' "$tmp/rows" | median)
		q=$(awk -v a="$a" -v b="$b" 'BEGIN {if (a=="-" || b=="-" || b+0==0) print "-"; else printf "%.2f", a/b}')
		printf "%-5s %-16s %14s %14s %10s\n" "$n" "$w" "$a" "$b" "$q"
		printf '%s %s %s %s %s\n' "$n" "$w" "$a" "$b" "$q" >>"$tmp/summary"
	done
done
counts 2
c2="$it/$il/$ic"
counts 8
c8="$it/$il/$ic"
counts 16
c16="$it/$il/$ic"
counts 64
echo
echo "iterations (small / 1 MiB / comm_create): N<=2 $c2, N<=8 $c8, N<=16 $c16, larger $it/$il/$ic; warm-up a tenth"
echo "took $(($(date +%s) - t0)) s"

[ "$JSON" = 1 ] || exit 0
{
	json_open coll "$command"
	printf ',\n "rounds": %d, "handoff_ns": {"before": %s, "after": %s},\n' "$ROUNDS" "$(jnum "$hand_before")" "$(jnum "$hand_after")"
	printf ' "iterations": {"ranks<=2": "%s", "ranks<=8": "%s", "ranks<=16": "%s", "larger": "%s"},\n' "$c2" "$c8" "$c16" "$it/$il/$ic"
	printf ' "rows": ['
	awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
		NR>1 {printf ","}
		{printf "\n  {\"ranks\":%s,\"round\":%s,\"what\":\"%s\",\"shmpi_us\":%s,\"ompi_us\":%s}", $1, $2, $3, n($4), n($5)}' "$tmp/rows"
	printf '],\n "summary": ['
	awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
		NR>1 {printf ","}
		{printf "\n  {\"ranks\":%s,\"what\":\"%s\",\"shmpi_us\":%s,\"ompi_us\":%s,\"ratio\":%s}", $1, $2, n($3), n($4), n($5)}' "$tmp/summary"
	printf ']}\n'
} >&3
