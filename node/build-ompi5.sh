#!/usr/bin/env bash
# Builds Open MPI 5 with ULFM (--with-ft=ulfm), the system MPI that node
# agents talk through between nodes (issue 27), from Debian's source
# package, and caches it outside the checkout. Debian 12's own Open MPI is
# 4.1 without ULFM; trixie's source package is 5.0.7, which bundles PMIx
# and PRRTE. It takes about 17-20 minutes on 2 vCPUs and is rebuilt only
# when the cached copy is missing.
#
#   node/build-ompi5.sh            # prints the prefix (its bin/ has mpirun, mpicc)
#   OMPI5_PREFIX=/opt/ompi5 node/build-ompi5.sh
#
# The tarball is checked against the SHA-256 that Debian's .dsc of that
# version lists (kept below, so that a changed download is refused).
set -euo pipefail

version=5.0.7
debian_rev=1
sha256=97f10c04e9b9a1771db3fd005009e4c07afa3ce739f940e41eb0fc7397cb9473
prefix=${OMPI5_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/shmpi/ompi5-$version}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ -x "$prefix/bin/mpirun" ] && [ -x "$prefix/bin/mpicc" ] && [ -f "$prefix/.complete" ]; then
	echo "$prefix"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tarball=openmpi_$version.orig.tar.xz
echo "build-ompi5: downloading $mirror/pool/main/o/openmpi/$tarball (Debian openmpi $version-$debian_rev)" >&2
curl -fsSL -o "$work/$tarball" "$mirror/pool/main/o/openmpi/$tarball"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet - >&2
tar -C "$work" -xJf "$work/$tarball"
cd "$work/openmpi-$version"
echo "build-ompi5: configure (log in $prefix.build.log)" >&2
mkdir -p "$(dirname "$prefix")"
{
	./configure --prefix="$prefix" --with-ft=ulfm \
		--with-pmix=internal --with-prrte=internal \
		--with-libevent=internal --with-hwloc=internal \
		--disable-mpi-fortran --disable-oshmem --disable-static \
		--enable-mca-no-build=btl-uct,pml-ucx,osc-ucx
	make -j"$(nproc)"
	make install
} >"$prefix.build.log" 2>&1 || {
	echo "build-ompi5: build failed; the last lines of $prefix.build.log:" >&2
	tail -30 "$prefix.build.log" >&2
	exit 1
}
touch "$prefix/.complete"
echo "$prefix"
