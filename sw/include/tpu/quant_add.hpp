// int8 addition on a core with a vector unit and the int8 datapath: y = a + b of two int8
// tensors of the same size, each with a scale and zero point of its own, into a third (Q-ADD of
// docs/numerics.md, TensorFlow Lite's ADD), bit for bit num::add_int8 of every pair.
//
// Layout: the values as int8 rows of D values (unified-buffer rows, as READ_HOST I8 takes them;
// the last row's lanes past the values hold 0 and are dropped). Accumulator rows 0 .. 10 hold the
// constants: 2^20 and 2^19 in every lane, then a Q-REQ block (bias, multiplier, shift) for each
// input's rescaling, the bias taking off the input's zero point times 2^20, and one for the
// output. The rows pass through in blocks, two in flight (one in each accumulator bank and half
// of the unified buffer): a block's a and b rows are read into the unified buffer; each is
// widened into accumulator rows and moved up by 2^20 (ELTWISE UB I32 ROW mul) and rescaled in
// place (ACTIVATE REQ F32); the two are added (ELTWISE I32 add) and requantised into the unified
// buffer (ACTIVATE REQ), and the block is written back (WRITE_HOST I8); the next block's loads
// go ahead of a block's sum, and its rescaling ahead of the block's requantisation, so that the
// activation unit rescales one block while the vector unit adds the other. The input of the larger
// scale has the multiplier 1/2, which halves exactly: it is moved up by 2^19 instead and not
// rescaled, its zero point's share going into the output's bias, so that the activation unit
// (a row in D / its lanes cycles) takes two passes over the rows, or one for equal scales.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/numerics/quant.hpp"
#include "tpu/program.hpp"

namespace tpu {

struct QuantAddSpec {
  std::uint64_t size = 0;  // values of a, b and y
  num::QuantAddParams params;
};

struct QuantAddPlan {
  QuantAddSpec spec;
  HardwareConfig config;
  std::uint64_t rows = 0;        // int8 rows of D values, ceil(size / D)
  std::uint32_t block_rows = 0;  // rows a pass through the accumulators takes
  std::uint32_t row_stride = 0;  // host bytes between int8 rows
  std::uint32_t acc_stride = 0;  // host bytes between the constants' accumulator rows
  // Host memory: the constant rows, a's rows, b's, y's, the program.
  std::uint32_t const_addr = 0, a_addr = 0, b_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  std::uint64_t written_bytes() const;  // the constants, a and b, the program
  std::uint64_t read_bytes() const;     // y
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a core without a vector unit or the int8 datapath, an empty operand, parameters
// outside Q-ADD's ranges, or tensors beyond the core's 32-bit host addresses.
QuantAddPlan plan_quant_add(const HardwareConfig& config, const QuantAddSpec& spec,
                            std::uint64_t base = 0);

// a and b: size int8 values each. Grows the memory to the plan's size.
void write_quant_add_inputs(const QuantAddPlan& plan, HostMemory& memory,
                            const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b);
std::vector<std::int8_t> read_quant_add_output(const QuantAddPlan& plan, const HostMemory& memory);

struct QuantAddRun {
  RunResult result;
  std::vector<std::int8_t> out;  // empty unless the core reached HALT without an error
};
QuantAddRun execute_quant_add(const QuantAddPlan& plan, Backend& backend,
                              const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b);

// The bits the plan's program gives: num::add_int8 of each pair.
std::vector<std::int8_t> reference_quant_add(const QuantAddSpec& spec,
                                             const std::vector<std::int8_t>& a,
                                             const std::vector<std::int8_t>& b);

}  // namespace tpu
