#!/usr/bin/env bash
# Measures the bars of the foundation side by side, in one session, and
# prints medians and ratios against references measured in the same run:
#
#   benchmarks/report.sh            (ROUNDS=5 by default)
#
# Each round runs, interleaved: shm_limits (cache-line hand-off between
# two pinned processes, best single-thread memcpy), osu_latency at 8 B
# (thread levels single and multiple, ITERS iterations), osu_bw at 4 MiB
# (buffers from the Go heap, and from ranks.AllocMem) and, if mpicc and
# mpirun are installed, the same loops against the system MPI
# (benchmarks/ref). Then fail_detect and the 64-rank token ring once.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
ITERS=${ITERS:-100000} # ping-pong iterations for the 8-byte latency
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ompi=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
	mpicc -O2 -o "$tmp/ompi_latency" benchmarks/ref/osu_latency.c
	mpicc -O2 -o "$tmp/ompi_bw" benchmarks/ref/osu_bw.c
	ompi=1
fi
run_mpi() { mpirun --allow-run-as-root --bind-to core -n 2 "$@" 2>/dev/null; }

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

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$1" '{print $c}' "$tmp/rows" | median; }
line=$(col 2) ls=$(col 3) lm=$(col 4) bw=$(col 5) mc=$(col 6) ba=$(col 9) m1=$(col 10)
# Per-round ratios, then their median: a round's figures share the host's state.
ratio() { awk -v a="$1" -v b="$2" -v k="$3" '{printf "%.3f\n", $a/$b/k}' "$tmp/rows" | median; }
echo
echo "medians over $ROUNDS rounds:"
echo "  cache-line hand-off one-way      $line ns"
echo "  osu_latency 8 B (single)         $ls ns   ratio to hand-off $(awk -v a="$ls" -v b="$line" 'BEGIN {printf "%.2f", a/b}')"
echo "  osu_latency 8 B (multiple)       $lm ns   ratio to hand-off $(awk -v a="$lm" -v b="$line" 'BEGIN {printf "%.2f", a/b}')"
echo "  osu_bw 4 MiB                     $bw MB/s ratio to memcpy $(awk -v a="$bw" -v b="$mc" 'BEGIN {printf "%.2f", a/b/1000}') (memcpy $mc GB/s)"
echo "  osu_bw 4 MiB, -mem alloc         $ba MB/s ratio to memcpy $(awk -v a="$ba" -v b="$mc" 'BEGIN {printf "%.2f", a/b/1000}')"
echo "  median of per-round ratios to the hand-off: single $(ratio 3 2 1), multiple $(ratio 4 2 1)"
echo "  median of per-round ratios to memcpy: heap $(ratio 5 6 1000), alloc $(ratio 9 6 1000); to one copy() call ($m1 GB/s): heap $(ratio 5 10 1000), alloc $(ratio 9 10 1000)"
if [ "$ompi" = 1 ]; then
	ol=$(col 7) ob=$(col 8)
	echo "  Open MPI latency 8 B             $ol ns   shmpi/OMPI $(awk -v a="$ls" -v b="$ol" 'BEGIN {printf "%.2f", a/b}') (single), $(awk -v a="$lm" -v b="$ol" 'BEGIN {printf "%.2f", a/b}') (multiple)"
	echo "  Open MPI bw 4 MiB                $ob MB/s shmpi/OMPI $(awk -v a="$bw" -v b="$ob" 'BEGIN {printf "%.2f", a/b}')"
fi
echo
bin/fail_detect -kills "${KILLS:-25}"
echo
bin/shmrun -n 64 bin/ring -laps 1000
