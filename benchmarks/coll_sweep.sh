#!/usr/bin/env bash
# Sweeps the collectives over message sizes and job sizes beside Open MPI
# in one session, and prints the medians, the ratio ours / Open MPI's
# per point and flags:
#
#   [ROUNDS=3] [NS="2 8 16 64"] [COLLS=...] [MIN=8] [MAX=1048576]
#   [ITERS_SCALE=1] [JOB_MEM=8589934592] [TMO=1800] [QUICK=1]
#   benchmarks/coll_sweep.sh [-json]
#
# For each of ROUNDS rounds, each job size N in NS and each collective in
# COLLS (default osu_allreduce osu_bcast osu_reduce osu_allgather
# osu_alltoall osu_gather osu_scatter) it runs ours (bin/shmrun -n N
# bin/osu_x -m MIN:MAX) and at once the same loop against Open MPI
# (benchmarks/ref/osu_coll.c under mpirun.openmpi --allow-run-as-root
# --oversubscribe, bound to cores as shmrun binds), so that the two
# alternate round by round. Every figure is OSU's: the average over the
# ranks of each rank's mean time per call, µs. Iterations fall with N
# (see counts below) so that 64 ranks on 2 cores finish; ITERS_SCALE
# divides them. -M is set so that a job's buffers stay within JOB_MEM
# bytes (two buffers of N blocks a rank at most: the all-to-all), both
# sides alike. Each run is cut after TMO seconds; a failed run of ours is
# reported and the sweep goes on (the script then exits 1). The
# cache-line hand-off is measured before and after.
#
# A point is flagged ">1" when ours is slower than Open MPI's (ratio of
# the medians above 1.0), and ">0.5" when its ratio is above 0.5 at up
# to 1 KiB at 8 to 64 ranks (where shared-memory lines should win by
# more than that). QUICK=1 is a check that everything runs (one round at
# 2 and 8 ranks, a fiftieth of the iterations): its figures mean little.
# KIND=nbc sweeps the nonblocking benchmarks instead (benchmarks/
# nbc_sweep.sh sets it): osu_iallreduce ... against ref/osu_nbc.c, with
# Overall, Pure Comm. and Overlap(%) per point, the flags on Pure Comm.
# With -json the text goes to stderr and stdout gets one JSON object
# (benchmarks/lib.sh has the envelope): every measurement (rows) and per
# point the medians, ratio and flag (summary).
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
KIND=${KIND:-blocking}
case "$KIND" in
blocking) script=coll_sweep.sh report=coll_sweep ref=osu_coll.c ;;
nbc) script=nbc_sweep.sh report=nbc_sweep ref=osu_nbc.c ;;
*)
	echo "KIND is blocking or nbc, not $KIND" >&2
	exit 2
	;;
esac
command=$(cmdline "$script" QUICK ROUNDS NS COLLS MIN MAX ITERS_SCALE JOB_MEM TMO)
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
	ROUNDS=${ROUNDS:-1} NS=${NS:-"2 8"} ITERS_SCALE=${ITERS_SCALE:-50}
fi
ROUNDS=${ROUNDS:-3}
NS=${NS:-"2 8 16 64"}
if [ "$KIND" = nbc ]; then
	COLLS=${COLLS:-"iallreduce ibcast ireduce iallgather ialltoall igather iscatter"}
	FIELDS="overall_us:2 pure_us:4 overlap_pct:5" # name:column of the program's rows
	KEY=pure_us                                   # the field the ratio and flags are about
else
	COLLS=${COLLS:-"allreduce bcast reduce allgather alltoall gather scatter"}
	FIELDS="lat_us:2"
	KEY=lat_us
fi
MIN=${MIN:-8}
MAX=${MAX:-1048576}
ITERS_SCALE=${ITERS_SCALE:-1}
JOB_MEM=${JOB_MEM:-8589934592}
TMO=${TMO:-1800}
if [ "$JSON" = 1 ]; then
	exec 3>&1 1>&2 # the text to stderr, the JSON to the original stdout
fi
t0=$(date +%s)
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ompi=0
if have_mpi; then
	"$MPICC" -O2 -o "$tmp/ref" "benchmarks/ref/$ref"
	ompi=1
	echo "system MPI: $(mpi_version) ($MPIRUN, $MPICC)"
else
	echo "$MPICC or $MPIRUN not installed: the Open MPI columns are skipped"
fi
cores=$(nproc)

# counts N sets it and il, the iterations up to 8 KiB and above (OSU's
# 1000 and 100 up to 8 ranks), and x and xl, the warm-up (a tenth).
counts() {
	if [ "$1" -le 8 ]; then
		it=1000 il=100
	elif [ "$1" -le 16 ]; then
		it=500 il=50
	else
		it=200 il=20
	fi
	it=$(((it + ITERS_SCALE - 1) / ITERS_SCALE))
	il=$(((il + ITERS_SCALE - 1) / ITERS_SCALE))
	x=$(((it + 9) / 10)) xl=$(((il + 9) / 10))
}

# memlimit N: -M for N ranks, the per-buffer limit that keeps two buffers
# of N blocks a rank within JOB_MEM (and within OSU's default 512 MiB).
memlimit() {
	local m=$((JOB_MEM / (2 * $1 * $1) * $1))
	[ "$m" -gt $((512 << 20)) ] && m=$((512 << 20))
	echo "$m"
}

failed=0
# ours N PROG OUT args...: runs bin/PROG into OUT; on failure says so and
# leaves OUT empty.
ours() {
	local n=$1 prog=$2 out=$3
	shift 3
	if ! bin/shmrun --timeout "${TMO}s" -n "$n" "bin/$prog" "$@" >"$out" 2>"$tmp/err"; then
		echo "FAILED: bin/shmrun --timeout ${TMO}s -n $n bin/$prog $*" | tee -a "$tmp/failures" >&2
		tail -5 "$tmp/err" >&2
		: >"$out"
		failed=$((failed + 1))
	fi
}

# theirs N MODE OUT args...: the same loop on Open MPI into OUT, bound to
# cores as shmrun binds (core when N <= cores, else none); empty on
# failure.
theirs() {
	local n=$1 mode=$2 out=$3 bind=none
	shift 3
	: >"$out"
	[ "$ompi" = 1 ] || return 0
	[ "$n" -le "$cores" ] && bind=core
	if ! timeout "$TMO" "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to "$bind" -n "$n" "$tmp/ref" "$mode" "$@" >"$out" 2>"$tmp/err"; then
		echo "Open MPI failed: $MPIRUN -n $n $ref $mode $*" | tee -a "$tmp/failures" >&2
		tail -5 "$tmp/err" >&2
		: >"$out"
	fi
}

# record N ROUND COLL: joins ours and theirs by size into rows, one line
# per field: N round coll size field ours theirs ("-" if missing).
record() {
	awk -v n="$1" -v r="$2" -v c="$3" -v fields="$FIELDS" '
		BEGIN {nf = split(fields, f, " "); for (i = 1; i <= nf; i++) {split(f[i], p, ":"); name[i] = p[1]; col[i] = p[2]}}
		FNR == 1 {file++}
		/^#/ || NF < 2 {next}
		{for (i = 1; i <= nf; i++) v[file == 1 ? "a" : "b", $1, i] = $col[i]; if (!($1 in seen)) {seen[$1] = 1; order[++ns] = $1}}
		END {for (s = 1; s <= ns; s++) for (i = 1; i <= nf; i++) {
			a = v["a", order[s], i]; b = v["b", order[s], i]
			printf "%s %s %s %s %s %s %s\n", n, r, c, order[s], name[i], (a == "" ? "-" : a), (b == "" ? "-" : b)}}
	' "$tmp/a" "$tmp/b" >>"$tmp/rows"
}

hand_before=$(handoff)
: >"$tmp/rows"
for r in $(seq "$ROUNDS"); do
	for n in $NS; do
		counts "$n"
		m=$(memlimit "$n")
		for c in $COLLS; do
			args=(-m "$MIN:$MAX" -i "$it" -x "$x" -il "$il" -xl "$xl" -M "$m")
			ours "$n" "osu_$c" "$tmp/a" "${args[@]}"
			theirs "$n" "$c" "$tmp/b" "${args[@]}"
			# a file awk sees as empty must still count as one: mark each
			echo "# end" >>"$tmp/a"
			echo "# end" >>"$tmp/b"
			record "$n" "$r" "$c"
			echo "round $r: $n ranks, $c: $(grep -c '^[0-9]' "$tmp/a") sizes ours, $(grep -c '^[0-9]' "$tmp/b") Open MPI ($(($(date +%s) - t0)) s)"
		done
	done
done
hand_after=$(handoff)

# The medians per point, the ratio of the medians and the flag.
awk '{print $1, $3, $4, $5}' "$tmp/rows" | awk '!seen[$0]++' >"$tmp/points"
: >"$tmp/summary"
while read -r n c s f; do
	a=$(awk -v n="$n" -v c="$c" -v s="$s" -v f="$f" '$1==n && $3==c && $4==s && $5==f && $6!="-" {print $6}' "$tmp/rows" | median)
	b=$(awk -v n="$n" -v c="$c" -v s="$s" -v f="$f" '$1==n && $3==c && $4==s && $5==f && $7!="-" {print $7}' "$tmp/rows" | median)
	q=- # a ratio of times only, not of overlaps
	[[ $f == *_us ]] && q=$(awk -v a="$a" -v b="$b" 'BEGIN {if (a=="-" || b=="-" || b+0==0) print "-"; else printf "%.2f", a/b}')
	flag=-
	if [ "$f" = "$KEY" ] && [ "$q" != - ]; then
		flag=$(awk -v q="$q" -v s="$s" -v n="$n" 'BEGIN {
			if (q > 1.0) print ">1"; else if (s <= 1024 && n >= 8 && n <= 64 && q > 0.5) print ">0.5"; else print "-"}')
	fi
	echo "$n $c $s $f $a $b $q $flag" >>"$tmp/summary"
done <"$tmp/points"

echo
echo "cache-line hand-off: $hand_before ns before the sweep, $hand_after ns after"
echo "system MPI: $( [ "$ompi" = 1 ] && echo "$(mpi_version) ($MPIRUN)" || echo none)"
echo "medians over $ROUNDS rounds (µs per call; ratio = ours / Open MPI; flag >1: ratio above 1.0,"
echo ">0.5: above 0.5 at up to 1 KiB at 8 to 64 ranks)"
if [ "$KIND" = nbc ]; then
	printf "%-5s %-12s %8s %-12s %12s %12s %7s %5s\n" ranks what size field ours ompi ratio flag
	awk '{printf "%-5s %-12s %8s %-12s %12s %12s %7s %5s\n", $1, $2, $3, $4, $5, $6, $7, ($8 == "-" ? "" : $8)}' "$tmp/summary"
else
	printf "%-5s %-12s %8s %12s %12s %7s %5s\n" ranks what size ours_us ompi_us ratio flag
	awk '{printf "%-5s %-12s %8s %12s %12s %7s %5s\n", $1, $2, $3, $5, $6, $7, ($8 == "-" ? "" : $8)}' "$tmp/summary"
fi
echo
echo "flagged points: $(awk '$8 != "-"' "$tmp/summary" | wc -l) of $(awk -v k="$KEY" '$4 == k' "$tmp/summary" | wc -l)"
awk '$8 != "-" {k[$1 " ranks, " $2] = k[$1 " ranks, " $2] " " $3 "(" $7 ")"} END {for (x in k) print "  " x ":" k[x]}' "$tmp/summary" | sort -n
c2= c16= c64=
counts 2 && c2="$it/$il"
counts 16 && c16="$it/$il"
counts 64 && c64="$it/$il"
echo "iterations (up to 8 KiB / above): N<=8 $c2, N<=16 $c16, larger $c64; warm-up a tenth; -M per N: $(for n in $NS; do printf '%s:%s ' "$n" "$(memlimit "$n")"; done)"
[ -s "$tmp/failures" ] && {
	echo "failed runs:"
	cat "$tmp/failures"
}
echo "took $(($(date +%s) - t0)) s"

if [ "$JSON" = 1 ]; then
	{
		json_open "$report" "$command"
		printf ',\n "mpirun": %s, "quick": %s, "rounds": %d, "handoff_ns": {"before": %s, "after": %s},\n' \
			"$( [ "$ompi" = 1 ] && jstr "$MPIRUN" || printf null)" "$( [ "$QUICK" = 1 ] && echo true || echo false)" \
			"$ROUNDS" "$(jnum "$hand_before")" "$(jnum "$hand_after")"
		printf ' "iterations": {"ranks<=8": "%s", "ranks<=16": "%s", "larger": "%s"}, "failed_runs": %d,\n' "$c2" "$c16" "$c64" "$failed"
		printf ' "rows": ['
		awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
			NR>1 {printf ","}
			{printf "\n  {\"ranks\":%s,\"round\":%s,\"what\":\"%s\",\"size\":%s,\"field\":\"%s\",\"shmpi\":%s,\"ompi\":%s}", $1, $2, $3, $4, $5, n($6), n($7)}' "$tmp/rows"
		printf '],\n "summary": ['
		awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
			NR>1 {printf ","}
			{printf "\n  {\"ranks\":%s,\"what\":\"%s\",\"size\":%s,\"field\":\"%s\",\"shmpi\":%s,\"ompi\":%s,\"ratio\":%s,\"flag\":%s}", $1, $2, $3, $4, n($5), n($6), n($7), ($8 == "-" ? "null" : "\"" $8 "\"")}' "$tmp/summary"
		printf ']}\n'
	} >&3
fi
[ "$failed" = 0 ]
