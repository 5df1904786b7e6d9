#!/usr/bin/env bash
# scripts/fpga_flow.py must refuse bad requests before running any tool: exit status 2
# and one line naming the problem. None of these cases needs the FPGA tools.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export TOOLS_BIN=/nonexistent   # a case that got as far as the tools would fail differently
failures=0
checks=0

check() {
  local message=$1 output status
  shift
  checks=$((checks + 1))
  output=$(python3 scripts/fpga_flow.py "$@" 2>&1)
  status=$?
  if [ $status -eq 2 ] && [ "$(wc -l <<<"$output")" -eq 1 ] && grep -qF -- "$message" <<<"$output"
  then
    echo "ok    $*: $message"
  else
    echo "FAIL  $*: exit $status, expected one line with \"$message\", got:"
    echo "$output" | head -5
    failures=$((failures + 1))
  fi
}

check "no board 'nosuch'" build nosuch
check "expected NAME=VALUE" build ulx3s --set Dim
check "is not an integer" build ulx3s --set Dim=four
check "must be positive" build ulx3s --set Dim=0
check "must be 0 or 1" build ulx3s --set Sequential=2
check "expected NAME=VALUE with NAME one of" build ulx3s --set Width=4
check "is not the oscillator's" build icebreaker --set ClockHz=24000000
check "must lie inside the checkout" build ulx3s --out /tmp/fpga-out
check "--jobs 0: must be at least 1" table --jobs 0
check "holds no build of these parameters" table ulx3s --reuse --seed 987654
check "no bitstream of ulx3s 1x1_MemBytes4096" program ulx3s --set Dim=1 --set MemBytes=4096
check "no board 'nosuch'" params nosuch
check "no board 'nosuch'" breakdown nosuch
check "expected NAME=VALUE" breakdown icebreaker --set Dim
check "--doc /nonexistent/fpga.md: no such file" breakdown icebreaker --doc /nonexistent/fpga.md

echo "$((checks - failures)) passed, $failures failed"
[ $failures -eq 0 ]
