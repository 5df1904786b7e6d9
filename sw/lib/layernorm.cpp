#include "tpu/layernorm.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

constexpr num::fp32_t kMinusZero = 0x80000000u;  // the seed of the sums
constexpr num::fp32_t kOne = 0x3F800000u;
constexpr num::fp32_t kSignMask = 0x80000000u;

// Accumulator rows from 0: the sums' seed, 1/N, eps, the mask of the last tile's lanes (where N
// does not fill it), gamma's tiles, beta's; then per block the rows of X (x, then d and y in
// place), of d * d, the rows combining a row's tiles (with more than one), and one row per
// row of X for its mean, then its variance and inv.
constexpr std::uint32_t kSeedRow = 0, kScaleRow = 1, kEpsilonRow = 2, kMaskRow = 3;

bool masked(const LayerNormSpec& spec, std::uint32_t dim) {
  return spec.length % dim != 0;
}

std::uint32_t gamma_row(const LayerNormSpec& spec, std::uint32_t dim) {
  return kMaskRow + (masked(spec, dim) ? 1 : 0);
}

// ELTWISE op of each of `block` rows' tiles, in place, against the tiles from `operand` (gamma's,
// beta's: the same for every row).
void with_tiles(isa::ProgramBuilder& p, isa::VectorOp op, std::uint32_t x, std::uint32_t block,
                std::uint32_t tiles, std::uint32_t operand) {
  isa::EltwiseArgs e;
  e.op = op;
  e.count = block;
  e.rows = tiles;
  e.addr_a = e.addr_b = x;
  e.step_a = e.step_b = tiles;
  e.bias_addr = operand;
  p.eltwise(e);
}

}  // namespace

std::uint64_t LayerNormPlan::written_bytes() const {
  return (const_rows + std::uint64_t{spec.rows} * tiles) * row_stride +
         program.size() * isa::kInstrBytes;
}

std::uint64_t LayerNormPlan::read_bytes() const {
  return std::uint64_t{spec.rows} * tiles * row_stride;
}

LayerNormPlan plan_layernorm(const HardwareConfig& config, const LayerNormSpec& spec,
                             std::uint64_t base) {
  isa::validate_config(config);
  if (config.vector_lanes == 0) {
    throw std::invalid_argument("layer normalisation on the core needs a vector unit; " +
                                config.name() + " has none");
  }
  if (spec.rows == 0 || spec.length == 0) {
    throw std::invalid_argument("layer normalisation of an empty tensor");
  }
  LayerNormPlan plan;
  plan.spec = spec;
  plan.config = config;
  const acc_rows::Layout layout = acc_rows::Layout::of(config, spec.length);
  plan.tiles = layout.tiles;
  plan.row_stride = layout.stride;
  const std::uint32_t t = plan.tiles;
  plan.const_rows = gamma_row(spec, config.dim) + t * (spec.has_beta ? 2 : 1);
  const std::uint64_t per_row = 2ull * t + (t > 1 ? 1 : 0) + 1;
  if (config.acc_depth < plan.const_rows + per_row) {
    throw std::invalid_argument(
        fmt::format("a layer normalisation row of {} values takes {} accumulator rows; {} has {}",
                    spec.length, plan.const_rows + per_row, config.name(), config.acc_depth));
  }
  plan.block_rows = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(spec.rows, (config.acc_depth - plan.const_rows) / per_row));

  const std::uint64_t const_addr = acc_rows::region_start(base);
  const std::uint64_t data_bytes = layout.bytes(spec.rows);
  const std::uint64_t in_addr = const_addr + std::uint64_t{plan.const_rows} * plan.row_stride;
  const std::uint64_t prog_addr = acc_rows::region_start(in_addr + 2 * data_bytes);
  const std::uint64_t blocks = (spec.rows + plan.block_rows - 1) / plan.block_rows;
  if (prog_addr + (2 + blocks * (18 + 2ull * t)) * isa::kInstrBytes > 0xFFFFFFFFull) {
    throw std::invalid_argument(
        "the layer normalisation's tensors exceed the core's 32-bit host addresses");
  }
  plan.const_addr = static_cast<std::uint32_t>(const_addr);
  plan.in_addr = static_cast<std::uint32_t>(in_addr);
  plan.out_addr = static_cast<std::uint32_t>(in_addr + data_bytes);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  acc_rows::load(p, 0, plan.const_rows, plan.const_addr, plan.row_stride);
  const std::uint32_t gamma = gamma_row(spec, config.dim), beta = gamma + t;
  const std::uint32_t x = plan.const_rows;
  for (std::uint32_t first = 0; first < spec.rows; first += plan.block_rows) {
    const std::uint32_t block = std::min(plan.block_rows, spec.rows - first);
    const std::uint32_t block_acc_rows = block * t;
    const std::uint32_t squares = x + block_acc_rows;
    const std::uint32_t combined = squares + block_acc_rows;
    const std::uint32_t reduced = combined + (t > 1 ? block : 0);
    const std::uint64_t offset = layout.bytes(first);
    acc_rows::load(p, x, block_acc_rows, plan.in_addr + offset, plan.row_stride);
    // The mean, and d = x - mean in place.
    acc_rows::reduce_rows(p, isa::VectorOp::Add, kSeedRow, x, combined, reduced, block, t);
    acc_rows::with_row(p, isa::VectorOp::Mul, reduced, block, kScaleRow);
    acc_rows::against_row(p, isa::VectorOp::Sub, x, reduced, block, t);
    // d * d, its padding lanes 0, summed; the variance plus eps; its rsqrt.
    isa::EltwiseArgs square;
    square.op = isa::VectorOp::Mul;
    square.rows = block_acc_rows;
    square.addr_a = square.bias_addr = x;
    square.addr_b = squares;
    p.eltwise(square);
    if (masked(spec, config.dim)) {
      isa::EltwiseArgs mask;
      mask.op = isa::VectorOp::Mul;
      mask.row = true;
      mask.count = block;
      mask.addr_a = mask.addr_b = squares + t - 1;  // each row's last tile
      mask.step_a = mask.step_b = t;
      mask.bias_addr = kMaskRow;
      p.eltwise(mask);
    }
    acc_rows::reduce_rows(p, isa::VectorOp::Add, kSeedRow, squares, combined, reduced, block, t);
    acc_rows::with_row(p, isa::VectorOp::Mul, reduced, block, kScaleRow);
    acc_rows::with_row(p, isa::VectorOp::Add, reduced, block, kEpsilonRow);
    acc_rows::activate_in_place(p, isa::Func::Rsqrt, reduced, block);
    // y = d * inv * gamma + beta.
    acc_rows::against_row(p, isa::VectorOp::Mul, x, reduced, block, t);
    with_tiles(p, isa::VectorOp::Mul, x, block, t, gamma);
    if (spec.has_beta) with_tiles(p, isa::VectorOp::Add, x, block, t, beta);
    acc_rows::store(p, x, block_acc_rows, plan.out_addr + offset, plan.row_stride);
  }
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

void write_layernorm_inputs(const LayerNormPlan& plan, HostMemory& memory,
                            const std::vector<num::fp32_t>& x,
                            const std::vector<num::fp32_t>& gamma,
                            const std::vector<num::fp32_t>& beta) {
  const LayerNormSpec& spec = plan.spec;
  if (x.size() != std::uint64_t{spec.rows} * spec.length || gamma.size() != spec.length ||
      beta.size() != (spec.has_beta ? spec.length : 0)) {
    throw std::invalid_argument(fmt::format(
        "the layer normalisation's operands have {}, {} and {} values, the plan {} x {}", x.size(),
        gamma.size(), beta.size(), spec.rows, spec.length));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  const std::uint32_t d = plan.config.dim;
  // The one-row constants, each D lanes.
  std::vector<num::fp32_t> rows(std::uint64_t{gamma_row(spec, d)} * d, 0);
  rows[kSeedRow * d] = kMinusZero;
  std::fill_n(rows.begin() + kScaleRow * d, d, acc_rows::reciprocal(spec.length));
  std::fill_n(rows.begin() + kEpsilonRow * d, d, spec.epsilon);
  if (masked(spec, d)) std::fill_n(rows.begin() + kMaskRow * d, spec.length % d, kOne);
  const acc_rows::Layout one_row{d, d, 1, plan.row_stride};
  acc_rows::write(memory, plan.const_addr, one_row, rows.data(), rows.size(), 0);
  const acc_rows::Layout layout = acc_rows::Layout::of(plan.config, spec.length);
  const std::uint64_t gamma_addr =
      plan.const_addr + std::uint64_t{gamma_row(spec, d)} * plan.row_stride;
  acc_rows::write(memory, gamma_addr, layout, gamma.data(), gamma.size(), 0);
  if (spec.has_beta) {
    acc_rows::write(memory, gamma_addr + layout.bytes(1), layout, beta.data(), beta.size(), 0);
  }
  acc_rows::write(memory, plan.in_addr, layout, x.data(), x.size(), 0);
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

std::vector<num::fp32_t> read_layernorm_output(const LayerNormPlan& plan,
                                               const HostMemory& memory) {
  return acc_rows::read(memory, plan.out_addr, acc_rows::Layout::of(plan.config, plan.spec.length),
                        std::uint64_t{plan.spec.rows} * plan.spec.length);
}

LayerNormRun execute_layernorm(const LayerNormPlan& plan, Backend& backend,
                               const std::vector<num::fp32_t>& x,
                               const std::vector<num::fp32_t>& gamma,
                               const std::vector<num::fp32_t>& beta) {
  write_layernorm_inputs(plan, backend.memory(), x, gamma, beta);
  LayerNormRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_layernorm_output(plan, backend.memory());
  return run;
}

std::vector<num::fp32_t> reference_layernorm(const HardwareConfig& config,
                                             const LayerNormSpec& spec,
                                             const std::vector<num::fp32_t>& x,
                                             const std::vector<num::fp32_t>& gamma,
                                             const std::vector<num::fp32_t>& beta) {
  const std::uint32_t d = config.dim, n = spec.length;
  const std::uint32_t tiles = (n + d - 1) / d;
  const num::fp32_t r = acc_rows::reciprocal(n);
  const auto rsqrt = static_cast<unsigned>(num::ActFunc::kRsqrt);
  std::vector<num::fp32_t> y;
  y.reserve(std::uint64_t{spec.rows} * n);
  std::vector<num::fp32_t> v(std::uint64_t{tiles} * d), q(v.size());
  for (std::uint32_t m = 0; m < spec.rows; ++m) {
    for (std::uint64_t j = 0; j < v.size(); ++j) v[j] = j < n ? x[m * std::uint64_t{n} + j] : 0;
    const num::fp32_t mean =
        num::mul_fp32(acc_rows::reduce_values(num::add_fp32, v, d, kMinusZero), r);
    for (std::uint64_t j = 0; j < v.size(); ++j) {
      v[j] = num::add_fp32(v[j], mean ^ kSignMask);
      q[j] = num::mul_fp32(v[j], v[j]);
      // The last tile's lanes past N, multiplied by the mask's 0 (the others by its 1).
      if (n % d != 0 && j >= std::uint64_t{tiles - 1} * d) {
        q[j] = num::mul_fp32(q[j], j < n ? kOne : 0);
      }
    }
    const num::fp32_t variance =
        num::mul_fp32(acc_rows::reduce_values(num::add_fp32, q, d, kMinusZero), r);
    const num::fp32_t inv = num::act_func(rsqrt, num::add_fp32(variance, spec.epsilon), 0);
    for (std::uint32_t j = 0; j < n; ++j) {
      num::fp32_t value = num::mul_fp32(num::mul_fp32(v[j], inv), gamma[j]);
      if (spec.has_beta) value = num::add_fp32(value, beta[j]);
      y.push_back(value);
    }
  }
  return y;
}

}  // namespace tpu
