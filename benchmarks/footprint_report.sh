#!/usr/bin/env bash
# Memory footprint by job size:
#
#   [SIZES=2,64,256] benchmarks/footprint_report.sh [-json]
#
# bin/footprint starts a job of each size (it is its own launcher), has
# every rank send 8 bytes to every other, and reads each rank's RSS, PSS
# and resident segment pages from /proc; it prints the segment's size,
# the segment per rank, and per-rank medians (KiB). With -json the text
# goes to stderr and stdout gets one JSON object (benchmarks/lib.sh has
# the envelope). docs/design.md explains the segment's size per rank.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline footprint_report.sh SIZES)
SIZES=${SIZES:-2,64,256}
if [ "$JSON" = 1 ]; then
	exec 3>&1 1>&2 # the text to stderr, the JSON to the original stdout
fi
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin/footprint -n "$SIZES" | tee "$tmp/out"

[ "$JSON" = 1 ] || exit 0
{
	json_open footprint "$command"
	printf ',\n "rows": ['
	awk '/^[0-9]/ {if (k++) printf ","
		printf "\n  {\"ranks\":%s,\"segment_KiB\":%s,\"segment_per_rank_KiB\":%s,\"rss_KiB\":%s,\"pss_KiB\":%s,\"segment_touched_KiB\":%s,\"total_pss_MiB\":%s}", $1, $2, $3, $4, $5, $6, $7}' "$tmp/out"
	printf ']}\n'
} >&3
