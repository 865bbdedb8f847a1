#!/usr/bin/env bash
# Build the fuzz targets (fuzz/: the case reader, the .msh checks, the Matrix Market reader)
# with clang, libFuzzer, ASan and UBSan, and run each for a bounded time under a memory and a
# per-input time limit. Usage: scripts/fuzz.sh [SECONDS_EACH] [TARGET ...] (default 60 s each,
# every target). With FUZZ_RUNS=N each target instead runs N inputs from a fresh corpus with a
# fixed seed: the same inputs on every machine, so a CI finding can be replayed exactly.
# Exit 0 when no target found anything; a finding is kept in $BUILD/artifacts/ (fuzz/README.md
# says how to reproduce it).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(case mmio msh)
BUILD=${FUZZ_BUILD:-build-fuzz}
if ! command -v clang >/dev/null; then
  echo "fuzz: clang is not installed; run scripts/install-deps.sh --fuzz" >&2
  exit 2
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
CC=clang cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOOKE_WITH_CUDA=OFF \
  -DHOOKE_BUILD_TESTS=OFF -DHOOKE_BUILD_FUZZERS=ON "${launcher[@]}" >/dev/null
cmake --build "$BUILD" --parallel --target "${TARGETS[@]/#/fuzz_}" >/dev/null

# seeds: the classes of bad input in fuzz/seeds/, and the shipped inputs of each kind
seed_dir() {
  local t=$1 d="$BUILD/seeds/$1"
  rm -rf "$d"
  mkdir -p "$d"
  cp fuzz/seeds/"$t"/* "$d"/
  case $t in
    case) for f in cases/*/*.yaml; do cp "$f" "$d/$(basename "$(dirname "$f")")_$(basename "$f")"; done ;;
    mmio) cp tests/data/*.mtx "$d"/ ;;
    msh) cp tests/data/mesh/*.msh "$d"/ ;;
  esac
  echo "$d"
}

export OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$BUILD/artifacts"
status=0
for t in "${TARGETS[@]}"; do
  seeds=$(seed_dir "$t")
  corpus="$BUILD/corpus/$t"
  budget=(-max_total_time="$SECONDS_EACH")
  if [ -n "${FUZZ_RUNS:-}" ]; then
    rm -rf "$corpus" # a fixed run: the seeds only, mutated in the order -seed gives
    budget=(-runs="$FUZZ_RUNS" -seed=1)
  fi
  mkdir -p "$corpus"
  echo "fuzz: $t, ${budget[*]} (corpus $corpus, seeds $seeds)"
  # 2 GB of memory, 10 s an input, 1 GB in one allocation, inputs up to 64 KB
  if ! "$BUILD/fuzz_$t" "${budget[@]}" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -timeout=10 -max_len=65536 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" \
      "$corpus" "$seeds" > "$BUILD/fuzz_$t.log" 2>&1; then
    echo "fuzz: $t found a problem:" >&2
    grep -E "^==[0-9]+==ERROR|SUMMARY|runtime error|Test unit written|ALARM|out-of-memory" \
      "$BUILD/fuzz_$t.log" | head -20 >&2
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$BUILD/fuzz_$t.log" |
      sed "s/^/fuzz: $t: /"
  fi
done
exit $status
