#include "tpu/quant_convert.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"

namespace tpu {
namespace {

// Accumulator rows of the constants: the scale (or its reciprocal), the zero point, then Q-REQ's
// block of the quantisation's tail.
constexpr std::uint32_t kScaleRow = 0, kZeroRow = 1, kTailBlock = 2;
constexpr std::uint32_t kConstRows = 5;

bool quantising(const QuantConvertSpec& spec) {
  return spec.direction == QuantDirection::Quantize;
}

// The scale's reciprocal (checked as num::quantize_params checks it) or the scale itself.
num::fp32_t scale_row_value(const QuantConvertSpec& spec) {
  const num::QuantizeParams params = num::quantize_params(spec.scale, spec.zero_point);
  return quantising(spec) ? params.reciprocal : num::float_to_fp32(spec.scale);
}

}  // namespace

std::uint64_t QuantConvertPlan::written_bytes() const {
  const std::uint32_t in_stride = quantising(spec) ? acc_stride : int8_stride;
  return std::uint64_t{kConstRows} * acc_stride + rows * in_stride +
         program.size() * isa::kInstrBytes;
}

std::uint64_t QuantConvertPlan::read_bytes() const {
  return rows * (quantising(spec) ? int8_stride : acc_stride);
}

QuantConvertPlan plan_quant_convert(const HardwareConfig& config, const QuantConvertSpec& spec,
                                    std::uint64_t base) {
  isa::validate_config(config);
  const char* what = quantising(spec) ? "a quantisation" : "a dequantisation";
  acc_rows::require_int8_vector_unit(config, what);
  if (spec.size == 0) throw std::invalid_argument(fmt::format("{} of no values", what));
  static_cast<void>(scale_row_value(spec));  // the scale's and zero point's ranges
  const std::uint32_t d = config.dim;
  QuantConvertPlan plan;
  plan.spec = spec;
  plan.config = config;
  plan.rows = (spec.size + d - 1) / d;
  plan.int8_stride = d;
  plan.acc_stride = std::max(4 * d, config.bus_bytes);
  // A block's rows in one accumulator bank (above the constants in bank 0) and half the
  // unified buffer.
  const std::uint64_t bank_rows = config.acc_depth / 2;
  const std::uint64_t block = std::min<std::uint64_t>(
      {plan.rows, bank_rows - std::min<std::uint64_t>(bank_rows, kConstRows), config.ub_depth / 2,
       acc_rows::kMaxRowsField, acc_rows::block_cap(plan.rows, 1)});
  if (block == 0) {
    throw std::invalid_argument(fmt::format("{} takes {} rows of an accumulator bank; {} has {}",
                                            what, kConstRows + 1, config.name(), bank_rows));
  }
  plan.block_rows = static_cast<std::uint32_t>(block);
  const std::uint32_t in_stride = quantising(spec) ? plan.acc_stride : plan.int8_stride;
  const std::uint32_t out_stride = quantising(spec) ? plan.int8_stride : plan.acc_stride;
  const std::uint64_t const_addr = acc_rows::region_start(base);
  const std::uint64_t in_addr = acc_rows::region_start(const_addr + kConstRows * plan.acc_stride);
  const std::uint64_t out_addr = acc_rows::region_start(in_addr + plan.rows * in_stride);
  const std::uint64_t prog_addr = acc_rows::region_start(out_addr + plan.rows * out_stride);
  const std::uint64_t blocks = (plan.rows + block - 1) / block;
  // Four instructions a block, the constants' load and HALT.
  if (prog_addr + (2 + 4 * blocks) * isa::kInstrBytes > 0xFFFFFFFFull) {
    throw std::invalid_argument(
        fmt::format("{}'s tensors exceed the core's 32-bit host addresses", what));
  }
  plan.const_addr = static_cast<std::uint32_t>(const_addr);
  plan.in_addr = static_cast<std::uint32_t>(in_addr);
  plan.out_addr = static_cast<std::uint32_t>(out_addr);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  acc_rows::load(p, 0, kConstRows, plan.const_addr, plan.acc_stride);
  const std::uint32_t ub_half = config.ub_depth / 2;
  // Block k's rows, and where they lie: the unified buffer's and an accumulator bank's half k
  // mod 2.
  struct Place {
    std::uint32_t rows, ub, acc;
    std::uint64_t first;  // its first row of the tensor
  };
  const auto place = [&](std::uint64_t k) {
    Place at{};
    at.first = k * block;
    at.rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(block, plan.rows - at.first));
    const auto parity = static_cast<std::uint32_t>(k % 2);
    at.ub = parity * ub_half;
    at.acc = parity * static_cast<std::uint32_t>(bank_rows) + (parity == 0 ? kConstRows : 0);
    return at;
  };
  const auto load_block = [&](const Place& at) {
    if (quantising(spec)) {
      acc_rows::load(p, at.acc, at.rows, plan.in_addr + at.first * in_stride, in_stride);
    } else {
      acc_rows::load(p, at.ub, at.rows, plan.in_addr + at.first * in_stride, in_stride, 1, 0,
                     acc_rows::Rows::UbInt8);
    }
  };
  const auto convert_block = [&](const Place& at) {
    const std::uint64_t out = plan.out_addr + at.first * out_stride;
    if (quantising(spec)) {
      acc_rows::with_row(p, isa::VectorOp::Quant, at.acc, at.rows, kScaleRow);
      isa::ActivateArgs tail;
      tail.req = tail.bias = true;
      tail.rows = at.rows;
      tail.addr_a = at.acc;
      tail.addr_b = at.ub;
      tail.bias_addr = kTailBlock;
      tail.zero_point = spec.zero_point;
      tail.clamp_lo = -128;
      tail.clamp_hi = 127;
      p.activate(tail);
      acc_rows::store(p, at.ub, at.rows, out, out_stride, 1, 0, acc_rows::Rows::UbInt8);
      return;
    }
    isa::EltwiseArgs offset;
    offset.op = isa::VectorOp::Sub;
    offset.ub = offset.int32 = offset.row = true;
    offset.rows = at.rows;
    offset.addr_a = at.ub;
    offset.bias_addr = kZeroRow;
    offset.addr_b = at.acc;
    p.eltwise(offset);
    isa::EltwiseArgs scale;
    scale.op = isa::VectorOp::Dequant;
    scale.int32 = scale.row = true;
    scale.rows = at.rows;
    scale.addr_a = scale.addr_b = at.acc;
    scale.bias_addr = kScaleRow;
    p.eltwise(scale);
    acc_rows::store(p, at.acc, at.rows, out, out_stride);
  };
  load_block(place(0));
  for (std::uint64_t k = 0; k < blocks; ++k) {
    if (k + 1 < blocks) load_block(place(k + 1));
    convert_block(place(k));
  }
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

namespace {

void check_direction(const QuantConvertPlan& plan, QuantDirection direction) {
  if (plan.spec.direction != direction) {
    throw std::invalid_argument(quantising(plan.spec) ? "a quantising plan given int8 values"
                                                      : "a dequantising plan given fp32 values");
  }
}

// Rows of D fp32 values, or int8 ones.
acc_rows::Layout rows_of(const QuantConvertPlan& plan, bool fp32) {
  return fp32 ? acc_rows::Layout::of(plan.config, plan.config.dim)
              : acc_rows::Layout::int8(plan.config, plan.config.dim);
}

// The constants, the input's rows and the program.
template <typename Value>
void write_input(const QuantConvertPlan& plan, HostMemory& memory,
                 const std::vector<Value>& values) {
  if (values.size() != plan.spec.size) {
    throw std::invalid_argument(
        fmt::format("{} values for a plan of {}", values.size(), plan.spec.size));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  const auto bits = [](std::int32_t v) { return static_cast<num::fp32_t>(v); };
  acc_rows::write_constants(memory, plan.const_addr, plan.config.dim, plan.acc_stride,
                            {scale_row_value(plan.spec), bits(plan.spec.zero_point), 0,
                             bits(num::kQuantizeTail.multiplier), bits(num::kQuantizeTail.shift)});
  acc_rows::write(memory, plan.in_addr, rows_of(plan, quantising(plan.spec)), values.data(),
                  values.size(), Value{0});
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

template <typename Value>
std::vector<Value> read_output(const QuantConvertPlan& plan, const HostMemory& memory) {
  return acc_rows::read<Value>(memory, plan.out_addr, rows_of(plan, !quantising(plan.spec)),
                               plan.spec.size);
}

}  // namespace

void write_quant_convert_input(const QuantConvertPlan& plan, HostMemory& memory,
                               const std::vector<num::fp32_t>& x) {
  check_direction(plan, QuantDirection::Quantize);
  write_input(plan, memory, x);
}

void write_quant_convert_input(const QuantConvertPlan& plan, HostMemory& memory,
                               const std::vector<std::int8_t>& q) {
  check_direction(plan, QuantDirection::Dequantize);
  write_input(plan, memory, q);
}

std::vector<std::int8_t> read_quantize_output(const QuantConvertPlan& plan,
                                              const HostMemory& memory) {
  check_direction(plan, QuantDirection::Quantize);
  return read_output<std::int8_t>(plan, memory);
}

std::vector<num::fp32_t> read_dequantize_output(const QuantConvertPlan& plan,
                                                const HostMemory& memory) {
  check_direction(plan, QuantDirection::Dequantize);
  return read_output<num::fp32_t>(plan, memory);
}

QuantizeRun execute_quantize(const QuantConvertPlan& plan, Backend& backend,
                             const std::vector<num::fp32_t>& x) {
  write_quant_convert_input(plan, backend.memory(), x);
  QuantizeRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_quantize_output(plan, backend.memory());
  return run;
}

DequantizeRun execute_dequantize(const QuantConvertPlan& plan, Backend& backend,
                                 const std::vector<std::int8_t>& q) {
  write_quant_convert_input(plan, backend.memory(), q);
  DequantizeRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_dequantize_output(plan, backend.memory());
  return run;
}

std::vector<std::int8_t> reference_quantize(const QuantConvertSpec& spec,
                                            const std::vector<num::fp32_t>& x) {
  const num::QuantizeParams params = num::quantize_params(spec.scale, spec.zero_point);
  std::vector<std::int8_t> q(x.size());
  std::transform(x.begin(), x.end(), q.begin(),
                 [&](num::fp32_t v) { return num::quantize_int8(v, params); });
  return q;
}

std::vector<num::fp32_t> reference_dequantize(const QuantConvertSpec& spec,
                                              const std::vector<std::int8_t>& q) {
  static_cast<void>(num::quantize_params(spec.scale, spec.zero_point));
  const num::fp32_t scale = num::float_to_fp32(spec.scale);
  std::vector<num::fp32_t> y(q.size());
  std::transform(q.begin(), q.end(), y.begin(),
                 [&](std::int8_t v) { return num::dequantize_int8(v, spec.zero_point, scale); });
  return y;
}

}  // namespace tpu
