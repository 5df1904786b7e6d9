#!/usr/bin/env bash
# Runs tb/exhaustive over all 2^32 multiplier inputs, all 2^32 rounder inputs and
# all 2^32 fp32 inputs of the activation unit's sigmoid, tanh, gelu, exp,
# reciprocal and reciprocal square root, and all 2^32 inputs of the vector
# unit's conversions (fp32 to int32, int32 to fp32), in
# parallel shards, and fails if any shard found a mismatch. For the activation
# functions it also prints the worst error over all shards.
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
for unit in mul round act convert; do
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
# Each act shard prints "act worst <function>: ulp <n> at <x>, relative 2^<e> at <x>".
for function in sigmoid tanh gelu exp recip rsqrt; do
  awk -v f="$function" '$3 == f ":" {
      ulps = $5 + 0; relative = substr($9, 3) + 0
      if (!seen || ulps > max_ulps) { max_ulps = ulps; ulps_at = substr($7, 1, length($7) - 1) }
      if (!seen || relative > max_relative) { max_relative = relative; relative_at = $11 }
      seen = 1
    }
    END {
      if (seen) printf "act %s: worst %d bf16 ulp (at %s), worst relative error 2^%.2f (at %s)\n",
                       f, max_ulps, ulps_at, max_relative, relative_at
    }' "$logdir"/act-*.log
done
echo "verify-exhaustive: $(( $(date +%s) - start )) s, $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
