#!/usr/bin/env bash
# Runs the node agent's tests across "nodes" started by the system MPI's
# mpirun (node/mpirun_test.go): agents talk over TCP, as between real
# nodes. Installs Open MPI from Debian's packages when mpicc is missing
# (root only). Extra arguments go to go test (-run, -count, -v).
#
#   node/test-mpi.sh                       # the system's MPI (Open MPI 4.1 here)
#   MPI_PREFIX=$(node/build-ompi5.sh) node/test-mpi.sh   # Open MPI 5 with ULFM
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${MPI_PREFIX:-}" ]; then
	export PATH="$MPI_PREFIX/bin:$PATH"
	if "$MPI_PREFIX/bin/ompi_info" 2>/dev/null | grep -q "MPI extensions:.*ftmpi"; then
		export SHMPI_NODE_ULFM=1
	fi
elif ! command -v mpicc >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then
		echo "node/test-mpi.sh: needs an MPI (apt-get install openmpi-bin libopenmpi-dev)" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
# The compiler wrapper by its full path, and in the C flags: go's build
# cache does not hash the MPI's headers, so without these an object built
# against one MPI (without ULFM) would be reused for another.
mpicc_path=$(command -v mpicc)
export CC=$mpicc_path CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -DSHMPI_MPICC=$mpicc_path"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
go vet -tags mpi ./node ./cmd/shmnode
exec go test -tags mpi "$@" ./node
