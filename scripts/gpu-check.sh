#!/usr/bin/env bash
# Build Hooke (Release, CUDA) on the GPU host from the bundle, run the test suites and the
# benchmarks, and write logs, JSON and tables into OUTDIR.
#
#   scripts/gpu-check.sh OUTDIR [what ...]
#     what: build (always), info, tests[=suite,suite], bench[=spmv,cg,...], run=CASE.yaml
#     default: info tests bench
# Environment: BUNDLE (default .bundle), PREFIX (default /tmp/hooke-prefix), BUILD (build-gpu),
# CUDA_ARCH (default 90), HOOKE_CMAKE_EXTRA (more configure arguments, e.g.
# -DCHOLMOD_LIBRARY=OFF for a bundle without CHOLMOD's BLAS). BUNDLE/hypre.tar.xz (or .gz), when there, is a hypre install for the peer of
# `hooke bench pcs --peer hypre`.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/gpu-check.sh OUTDIR [what ...]}
shift
mkdir -p "$OUT"
WHAT=("$@")
[ ${#WHAT[@]} -gt 0 ] || WHAT=(info tests bench)
BUNDLE=${BUNDLE:-.bundle}
P=${PREFIX:-/tmp/hooke-prefix}
BUILD=${BUILD:-build-gpu}
SYS=/usr/lib/x86_64-linux-gnu
log() { echo "[gpu-check $(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }

# ---- unpack the bundle into a private prefix (never into /) ----------------------------------
# (unpacked again when the bundle has gained CHOLMOD or METIS since the last unpack)
if [ ! -f "$P/.done" ] || { ls "$BUNDLE"/debs/libcholmod3_*.deb >/dev/null 2>&1 &&
                             [ ! -e "$P/usr/include/suitesparse/cholmod.h" ]; } ||
   { ls "$BUNDLE"/debs/libmetis-dev_*.deb >/dev/null 2>&1 && [ ! -e "$P/usr/include/metis.h" ]; }; then
  mkdir -p "$P/fallback" "$P/gmsh/lib" "$P/gmsh/include"
  for d in "$BUNDLE"/debs/*.deb; do dpkg -x "$d" "$P"; done
  # Debian's libxml2 headers enable ICU; the host has no ICU headers and we use no ICU API.
  sed -i 's|^#define LIBXML_ICU_ENABLED|/* LIBXML_ICU_ENABLED: off, no ICU headers here */|' \
    "$P/usr/include/libxml2/libxml/xmlversion.h"
  python3 - "$BUNDLE" "$P/gmsh" <<'PY'
import glob, os, sys, zipfile
whl = glob.glob(os.path.join(sys.argv[1], "gmsh", "gmsh-*.whl"))[0]
dest = sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        base = os.path.basename(n)
        if base.startswith("libgmsh.so") or base == "gmshc.h":
            sub = "lib" if base.startswith("libgmsh") else "include"
            with open(os.path.join(dest, sub, base), "wb") as f:
                f.write(z.read(n))
PY
  (cd "$P/gmsh/lib" && ln -sf libgmsh.so.* libgmsh.so)
  # Only the libraries the host lacks are put on the search path.
  for so in "$P"/usr/lib/x86_64-linux-gnu/*.so.* "$P"/lib/x86_64-linux-gnu/*.so.*; do
    [ -e "$so" ] || continue
    b=$(basename "$so")
    ldconfig -p | grep -q " $b " || ln -sf "$so" "$P/fallback/$b"
  done
  # OpenBLAS's libblas.so.3 and liblapack.so.3 (a subfolder: Debian's alternatives) always,
  # ahead of a host's reference BLAS: CHOLMOD's supernodal factorisation runs in them.
  for so in "$P"/usr/lib/x86_64-linux-gnu/openblas-pthread/*.so*; do
    [ -e "$so" ] && ln -sf "$so" "$P/fallback/$(basename "$so")"
  done
  touch "$P/.done"
fi
export LD_LIBRARY_PATH="$P/fallback:$P/gmsh/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"

# ---- build --------------------------------------------------------------------------------
# a hypre install in the bundle (scripts/build-hypre.sh, then tar cJf BUNDLE/hypre.tar.xz -C
# PREFIX .; or .tar.gz) builds the peer of `hooke bench pcs --peer hypre` in
HYPRE_ARG=()
for h in "$BUNDLE"/hypre.tar.xz "$BUNDLE"/hypre.tar.gz; do
  [ -f "$h" ] || continue
  mkdir -p "$P/hypre"
  tar xf "$h" -C "$P/hypre" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$h" "$P/hypre"
  [ -f "$P/hypre/include/HYPRE_config.h" ] && HYPRE_ARG=(-DHOOKE_HYPRE_DIR="$P/hypre")
  break
done
log "configure + build ($BUILD)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHOOKE_WITH_CUDA=ON "${HYPRE_ARG[@]}" ${HOOKE_CMAKE_EXTRA:-} \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  -DCMAKE_PREFIX_PATH="$P/usr;$P/gmsh" -DCMAKE_LIBRARY_PATH="$P/fallback;$P/usr/lib/x86_64-linux-gnu" \
  -DLIBXML2_INCLUDE_DIR="$P/usr/include/libxml2" -DLIBXML2_LIBRARY="$SYS/libxml2.so.2" \
  -DZLIB_INCLUDE_DIR="$P/usr/include" -DZLIB_LIBRARY="$SYS/libz.so.1" \
  -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$P/fallback:$P/gmsh/lib" >"$OUT/configure.log" 2>&1 \
  || { log "configure FAILED"; tail -30 "$OUT/configure.log"; exit 1; }
cmake --build "$BUILD" --parallel "$(nproc)" >"$OUT/build.log" 2>&1 \
  || { log "build FAILED"; grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; }
log "build ok"

status=0
for w in "${WHAT[@]}"; do
  case "$w" in
    info) "$BUILD/hooke" info | tee "$OUT/info.txt" ;;
    tests|tests=*)
      suites=""; [ "$w" != tests ] && suites=${w#tests=} && suites=${suites//,/ }
      log "tests ${suites:-all}"
      # shellcheck disable=SC2086
      "$BUILD/hooke_tests" $suites >"$OUT/tests.log" 2>&1 || status=1
      tail -12 "$OUT/tests.log"; grep -B2 -A8 "FAILED\|failed:" "$OUT/tests.log" | head -60 ;;
    bench|bench=*)
      list="spmv cg solvers"; [ "$w" != bench ] && list=${w#bench=} && list=${list//,/ }
      for b in $list; do
        log "bench $b"
        "$BUILD/hooke" bench "$b" --backend cuda --json "$OUT/bench-$b.json" \
          >"$OUT/bench-$b.md" 2>"$OUT/bench-$b.err" || { status=1; tail -5 "$OUT/bench-$b.err"; }
        cat "$OUT/bench-$b.md"
      done ;;
    run=*)
      c=${w#run=}; log "hooke run $c --backend cuda"
      "$BUILD/hooke" run "$c" --backend cuda -o "$OUT/run.vtu" >"$OUT/run.log" 2>&1 || status=1
      tail -25 "$OUT/run.log"; rm -f "$OUT/run.vtu" ;;
    sanitize=*)
      s=${w#sanitize=}; log "compute-sanitizer $s"
      compute-sanitizer --tool "$s" --error-exitcode 3 "$BUILD/hooke_tests" cuda \
        >"$OUT/sanitize-$s.log" 2>&1 || status=1
      tail -6 "$OUT/sanitize-$s.log" ;;
    *) log "unknown step '$w'"; status=1 ;;
  esac
done
log "done, status $status"
exit $status
