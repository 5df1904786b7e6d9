#!/usr/bin/env bash
# scripts/gen_defs.py must reject a malformed description with exit status 2, one line of
# output naming the problem, and no file written. Each case starts from a small valid
# description (which the generator must accept) and breaks one thing in it.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out="$work/out"
failures=0
checks=0

write_valid_inputs() {
  cat >"$work/isa.toml" <<'EOF'
instruction_bytes = 8

[fields]
opcode = { word = 0, lsb = 0,  width = 8,  doc = "operation" }
flags  = { word = 0, lsb = 8,  width = 8,  doc = "flag bits" }
func   = { word = 0, lsb = 16, width = 4,  doc = "function" }
vop    = { word = 0, lsb = 16, width = 4,  doc = "vector operation" }
count  = { word = 1, lsb = 0,  width = 16, doc = "iterations" }

[opcodes.COPY]
value = 0x01
mnemonic = "copy"
fields = ["count"]
flags = { ACC = { bit = 0, doc = "accumulate" } }
limits = { count = "1..dim" }
doc = "copies"

[opcodes.HALT]
value = 0x02
mnemonic = "halt"
fields = []
flags = {}
doc = "stops"

[functions]
NONE = { value = 0, mnemonic = "none", doc = "identity" }

[vector_ops]
ADD = { value = 0, mnemonic = "add", doc = "sum" }
EOF
  cat >"$work/regmap.toml" <<'EOF'
[registers.ID]
offset = 0x000
access = "ro"
reset = 0x54505531
doc = "identifies the core"

[registers.CTRL]
offset = 0x004
access = "rw"
doc = "control"
fields = { START = { lsb = 0, width = 1, doc = "run" } }

[counters.CYCLES]
offset = 0x040
doc = "cycles"
[counters.BEATS]
offset = 0x048
doc = "bus beats"

[errors.NONE]
value = 0
doc = "no error"
EOF
  cat >"$work/link.toml" <<'EOF'
request_sync = 0xA5
reply_sync = 0x5A
max_payload = 64
frame_timeout_bits = 100
version = 1

[commands.PING]
value = 0x01
doc = "answers"

[statuses.OK]
value = 0
doc = "done"
[statuses.BROKEN]
value = 1
doc = "damaged"

[info.VERSION]
bytes = 2
doc = "protocol version"
EOF
}

gen_defs() {
  python3 "$root/scripts/gen_defs.py" --isa "$work/isa.toml" --regmap "$work/regmap.toml" \
    --link "$work/link.toml" --out-dir "$out" "$@" 2>&1
}

# Every file under the output folder with its checksum, to prove nothing was written.
snapshot() {
  (cd "$out" && find . -type f -exec sha256sum {} + | sort)
}

expect_rejected() {
  local what=$1 message=$2 output status before
  shift 2
  checks=$((checks + 1))
  before=$(snapshot)
  output=$(gen_defs "$@")
  status=$?
  if [ $status -eq 2 ] && [ -n "$output" ] && [ "$(wc -l <<<"$output")" -eq 1 ] &&
    grep -qF -- "$message" <<<"$output" && [ "$(snapshot)" = "$before" ]; then
    echo "ok    $what: $output"
  else
    echo "FAIL  $what: exit $status, expected \"$message\" in one line and no file written:"
    echo "$output" | head -5
    failures=$((failures + 1))
  fi
}

# The valid description first: it must generate, and then be up to date.
mkdir -p "$out/docs"
printf '<!-- BEGIN GENERATED: %s -->\n<!-- END GENERATED: %s -->\n' \
  fields fields opcodes opcodes flags flags functions functions vector_ops vector_ops rules rules \
  >"$out/docs/isa.md"
printf '<!-- BEGIN GENERATED: %s -->\n<!-- END GENERATED: %s -->\n' \
  registers registers counters counters errors errors >"$out/docs/registers.md"
printf '<!-- BEGIN GENERATED: %s -->\n<!-- END GENERATED: %s -->\n' link-constants \
  link-constants link-commands link-commands link-statuses link-statuses link-info link-info \
  >"$out/docs/link.md"
write_valid_inputs
checks=$((checks + 1))
if gen_defs >/dev/null && gen_defs --check >/dev/null &&
  [ "$(snapshot | wc -l)" -eq 10 ]; then
  echo "ok    valid description: 10 files generated, then up to date"
else
  echo "FAIL  valid description not accepted:"
  gen_defs | head -5
  failures=$((failures + 1))
fi

expect_rejected "missing file" "missing.toml: no such file" --isa "$work/missing.toml"

sed -i 's/^value = 0x01/value = = 0x01/' "$work/isa.toml"
expect_rejected "TOML syntax error (isa)" "TOML syntax error"

write_valid_inputs
echo "[registers.ID" >>"$work/regmap.toml"
expect_rejected "TOML syntax error (regmap)" "TOML syntax error"

write_valid_inputs
sed -i 's/^count .*/&\nextra  = { word = 1, lsb = 8,  width = 16, doc = "overlaps count" }/;
        s/^fields = \["count"\]/fields = ["count", "extra"]/' "$work/isa.toml"
expect_rejected "overlapping fields in one opcode" \
  "field count (w1[15:0]) and field extra (w1[23:8]) overlap"

write_valid_inputs
sed -i 's/^count .*/count = { word = 1, lsb = 24, width = 16, doc = "iterations" }/' \
  "$work/isa.toml"
expect_rejected "field wider than its word" "wider than its 32-bit word"

write_valid_inputs
sed -i 's/^value = 0x02/value = 0x01/' "$work/isa.toml"
expect_rejected "duplicate opcode values" "COPY and HALT have the same value 0x01"
expect_rejected "duplicate opcode values (--check)" "have the same value 0x01" --check

write_valid_inputs
sed -i 's/^offset = 0x004/offset = 0x000/' "$work/regmap.toml"
expect_rejected "duplicate register offsets" "have the same offset 0x000"

write_valid_inputs
sed -i 's/^offset = 0x004/offset = 0x044/' "$work/regmap.toml"
expect_rejected "register on a counter's HI half" "counters.CYCLES (HI) have the same offset"

write_valid_inputs
sed -i 's/^offset = 0x004/offset = 0x006/' "$work/regmap.toml"
expect_rejected "offset not 4-byte aligned" "offset 0x006 is not a multiple of 4"

write_valid_inputs
sed -i 's/^offset = 0x048/offset = 0x050/' "$work/regmap.toml"
expect_rejected "counters with a gap" "counters are contiguous"

write_valid_inputs
sed -i 's/lsb = 16, width = 4/lsb = 16, widht = 4/' "$work/isa.toml"
expect_rejected "misspelt key" "unknown key 'widht'"

write_valid_inputs
sed -i 's/^fields = \["count"\]/fields = ["cuont"]/' "$work/isa.toml"
expect_rejected "unknown field in an opcode" "'cuont' is not a field"

write_valid_inputs
sed -i 's/ACC = { bit = 0/ACC = { bit = 8/' "$work/isa.toml"
expect_rejected "flag outside the flags field" "bit 8 is outside 0..7"

write_valid_inputs
sed -i 's/^limits = .*/source = { memory = "rom" }/' "$work/isa.toml"
expect_rejected "unknown memory" "opcodes.COPY.source.memory: 'rom' is not one of ub, acc"

write_valid_inputs
sed -i 's/^limits = .*/destination = { memory = "acc" }/' "$work/isa.toml"
expect_rejected "operand without its fields" "destination: needs the field 'addr_b'"

write_valid_inputs
sed -i 's/^limits = .*/limits = { count = "2..dim" }/' "$work/isa.toml"
expect_rejected "unknown limit" \
  "limits.count: '2..dim' is not one of 1..dim, function, vector_op, nonzero"

write_valid_inputs
sed -i 's/^NONE = .*/NONE = { value = 0, mnemonic = "none", vector = true, doc = "identity" }\nRELU = { value = 1, mnemonic = "relu", doc = "rectifier" }/' \
  "$work/isa.toml"
expect_rejected "a vector function below an ordinary one" \
  "functions: the codes with vector = true must be the highest ones"

write_valid_inputs
sed -i 's/^ADD = .*/ADD = { value = 0, mnemonic = "add", vector = true, doc = "sum" }/' "$work/isa.toml"
expect_rejected "vector key outside the functions" "vector_ops.ADD: unknown key 'vector'"

write_valid_inputs
sed -i 's/^limits = .*/zero_unless = { BIAS = ["count"] }/' "$work/isa.toml"
expect_rejected "unknown condition" "'BIAS' is neither a flag of this opcode nor a function"

write_valid_inputs
sed -i 's/^limits = .*/repeats = 1/' "$work/isa.toml"
expect_rejected "repeats not a boolean" "opcodes.COPY.repeats: expected true or false"

write_valid_inputs
sed -i '/END GENERATED: counters/d' "$out/docs/registers.md"
expect_rejected "doc without an END marker" "expected the END marker for 'counters'"

write_valid_inputs
sed -i 's/^reply_sync = 0x5A/reply_sync = 0xA5/' "$work/link.toml"
expect_rejected "equal sync bytes" "request_sync and reply_sync must differ"

write_valid_inputs
sed -i 's/^value = 1$/value = 0/' "$work/link.toml"
expect_rejected "duplicate status values" "OK and BROKEN have the same value 0x00"

write_valid_inputs
sed -i 's/^\[statuses.OK\]/[statuses.FINE]/' "$work/link.toml"
expect_rejected "no OK status" "OK must be there, with value 0"

write_valid_inputs
sed -i 's/^bytes = 2$/bytes = 3/' "$work/link.toml"
expect_rejected "INFO field of 3 bytes" "bytes 3 is not 1, 2 or 4"

echo "$((checks - failures)) passed, $failures failed"
[ $failures -eq 0 ]
