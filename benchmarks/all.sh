#!/usr/bin/env bash
# Runs every report and writes their figures, each with the references
# measured beside it, into one JSON file:
#
#   [QUICK=1] [OUT=file.json] benchmarks/all.sh
#
# The reports, in order: report.sh (the foundation: 8-byte latency and
# 4 MiB bandwidth against the hand-off, memcpy and the system MPI;
# failure detection; the 64-rank token ring), latency_report.sh
# (small-message latency classed by placement, small-message bandwidth
# and rate, line_protocols), coll_report.sh (collectives at 2 to 64
# ranks against the system MPI), coll_sweep.sh (seven collectives from
# 8 B to 1 MiB at 2 to 64 ranks against Open MPI), rma_report.sh (one-sided),
# ulfm_report.sh (agree, shrink, revoke, recovery),
# footprint_report.sh and c_report.sh (the C interface against the Go
# API and the system MPI, with the crossing's floors). Each one's -json output becomes a member of
# "reports" in OUT (default benchmarks/results/<UTC date and time>.json),
# and its text goes to OUT with .log for .json. Settings of the reports
# (ROUNDS, NS, ...) pass through the environment. QUICK=1 runs each with
# a round or two and few iterations, to check in a few minutes that
# everything works: its figures mean little. A full run took about an
# hour on 2 cores before coll_sweep.sh was added; the sweep's full run
# (3 rounds at 2, 8, 16 and 64 ranks, 8 B to 1 MiB) adds hours (not
# timed yet; NS, ROUNDS and ITERS_SCALE shorten it). tools/plot reads OUT
# (it draws no chart of the sweep yet).
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=${OUT:-benchmarks/results/$stamp.json}
log=${OUT%.json}.log
mkdir -p "$(dirname "$OUT")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# report NAME SCRIPT QUICK-SETTINGS...: runs one report into $tmp/NAME.json.
report() {
	local name=$1 script=$2
	shift 2
	echo "== $script ($(date -u +%H:%M:%S))" | tee -a "$log" >&2
	if [ "${QUICK:-0}" = 1 ]; then
		env "$@" "benchmarks/$script" -json >"$tmp/$name.json" 2>>"$log"
	else
		"benchmarks/$script" -json >"$tmp/$name.json" 2>>"$log"
	fi
}

: >"$log"
t0=$(date +%s)
report foundation report.sh ROUNDS=1 ITERS=5000 KILLS=3 RING_N=16 RING_LAPS=100
report latency latency_report.sh ROUNDS=1 ITERS=5000
report coll coll_report.sh ROUNDS=1 NS="2 8 64" ITERS_SCALE=20
report sweep coll_sweep.sh QUICK=1
report rma rma_report.sh ROUNDS=1
report ulfm ulfm_report.sh ROUNDS=1 NS="2 8" RECOVERY_RUNS=2 ITERS_SCALE=10
report footprint footprint_report.sh SIZES=2,64
report c c_report.sh ROUNDS=1
{
	printf '{"date": %s, "command": %s, "quick": %s, "seconds": %d, "system_mpi": ' \
		"$(jstr "$(date -u +%Y-%m-%dT%H:%M:%SZ)")" "$(jstr "$( [ "${QUICK:-0}" = 1 ] && printf 'QUICK=1 ')benchmarks/all.sh")" \
		"$( [ "${QUICK:-0}" = 1 ] && echo true || echo false)" $(($(date +%s) - t0))
	mpi=$(mpi_version)
	if [ -n "$mpi" ]; then jstr "$mpi"; else printf null; fi
	printf ',\n "reports": {'
	first=1
	for name in foundation latency coll sweep rma ulfm footprint c; do
		[ "$first" = 1 ] || printf ','
		first=0
		printf '\n"%s": ' "$name"
		cat "$tmp/$name.json"
	done
	printf '}}\n'
} >"$OUT"
echo "wrote $OUT (text in $log)" >&2
