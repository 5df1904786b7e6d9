#include "tpu/elementwise.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"
#include "tpu/model.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

bool repeats(std::uint64_t period, std::uint64_t size) {
  return period != 0 && period < size;
}

// The period of the operand that repeats, or 0.
std::uint64_t period_of(const ElementwiseSpec& spec) {
  if (repeats(spec.a_period, spec.size)) return spec.a_period;
  if (spec.op && repeats(spec.b_period, spec.size)) return spec.b_period;
  return 0;
}

void check_spec(const HardwareConfig& config, const ElementwiseSpec& spec) {
  if (config.vector_lanes == 0) {
    throw std::invalid_argument("elementwise operators on the core need a vector unit; " +
                                config.name() + " has none");
  }
  if (static_cast<unsigned>(spec.func) >= isa::func_count(config)) {
    throw std::invalid_argument(
        fmt::format("activation function {} does not exist", static_cast<unsigned>(spec.func)));
  }
  if (spec.alpha != 0 && spec.func != isa::Func::Leaky) {
    throw std::invalid_argument("a slope (alpha) for a function other than leaky");
  }
  if (spec.size == 0) throw std::invalid_argument("an elementwise operator with an empty result");
  if (spec.int32 && (!spec.op || spec.func != isa::Func::None)) {
    throw std::invalid_argument("an operation of int32 values takes an operation and no function");
  }
  const auto check_period = [&](std::uint64_t period, const char* operand) {
    if (period == 0 || spec.size % period != 0) {
      throw std::invalid_argument(
          fmt::format("operand {} has {} values, which do not repeat along a result of {}", operand,
                      period, spec.size));
    }
  };
  check_period(spec.a_period, "a");
  if (!spec.op) {
    if (spec.b_period != 0) throw std::invalid_argument("a function of one operand given two");
    if (spec.a_period != spec.size) {
      throw std::invalid_argument("a function of one operand whose values repeat");
    }
    if (spec.func == isa::Func::None) {
      throw std::invalid_argument(
          "an elementwise operator with neither an operation nor a "
          "function");
    }
    return;
  }
  check_period(spec.b_period, "b");
  if (repeats(spec.a_period, spec.size) && repeats(spec.b_period, spec.size)) {
    throw std::invalid_argument(
        fmt::format("both operands repeat ({} and {} values of {}): one must have them all",
                    spec.a_period, spec.b_period, spec.size));
  }
}

// Regions of the accumulators for the blocks in turn, two in each bank (the top address bit):
// the vector unit works on a block in one bank while the loads of the next block but one, and
// the function and store of the block before, use the other, so that the vector unit (the last
// to be served at a bank's ports, docs/core.md) never waits for them.
constexpr std::uint32_t kRegionsPerBank = 2;

// The operands whose rows pass through the accumulators in blocks (those that do not repeat).
std::uint32_t full_operands(const ElementwiseSpec& spec) {
  return (repeats(spec.a_period, spec.size) ? 0 : 1) +
         (spec.op && !repeats(spec.b_period, spec.size) ? 1 : 0);
}

// ELTWISE over a block of `block` rows of `tiles` accumulator rows each, into `result` (in
// place): the operands' rows at `a` and `b`, or where one repeats (not `full`), its tiles at
// step 0. Rows of one tile go as one iteration (a repeating b then as ROW's row).
isa::EltwiseArgs block_operation(isa::VectorOp op, bool int32, std::uint32_t tiles,
                                 std::uint32_t block, std::uint32_t a, bool a_full, std::uint32_t b,
                                 bool b_full, std::uint32_t result) {
  isa::EltwiseArgs e;
  e.op = op;
  e.int32 = int32;
  e.addr_a = a;
  e.bias_addr = b;
  e.addr_b = result;
  if (tiles == 1 && a_full) {
    e.rows = block;
    e.row = !b_full;
    return e;
  }
  e.count = block;
  e.rows = tiles;
  e.step_a = a_full ? tiles : 0;
  e.bias_step = b_full ? tiles : 0;
  e.step_b = tiles;
  return e;
}

// The repeating operand's rows: D / period copies of it where the period divides D, else the
// period as one row of its own tiles.
std::vector<num::fp32_t> period_row(const ElementwisePlan& plan,
                                    const std::vector<num::fp32_t>& values) {
  if (plan.length != plan.config.dim) return values;
  std::vector<num::fp32_t> row(plan.config.dim);
  for (std::size_t j = 0; j < row.size(); ++j) row[j] = values[j % values.size()];
  return row;
}

}  // namespace

std::uint64_t ElementwisePlan::written_bytes() const {
  const acc_rows::Layout layout{config.dim, length, tiles, row_stride};
  std::uint64_t bytes = program.size() * isa::kInstrBytes;
  if (period_of(spec) != 0) bytes += layout.bytes(1);
  if (!repeats(spec.a_period, spec.size)) bytes += layout.bytes(rows);
  if (spec.op && !repeats(spec.b_period, spec.size)) bytes += layout.bytes(rows);
  return bytes;
}

std::uint64_t ElementwisePlan::read_bytes() const {
  return acc_rows::Layout{config.dim, length, tiles, row_stride}.bytes(rows);
}

ElementwisePlan plan_elementwise(const HardwareConfig& config, const ElementwiseSpec& spec,
                                 std::uint64_t base) {
  isa::validate_config(config);
  check_spec(config, spec);
  const std::uint64_t period = period_of(spec);
  const bool a_full = !repeats(spec.a_period, spec.size);
  const bool b_full = spec.op && !repeats(spec.b_period, spec.size);
  const std::uint32_t d = config.dim;
  const std::uint64_t length = period == 0 || d % period == 0 ? d : period;
  // Accumulator rows: in each bank, the period's tiles, then two regions, each a block of the
  // rows of a and of b (those that do not repeat).
  const std::uint64_t tiles = (length + d - 1) / d;
  const std::uint64_t period_rows = period != 0 ? tiles : 0;
  const std::uint64_t per_row = std::uint64_t{full_operands(spec)} * tiles;
  const std::uint64_t bank_rows = config.acc_depth / 2;
  if (bank_rows < period_rows + kRegionsPerBank * per_row) {
    throw std::invalid_argument(fmt::format(
        "a row of {} values takes {} rows of an accumulator bank (the period's, then {} blocks'); "
        "{} has {}",
        length, period_rows + kRegionsPerBank * per_row, kRegionsPerBank, config.name(),
        bank_rows));
  }
  ElementwisePlan plan;
  plan.spec = spec;
  plan.config = config;
  plan.length = static_cast<std::uint32_t>(length);
  const acc_rows::Layout layout = acc_rows::Layout::of(config, plan.length);
  plan.tiles = layout.tiles;
  plan.rows = layout.rows_for(spec.size);
  plan.row_stride = layout.stride;
  // Four regions of blocks, so that a block's loads and store overlap the vector unit's work
  // on the one between them.
  const std::uint64_t region_rows = (bank_rows - period_rows) / kRegionsPerBank;
  plan.block_rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(
      {plan.rows, region_rows / per_row, acc_rows::kMaxRowsField / plan.tiles,
       acc_rows::block_cap(plan.rows, plan.tiles)}));

  const std::uint64_t period_addr = acc_rows::region_start(base);
  const std::uint64_t data_bytes = layout.bytes(plan.rows);
  const std::uint64_t a_addr = period_addr + layout.bytes(period_rows != 0 ? 1 : 0);
  const std::uint64_t b_addr = a_addr + (a_full ? data_bytes : 0);
  const std::uint64_t out_addr = b_addr + (b_full ? data_bytes : 0);
  const std::uint64_t prog_addr = acc_rows::region_start(out_addr + data_bytes);
  // At most five instructions a block, the period's load and HALT.
  const std::uint64_t blocks = (plan.rows + plan.block_rows - 1) / plan.block_rows;
  if (prog_addr + (2 + 5 * blocks) * isa::kInstrBytes > 0xFFFFFFFFull) {
    throw std::invalid_argument(
        "the elementwise operator's tensors exceed the core's 32-bit host addresses");
  }
  plan.period_addr = static_cast<std::uint32_t>(period_addr);
  plan.a_addr = static_cast<std::uint32_t>(a_addr);
  plan.b_addr = static_cast<std::uint32_t>(b_addr);
  plan.out_addr = static_cast<std::uint32_t>(out_addr);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  if (period_rows != 0) {
    acc_rows::load(p, 0, plan.tiles, plan.period_addr, plan.row_stride);
  }
  const auto block_size = [&](std::uint64_t k) {
    return static_cast<std::uint32_t>(
        std::min<std::uint64_t>(plan.block_rows, plan.rows - k * plan.block_rows));
  };
  // Block k's rows of a, then of b, in bank k mod 2 (above the period's rows), in its first or
  // second region as k / 2 is even or odd; the result replaces a's (b's where a repeats).
  const auto a_rows = [&](std::uint64_t k) {
    return static_cast<std::uint32_t>((k % 2) * bank_rows + period_rows +
                                      (k / 2 % kRegionsPerBank) * region_rows);
  };
  const auto b_rows = [&](std::uint64_t k) {
    return a_rows(k) + (a_full ? plan.block_rows * plan.tiles : 0);
  };
  const auto load_block = [&](std::uint64_t k) {
    const std::uint64_t offset = layout.bytes(k * plan.block_rows);
    const std::uint32_t count = block_size(k) * plan.tiles;
    if (a_full) acc_rows::load(p, a_rows(k), count, plan.a_addr + offset, plan.row_stride);
    if (b_full) acc_rows::load(p, b_rows(k), count, plan.b_addr + offset, plan.row_stride);
  };
  const auto store_block = [&](std::uint64_t k) {
    acc_rows::store(p, a_full ? a_rows(k) : b_rows(k), block_size(k) * plan.tiles,
                    plan.out_addr + layout.bytes(k * plan.block_rows), plan.row_stride);
  };
  // Each block's loads go ahead of the operation on the block before; with a function, the
  // store of the block before goes ahead of this block's function, so that the issue stage,
  // which keeps the program's order, never holds the vector unit's next operation behind a
  // store that waits for the activation unit.
  const bool function = spec.func != isa::Func::None;
  load_block(0);
  for (std::uint64_t k = 0; k < blocks; ++k) {
    if (k + 1 < blocks) load_block(k + 1);
    const std::uint32_t result = a_full ? a_rows(k) : b_rows(k);
    if (spec.op) {
      p.eltwise(block_operation(*spec.op, spec.int32, plan.tiles, block_size(k),
                                a_full ? a_rows(k) : 0, a_full, b_full ? b_rows(k) : 0, b_full,
                                result));
    }
    if (!function) {
      store_block(k);
      continue;
    }
    if (k > 0) store_block(k - 1);
    acc_rows::activate_in_place(p, spec.func, result, block_size(k) * plan.tiles, spec.alpha);
  }
  if (function) store_block(blocks - 1);
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

void write_elementwise_inputs(const ElementwisePlan& plan, HostMemory& memory,
                              const std::vector<num::fp32_t>& a,
                              const std::vector<num::fp32_t>& b) {
  const ElementwiseSpec& spec = plan.spec;
  if (a.size() != spec.a_period || b.size() != (spec.op ? spec.b_period : 0)) {
    throw std::invalid_argument(
        fmt::format("the elementwise operator's operands have {} and {} values, the plan {} and {}",
                    a.size(), b.size(), spec.a_period, spec.op ? spec.b_period : 0));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  const acc_rows::Layout layout{plan.config.dim, plan.length, plan.tiles, plan.row_stride};
  const auto write_operand = [&](const std::vector<num::fp32_t>& values, std::uint32_t addr) {
    if (repeats(values.size(), spec.size)) {
      const std::vector<num::fp32_t> row = period_row(plan, values);
      acc_rows::write(memory, plan.period_addr, layout, row.data(), row.size(), 0);
    } else {
      acc_rows::write(memory, addr, layout, values.data(), values.size(), 0);
    }
  };
  write_operand(a, plan.a_addr);
  if (spec.op) write_operand(b, plan.b_addr);
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

std::vector<num::fp32_t> read_elementwise_output(const ElementwisePlan& plan,
                                                 const HostMemory& memory) {
  return acc_rows::read(memory, plan.out_addr,
                        {plan.config.dim, plan.length, plan.tiles, plan.row_stride},
                        plan.spec.size);
}

ElementwiseRun execute_elementwise(const ElementwisePlan& plan, Backend& backend,
                                   const std::vector<num::fp32_t>& a,
                                   const std::vector<num::fp32_t>& b) {
  write_elementwise_inputs(plan, backend.memory(), a, b);
  ElementwiseRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_elementwise_output(plan, backend.memory());
  return run;
}

std::vector<num::fp32_t> reference_elementwise(const ElementwiseSpec& spec,
                                               const std::vector<num::fp32_t>& a,
                                               const std::vector<num::fp32_t>& b) {
  std::vector<num::fp32_t> y(spec.size);
  for (std::uint64_t n = 0; n < spec.size; ++n) {
    num::fp32_t v = a[n % a.size()];
    if (spec.op) v = eltwise_lane(*spec.op, spec.int32, v, b[n % b.size()]);
    // ACTIVATE runs only for a function: without one the result is ELTWISE's as it is.
    if (spec.func != isa::Func::None) {
      v = num::act_func(static_cast<unsigned>(spec.func), v, spec.alpha);
    }
    y[n] = v;
  }
  return y;
}

}  // namespace tpu
