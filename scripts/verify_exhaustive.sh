#!/usr/bin/env bash
# Runs tb/exhaustive over all 2^32 multiplier and all 2^32 rounder inputs, in
# parallel shards, and fails if any shard found a mismatch.
# Usage: scripts/verify_exhaustive.sh <path to exhaustive binary> [shards]
set -uo pipefail
bin=${1:?usage: verify_exhaustive.sh <exhaustive binary> [shards]}
shards=${2:-$(nproc)}
logdir=$(dirname "$bin")/../exhaustive-logs
mkdir -p "$logdir"
start=$(date +%s)
status=0
for unit in mul round; do
  pids=()
  for ((s = 0; s < shards; s++)); do
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
