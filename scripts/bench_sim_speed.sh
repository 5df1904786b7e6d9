#!/usr/bin/env bash
# Simulation speed of the matrix unit's Verilator model against array size:
# for each size in SIZES (default "4 8 16 32"; add 64 for the largest) it builds
# the model from scratch (timed) three ways: the benchmark build (no tracing, no
# assertions, one thread), the same with assertions as the tests build it, and
# with 2 Verilator threads; streams back-to-back tiles through each
# (scripts/bench_mxu.sh), then tabulates and plots the results.
# Usage: scripts/bench_sim_speed.sh [out dir, default docs/perf]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/docs/perf}")
sizes=${SIZES:-4 8 16 32}
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
  for variant in "1 0" "1 1" "2 0"; do
    read -r threads assert <<< "$variant"
    name="${size}x${size}-t${threads}"
    model="the ${size}x${size} model with $threads thread(s)"
    if [ "$assert" = 1 ]; then
      name+="-assert"
      model+=", assertions"
    fi
    echo "bench-sim: building and running $model" >&2
    # A record left from an earlier sweep must not stand in for this run's.
    rm -f "$runs/$name.json"
    # About 33,000 cycles at every size (tiles of 16 x size rows), long enough to time.
    tiles=$(( size >= 2048 ? 1 : 2048 / size ))
    if ! ROWS=$size COLS=$size THREADS=$threads ASSERT=$assert "$root/scripts/bench_mxu.sh" "$runs/$name" \
        --tiles "$tiles" --json "$runs/$name.json" > "$runs/$name.log" 2>&1; then
      if grep -qs '"exact": false' "$runs/$name.json"; then
        echo "bench-sim: $model is not bit-exact; see $runs/$name.log" >&2
      else
        echo "bench-sim: building or running $model failed; see $runs/$name.log" >&2
      fi
      exit 1
    fi
    sed -n 's/^simulation speed  */bench-sim:   /p; s/^cost per cell and cycle  */bench-sim:   /p' \
      "$runs/$name.log" >&2
    records+=("$runs/$name.json")
  done
done
"$python" "$root/scripts/sim_speed_table.py" "$out" "${records[@]}"
