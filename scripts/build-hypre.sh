#!/usr/bin/env bash
# Build hypre for `hooke bench pcs --peer hypre` (docs/BENCHMARKS.md, "The hypre peer").
#
#   scripts/build-hypre.sh HYPRE_SRC PREFIX [cuda|host]   (default cuda)
#
# HYPRE_SRC: hypre's source tree (the directory holding src/, e.g. a clone of
# github.com/hypre-space/hypre). Builds the static library, one process (no MPI, as the peer
# runs beside hooke in one process), on the GPU with hypre's own SpGEMM and CUDA's stream-ordered
# memory pool in place of Umpire (which hypre would otherwise download); for sm_90 unless
# CUDA_ARCH says otherwise. Then configure hooke with -DHOOKE_HYPRE_DIR=PREFIX.
# HYPRE_SKIP_STRUCT=1 leaves out hypre's structured-grid interfaces (struct/sstruct), which the
# peer does not use, and cuts the CUDA build by about 40 %.
set -euo pipefail
SRC=${1:?usage: scripts/build-hypre.sh HYPRE_SRC PREFIX [cuda|host]}
PREFIX=${2:?usage: scripts/build-hypre.sh HYPRE_SRC PREFIX [cuda|host]}
KIND=${3:-cuda}
[ -f "$SRC/src/CMakeLists.txt" ] || { echo "build-hypre.sh: $SRC has no src/CMakeLists.txt; give hypre's source tree" >&2; exit 2; }
case $KIND in
  cuda) GPU=(-DHYPRE_ENABLE_CUDA=ON -DHYPRE_ENABLE_UMPIRE=OFF -DHYPRE_ENABLE_DEVICE_MALLOC_ASYNC=ON
             -DHYPRE_ENABLE_THRUST_NOSYNC=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}") ;;
  host) GPU=() ;;
  *) echo "build-hypre.sh: the third argument is cuda or host, not '$KIND'" >&2; exit 2 ;;
esac
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r "$SRC/src" "$WORK/src"
if [ "${HYPRE_SKIP_STRUCT:-0}" = 1 ]; then
  sed -i 's/^set(HYPRE_DIRS struct_mv struct_ls sstruct_mv sstruct_ls /set(HYPRE_DIRS /' "$WORK/src/CMakeLists.txt"
fi
cmake -S "$WORK/src" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DHYPRE_ENABLE_MPI=OFF \
  -DBUILD_SHARED_LIBS=OFF -DCMAKE_INSTALL_PREFIX="$PREFIX" "${GPU[@]}"
cmake --build "$WORK/build" --parallel "${JOBS:-$(nproc)}"
cmake --install "$WORK/build"
echo "build-hypre.sh: installed in $PREFIX; configure hooke with -DHOOKE_HYPRE_DIR=$PREFIX"
