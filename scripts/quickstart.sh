#!/usr/bin/env bash
# Quick start: install what is missing, build Hooke (Release; CUDA too when nvcc is present)
# and run the flagship case, the L-bracket, writing cases/bracket/bracket.vtu for ParaView.
# Extra arguments go to `hooke run` (e.g. --backend cpu, --set geometry.order=1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --parallel
"$BUILD"/hooke run cases/bracket/bracket.yaml "$@"
echo "quickstart: open cases/bracket/bracket.vtu in ParaView and colour by von_mises"
