#!/bin/sh
# mpi4py.sh builds mpi4py (4.1 or newer, which knows the MPI 5.0 standard
# ABI) against shmpi's C library, with ULFM (Comm.Revoke, Agree, Shrink,
# Get_failed...) switched on, and puts the package in OUT:
#
#	cabi/mpi4py.sh [SRC]          # from the module's root
#	export PYTHONPATH=$PWD/bin/python
#	bin/shmrun -n 4 python3 -m mpi4py.bench helloworld
#
# SRC is an mpi4py source tree (a git checkout or an unpacked sdist); without
# it, the script downloads mpi4py's source with pip (pip download
# mpi4py==$MPI4PY_VERSION --no-binary :all:). Building needs a C compiler,
# Python's headers (Debian: python3-dev) and Cython >= 3.0.1: the one
# python3 imports, or a Cython source tree in CYTHON_SRC, which runs
# uncompiled (Debian 12's cython3 is 0.29, too old). Variables: PYTHON
# (python3), OUT (bin/python), MPI4PY_VERSION (4.1.2), CYTHON_SRC.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$root/bin/python}
MPI4PY_VERSION=${MPI4PY_VERSION:-4.1.2}
work=$(mktemp -d "${TMPDIR:-/tmp}/shmpi-mpi4py.XXXXXX")
trap 'rm -rf "$work"' EXIT

# shmpicc and shmrun; shmpicc builds libmpi_abi.so when it is missing.
(cd "$root" && go build -o bin/ ./cmd/shmpicc ./cmd/shmrun)
"$root/bin/shmpicc" -shmpi-lib >/dev/null

src=${1:-}
if [ -z "$src" ]; then
	"$PYTHON" -m pip download --no-deps --no-binary :all: -d "$work" "mpi4py==$MPI4PY_VERSION"
	tar xzf "$work"/mpi4py-*.tar.gz -C "$work"
	src=$(ls -d "$work"/mpi4py-*/)
fi
cp -r "$src" "$work/src"
cd "$work/src"
rm -rf build

if [ -n "${CYTHON_SRC:-}" ]; then
	PYTHONPATH=$CYTHON_SRC${PYTHONPATH:+:$PYTHONPATH}
	export PYTHONPATH
fi
if ! "$PYTHON" -c 'import Cython, sys; sys.exit(int(Cython.__version__.split(".")[0]) < 3)' 2>/dev/null; then
	echo "mpi4py.sh: mpi4py needs Cython >= 3.0.1 (pip install cython, or CYTHON_SRC=<a Cython source tree>)" >&2
	exit 1
fi

# mpi4py enables ULFM for Open MPI and MPICH by name; with the standard
# ABI it needs to be told which MPIX_ calls exist (mpix.h has them all).
ulfm="-include mpix.h"
for f in ERR_REVOKED ERR_PROC_FAILED ERR_PROC_FAILED_PENDING Comm_revoke Comm_is_revoked \
	Comm_agree Comm_iagree Comm_shrink Comm_ishrink Comm_get_failed Comm_ack_failed; do
	ulfm="$ulfm -DPyMPI_HAVE_MPIX_$f=1"
done
MPICC=$root/bin/shmpicc CFLAGS="$ulfm" "$PYTHON" setup.py -q build

mkdir -p "$OUT"
rm -rf "$OUT/mpi4py"
cp -r build/lib.*/mpi4py "$OUT/"
PYTHONPATH=$OUT "$root/bin/shmrun" -n 2 "$PYTHON" -m mpi4py.bench helloworld
echo "mpi4py.sh: mpi4py is in $OUT: export PYTHONPATH=$OUT"
