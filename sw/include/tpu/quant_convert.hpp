// QuantizeLinear and DequantizeLinear on a core with a vector unit and the int8 datapath: fp32
// values to int8 ones of a scale and zero point (Q-QUANT of docs/numerics.md), or back
// (Q-DEQUANT), bit for bit num::quantize_int8 and num::dequantize_int8 of every value.
//
// Layout: fp32 values as accumulator rows of D values (host rows 4 D bytes apart, aligned to the
// bus), int8 values as int8 rows of D bytes (READ_HOST I8, WRITE_HOST I8); the last row's lanes
// past the values are dropped. Accumulator rows 0 .. 4 hold the constants: the scale's reciprocal
// (quantising) or the scale (dequantising) in every lane, the zero point as int32, and Q-REQ's
// block of the quantisation's tail (no bias, num::kQuantizeTail). The rows pass through in
// blocks, two in flight (one in each accumulator bank and half of the unified buffer), each
// block's loads issued ahead of the one before's work:
//   quantising:   READ_HOST ACC; ELTWISE ROW quant in place (x times the reciprocal, rounded to
//                 an int32); ACTIVATE REQ into the unified buffer (the zero point, the clamp);
//                 WRITE_HOST I8;
//   dequantising: READ_HOST I8; ELTWISE UB I32 ROW sub of the zero point into accumulator rows;
//                 ELTWISE I32 ROW dequant in place (times the scale); WRITE_HOST ACC.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/numerics/quant.hpp"
#include "tpu/program.hpp"

namespace tpu {

enum class QuantDirection : std::uint8_t { Quantize, Dequantize };

struct QuantConvertSpec {
  QuantDirection direction = QuantDirection::Quantize;
  std::uint64_t size = 0;  // values
  float scale = 1;         // positive, with a normal fp32 reciprocal (num::quantize_params)
  int zero_point = 0;      // int8, in [-128, 127]
};

struct QuantConvertPlan {
  QuantConvertSpec spec;
  HardwareConfig config;
  std::uint64_t rows = 0;                         // rows of D values, ceil(size / D)
  std::uint32_t block_rows = 0;                   // rows a pass through the accumulators takes
  std::uint32_t int8_stride = 0, acc_stride = 0;  // host bytes between int8 rows, fp32 rows
  // Host memory: the constant rows, the input's rows, the output's, the program.
  std::uint32_t const_addr = 0, in_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  std::uint64_t written_bytes() const;  // the constants, the input, the program
  std::uint64_t read_bytes() const;     // the output
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a core without a vector unit or the int8 datapath, no values, a scale or zero point
// outside the ranges above, or tensors beyond the core's 32-bit host addresses.
QuantConvertPlan plan_quant_convert(const HardwareConfig& config, const QuantConvertSpec& spec,
                                    std::uint64_t base = 0);

// A quantising plan's input, x (size fp32 values), or a dequantising one's, q (size int8
// values), with the constants and the program; grows the memory to the plan's size. Throws
// std::invalid_argument for another number of values or a plan of the other direction.
void write_quant_convert_input(const QuantConvertPlan& plan, HostMemory& memory,
                               const std::vector<num::fp32_t>& x);
void write_quant_convert_input(const QuantConvertPlan& plan, HostMemory& memory,
                               const std::vector<std::int8_t>& q);
std::vector<std::int8_t> read_quantize_output(const QuantConvertPlan& plan,
                                              const HostMemory& memory);
std::vector<num::fp32_t> read_dequantize_output(const QuantConvertPlan& plan,
                                                const HostMemory& memory);

struct QuantizeRun {
  RunResult result;
  std::vector<std::int8_t> out;  // empty unless the core reached HALT without an error
};
struct DequantizeRun {
  RunResult result;
  std::vector<num::fp32_t> out;  // likewise
};
// A quantising plan on x, a dequantising one on q: writes them as above into the backend's
// memory, runs the program and reads the output.
QuantizeRun execute_quantize(const QuantConvertPlan& plan, Backend& backend,
                             const std::vector<num::fp32_t>& x);
DequantizeRun execute_dequantize(const QuantConvertPlan& plan, Backend& backend,
                                 const std::vector<std::int8_t>& q);

// The bits the plans' programs give: num::quantize_int8 and num::dequantize_int8 of each value.
std::vector<std::int8_t> reference_quantize(const QuantConvertSpec& spec,
                                            const std::vector<num::fp32_t>& x);
std::vector<num::fp32_t> reference_dequantize(const QuantConvertSpec& spec,
                                              const std::vector<std::int8_t>& q);

}  // namespace tpu
