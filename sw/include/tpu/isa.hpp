// Instructions of the TPU core (docs/isa.md): their fields, their 32-byte encoding, and the
// checks the issue stage makes before it issues one. Field positions come from the generated
// tables in isa_defs.hpp, so rtl/defs/isa.toml stays the only description of the encoding.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/isa_defs.hpp"
#include "tpu/regs.hpp"

namespace tpu::isa {

// The int8 that the low byte of `bits` means in two's complement: an int8 field, an int8 value
// in host memory, or the int8 in the low byte of a unified-buffer lane (int8 mode).
constexpr int int8_value(std::uint32_t bits) {
  return static_cast<int>(bits & 0xFFu) - ((bits & 0x80u) != 0 ? 0x100 : 0);
}

// The int32 an accumulator lane's 32 bits mean in int8 mode (two's complement), without the
// conversion that is implementation-defined before C++20; sums that wrap are computed on
// std::uint32_t and read back with it.
constexpr std::int32_t int32_value(std::uint32_t bits) {
  return bits < 0x80000000u ? static_cast<std::int32_t>(bits)
                            : static_cast<std::int32_t>(bits - 0x80000000u) - 0x7FFFFFFF - 1;
}

// The mask of a field's width.
constexpr std::uint32_t field_mask(const FieldSpec& field) {
  return field.width >= 32 ? 0xFFFFFFFFu : (std::uint32_t{1} << field.width) - 1;
}

// One instruction as its eight raw words. Any bit pattern can be held (so that illegal
// instructions can be represented, checked and round-tripped); the setters refuse values wider
// than their field with std::invalid_argument.
struct Instruction {
  std::array<std::uint32_t, kInstrWords> words{};

  Instruction() = default;
  explicit Instruction(Opcode opcode) { set_opcode(opcode); }

  // Any field, by its generated FieldSpec (inline: the functional model reads several fields
  // of every instruction it runs).
  std::uint32_t get(const FieldSpec& field) const {
    return (words[field.word] >> field.lsb) & field_mask(field);
  }
  Instruction& set(const FieldSpec& field, std::uint64_t value);

  // The raw opcode byte; opcode() is only meaningful when find_opcode() knows the value.
  std::uint8_t opcode_value() const { return static_cast<std::uint8_t>(get(kOpcode)); }
  Opcode opcode() const { return static_cast<Opcode>(opcode_value()); }
  Instruction& set_opcode(Opcode opcode) { return set(kOpcode, static_cast<unsigned>(opcode)); }

  std::uint8_t flags() const { return static_cast<std::uint8_t>(get(kFlags)); }
  bool flag(unsigned bit) const { return (flags() >> bit) & 1u; }
  Instruction& set_flags(std::uint64_t flags) { return set(kFlags, flags); }
  Instruction& set_flag(unsigned bit, bool on = true);

  unsigned func() const { return get(kFunc); }
  Instruction& set_func(std::uint64_t func) { return set(kFunc, func); }
  Instruction& set_func(Func func) { return set(kFunc, static_cast<unsigned>(func)); }
  unsigned vop() const { return get(kVop); }
  Instruction& set_vop(VectorOp op) { return set(kVop, static_cast<unsigned>(op)); }

  std::uint32_t count() const { return get(kCount); }
  std::uint32_t rows() const { return get(kRows); }
  std::uint32_t addr_a() const { return get(kAddrA); }
  std::uint32_t addr_b() const { return get(kAddrB); }
  std::uint32_t step_a() const { return get(kStepA); }
  std::uint32_t step_b() const { return get(kStepB); }
  std::uint32_t host_addr() const { return get(kHostAddr); }
  std::uint16_t alpha() const { return static_cast<std::uint16_t>(get(kAlpha)); }
  std::uint32_t host_stride() const { return get(kHostStride); }
  std::uint32_t host_step() const { return get(kHostStep); }
  std::uint32_t k_valid() const { return get(kKValid); }
  std::uint32_t n_valid() const { return get(kNValid); }
  std::uint32_t bias_addr() const { return get(kBiasAddr); }
  std::uint32_t bias_step() const { return get(kBiasStep); }
  std::uint32_t total() const { return get(kTotal); }
  std::uint32_t offset() const { return get(kOffset); }
  // ACTIVATE with REQ: the int8 fields, as the signed values their two's complement bits mean.
  int zero_point() const { return int8_value(get(kZeroPoint)); }
  int clamp_lo() const { return int8_value(get(kClampLo)); }
  int clamp_hi() const { return int8_value(get(kClampHi)); }

  Instruction& set_count(std::uint64_t v) { return set(kCount, v); }
  Instruction& set_rows(std::uint64_t v) { return set(kRows, v); }
  Instruction& set_addr_a(std::uint64_t v) { return set(kAddrA, v); }
  Instruction& set_addr_b(std::uint64_t v) { return set(kAddrB, v); }
  Instruction& set_step_a(std::uint64_t v) { return set(kStepA, v); }
  Instruction& set_step_b(std::uint64_t v) { return set(kStepB, v); }
  Instruction& set_host_addr(std::uint64_t v) { return set(kHostAddr, v); }
  Instruction& set_alpha(std::uint64_t v) { return set(kAlpha, v); }
  Instruction& set_host_stride(std::uint64_t v) { return set(kHostStride, v); }
  Instruction& set_host_step(std::uint64_t v) { return set(kHostStep, v); }
  Instruction& set_k_valid(std::uint64_t v) { return set(kKValid, v); }
  Instruction& set_n_valid(std::uint64_t v) { return set(kNValid, v); }
  Instruction& set_bias_addr(std::uint64_t v) { return set(kBiasAddr, v); }
  Instruction& set_bias_step(std::uint64_t v) { return set(kBiasStep, v); }
  Instruction& set_total(std::uint64_t v) { return set(kTotal, v); }
  Instruction& set_offset(std::uint64_t v) { return set(kOffset, v); }
  // -128 .. 127, stored as two's complement; std::invalid_argument outside.
  Instruction& set_zero_point(int v) { return set_int8(kZeroPoint, v); }
  Instruction& set_clamp_lo(int v) { return set_int8(kClampLo, v); }
  Instruction& set_clamp_hi(int v) { return set_int8(kClampHi, v); }

  bool operator==(const Instruction& other) const { return words == other.words; }
  bool operator!=(const Instruction& other) const { return words != other.words; }

 private:
  Instruction& set_int8(const FieldSpec& field, int value);
};

// Table look-ups; nullptr when there is no such opcode or function.
const OpcodeInfo* find_opcode(std::uint8_t value);
const OpcodeInfo* find_opcode(std::string_view mnemonic);
const FuncInfo* find_func(unsigned value);
const FuncInfo* find_func(std::string_view mnemonic);
const VectorOpInfo* find_vector_op(unsigned value);
const VectorOpInfo* find_vector_op(std::string_view mnemonic);

// The function codes `config`'s core accepts are 0 .. func_count(config) - 1: exp, recip and
// rsqrt only where it has a vector unit.
inline unsigned func_count(const HardwareConfig& config) {
  return config.vector_lanes != 0 ? kFuncCount : kFuncBaseCount;
}

// The 32-byte little-endian form (docs/isa.md, "Encoding").
std::array<std::uint8_t, kInstrBytes> encode(const Instruction& instruction);
Instruction decode(const std::uint8_t* bytes);  // reads kInstrBytes bytes
// A program: instructions back to back. decode_program throws std::invalid_argument when the
// size is not a multiple of kInstrBytes.
std::vector<std::uint8_t> encode_program(const std::vector<Instruction>& program);
std::vector<Instruction> decode_program(const std::uint8_t* bytes, std::size_t size);
std::vector<Instruction> decode_program(const std::vector<std::uint8_t>& bytes);

// Throws std::invalid_argument naming the first parameter that no core can be built with
// (rtl/top/tpu_top.sv's parameter checks): dim a power of two in 1..256, ub_depth and acc_depth
// powers of two in 4..65536, bus_bytes a power of two in 4..64, weight_tiles in 2..16; int8 only
// on an array core; float_datapath off only with int8 and without links. The
// pipeline depths and act_lanes are not checked: they do not change what a program means.
void validate_config(const HardwareConfig& config);

// Rows [first, end) of one on-chip memory, from the first access to the last.
struct RowSpan {
  bool used = false;
  Memory memory = Memory::Ub;
  std::uint64_t first = 0;
  std::uint64_t end = 0;

  bool overlaps(const RowSpan& other) const { return first < other.end && other.first < end; }
};

// What an instruction touches (its footprint in docs/isa.md, "Execution"). Ends are computed in
// 64 bits, so an instruction whose fields run past a memory is described, not wrapped.
struct Footprint {
  RowSpan source;       // addr_a side: MATMUL (UB), ACTIVATE (ACC), WRITE_HOST (UB or ACC), ELTWISE
  RowSpan destination;  // addr_b side: READ_HOST (UB or ACC), MATMUL (ACC), ACTIVATE (UB or ACC),
                        // ELTWISE (ACC)
  RowSpan bias;  // ACTIVATE with BIAS: one ACC row per iteration (three with REQ); ELTWISE's second
                 // operand: `rows` ACC rows per iteration (one with ROW)
  bool uses_host = false;  // READ_HOST, READ_WEIGHTS, WRITE_HOST, MATMUL with FETCH
  bool writes_host = false;          // WRITE_HOST
  std::uint32_t host_row_bytes = 0;  // 4 * dim for ACC rows, 2 * dim for UB rows and weights,
                                     // dim for int8 rows (I8)
  std::uint32_t host_rows = 0;       // rows per iteration: `rows`, or k_valid with FETCH
  std::uint64_t host_end = 0;        // one past the last host byte
};

// The footprint of an instruction with a known opcode (anything else touches nothing).
Footprint footprint(const Instruction& instruction, unsigned dim);

// The outcome of the issue-stage checks, with a one-line reason when one fails.
struct CheckResult {
  regs::Error error = regs::Error::None;
  std::string reason;  // empty when error is None

  bool ok() const { return error == regs::Error::None; }
};

// Steps 1-6 of "Errors" in docs/isa.md, in that order: opcode, fields, on-chip ranges (source,
// destination, bias), host alignment, host range, ACC overlap. The weight-tile accounting
// (step 7) depends on earlier instructions and belongs to whoever runs the program.
CheckResult diagnose(const Instruction& instruction, const HardwareConfig& config);
inline regs::Error check(const Instruction& instruction, const HardwareConfig& config) {
  return diagnose(instruction, config).error;
}

}  // namespace tpu::isa
