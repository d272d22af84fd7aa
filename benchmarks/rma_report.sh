#!/usr/bin/env bash
# One-sided figures against their references, paired in each round:
#
#   [ROUNDS=5] benchmarks/rma_report.sh [-json]
#
# Each round measures the cache-line hand-off (shm_limits -handoff) right
# before and right after the latency runs: Put+Flush 8 B and FetchAndOp
# 8 B (flush synchronization, AllocateShared windows), ours then Open
# MPI's (benchmarks/ref/osu_rma.c, MPI_Win_allocate) when mpicc and mpirun
# are installed. Then 4 MiB Put and Get bandwidth (flush), ours and Open
# MPI's, with one put per flush (-W 1: the same 4 MiB each time, as a
# memcpy benchmark copies) and with 64 (-W 64, OSU's window: 256 MiB of
# distinct displacements, streamed through memory), beside single-thread
# memcpy of 4 MiB and of 64 MiB (shm_limits) measured right before them.
# It prints each round and the medians, with the ratios the issue's bars
# name: latency over the hand-off around it, ours over Open MPI's, and
# Put bandwidth over memcpy. With -json the text goes to stderr and
# stdout gets one JSON object: every round, the medians and the ratios
# (benchmarks/lib.sh has the envelope).
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline rma_report.sh ROUNDS)
ROUNDS=${ROUNDS:-5}
if [ "$JSON" = 1 ]; then
	exec 3>&1 1>&2 # the text to stderr, the JSON to the original stdout
fi
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ompi=0
if have_mpi; then
	"$MPICC" -O2 -o "$tmp/osu_rma" benchmarks/ref/osu_rma.c
	ompi=1
fi
memcpy() { bin/shm_limits | awk '/^memcpy_4MiB_GBps/ {a = $2 * 1000} /^memcpy_64MiB_GBps/ {b = $2 * 1000} END {print a, b}'; }
ours() { bin/shmrun -n 2 "bin/$1" -s flush -digits 3 -m "$2:$2" ${3:+-W $3} | tail -1 | awk '{print $2}'; }
theirs() {
	if [ "$ompi" = 1 ]; then
		"$MPIRUN" --allow-run-as-root --bind-to core -n 2 "$tmp/osu_rma" "$1" flush "$2" "$3" ${4:-} 2>/dev/null | awk '{print $2}'
	else
		echo nan
	fi
}
med() { sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }
: >"$tmp/rows"
fmt='%-5s %7s %7s %7s %8s %7s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n'
printf "$fmt" round ho_pre ho_post put_ns put_ompi fop_ns fop_ompi mc_4M mc_64M put_w1 ompi_w1 put_w64 ompi_w64 get_w1 ompi_gw1
for k in $(seq "$ROUNDS"); do
	h0=$(handoff)
	put=$(ours osu_put_latency 8 | awk '{print $1 * 1000}')
	pomp=$(theirs put 8 20000 | awk '{print $1 * 1000}')
	fop=$(ours osu_fop_latency 8 | awk '{print $1 * 1000}')
	fomp=$(theirs fop 8 20000 | awk '{print $1 * 1000}')
	h1=$(handoff)
	read -r mc4 mc64 < <(memcpy)
	p1=$(ours osu_put_bw 4194304 1)
	p1o=$(theirs putbw 4194304 20 1)
	p64=$(ours osu_put_bw 4194304 64)
	p64o=$(theirs putbw 4194304 20 64)
	g1=$(ours osu_get_bw 4194304 1)
	g1o=$(theirs getbw 4194304 20 1)
	printf "$fmt" "$k" "$h0" "$h1" "$put" "$pomp" "$fop" "$fomp" "$mc4" "$mc64" "$p1" "$p1o" "$p64" "$p64o" "$g1" "$g1o" | tee -a "$tmp/rows"
done
col() { awk -v c="$1" '{print $c}' "$tmp/rows" | med; }
ratio() { awk -v a="$1" -v b="$2" '{ if ($b + 0 > 0) print $a / $b }' "$tmp/rows" | med; }
echo
echo "# medians over $ROUNDS rounds (latency in ns, bandwidth in MB/s); ratios are medians of per-round ratios"
echo "hand-off before/after: $(col 2) / $(col 3) ns"
echo "Put+Flush 8 B: $(col 4) ns = $(ratio 4 2)x the hand-off before; Open MPI $(col 5) ns (ours/theirs $(ratio 4 5))"
echo "FetchAndOp 8 B: $(col 6) ns = $(ratio 6 2)x the hand-off before; Open MPI $(col 7) ns (ours/theirs $(ratio 6 7))"
echo "memcpy 4 MiB / 64 MiB: $(col 8) / $(col 9) MB/s"
echo "Put 4 MiB, -W 1: $(col 10) MB/s = $(ratio 10 8)x memcpy 4 MiB; Open MPI $(col 11) MB/s (ours/theirs $(ratio 10 11))"
echo "Put 4 MiB, -W 64: $(col 12) MB/s = $(ratio 12 9)x memcpy 64 MiB; Open MPI $(col 13) MB/s (ours/theirs $(ratio 12 13))"
echo "Get 4 MiB, -W 1: $(col 14) MB/s = $(ratio 14 8)x memcpy 4 MiB; Open MPI $(col 15) MB/s (ours/theirs $(ratio 14 15))"

[ "$JSON" = 1 ] || exit 0
keys="round handoff_before_ns handoff_after_ns put8_ns ompi_put8_ns fop8_ns ompi_fop8_ns memcpy4M_MBps memcpy64M_MBps put4M_w1_MBps ompi_put4M_w1_MBps put4M_w64_MBps ompi_put4M_w64_MBps get4M_w1_MBps ompi_get4M_w1_MBps"
{
	json_open rma "$command"
	printf ',\n "rounds": %d,\n "rows": [' "$ROUNDS"
	awk -v keys="$keys" 'function n(v) {return (v == "-" || v == "" || v == "nan") ? "null" : v}
		BEGIN {nk = split(keys, k, " ")}
		NR>1 {printf ","}
		{printf "\n  {"; for (i = 1; i <= nk; i++) printf "%s\"%s\":%s", (i > 1 ? "," : ""), k[i], n($i); printf "}"}' "$tmp/rows"
	printf '],\n "median": {'
	i=0
	for k in $keys; do
		i=$((i + 1))
		[ "$i" = 1 ] && continue
		[ "$i" = 2 ] || printf ','
		printf '"%s":%s' "$k" "$(jnum "$(col "$i")")"
	done
	printf '},\n "ratios": {"put8_over_handoff":%s,"fop8_over_handoff":%s,"put8_over_ompi":%s,"fop8_over_ompi":%s,' \
		"$(jnum "$(ratio 4 2)")" "$(jnum "$(ratio 6 2)")" "$(jnum "$(ratio 4 5)")" "$(jnum "$(ratio 6 7)")"
	printf '"put4M_w1_over_memcpy4M":%s,"put4M_w64_over_memcpy64M":%s,"get4M_w1_over_memcpy4M":%s,' \
		"$(jnum "$(ratio 10 8)")" "$(jnum "$(ratio 12 9)")" "$(jnum "$(ratio 14 8)")"
	printf '"put4M_w1_over_ompi":%s,"put4M_w64_over_ompi":%s,"get4M_w1_over_ompi":%s}}\n' \
		"$(jnum "$(ratio 10 11)")" "$(jnum "$(ratio 12 13)")" "$(jnum "$(ratio 14 15)")"
} >&3
