#!/usr/bin/env bash
# The fault-tolerance calls beside their references, in one session:
#
#   [ROUNDS=3] [NS="2 8 16 64"] [RECOVERY_RUNS=7] [ITERS_SCALE=1] [TMO=300] benchmarks/ulfm_report.sh [-json]
#
# For each job size N in NS and each of ROUNDS rounds: ulfm_agree (Agree
# beside a Barrier on the same communicator, interleaved), ulfm_shrink
# (Shrink+Free beside Dup+Free) and ulfm_revoke (from Revoke until the
# last member asleep in a Recv returns ErrRevoked), whose floor is the
# kernel's: benchmarks/ref/futex_wake_all.c, N-1 processes asleep on one
# futex word woken at once, measured in the same round; where N is at
# most the cores, also ulfm_revoke -spinning (the members still poll,
# as ranks that do not outnumber cores do before they sleep; spinrev).
# Then, RECOVERY_RUNS
# times, ulfm_recovery under shmrun --ft with rank N-1 killed 300 ms after
# Init: the phases at the slowest survivor, from the failure's
# declaration to the first allreduce on the shrunk communicator. The
# cache-line hand-off is measured before and after. ITERS_SCALE divides
# the iteration counts (for a quick check; its figures mean little). Each
# run is cut after TMO seconds. Open MPI 5 with ULFM is not run here (the
# system MPI of the other reports has no ULFM); docs/performance.md has
# its figures on this machine kind. With -json the text goes to stderr and
# stdout gets one JSON object (benchmarks/lib.sh has the envelope).
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/lib.sh
JSON=0
[ "${1:-}" = "-json" ] && JSON=1
command=$(cmdline ulfm_report.sh ROUNDS NS RECOVERY_RUNS ITERS_SCALE TMO)
ROUNDS=${ROUNDS:-3}
NS=${NS:-"2 8 16 64"}
RECOVERY_RUNS=${RECOVERY_RUNS:-7}
ITERS_SCALE=${ITERS_SCALE:-1}
TMO=${TMO:-300}
if [ "$JSON" = 1 ]; then
	exec 3>&1 1>&2 # the text to stderr, the JSON to the original stdout
fi
go build -o bin/ ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
floor=0
if command -v cc >/dev/null && cc -O2 -o "$tmp/futex_wake_all" benchmarks/ref/futex_wake_all.c; then
	floor=1
fi
scale() { echo $((($1 + ITERS_SCALE - 1) / ITERS_SCALE)); }

# run N [shmrun flags...] -- program args...: the program's output; stops
# the report if it fails.
run() {
	local n=$1
	shift
	local flags=()
	while [ "$1" != "--" ]; do
		flags+=("$1")
		shift
	done
	shift
	if ! bin/shmrun --timeout "${TMO}s" "${flags[@]}" -n "$n" "bin/$1" "${@:2}" >"$tmp/out" 2>"$tmp/err"; then
		if [ "${flags[0]:-}" != "--ft" ] || ! grep -q '^[0-9]' "$tmp/out"; then
			echo "FAILED: bin/shmrun --timeout ${TMO}s ${flags[*]} -n $n bin/$*" >&2
			cat "$tmp/out" "$tmp/err" >&2
			exit 1
		fi
	fi
	cat "$tmp/out"
}
# row: the first line that starts with a number.
row() { awk '/^[0-9]/ {print; exit}'; }

hand_before=$(handoff)
printf "%-5s %-5s %10s %10s %6s %10s %10s %6s %10s %10s %10s\n" ranks round agree_us barrier_us ratio shrink_us dup_us ratio revoke_us floor_us spinrev_us | tee "$tmp/head"
for n in $NS; do
	for r in $(seq "$ROUNDS"); do
		read -r _ ag _ ba _ agr _ _ < <(run "$n" -- ulfm_agree -i "$(scale 500)" -x "$(scale 50)" | row)
		read -r _ sh _ du _ shr < <(run "$n" -- ulfm_shrink -i "$(scale 200)" -x "$(scale 20)" | row)
		if [ "$n" -gt 1 ]; then
			read -r _ rv _ < <(run "$n" -- ulfm_revoke -i "$(scale 30)" | row)
		else
			rv=-
		fi
		# The revoke reaching members that still spin: only where ranks
		# do not outnumber cores (others never spin).
		rvs=-
		if [ "$n" -gt 1 ] && [ "$n" -le "$(nproc)" ]; then
			read -r _ rvs _ < <(run "$n" -- ulfm_revoke -spinning -i "$(scale 200)" | row)
		fi
		fl=-
		if [ "$floor" = 1 ] && [ "$n" -gt 1 ] && [ "$n" -le 65 ]; then
			fl=$("$tmp/futex_wake_all" $((n - 1)) "$(scale 30)" | awk '{for (i = 1; i < NF; i++) if ($i == "median") print $(i+1)}')
		fi
		printf "%-5s %-5s %10s %10s %6s %10s %10s %6s %10s %10s %10s\n" "$n" "$r" "$ag" "$ba" "$agr" "$sh" "$du" "$shr" "$rv" "$fl" "$rvs" | tee -a "$tmp/rows"
	done
done
echo
printf "%-5s %-5s %9s %9s %9s %9s %12s %9s\n" ranks run error_us revoke_us agree_us shrink_us allreduce_us total_us
for n in $NS; do
	[ "$n" -ge 2 ] || continue
	for k in $(seq "$RECOVERY_RUNS"); do
		read -r _ e rv ag sh al to < <(run "$n" --ft --kill "$((n - 1))@300ms" -- ulfm_recovery | row)
		printf "%-5s %-5s %9s %9s %9s %9s %12s %9s\n" "$n" "$k" "$e" "$rv" "$ag" "$sh" "$al" "$to" | tee -a "$tmp/rec"
	done
done
hand_after=$(handoff)

# medians per job size
med() { awk -v n="$1" -v c="$2" '$1==n && $c != "-" {print $c}' "$3" | median; }
echo
echo "cache-line hand-off: $hand_before ns before, $hand_after ns after"
echo "medians over $ROUNDS rounds (µs); recovery: medians over $RECOVERY_RUNS runs"
printf "%-5s %10s %10s %10s %10s %10s %10s %10s %12s\n" ranks agree barrier shrink dup revoke floor spinrev recovery
touch "$tmp/rec"
for n in $NS; do
	printf "%-5s %10s %10s %10s %10s %10s %10s %10s %12s\n" "$n" "$(med "$n" 3 "$tmp/rows")" "$(med "$n" 4 "$tmp/rows")" \
		"$(med "$n" 6 "$tmp/rows")" "$(med "$n" 7 "$tmp/rows")" "$(med "$n" 9 "$tmp/rows")" "$(med "$n" 10 "$tmp/rows")" \
		"$(med "$n" 11 "$tmp/rows")" "$(med "$n" 8 "$tmp/rec")"
done

[ "$JSON" = 1 ] || exit 0
{
	json_open ulfm "$command"
	printf ',\n "rounds": %d, "recovery_runs": %d, "handoff_ns": {"before": %s, "after": %s},\n "rows": [' \
		"$ROUNDS" "$RECOVERY_RUNS" "$(jnum "$hand_before")" "$(jnum "$hand_after")"
	awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
		NR>1 {printf ","}
		{printf "\n  {\"ranks\":%s,\"round\":%s,\"agree_us\":%s,\"barrier_us\":%s,\"agree_over_barrier\":%s,\"shrink_us\":%s,\"dup_us\":%s,\"shrink_over_dup\":%s,\"revoke_us\":%s,\"futex_floor_us\":%s,\"revoke_spinning_us\":%s}",
			$1, $2, n($3), n($4), n($5), n($6), n($7), n($8), n($9), n($10), n($11)}' "$tmp/rows"
	printf '],\n "recovery": ['
	awk 'function n(v) {return (v == "-" || v == "") ? "null" : v}
		NR>1 {printf ","}
		{printf "\n  {\"ranks\":%s,\"run\":%s,\"error_us\":%s,\"revoke_us\":%s,\"agree_us\":%s,\"shrink_us\":%s,\"allreduce_us\":%s,\"total_us\":%s}",
			$1, $2, n($3), n($4), n($5), n($6), n($7), n($8)}' "$tmp/rec"
	printf '],\n "summary": ['
	first=1
	for n in $NS; do
		[ "$first" = 1 ] || printf ','
		first=0
		printf '\n  {"ranks":%s,"agree_us":%s,"barrier_us":%s,"agree_over_barrier":%s,"shrink_us":%s,"dup_us":%s,"shrink_over_dup":%s,"revoke_us":%s,"futex_floor_us":%s,"revoke_spinning_us":%s,' "$n" \
			"$(jnum "$(med "$n" 3 "$tmp/rows")")" "$(jnum "$(med "$n" 4 "$tmp/rows")")" "$(jnum "$(med "$n" 5 "$tmp/rows")")" \
			"$(jnum "$(med "$n" 6 "$tmp/rows")")" "$(jnum "$(med "$n" 7 "$tmp/rows")")" "$(jnum "$(med "$n" 8 "$tmp/rows")")" \
			"$(jnum "$(med "$n" 9 "$tmp/rows")")" "$(jnum "$(med "$n" 10 "$tmp/rows")")" "$(jnum "$(med "$n" 11 "$tmp/rows")")"
		printf '"recovery_error_us":%s,"recovery_revoke_us":%s,"recovery_agree_us":%s,"recovery_shrink_us":%s,"recovery_allreduce_us":%s,"recovery_total_us":%s}' \
			"$(jnum "$(med "$n" 3 "$tmp/rec")")" "$(jnum "$(med "$n" 4 "$tmp/rec")")" "$(jnum "$(med "$n" 5 "$tmp/rec")")" \
			"$(jnum "$(med "$n" 6 "$tmp/rec")")" "$(jnum "$(med "$n" 7 "$tmp/rec")")" "$(jnum "$(med "$n" 8 "$tmp/rec")")"
	done
	printf ']}\n'
} >&3
