// The text form of TPU programs, one instruction per line:
//
//   read_host acc count=2 rows=16 addr_b=0x100 host_addr=0x4000 host_stride=64  # a comment
//   activate bias f32 func=leaky alpha=0.01 count=4 rows=8 addr_a=0 addr_b=0 bias_addr=64
//   matmul fetch i8 rows=16 host_addr=0x2000 host_stride=16 k_valid=16 n_valid=16
//   activate bias req rows=16 addr_b=512 bias_addr=253 zero_point=-5 clamp_lo=-5 clamp_hi=127
//   .word 0x00000003 0x00010001 0 0 0 0 0 0x00100010
//
// The mnemonic comes first, then the opcode's flags as bare lower-case words, then
// `field=value` pairs named as in rtl/defs/isa.toml. Numbers are decimal or 0x hex. `func=` takes a
// function's mnemonic (none, relu, relu6, leaky, sigmoid, tanh, gelu); `alpha=` takes a bf16
// bit pattern in hex, or a finite decimal number, read as the nearest fp32 and rounded to bf16 by
// N-OUT (num::fp32_to_bf16). The int8 fields of `activate req` (zero_point, clamp_lo, clamp_hi)
// take -128 .. 127, or their bits as 0 .. 255, and disassemble as signed. Omitted fields are zero,
// except `count`, which is 1 when the opcode has it and the line does not give it. `#` starts
// a comment; blank lines are ignored. `.word` followed by eight 32-bit numbers gives the raw
// words w0..w7 of any instruction, legal or not.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tpu/isa.hpp"

namespace tpu::isa {

// Throws std::invalid_argument "line N: message" at the first line it cannot encode: an unknown
// mnemonic, flag or field, a field or flag the opcode does not have, a malformed number, a value
// too wide for its field, or a field or flag given twice. The conditional rules of the issue
// stage (check()) are not applied: a program that assembles may still fail them when it runs.
std::vector<Instruction> assemble(std::string_view text);

// The canonical line of one instruction (no newline): mnemonic, flags, then every field the
// opcode uses that is nonzero (count always). An instruction that cannot be written that way
// (an unknown opcode, a function code above 6, a bit set outside its opcode's fields) becomes a
// `.word` line. Either way, assemble(disassemble(x)) gives back x.
std::string disassemble(const Instruction& instruction);
// One line per instruction, each ending in a newline.
std::string disassemble(const std::vector<Instruction>& program);

}  // namespace tpu::isa
