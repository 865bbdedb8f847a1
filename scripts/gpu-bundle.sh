#!/usr/bin/env bash
# Make the bundle that lets Hooke build on an air-gapped GPU host (see docs/gpu-host.md).
#
# The host has a compiler, CMake, CUDA and the runtime of libxml2 and zlib, but no CUnit,
# libfyaml, Gmsh or development headers, and reaches no package registry. This script runs on a
# machine WITH package access and writes everything the host lacks into one folder (default
# .bundle/, ignored by git), about 45 MB:
#   debs/   Debian packages, to be unpacked (never installed) into a private prefix
#   gmsh/   the Gmsh SDK wheel from PyPI (one self-contained libgmsh.so + gmshc.h)
# scripts/gpu-check.sh unpacks it on the host, builds, tests and benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
OUTDIR=${1:-.bundle}
GMSH_VERSION=${GMSH_VERSION:-4.9.5}   # C API of Debian's 4.8 plus additions; see docs/gpu-host.md
mkdir -p "$OUTDIR/debs" "$OUTDIR/gmsh"

# Headers and libraries of the build, and the X11/GL libraries that libgmsh.so links to.
pkgs=(libfyaml0 libfyaml-dev libcunit1 libcunit1-dev libxml2-dev zlib1g-dev liblz4-1 liblz4-dev
      libglu1-mesa libgl1 libglx0 libopengl0 libglvnd0 libxrender1 libxcursor1 libxfixes3
      libxft2 libfontconfig1 libxinerama1 libx11-6 libfreetype6 libexpat1 libxext6 libxcb1
      libpng16-16 libbrotli1 libxau6 libxdmcp6 libbsd0 libmd0
      libsuitesparse-dev libcholmod3 libamd2 libcolamd2 libcamd2 libccolamd2
      libsuitesparseconfig5 libmetis5 libopenblas0-pthread libgfortran5 libquadmath0
      libmetis-dev)
# (CHOLMOD for method=cholesky, with the threaded OpenBLAS as its BLAS and LAPACK; METIS's
# headers for the partitions of distributed runs: the host has Open MPI with its headers)
if ! ls "$OUTDIR"/debs/libcholmod3_*.deb "$OUTDIR"/debs/liblz4-dev_*.deb \
        "$OUTDIR"/debs/libmetis-dev_*.deb >/dev/null 2>&1; then
  (cd "$OUTDIR/debs" && apt-get download "${pkgs[@]}" >/dev/null)
fi
if ! ls "$OUTDIR"/gmsh/gmsh-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux1_x86_64 --platform manylinux2014_x86_64 \
    -d "$OUTDIR/gmsh" "gmsh==$GMSH_VERSION"
fi
du -sh "$OUTDIR"
