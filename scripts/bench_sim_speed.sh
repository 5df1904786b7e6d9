#!/usr/bin/env bash
# Simulation speed of the matrix unit's Verilator model against array size:
# for each size in SIZES (default "16 32 64 128 256", up to TPU v1's 256x256) it
# builds the model from scratch (timed, with its peak memory) in each of VARIANTS
# ("threads assertions" pairs, comma-separated; default the benchmark build, no
# tracing, no assertions, one thread, and the same with assertions as the tests
# build it; Verilator 5.006 refuses more threads for the array, whose cells are
# one loop it cannot split: UNOPTTHREADS); streams back-to-back tiles through
# each (scripts/bench_mxu.sh), then tabulates and plots the results as
# NAME.md/.json/.png (NAME default sim_speed).
# Usage: scripts/bench_sim_speed.sh [out dir, default docs/perf]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/docs/perf}")
sizes=${SIZES:-16 32 64 128 256}
variants=${VARIANTS:-1 0,1 1}
export SIM_SPEED_NAME=${NAME:-sim_speed}
python=${PYTHON:-/usr/bin/python3}
runs="$root/build/bench-sim"
# Fail now rather than after an hour of builds.
if ! "$python" -c "import matplotlib" 2>/dev/null; then
  echo "bench-sim: $python cannot import matplotlib (make deps installs python3-matplotlib)" >&2
  exit 1
fi
mkdir -p "$out" "$runs"
records=()
for size in $sizes; do
  IFS=, read -r -a variant_list <<< "$variants"
  for variant in "${variant_list[@]}"; do
    read -r threads assert <<< "$variant"
    name="${size}x${size}-t${threads}"
    model="the ${size}x${size} model with $threads thread(s)"
    if [ "$assert" = 1 ]; then
      name+="-assert"
      model+=", assertions"
    fi
    echo "bench-sim: $(date +%T) building and running $model" >&2
    # A record left from an earlier sweep must not stand in for this run's.
    rm -f "$runs/$name.json"
    # About 33,000 cycles up to 64x64 (tiles of 16 x size rows), long enough to time; 2 tiles
    # above, about 4,500 cycles at 128x128 and 9,000 at 256x256, which take seconds to a minute.
    tiles=$(( size > 64 ? 2 : 2048 / size ))
    if ! ROWS=$size COLS=$size THREADS=$threads ASSERT=$assert "$root/scripts/bench_mxu.sh" "$runs/$name" \
        --tiles "$tiles" --json "$runs/$name.json" > "$runs/$name.log" 2>&1; then
      if grep -qs '"exact": false' "$runs/$name.json"; then
        echo "bench-sim: $model is not bit-exact; see $runs/$name.log" >&2
      else
        echo "bench-sim: building or running $model failed; see $runs/$name.log" >&2
      fi
      exit 1
    fi
    sed -n 's/^model build time  */bench-sim:   build /p; s/^model build peak memory  */bench-sim:   build peak /p; s/^simulation speed  */bench-sim:   /p; s/^cost per cell and cycle  */bench-sim:   /p' \
      "$runs/$name.log" >&2
    records+=("$runs/$name.json")
  done
done
"$python" "$root/scripts/sim_speed_table.py" "$out" "${records[@]}"
