#!/usr/bin/env bash
# Builds the matrix unit (ROWS x COLS, default 16x16) with Verilator (timed,
# from scratch; no tracing, or with TRACE=1 FST tracing compiled in but off, to
# measure what that costs; assertions left out, or in with ASSERT=1 as the
# tests build them; with THREADS > 1 a multithreaded model; VERILATOR_FLAGS adds
# any other Verilator options, to measure them), reports its time and peak
# memory, and runs the benchmark driver tb/mxu_bench.cpp. Usage: scripts/bench_mxu.sh <work dir>
# [driver options]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(realpath -m "${1:-$root/build/bench}")
rows=${ROWS:-16}
cols=${COLS:-16}
threads=${THREADS:-1}
assert=${ASSERT:-0}
trace=${TRACE:-0}
shift || true
# Checked before the build, which takes minutes at the larger sizes.
for setting in "ASSERT=$assert" "TRACE=$trace"; do
  if [[ ${setting#*=} != 0 && ${setting#*=} != 1 ]]; then
    echo "bench_mxu.sh: $setting: expected 0 or 1" >&2
    exit 2
  fi
done
for setting in "ROWS=$rows" "COLS=$cols" "THREADS=$threads"; do
  if ! [[ ${setting#*=} =~ ^[1-9][0-9]*$ ]]; then
    echo "bench_mxu.sh: $setting: expected a positive whole number" >&2
    exit 2
  fi
done
# Only ever delete a directory this script made (it leaves a marker in it).
if [ -e "$work" ] && [ ! -f "$work/.mxu-bench" ]; then
  echo "bench_mxu.sh: refusing to reuse $work: it exists and was not made by this script" >&2
  exit 2
fi
rm -rf "$work"
mkdir -p "$work"
touch "$work/.mxu-bench"
cd "$root"

start=$(date +%s.%N)
# Verilator's -O3 flattens the array into a few huge functions: slower to
# compile and to run than the default, so it is left off.
thread_args=()
if [ "$threads" -gt 1 ]; then thread_args=(--threads "$threads"); fi
build_args=(-I"$root/rtl/prim")
build="$threads thread(s)"
# --reloop-limit: Verilator 5.006 otherwise declares no counter for the loop it makes of the
# copies kept for $stable of a 64-lane or wider stream (sim/CMakeLists.txt).
if [ "$assert" = 1 ]; then build_args+=(--assert --reloop-limit 1000000); build+=", assertions"; fi
if [ "$trace" = 1 ]; then build_args+=(--trace-fst); build+=", tracing compiled in (off)"; fi
read -r -a extra_flags <<< "${VERILATOR_FLAGS:-}"
if [ ${#extra_flags[@]} -gt 0 ]; then build_args+=("${extra_flags[@]}"); build+=", ${extra_flags[*]}"; fi
# The build is timed from scratch: no compiler cache. Its peak memory is the largest resident
# size of any process it ran (getrusage of the waited-for children), in MiB.
OBJCACHE= "${PYTHON:-/usr/bin/python3}" -c '
import resource, subprocess, sys
status = subprocess.run(sys.argv[2:]).returncode
with open(sys.argv[1], "w") as f:
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, file=f)
sys.exit(status)' "$work/build-peak-mib" verilator --cc --exe --build -j "$(nproc)" "${thread_args[@]}" "${build_args[@]}" -MAKEFLAGS "OPT_FAST=-O2 OPT_SLOW=-O1 OPT_GLOBAL=-O2" --Mdir "$work" -o mxu_bench \
  --top-module tpu_mxu -GRows="$rows" -GCols="$cols" sim/lint.vlt $(python3 scripts/rtl_files.py rtl/mxu/mxu.f) \
  -CFLAGS "-O2 -std=c++17 -ffp-contract=off -I$root/tb -I$root/sim -I$root/sw/include -DMXU_ROWS=$rows -DMXU_COLS=$cols" \
  -LDFLAGS "-lfmt" \
  "$root"/tb/mxu_bench.cpp "$root"/tb/harness/array_config.cpp "$root"/tb/harness/mxu_stream.cpp \
  "$root"/sw/numerics/float.cpp "$root"/sw/numerics/gemm.cpp > "$work/build.log" 2>&1 \
  || { tail -20 "$work/build.log"; exit 1; }
end=$(date +%s.%N)
build_seconds=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')

echo "model build                 $build"
assert_flag=()
if [ "$assert" = 1 ]; then assert_flag=(--assertions); fi
"$work/mxu_bench" --build-seconds "$build_seconds" --build-peak-mib "$(cat "$work/build-peak-mib")" --threads "$threads" "${assert_flag[@]}" "$@"
