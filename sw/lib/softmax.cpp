#include "tpu/softmax.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

constexpr num::fp32_t kMinusInfinity = 0xFF800000u;  // the seed of the maximum, the padding
constexpr num::fp32_t kMinusZero = 0x80000000u;      // the seed of the sum
constexpr num::fp32_t kSignMask = 0x80000000u;

// Accumulator rows: the two seed rows, then per block the rows of X (its values, then x - max,
// e^(x - max) and the results, in place), the rows combining a row's tiles (with more than
// one), and one row per softmax row for its maximum, then its sum and 1/sum.
constexpr std::uint32_t kMaxSeedRow = 0, kSumSeedRow = 1, kFirstBlockRow = 2;

std::uint32_t combine_rows(std::uint32_t tiles, std::uint32_t block) {
  return tiles > 1 ? block : 0;
}

}  // namespace

std::uint64_t SoftmaxPlan::written_bytes() const {
  return 2ull * row_stride + std::uint64_t{rows} * tiles * row_stride +
         program.size() * isa::kInstrBytes;
}

std::uint64_t SoftmaxPlan::read_bytes() const {
  return std::uint64_t{rows} * tiles * row_stride;
}

SoftmaxPlan plan_softmax(const HardwareConfig& config, std::uint32_t rows, std::uint32_t length,
                         std::uint64_t base) {
  isa::validate_config(config);
  if (config.vector_lanes == 0) {
    throw std::invalid_argument("softmax on the core needs a vector unit; " + config.name() +
                                " has none");
  }
  if (rows == 0 || length == 0) throw std::invalid_argument("softmax of an empty tensor");
  SoftmaxPlan plan;
  plan.config = config;
  plan.rows = rows;
  plan.length = length;
  const acc_rows::Layout layout = acc_rows::Layout::of(config, length);
  plan.tiles = layout.tiles;
  const std::uint32_t per_row = plan.tiles + 1 + (plan.tiles > 1 ? 1 : 0);
  if (config.acc_depth < kFirstBlockRow + per_row) {
    throw std::invalid_argument(
        fmt::format("a softmax row of {} values takes {} accumulator rows; {} has {}", length,
                    kFirstBlockRow + per_row, config.name(), config.acc_depth));
  }
  plan.block_rows = std::min(rows, (config.acc_depth - kFirstBlockRow) / per_row);
  plan.row_stride = layout.stride;

  const std::uint64_t seed_addr = acc_rows::region_start(base);
  const std::uint64_t seed_bytes = 2ull * plan.row_stride;
  const std::uint64_t data_bytes = std::uint64_t{rows} * plan.tiles * plan.row_stride;
  const std::uint64_t prog_addr = acc_rows::region_start(seed_addr + seed_bytes + 2 * data_bytes);
  // The program's instructions (at most 9 + 2 (tiles - 1) a block) end below 2^32 too.
  const std::uint64_t blocks = (rows + plan.block_rows - 1) / plan.block_rows;
  if (prog_addr + (2 + blocks * (9 + 2ull * plan.tiles)) * isa::kInstrBytes > 0xFFFFFFFFull) {
    throw std::invalid_argument("the softmax's tensors exceed the core's 32-bit host addresses");
  }
  plan.seed_addr = static_cast<std::uint32_t>(seed_addr);
  plan.in_addr = static_cast<std::uint32_t>(seed_addr + seed_bytes);
  plan.out_addr = static_cast<std::uint32_t>(seed_addr + seed_bytes + data_bytes);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  isa::ReadHostArgs seeds;
  seeds.acc = true;
  seeds.rows = 2;
  seeds.addr_b = kMaxSeedRow;
  seeds.host_addr = plan.seed_addr;
  seeds.host_stride = plan.row_stride;
  p.read_host(seeds);
  const std::uint32_t x = kFirstBlockRow;
  for (std::uint32_t first = 0; first < rows; first += plan.block_rows) {
    const std::uint32_t block = std::min(plan.block_rows, rows - first);
    const std::uint32_t block_acc_rows = block * plan.tiles;
    const std::uint32_t combined = x + block_acc_rows;
    const std::uint32_t reduced = combined + combine_rows(plan.tiles, block);
    const std::uint64_t offset = std::uint64_t{first} * plan.tiles * plan.row_stride;

    acc_rows::load(p, x, block_acc_rows, plan.in_addr + offset, plan.row_stride);
    acc_rows::reduce_rows(p, isa::VectorOp::Max, kMaxSeedRow, x, combined, reduced, block,
                          plan.tiles);
    acc_rows::against_row(p, isa::VectorOp::Sub, x, reduced, block, plan.tiles);
    acc_rows::activate_in_place(p, isa::Func::Exp, x, block_acc_rows);
    acc_rows::reduce_rows(p, isa::VectorOp::Add, kSumSeedRow, x, combined, reduced, block,
                          plan.tiles);
    acc_rows::activate_in_place(p, isa::Func::Recip, reduced, block);
    acc_rows::against_row(p, isa::VectorOp::Mul, x, reduced, block, plan.tiles);
    acc_rows::store(p, x, block_acc_rows, plan.out_addr + offset, plan.row_stride);
  }
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

void write_softmax_inputs(const SoftmaxPlan& plan, HostMemory& memory,
                          const std::vector<num::fp32_t>& x) {
  const std::uint32_t d = plan.config.dim;
  if (x.size() != std::uint64_t{plan.rows} * plan.length) {
    throw std::invalid_argument(fmt::format("the softmax's input has {} values, the plan {} x {}",
                                            x.size(), plan.rows, plan.length));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  std::vector<num::fp32_t> row(d, 0);
  row[0] = kMinusInfinity;
  memory.write_array(plan.seed_addr, row);
  row[0] = kMinusZero;
  memory.write_array(plan.seed_addr + plan.row_stride, row);
  acc_rows::write(memory, plan.in_addr, acc_rows::Layout::of(plan.config, plan.length), x.data(),
                  x.size(), kMinusInfinity);
  const std::vector<std::uint8_t> program = isa::encode_program(plan.program);
  memory.write_array(plan.prog_addr, program);
}

std::vector<num::fp32_t> read_softmax_output(const SoftmaxPlan& plan, const HostMemory& memory) {
  return acc_rows::read(memory, plan.out_addr, acc_rows::Layout::of(plan.config, plan.length),
                        std::uint64_t{plan.rows} * plan.length);
}

SoftmaxRun execute_softmax(const SoftmaxPlan& plan, Backend& backend,
                           const std::vector<num::fp32_t>& x) {
  write_softmax_inputs(plan, backend.memory(), x);
  SoftmaxRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_softmax_output(plan, backend.memory());
  return run;
}

std::vector<num::fp32_t> reference_softmax(const HardwareConfig& config, std::uint32_t rows,
                                           std::uint32_t length,
                                           const std::vector<num::fp32_t>& x) {
  const std::uint32_t d = config.dim;
  const std::uint32_t tiles = (length + d - 1) / d;
  const auto exp = static_cast<unsigned>(num::ActFunc::kExp);
  const auto recip = static_cast<unsigned>(num::ActFunc::kRecip);
  std::vector<num::fp32_t> y;
  y.reserve(std::uint64_t{rows} * length);
  std::vector<num::fp32_t> v(std::uint64_t{tiles} * d);
  for (std::uint32_t m = 0; m < rows; ++m) {
    for (std::uint64_t n = 0; n < v.size(); ++n) {
      v[n] = n < length ? x[m * std::uint64_t{length} + n] : kMinusInfinity;
    }
    const num::fp32_t top = acc_rows::reduce_values(num::max_fp32, v, d, kMinusInfinity);
    for (num::fp32_t& value : v) {
      value = num::act_func(exp, num::add_fp32(value, top ^ kSignMask), 0);
    }
    const num::fp32_t inverse =
        num::act_func(recip, acc_rows::reduce_values(num::add_fp32, v, d, kMinusZero), 0);
    for (std::uint32_t n = 0; n < length; ++n) y.push_back(num::mul_fp32(v[n], inverse));
  }
  return y;
}

}  // namespace tpu
