#!/usr/bin/env bash
# The GTKWave translate filters (sim/wave/float_filter.cpp) against hand-worked values: each
# input line is a value as GTKWave prints it in hex, each expected line what the viewer must show.
# Usage: wave_filters.sh BF16_FILTER FP32_FILTER
set -uo pipefail
failures=0
check() {
  local filter=$1 input=$2 expected=$3 got
  got=$(printf '%s\n' "$input" | "$filter")
  if [ "$got" = "$expected" ]; then
    echo "ok    $(basename "$filter") $input -> $got"
  else
    echo "FAIL  $(basename "$filter") $input -> '$got', expected '$expected'"
    failures=$((failures + 1))
  fi
}
bf16=$1 fp32=$2
check "$bf16" 3f80 1
check "$bf16" c0a0 -5
check "$bf16" 3c00 0.0078125
check "$bf16" 8000 -0
check "$bf16" ff80 -inf
check "$bf16" 7fc0 nan
check "$bf16" 0001 9.1835e-41                   # a subnormal pattern: shown as IEEE reads it
check "$bf16" 3f8040004040c000 "1 | 2 | 3 | -2"  # four lanes, the most significant first
check "$bf16" xxxx xxxx                          # unknown values pass through
check "$bf16" 1f 1f                              # not a whole lane
check "$fp32" 3f800000 1
check "$fp32" 3dcccccd 0.1
check "$fp32" 7f7fffff 3.4028235e+38
check "$fp32" 00000001 1e-45
check "$fp32" 7f800000 inf
check "$fp32" 3f8000004b800000 "1 | 16777216"
check "$fp32" 3f80 3f80                          # half a lane
check "$fp32" zzzzzzzz zzzzzzzz
[ "$failures" -eq 0 ]
