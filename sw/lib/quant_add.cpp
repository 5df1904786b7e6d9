#include "tpu/quant_add.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"

namespace tpu {
namespace {

// Accumulator rows of the constants: 2^20 and 2^19, then the Q-REQ blocks of a, b and the
// output.
constexpr std::uint32_t kShiftRow = 0, kHalfShiftRow = 1;
constexpr std::uint32_t kABlock = 2, kBBlock = 5, kOutBlock = 8;
constexpr std::uint32_t kConstRows = 11;

// The input with the larger scale (both, where they are equal) has the multiplier 1/2: M = 2^30,
// s = 0. Its rescaling of (q - z) 2^20, SRDHM by 2^30, halves an even number exactly, so the
// program takes q 2^19 (one ELTWISE) and moves -z 2^19 into the output's bias, which Q-REQ adds
// before anything rounds: the same sum, one pass of the activation unit fewer.
bool halves(num::QuantizedMultiplier m) {
  return m.multiplier == 1 << 30 && m.shift == 0;
}

void check_spec(const HardwareConfig& config, const QuantAddSpec& spec) {
  acc_rows::require_int8_vector_unit(config, "an int8 addition");
  if (spec.size == 0) throw std::invalid_argument("an int8 addition of empty operands");
  // add_int8 checks every range once: the program's rows hold what it takes.
  static_cast<void>(num::add_int8(0, 0, spec.params));
}

// The bits of an int32 lane.
std::uint32_t bits(std::int32_t value) {
  return static_cast<std::uint32_t>(value);
}

}  // namespace

std::uint64_t QuantAddPlan::written_bytes() const {
  return std::uint64_t{kConstRows} * acc_stride + 2 * rows * row_stride +
         program.size() * isa::kInstrBytes;
}

std::uint64_t QuantAddPlan::read_bytes() const {
  return rows * row_stride;
}

QuantAddPlan plan_quant_add(const HardwareConfig& config, const QuantAddSpec& spec,
                            std::uint64_t base) {
  isa::validate_config(config);
  check_spec(config, spec);
  const std::uint32_t d = config.dim;
  QuantAddPlan plan;
  plan.spec = spec;
  plan.config = config;
  plan.rows = (spec.size + d - 1) / d;
  // int8 host rows: D bytes, aligned to D or the bus, whichever is smaller (HOST_ALIGN).
  plan.row_stride = d;
  plan.acc_stride = std::max(4 * d, config.bus_bytes);
  // A block's a and b rows, and y's, in each half of the unified buffer; its two rescaled
  // operands in one accumulator bank, above the constants in bank 0; blocks of the float
  // elementwise operators' size.
  const std::uint64_t bank_rows = config.acc_depth / 2;
  const std::uint64_t block =
      std::min<std::uint64_t>({plan.rows, (bank_rows - kConstRows) / 2, config.ub_depth / 6,
                               acc_rows::kMaxRowsField, acc_rows::block_cap(plan.rows, 1)});
  if (block == 0) {
    throw std::invalid_argument(
        fmt::format("an int8 addition takes {} rows of an accumulator bank and 6 of the unified "
                    "buffer; {} has {} and {}",
                    kConstRows + 2, config.name(), bank_rows, config.ub_depth));
  }
  plan.block_rows = static_cast<std::uint32_t>(block);

  const std::uint64_t const_addr = acc_rows::region_start(base);
  const std::uint64_t data_bytes = plan.rows * plan.row_stride;
  const std::uint64_t a_addr = acc_rows::region_start(const_addr + kConstRows * plan.acc_stride);
  const std::uint64_t b_addr = acc_rows::region_start(a_addr + data_bytes);
  const std::uint64_t out_addr = acc_rows::region_start(b_addr + data_bytes);
  const std::uint64_t prog_addr = acc_rows::region_start(out_addr + data_bytes);
  const std::uint64_t blocks = (plan.rows + block - 1) / block;
  // Ten instructions a block, the constants' load and HALT.
  if (prog_addr + (2 + 10 * blocks) * isa::kInstrBytes > 0xFFFFFFFFull) {
    throw std::invalid_argument(
        "the int8 addition's tensors exceed the core's 32-bit host addresses");
  }
  plan.const_addr = static_cast<std::uint32_t>(const_addr);
  plan.a_addr = static_cast<std::uint32_t>(a_addr);
  plan.b_addr = static_cast<std::uint32_t>(b_addr);
  plan.out_addr = static_cast<std::uint32_t>(out_addr);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  acc_rows::load(p, 0, kConstRows, plan.const_addr, plan.acc_stride);

  const std::uint32_t ub_half = config.ub_depth / 2;
  // Block k's rows, and where they lie: the unified buffer's and an accumulator bank's half k
  // mod 2.
  struct Place {
    std::uint32_t rows, ub_a, ub_b, ub_y, acc_a, acc_b;
    std::uint64_t offset;
  };
  const auto place = [&](std::uint64_t k) {
    Place at{};
    at.rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(block, plan.rows - k * block));
    at.offset = k * block * plan.row_stride;
    const auto parity = static_cast<std::uint32_t>(k % 2);
    at.ub_a = parity * ub_half;
    at.ub_b = at.ub_a + plan.block_rows;
    at.ub_y = at.ub_b + plan.block_rows;
    at.acc_a = parity * static_cast<std::uint32_t>(bank_rows) + (parity == 0 ? kConstRows : 0);
    at.acc_b = at.acc_a + plan.block_rows;
    return at;
  };
  // The block's a and b rows into the unified buffer.
  const auto load_block = [&](const Place& at) {
    acc_rows::load(p, at.ub_a, at.rows, plan.a_addr + at.offset, plan.row_stride, 1, 0,
                   acc_rows::Rows::UbInt8);
    acc_rows::load(p, at.ub_b, at.rows, plan.b_addr + at.offset, plan.row_stride, 1, 0,
                   acc_rows::Rows::UbInt8);
  };
  // Each widened into accumulator rows and moved up: q 2^19 where the input's multiplier
  // halves, else (q 2^20 + the block's bias) rescaled, Q-REQ's y without the zero point and the
  // clamp.
  const auto rescale_block = [&](const Place& at) {
    const auto operand = [&](std::uint32_t ub_row, std::uint32_t acc_row, std::uint32_t block_row,
                             bool half) {
      isa::EltwiseArgs widen;
      widen.op = isa::VectorOp::Mul;
      widen.ub = widen.int32 = widen.row = true;
      widen.rows = at.rows;
      widen.addr_a = ub_row;
      widen.bias_addr = half ? kHalfShiftRow : kShiftRow;
      widen.addr_b = acc_row;
      p.eltwise(widen);
      if (half) return;
      isa::ActivateArgs scale;
      scale.req = scale.bias = scale.f32 = true;
      scale.rows = at.rows;
      scale.addr_a = scale.addr_b = acc_row;
      scale.bias_addr = block_row;
      p.activate(scale);
    };
    operand(at.ub_a, at.acc_a, kABlock, halves(spec.params.a));
    operand(at.ub_b, at.acc_b, kBBlock, halves(spec.params.b));
  };
  const auto sum_block = [&](const Place& at) {
    isa::EltwiseArgs sum;
    sum.op = isa::VectorOp::Add;
    sum.int32 = true;
    sum.rows = at.rows;
    sum.addr_a = at.acc_a;
    sum.bias_addr = at.acc_b;
    sum.addr_b = at.acc_a;
    p.eltwise(sum);
  };
  // The sum's requantisation into the unified buffer and the block's store.
  const auto finish_block = [&](const Place& at) {
    isa::ActivateArgs out;
    out.req = out.bias = true;
    out.rows = at.rows;
    out.addr_a = at.acc_a;
    out.addr_b = at.ub_y;
    out.bias_addr = kOutBlock;
    out.zero_point = spec.params.zero_point;
    out.clamp_lo = spec.params.lo;
    out.clamp_hi = spec.params.hi;
    p.activate(out);
    acc_rows::store(p, at.ub_y, at.rows, plan.out_addr + at.offset, plan.row_stride, 1, 0,
                    acc_rows::Rows::UbInt8);
  };
  // The units take their instructions in program order: block k + 1's loads go ahead of block
  // k's sum, and its rescaling ahead of block k's requantisation, so that the activation unit
  // rescales block k + 1 while the vector unit adds block k.
  load_block(place(0));
  rescale_block(place(0));
  for (std::uint64_t k = 0; k < blocks; ++k) {
    if (k + 1 < blocks) load_block(place(k + 1));
    sum_block(place(k));
    if (k + 1 < blocks) rescale_block(place(k + 1));
    finish_block(place(k));
  }
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

void write_quant_add_inputs(const QuantAddPlan& plan, HostMemory& memory,
                            const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b) {
  if (a.size() != plan.spec.size || b.size() != plan.spec.size) {
    throw std::invalid_argument(
        fmt::format("the int8 addition's operands have {} and {} values, the plan {}", a.size(),
                    b.size(), plan.spec.size));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  const num::QuantAddParams& q = plan.spec.params;
  // 2^20 and 2^19; each input's block with the zero point's share, -z 2^20, in its bias: (q - z)
  // 2^20 exactly, as TensorFlow Lite's; an input whose multiplier halves leaves its block unused
  // (zeros) and -z 2^19 to the output's bias.
  std::vector<num::fp32_t> constants(kConstRows, 0);
  constants[kShiftRow] = 1u << num::kAddLeftShift;
  constants[kHalfShiftRow] = 1u << (num::kAddLeftShift - 1);
  std::int32_t out_bias = 0;
  const auto block = [&](std::uint32_t first, std::int32_t bias, num::QuantizedMultiplier m) {
    constants[first] = bits(bias);
    constants[first + 1] = bits(m.multiplier);
    constants[first + 2] = bits(m.shift);
  };
  const auto input_block = [&](std::uint32_t first, int zero_point, num::QuantizedMultiplier m) {
    if (halves(m)) {
      out_bias -= zero_point * (1 << (num::kAddLeftShift - 1));
    } else {
      block(first, -zero_point * (1 << num::kAddLeftShift), m);
    }
  };
  input_block(kABlock, q.a_zero_point, q.a);
  input_block(kBBlock, q.b_zero_point, q.b);
  block(kOutBlock, out_bias, q.out);
  acc_rows::write_constants(memory, plan.const_addr, plan.config.dim, plan.acc_stride, constants);
  const auto operand = [&](const std::vector<std::int8_t>& values, std::uint32_t addr) {
    acc_rows::write(memory, addr, acc_rows::Layout::int8(plan.config, plan.config.dim),
                    values.data(), values.size(), std::int8_t{0});
  };
  operand(a, plan.a_addr);
  operand(b, plan.b_addr);
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

std::vector<std::int8_t> read_quant_add_output(const QuantAddPlan& plan, const HostMemory& memory) {
  return memory.read_array<std::int8_t>(plan.out_addr, plan.spec.size);
}

QuantAddRun execute_quant_add(const QuantAddPlan& plan, Backend& backend,
                              const std::vector<std::int8_t>& a,
                              const std::vector<std::int8_t>& b) {
  write_quant_add_inputs(plan, backend.memory(), a, b);
  QuantAddRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_quant_add_output(plan, backend.memory());
  return run;
}

std::vector<std::int8_t> reference_quant_add(const QuantAddSpec& spec,
                                             const std::vector<std::int8_t>& a,
                                             const std::vector<std::int8_t>& b) {
  if (a.size() != spec.size || b.size() != spec.size) {
    throw std::invalid_argument("reference_quant_add: operands of another size than the spec's");
  }
  std::vector<std::int8_t> y(spec.size);
  for (std::uint64_t n = 0; n < spec.size; ++n) y[n] = num::add_int8(a[n], b[n], spec.params);
  return y;
}

}  // namespace tpu
