#!/usr/bin/env bash
# Simulation speed of the matrix unit's Verilator model against array size:
# for each size in SIZES (default "4 8 16 32"; add 64 for the largest) and 1
# and 2 Verilator threads, builds the model from scratch (timed) and streams
# back-to-back tiles through it (scripts/bench_mxu.sh), then tabulates and
# plots the results. Usage: scripts/bench_sim_speed.sh [out dir, default docs/perf]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/docs/perf}")
sizes=${SIZES:-4 8 16 32}
python=${PYTHON:-/usr/bin/python3}
mkdir -p "$out" "$root/build/bench-sim"
records=()
for size in $sizes; do
  for threads in 1 2; do
    name="${size}x${size}-t${threads}"
    echo "bench-sim: building and running the ${size}x${size} matrix unit, $threads thread(s)" >&2
    work="$root/build/bench-sim/$name"
    ROWS=$size COLS=$size THREADS=$threads "$root/scripts/bench_mxu.sh" "$work" \
      --json "$root/build/bench-sim/$name.json" > "$root/build/bench-sim/$name.log" \
      || { cat "$root/build/bench-sim/$name.log" >&2;
           echo "bench-sim: the ${size}x${size} run with $threads thread(s) failed" >&2; exit 1; }
    records+=("$root/build/bench-sim/$name.json")
  done
done
"$python" "$root/scripts/sim_speed_table.py" "$out" "${records[@]}"
