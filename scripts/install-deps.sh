#!/usr/bin/env bash
# Install what Hooke needs from Debian's packages (idempotent: installs only what is missing).
# CUDA is optional: with nvcc on the PATH the CUDA backend is built too. --fuzz adds clang and
# its runtimes for scripts/fuzz.sh (libFuzzer, the sanitizers, OpenMP).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libxml2-dev zlib1g-dev libfyaml-dev
      libcunit1-dev libgmsh-dev gmsh python3-vtk9
      libsuitesparse-dev libopenblas0-pthread  # CHOLMOD for method=cholesky, threaded BLAS
      liblz4-dev  # output compression lz4 (optional: the build works without it)
      libopenmpi-dev openmpi-bin libmetis-dev)  # distributed runs (mpirun), their partitions
if [ "${1:-}" = --fuzz ]; then pkgs+=(clang libclang-rt-dev libomp-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
