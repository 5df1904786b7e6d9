// Builds TPU programs in C++: one method per opcode, each taking a struct of named fields with
// defaults (count and rows 1, everything else zero; MATMUL's k_valid and n_valid the array
// size). In C++17 that reads
//
//   tpu::isa::ReadHostArgs load;
//   load.rows = 16;
//   load.host_addr = 0x1000;
//   load.host_stride = 32;
//   tpu::isa::ProgramBuilder program(config);
//   program.read_host(load).halt();
//   backend.memory().write_array(prog_addr, program.bytes());
//
// Every instruction is checked as it is appended (steps 1-6 of "Errors" in docs/isa.md) against
// the builder's hardware configuration, so a program that builds can only fail at run time on
// the weight-tile accounting or a bus error.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/isa.hpp"

namespace tpu::isa {

struct ReadHostArgs {
  bool acc = false;  // fp32 rows into the accumulators instead of bf16 rows into the UB
  bool i8 = false;   // int8 host rows, sign-extended into the UB's lanes (not with acc)
  std::uint32_t count = 1;
  std::uint32_t rows = 1;
  std::uint32_t addr_b = 0;
  std::uint32_t step_b = 0;
  std::uint32_t host_addr = 0;
  std::uint32_t host_stride = 0;
  std::uint32_t host_step = 0;
};

struct ReadWeightsArgs {
  bool i8 = false;          // int8 host rows
  bool transposed = false;  // T: host rows are the tiles' columns (a core with a vector unit)
  std::uint32_t count = 1;
  std::uint32_t rows = 1;  // weight rows (columns with T) per tile; the rest of the tile is +0
  std::uint32_t host_addr = 0;
  std::uint32_t host_stride = 0;
  std::uint32_t host_step = 0;
};

struct MatmulArgs {
  bool acc0 = false;   // iteration 0 accumulates into the rows it writes
  bool accn = false;   // iterations 1 .. count-1 accumulate
  bool fetch = false;  // load one weight tile per iteration from the host fields
  bool i8 = false;     // int8 mode (Q-MAC): int32 sums; with fetch, int8 weight rows
  std::uint32_t count = 1;
  std::uint32_t rows = 1;
  std::uint32_t addr_a = 0;
  std::uint32_t addr_b = 0;
  std::uint32_t step_a = 0;
  std::uint32_t step_b = 0;
  std::uint32_t host_addr = 0;
  std::uint32_t host_stride = 0;
  std::uint32_t host_step = 0;
  std::optional<std::uint32_t> k_valid;  // the array size when not given
  std::optional<std::uint32_t> n_valid;  // the array size when not given
};

struct ActivateArgs {
  bool bias = false;  // add the bias row before the function
  bool f32 = false;   // fp32 rows into the accumulators instead of bf16 rows into the UB
  Func func = Func::None;
  std::uint16_t alpha = 0;  // bf16 slope of Func::Leaky
  std::uint32_t count = 1;
  std::uint32_t rows = 1;
  std::uint32_t addr_a = 0;
  std::uint32_t addr_b = 0;
  std::uint32_t step_a = 0;
  std::uint32_t step_b = 0;
  std::uint32_t bias_addr = 0;
  std::uint32_t bias_step = 0;
  // REQ: requantise int32 rows to int8 (Q-REQ) with the three rows bias, multiplier and shift
  // at bias_addr (bias must be set, func None), the output zero point and clamp; with f32, the
  // int32 values before the zero point and clamp (which must be 0) into the accumulators.
  bool req = false;
  int zero_point = 0;
  int clamp_lo = 0;
  int clamp_hi = 0;
};

struct WriteHostArgs {
  bool acc = false;  // fp32 accumulator rows instead of bf16 UB rows
  bool i8 = false;   // int8 host rows: the low byte of each UB lane (not with acc)
  std::uint32_t count = 1;
  std::uint32_t rows = 1;
  std::uint32_t addr_a = 0;
  std::uint32_t step_a = 0;
  std::uint32_t host_addr = 0;
  std::uint32_t host_stride = 0;
  std::uint32_t host_step = 0;
};

// ELTWISE: accumulator row addr_b + i * step_b + r = op(row addr_a + i * step_a + r, B), B the
// row bias_addr + i * bias_step + r, or with `row` the row bias_addr + i * bias_step; with
// `lanes` every lane holds the left fold of op along row A from B's lane 0.
struct EltwiseArgs {
  VectorOp op = VectorOp::Add;
  bool row = false;    // one B row per iteration (a broadcast row)
  bool int32 = false;  // int32 lanes instead of fp32
  bool lanes = false;  // the fold of op along row A, from B's lane 0, in every lane
  bool ub = false;     // A's rows are unified-buffer rows (bf16, or int8 values with int32)
  std::uint32_t count = 1;
  std::uint32_t rows = 1;
  std::uint32_t addr_a = 0;
  std::uint32_t addr_b = 0;
  std::uint32_t step_a = 0;
  std::uint32_t step_b = 0;
  std::uint32_t bias_addr = 0;
  std::uint32_t bias_step = 0;
};

struct AllreduceArgs {
  bool parameter_server = false;  // PS: the baseline algorithm, not the ring
  std::uint32_t count = 1;        // segments
  std::uint32_t rows = 1;         // rows per segment
  std::uint32_t addr_a = 0;
  std::uint32_t step_a = 0;       // accumulator rows from one segment to the next
  std::uint32_t total = 1;        // values in the whole tensor
  std::uint32_t offset = 0;       // its flat index of lane 0 of row addr_a
  std::uint32_t offset_step = 0;  // flat indices from one segment to the next
};

class ProgramBuilder {
 public:
  // Throws std::invalid_argument if validate_config() rejects the configuration.
  explicit ProgramBuilder(const HardwareConfig& config);

  // Each appends one instruction, or throws std::invalid_argument ("instruction N (mnemonic):
  // ERROR_NAME: reason") when it fails the issue-stage checks or a value does not fit its field.
  ProgramBuilder& read_host(const ReadHostArgs& args);
  ProgramBuilder& read_weights(const ReadWeightsArgs& args);
  ProgramBuilder& matmul(const MatmulArgs& args);
  ProgramBuilder& activate(const ActivateArgs& args);
  ProgramBuilder& write_host(const WriteHostArgs& args);
  ProgramBuilder& allreduce(const AllreduceArgs& args);
  ProgramBuilder& eltwise(const EltwiseArgs& args);
  ProgramBuilder& sync();
  ProgramBuilder& halt();
  // An instruction made elsewhere (assembled, decoded), checked like the others.
  ProgramBuilder& append(const Instruction& instruction);

  const std::vector<Instruction>& instructions() const { return instructions_; }
  std::size_t size() const { return instructions_.size(); }
  // The program as it lies in host memory: 32-byte instructions back to back.
  std::vector<std::uint8_t> bytes() const { return encode_program(instructions_); }

 private:
  HardwareConfig config_;
  std::vector<Instruction> instructions_;
};

}  // namespace tpu::isa
