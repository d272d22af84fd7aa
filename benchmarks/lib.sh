# Helpers the reports share (sourced, not run): medians, the hand-off
# reference, the system MPI, and the JSON envelope every report's -json
# output starts with, so that benchmarks/all.sh can combine them and
# tools/plot can read them.

# median: the median of the numbers on stdin, "-" if there are none.
median() {
	sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

# handoff: the one-way cache-line hand-off between two pinned processes
# (ns), the reference of every small-message figure; ≈60 ms.
handoff() { bin/shm_limits -handoff -runs 3 -trips 50000 | awk '/^cacheline_oneway_ns/ {print $2}'; }

# The system MPI the reports compare with: Open MPI's own commands when
# installed, since mpicc and mpirun are alternatives that may point at
# another MPI (MPICH is installed beside it on this machine kind), and the
# reports pass Open MPI's mpirun flags; else mpicc and mpirun.
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
	MPICC=mpicc.openmpi MPIRUN=mpirun.openmpi
else
	MPICC=mpicc MPIRUN=mpirun
fi

# have_mpi: whether the system MPI can be built against and run.
have_mpi() { command -v "$MPICC" >/dev/null && command -v "$MPIRUN" >/dev/null; }

# mpi_version: the system MPI's name and version ("Open MPI 4.1.4"), or
# nothing.
mpi_version() {
	have_mpi || return 0
	# "mpirun (Open MPI) 4.1.4", "mpirun.openmpi (OpenRTE) 4.1.4", or
	# MPICH's "HYDRA build details:" and a "Version:" line
	"$MPIRUN" --version 2>/dev/null | awk '
		NR == 1 && match($0, /\([^)]*\)/) {n = substr($0, RSTART + 1, RLENGTH - 2); if (n == "OpenRTE") n = "Open MPI"; print n, $NF; exit}
		/^HYDRA/ {hydra = 1}
		hydra && $1 == "Version:" {print "MPICH", $2; exit}'
}

# jnum V: V as a JSON number, or null for "-", "nan" or nothing.
jnum() {
	case "${1:-}" in
	"" | - | nan | NaN) printf null ;;
	*) printf '%s' "$1" ;;
	esac
}

# jstr S: S as a JSON string.
jstr() {
	printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# cmdline SCRIPT VAR...: the command that reproduces this run, with the
# variables that were set.
cmdline() {
	local script=$1 v out=""
	shift
	for v in "$@"; do
		[ -n "${!v+x}" ] || continue
		if [[ ${!v} =~ ^[A-Za-z0-9._/:,@-]*$ ]]; then
			out+="$v=${!v} "
		else
			out+="$v=\"${!v}\" "
		fi
	done
	printf '%sbenchmarks/%s -json' "$out" "$script"
}

# json_open REPORT COMMAND: prints the envelope's opening and its common
# fields (what, when, where, against what); the report prints its own
# fields after a comma and closes the object.
json_open() {
	local mpi
	mpi=$(mpi_version)
	printf '{"report": %s, "date": %s, "command": %s,\n' "$(jstr "$1")" "$(jstr "$(date -u +%Y-%m-%dT%H:%M:%SZ)")" "$(jstr "$2")"
	printf ' "host": {"cpu": %s, "cpus": %d, "kernel": %s, "go": %s},\n' \
		"$(jstr "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)")" "$(nproc)" \
		"$(jstr "$(uname -r)")" "$(jstr "$(go env GOVERSION)")"
	if [ -n "$mpi" ]; then
		printf ' "system_mpi": %s' "$(jstr "$mpi")"
	else
		printf ' "system_mpi": null'
	fi
}
