#!/usr/bin/env bash
# Build Hooke (CUDA code included when nvcc exists) and run every test suite.
# Device suites run only where a GPU is present and say they were skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} >/dev/null
cmake --build "$BUILD" --parallel
# The dependency rules of docs/architecture.md: folder layering, no call cycles between files.
python3 scripts/check-deps.py "$BUILD"
# Passive OpenMP waiting: on a shared machine spinning threads slow the solves badly.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
"$BUILD"/hooke_tests "$@"
# Distributed runs under mpirun -np 2 and 3 (docs/parallel.md), when built with MPI and no
# suite was named.
if [ $# -eq 0 ] && [ -x "$BUILD/hooke_mpi_tests" ]; then
  tests/mpi/test_mpi.sh "$BUILD"
fi
