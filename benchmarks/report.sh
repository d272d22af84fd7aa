#!/usr/bin/env bash
# Measures the bars of the foundation side by side, in one session, and
# prints medians and ratios against references measured in the same run:
#
#   [ROUNDS=7] [ITERS=100000] [KILLS=25] [RING_N=64] [RING_LAPS=1000] benchmarks/report.sh [-json]
#
# Each round runs, interleaved: shm_limits (cache-line hand-off between
# two pinned processes, best single-thread memcpy), osu_latency at 8 B
# (thread levels single and multiple, ITERS iterations), osu_bw at 4 MiB
# (buffers from the Go heap, and from ranks.AllocMem) and, if mpicc and
# mpirun are installed, the same loops against the system MPI
# (benchmarks/ref). Then fail_detect (KILLS deaths per mode) and the
# token ring (RING_N ranks, RING_LAPS laps) once. With -json the text
# goes to stderr and stdout gets one JSON object: every round's figures
# with its references, the medians, the medians of the per-round ratios,
# fail_detect's (detection, and the dead process's teardown) and the
# ring's (benchmarks/lib.sh has the envelope).
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline report.sh ROUNDS ITERS KILLS RING_N RING_LAPS)
ROUNDS=${ROUNDS:-7}
ITERS=${ITERS:-100000} # ping-pong iterations for the 8-byte latency
KILLS=${KILLS:-25}
RING_N=${RING_N:-64}
RING_LAPS=${RING_LAPS:-1000}
if [ "$JSON" = 1 ]; then
	exec 3>&1 1>&2 # the text to stderr, the JSON to the original stdout
fi
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ompi=0
if have_mpi; then
	"$MPICC" -O2 -o "$tmp/ompi_latency" benchmarks/ref/osu_latency.c
	"$MPICC" -O2 -o "$tmp/ompi_bw" benchmarks/ref/osu_bw.c
	ompi=1
fi
run_mpi() { "$MPIRUN" --allow-run-as-root --bind-to core -n 2 "$@" 2>/dev/null; }

printf "%-6s %10s %12s %12s %10s %12s %10s %10s %12s %12s\n" round line_ns lat8_single lat8_multi bw4M_MBps memcpy4M_GBps ompi_lat8 ompi_bw4M bw4M_alloc memcpy1call
for r in $(seq "$ROUNDS"); do
	lim=$(bin/shm_limits -runs 3)
	line=$(awk '/^cacheline_oneway_ns/ {print $2}' <<<"$lim")
	mc=$(awk '/^memcpy_4MiB_GBps/ {print $2}' <<<"$lim")
	m1=$(awk '/^memcpy_4MiB_onecall_GBps/ {print $2}' <<<"$lim")
	ls=$(bin/shmrun -n 2 bin/osu_latency -digits 3 -m 8:8 -i "$ITERS" -x $((ITERS / 10)) | awk '$1==8 {print $2*1000}')
	lm=$(bin/shmrun -n 2 bin/osu_latency -digits 3 -t multiple -m 8:8 -i "$ITERS" -x $((ITERS / 10)) | awk '$1==8 {print $2*1000}')
	bw=$(bin/shmrun -n 2 bin/osu_bw -m 4194304:4194304 | awk '$1==4194304 {print $2}')
	ba=$(bin/shmrun -n 2 bin/osu_bw -mem alloc -m 4194304:4194304 | awk '$1==4194304 {print $2}')
	ol=- ob=-
	if [ "$ompi" = 1 ]; then
		ol=$(run_mpi "$tmp/ompi_latency" 8 "$ITERS" | awk '$1==8 {print $2*1000}')
		ob=$(run_mpi "$tmp/ompi_bw" 4194304 4194304 | awk '$1==4194304 {print $2}')
	fi
	printf "%-6s %10s %12s %12s %10s %12s %10s %10s %12s %12s\n" "$r" "$line" "$ls" "$lm" "$bw" "$mc" "$ol" "$ob" "$ba" "$m1" | tee -a "$tmp/rows"
done

col() { awk -v c="$1" '$c != "-" {print $c}' "$tmp/rows" | median; }
line=$(col 2) ls=$(col 3) lm=$(col 4) bw=$(col 5) mc=$(col 6) ba=$(col 9) m1=$(col 10)
# Per-round ratios, then their median: a round's figures share the host's state.
ratio() { awk -v a="$1" -v b="$2" -v k="$3" '$a != "-" && $b != "-" && $b+0 != 0 {printf "%.3f\n", $a/$b/k}' "$tmp/rows" | median; }
echo
echo "medians over $ROUNDS rounds:"
echo "  cache-line hand-off one-way      $line ns"
echo "  osu_latency 8 B (single)         $ls ns   ratio to hand-off $(awk -v a="$ls" -v b="$line" 'BEGIN {printf "%.2f", a/b}')"
echo "  osu_latency 8 B (multiple)       $lm ns   ratio to hand-off $(awk -v a="$lm" -v b="$line" 'BEGIN {printf "%.2f", a/b}')"
echo "  osu_bw 4 MiB                     $bw MB/s ratio to memcpy $(awk -v a="$bw" -v b="$mc" 'BEGIN {printf "%.2f", a/b/1000}') (memcpy $mc GB/s)"
echo "  osu_bw 4 MiB, -mem alloc         $ba MB/s ratio to memcpy $(awk -v a="$ba" -v b="$mc" 'BEGIN {printf "%.2f", a/b/1000}')"
echo "  median of per-round ratios to the hand-off: single $(ratio 3 2 1), multiple $(ratio 4 2 1)"
echo "  median of per-round ratios to memcpy: heap $(ratio 5 6 1000), alloc $(ratio 9 6 1000); to one copy() call ($m1 GB/s): heap $(ratio 5 10 1000), alloc $(ratio 9 10 1000)"
ol=- ob=-
if [ "$ompi" = 1 ]; then
	ol=$(col 7) ob=$(col 8)
	echo "  Open MPI latency 8 B             $ol ns   shmpi/OMPI $(awk -v a="$ls" -v b="$ol" 'BEGIN {printf "%.2f", a/b}') (single), $(awk -v a="$lm" -v b="$ol" 'BEGIN {printf "%.2f", a/b}') (multiple)"
	echo "  Open MPI bw 4 MiB                $ob MB/s shmpi/OMPI $(awk -v a="$bw" -v b="$ob" 'BEGIN {printf "%.2f", a/b}')"
fi
echo
bin/fail_detect -kills "$KILLS" | tee "$tmp/fail"
echo
bin/shmrun -n "$RING_N" bin/ring -laps "$RING_LAPS" | tee "$tmp/ring"

[ "$JSON" = 1 ] || exit 0
{
	json_open foundation "$command"
	printf ',\n "rounds": %d, "iters": %d,\n "rows": [' "$ROUNDS" "$ITERS"
	awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
		NR>1 {printf ","}
		{printf "\n  {\"round\":%s,\"handoff_ns\":%s,\"lat8_single_ns\":%s,\"lat8_multiple_ns\":%s,\"bw4M_make_MBps\":%s,\"memcpy4M_GBps\":%s,\"ompi_lat8_ns\":%s,\"ompi_bw4M_MBps\":%s,\"bw4M_alloc_MBps\":%s,\"memcpy4M_onecall_GBps\":%s}",
			$1, n($2), n($3), n($4), n($5), n($6), n($7), n($8), n($9), n($10)}' "$tmp/rows"
	printf '],\n "median": {"handoff_ns":%s,"lat8_single_ns":%s,"lat8_multiple_ns":%s,"bw4M_make_MBps":%s,"bw4M_alloc_MBps":%s,"memcpy4M_GBps":%s,"memcpy4M_onecall_GBps":%s,"ompi_lat8_ns":%s,"ompi_bw4M_MBps":%s},\n' \
		"$(jnum "$line")" "$(jnum "$ls")" "$(jnum "$lm")" "$(jnum "$bw")" "$(jnum "$ba")" "$(jnum "$mc")" "$(jnum "$m1")" "$(jnum "$ol")" "$(jnum "$ob")"
	printf ' "ratios": {"lat8_single_over_handoff":%s,"lat8_multiple_over_handoff":%s,"bw4M_make_over_memcpy":%s,"bw4M_alloc_over_memcpy":%s,"lat8_single_over_ompi":%s,"lat8_multiple_over_ompi":%s,"bw4M_make_over_ompi":%s,"bw4M_alloc_over_ompi":%s},\n' \
		"$(jnum "$(ratio 3 2 1)")" "$(jnum "$(ratio 4 2 1)")" "$(jnum "$(ratio 5 6 1000)")" "$(jnum "$(ratio 9 6 1000)")" \
		"$(jnum "$(ratio 3 7 1)")" "$(jnum "$(ratio 4 7 1)")" "$(jnum "$(ratio 5 8 1)")" "$(jnum "$(ratio 9 8 1)")"
	printf ' "fail_detect": ['
	awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
		/^(sigkill|exit) / {if (k++) printf ","; printf "\n  {\"mode\":\"%s\",\"kills\":%s,\"median_us\":%s,\"p10_us\":%s,\"p90_us\":%s,\"min_us\":%s,\"max_us\":%s}", $1, $2, n($3), n($4), n($5), n($6), n($7)}' "$tmp/fail"
	printf '],\n "teardown": ['
	awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
		/^teardown (sigkill|exit) / {if (k++) printf ","; printf "\n  {\"mode\":\"%s\",\"n\":%s,\"median_us\":%s,\"p10_us\":%s,\"p90_us\":%s}", $2, $3, n($4), n($5), n($6)}' "$tmp/fail"
	printf '],\n "ring": '
	awk -v n="$RING_N" -v laps="$RING_LAPS" '/^ring:/ {for (i = 1; i < NF; i++) if ($(i+1) == "µs") hop = $i
		printf "{\"ranks\":%d,\"laps\":%d,\"us_per_hop\":%s,\"seconds\":%.3f}", n, laps, hop, hop*n*laps/1e6}' "$tmp/ring"
	printf '}\n'
} >&3
