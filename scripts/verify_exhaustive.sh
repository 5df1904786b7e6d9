#!/usr/bin/env bash
# Runs tb/exhaustive over all 2^32 multiplier and all 2^32 rounder inputs, in
# parallel shards, and fails if any shard found a mismatch.
# Usage: scripts/verify_exhaustive.sh <path to exhaustive binary> [shards]
set -uo pipefail
bin=${1:-}
shards=${2:-$(nproc)}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "verify_exhaustive.sh: no exhaustive binary at '$bin' (build it with make build)" >&2
  exit 2
fi
if ! [[ "$shards" =~ ^[0-9]+$ ]] || [ "$shards" -lt 1 ] || [ "$shards" -gt 65536 ]; then
  echo "verify_exhaustive.sh: shards must be a number from 1 to 65536, got '$shards'" >&2
  exit 2
fi
logdir=$(dirname "$bin")/../exhaustive-logs
mkdir -p "$logdir"
start=$(date +%s)
status=0
for unit in mul round; do
  rm -f "$logdir/$unit"-*.log
  pids=()
  for ((s = 0; s < shards; s++)); do
    : > "$logdir/$unit-$s.log"
    "$bin" --unit "$unit" --shard "$s" --shards "$shards" > "$logdir/$unit-$s.log" 2>&1 &
    pids+=($!)
  done
  # Progress: the first shard's log speaks for all of them.
  tail -n +1 -f "$logdir/$unit-0.log" --pid "${pids[0]}" | grep --line-buffered '%' &
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  grep -h "inputs," "$logdir/$unit"-*.log
done
echo "verify-exhaustive: $(( $(date +%s) - start )) s, $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
