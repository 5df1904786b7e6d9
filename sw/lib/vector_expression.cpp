#include "tpu/vector_expression.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"
#include "tpu/model.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

using Kind = ExpressionValue::Kind;

// The values that take accumulator rows in a block: the tensors, then the steps' results.
std::uint32_t full_index(const ExpressionSpec& spec, const ExpressionValue& v) {
  return v.kind == Kind::Tensor ? v.index : spec.tensors + v.index;
}

void check_operand(const ExpressionSpec& spec, std::size_t step, const ExpressionValue& v,
                   const char* which) {
  const std::uint64_t bound = v.kind == Kind::Tensor ? spec.tensors
                              : v.kind == Kind::Row  ? spec.constant_rows
                                                     : step;
  if (v.index >= bound) {
    throw std::invalid_argument(
        fmt::format("step {} of the expression takes as {} a {} {} it does not have{}", step, which,
                    v.kind == Kind::Tensor ? "tensor"
                    : v.kind == Kind::Row  ? "row"
                                           : "step",
                    v.index, v.kind == Kind::Step ? " before it" : ""));
  }
}

void check_spec(const HardwareConfig& config, const ExpressionSpec& spec) {
  if (config.vector_lanes == 0) {
    throw std::invalid_argument("an expression on the core needs a vector unit; " + config.name() +
                                " has none");
  }
  if (spec.rows == 0 || spec.length == 0) {
    throw std::invalid_argument("an expression over an empty tensor");
  }
  if (spec.outputs.empty()) throw std::invalid_argument("an expression without outputs");
  for (std::size_t s = 0; s < spec.steps.size(); ++s) {
    const ExpressionStep& step = spec.steps[s];
    check_operand(spec, s, step.a, "its first operand");
    if (step.op) {
      check_operand(spec, s, step.b, "its second operand");
      if (step.a.kind == Kind::Row && step.b.kind == Kind::Row) {
        throw std::invalid_argument(
            fmt::format("step {} of the expression combines two constant rows", s));
      }
      if (step.func != isa::Func::None || step.alpha != 0) {
        throw std::invalid_argument(
            fmt::format("step {} of the expression has an operation and a function", s));
      }
      continue;
    }
    if (step.a.kind == Kind::Row) {
      throw std::invalid_argument(
          fmt::format("step {} of the expression is a function of a row", s));
    }
    if (static_cast<unsigned>(step.func) >= isa::func_count(config) ||
        step.func == isa::Func::None) {
      throw std::invalid_argument(fmt::format("step {} of the expression has no function {}", s,
                                              static_cast<unsigned>(step.func)));
    }
    if (step.alpha != 0 && step.func != isa::Func::Leaky) {
      throw std::invalid_argument(
          fmt::format("step {} of the expression: a slope for a function other than leaky", s));
    }
  }
  for (const ExpressionOutput& output : spec.outputs) {
    const ExpressionValue& v = output.value;
    if (v.kind == Kind::Row ||
        v.index >= (v.kind == Kind::Tensor ? spec.tensors : spec.steps.size())) {
      throw std::invalid_argument(
          fmt::format("the expression's output {} is neither a step nor a tensor", v.index));
    }
    if (output.bf16 && !output.view) {
      throw std::invalid_argument("an expression's bf16 output must be in a view");
    }
  }
  if (spec.tensor_views.size() > spec.tensors) {
    throw std::invalid_argument("views for more tensors than the expression has");
  }
}

// A view's rows against the core's transfers (HOST_ALIGN): a whole number of tiles a row, the
// address and the pitch multiples of the beat (a tile's bytes, 4 D or 2 D for bf16 rows, or the
// bus's width where that is less), the rows apart.
void check_view(const HardwareConfig& config, const ExpressionSpec& spec,
                const ExpressionView& view, bool bf16) {
  const std::uint32_t tile_bytes = (bf16 ? 2 : 4) * config.dim;
  const std::uint32_t beat = std::min(tile_bytes, config.bus_bytes);
  if (spec.length % config.dim != 0 || view.addr % beat != 0 || view.pitch % beat != 0 ||
      view.pitch < spec.length / config.dim * tile_bytes) {
    throw std::invalid_argument(
        fmt::format("a view at {:#x} of rows {} bytes apart does not hold rows of {} values on {}",
                    view.addr, view.pitch, spec.length, config.name()));
  }
}

// The operands of a step that take accumulator rows (not the constant rows).
std::vector<ExpressionValue> full_operands(const ExpressionStep& step) {
  std::vector<ExpressionValue> operands;
  if (step.a.kind != Kind::Row) operands.push_back(step.a);
  if (step.op && step.b.kind != Kind::Row) operands.push_back(step.b);
  return operands;
}

// Each full value's slot of accumulator rows within a block (the tensors nothing reads take
// none), and how many slots the block needs: a value's slot is free after its last reader, and a
// step's result takes the slot of an operand whose last reader it is (in place), else a free one.
struct Slots {
  std::vector<std::int64_t> of;  // by full_index; -1 for none
  std::uint32_t count = 0;
};

Slots allocate_slots(const ExpressionSpec& spec) {
  const std::size_t values = spec.tensors + spec.steps.size();
  const auto end = static_cast<std::int64_t>(spec.steps.size());
  // The last step that reads each value (end for an output; -1 for none).
  std::vector<std::int64_t> last(values, -1);
  for (std::size_t s = 0; s < spec.steps.size(); ++s) {
    for (const ExpressionValue& v : full_operands(spec.steps[s])) {
      last[full_index(spec, v)] = static_cast<std::int64_t>(s);
    }
  }
  for (const ExpressionOutput& output : spec.outputs) last[full_index(spec, output.value)] = end;
  Slots slots;
  slots.of.assign(values, -1);
  std::vector<std::int64_t> free_slots;
  const auto take = [&]() -> std::int64_t {
    if (free_slots.empty()) return slots.count++;
    const std::int64_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  };
  for (std::uint32_t t = 0; t < spec.tensors; ++t) {
    if (last[t] >= 0) slots.of[t] = take();
  }
  for (std::size_t s = 0; s < spec.steps.size(); ++s) {
    // The operands read for the last time here, their slots free once the step has read them.
    std::vector<std::int64_t> freed;
    for (const ExpressionValue& v : full_operands(spec.steps[s])) {
      const std::uint32_t i = full_index(spec, v);
      if (last[i] == static_cast<std::int64_t>(s) &&
          std::find(freed.begin(), freed.end(), slots.of[i]) == freed.end()) {
        freed.push_back(slots.of[i]);
      }
    }
    const std::uint32_t result = spec.tensors + static_cast<std::uint32_t>(s);
    if (!freed.empty()) {
      slots.of[result] = freed.front();
      freed.erase(freed.begin());
    } else {
      slots.of[result] = take();
    }
    free_slots.insert(free_slots.end(), freed.begin(), freed.end());
    // A result nothing reads frees its slot at once.
    if (last[result] < 0) free_slots.push_back(slots.of[result]);
  }
  return slots;
}

}  // namespace

ExpressionBuilder::ExpressionBuilder(std::uint64_t rows, std::uint32_t length) {
  spec_.rows = rows;
  spec_.length = length;
}

ExpressionValue ExpressionBuilder::tensor(std::vector<num::fp32_t> values) {
  tensors_.push_back(std::move(values));
  return {Kind::Tensor, spec_.tensors++};
}

ExpressionValue ExpressionBuilder::row(std::vector<num::fp32_t> values) {
  constants_.push_back(std::move(values));
  return {Kind::Row, spec_.constant_rows++};
}

ExpressionValue ExpressionBuilder::op(isa::VectorOp op, ExpressionValue a, ExpressionValue b) {
  return step({op, isa::Func::None, 0, a, b});
}

ExpressionValue ExpressionBuilder::func(isa::Func func, ExpressionValue a, num::bf16_t alpha) {
  return step({std::nullopt, func, alpha, a, {}});
}

ExpressionValue ExpressionBuilder::step(const ExpressionStep& step) {
  spec_.steps.push_back(step);
  return {Kind::Step, static_cast<std::uint32_t>(spec_.steps.size() - 1)};
}

ExpressionValue ExpressionBuilder::tensor_in(ExpressionView view, std::vector<num::fp32_t> values) {
  spec_.tensor_views.resize(spec_.tensors);
  spec_.tensor_views.push_back(view);
  tensors_.push_back(std::move(values));
  return {Kind::Tensor, spec_.tensors++};
}

void ExpressionBuilder::output(ExpressionValue value) {
  spec_.outputs.push_back({value, std::nullopt, false});
}

void ExpressionBuilder::output_to(ExpressionValue value, ExpressionView view, bool bf16) {
  spec_.outputs.push_back({value, view, bf16});
}

std::uint64_t ExpressionPlan::written_bytes() const {
  const acc_rows::Layout layout{config.dim, spec.length, tiles, row_stride};
  std::uint64_t bytes = program.size() * isa::kInstrBytes + layout.bytes(spec.constant_rows);
  for (std::uint32_t t = 0; t < spec.tensors; ++t) {
    if (!spec.in_view(t)) bytes += layout.bytes(spec.rows);
  }
  return bytes;
}

std::uint64_t ExpressionPlan::read_bytes() const {
  const acc_rows::Layout layout{config.dim, spec.length, tiles, row_stride};
  std::uint64_t bytes = 0;
  for (const ExpressionOutput& output : spec.outputs) {
    if (!output.view) bytes += layout.bytes(spec.rows);
  }
  return bytes;
}

ExpressionPlan plan_expression(const HardwareConfig& config, const ExpressionSpec& spec,
                               std::uint64_t base) {
  isa::validate_config(config);
  check_spec(config, spec);
  ExpressionPlan plan;
  plan.spec = spec;
  plan.config = config;
  const acc_rows::Layout layout = acc_rows::Layout::of(config, spec.length);
  plan.tiles = layout.tiles;
  plan.row_stride = layout.stride;
  for (std::uint32_t t = 0; t < spec.tensors; ++t) {
    if (spec.in_view(t)) check_view(config, spec, *spec.tensor_views[t], false);
  }
  bool bf16_outputs = false;
  for (const ExpressionOutput& output : spec.outputs) {
    if (output.view) check_view(config, spec, *output.view, output.bf16);
    bf16_outputs = bf16_outputs || output.bf16;
  }
  const Slots slots = allocate_slots(spec);
  plan.slots = slots.count;
  // Each bank: the constant rows' tiles at its bottom (read into both where blocks run in both,
  // so that a block reads only its own bank, whose ports the other bank's loads and stores leave
  // free), then a block's slots.
  const std::uint64_t constant_rows = std::uint64_t{spec.constant_rows} * plan.tiles;
  const std::uint64_t bank_rows = config.acc_depth / 2;
  const std::uint64_t per_row = std::uint64_t{plan.slots} * plan.tiles;
  if (bank_rows < constant_rows + per_row) {
    throw std::invalid_argument(fmt::format(
        "an expression of {} values at once over rows of {} takes {} rows of an accumulator "
        "bank for one row; {} has {}",
        plan.slots, spec.length, constant_rows + per_row, config.name(), bank_rows));
  }
  // bf16 outputs pass through the unified buffer, a block's rows in each half in turn.
  const std::uint64_t ub_rows = bf16_outputs ? config.ub_depth / 2 / plan.tiles : spec.rows;
  if (ub_rows == 0) {
    throw std::invalid_argument(
        fmt::format("a row of {} values takes more than half of {}'s "
                    "unified buffer",
                    spec.length, config.name()));
  }
  plan.block_rows = static_cast<std::uint32_t>(std::min<std::uint64_t>(
      {spec.rows, (bank_rows - constant_rows) / per_row, acc_rows::kMaxRowsField / plan.tiles,
       acc_rows::block_cap(spec.rows, plan.tiles), ub_rows}));

  std::uint64_t addr = acc_rows::region_start(base);
  plan.constants_addr = static_cast<std::uint32_t>(addr);
  addr += layout.bytes(spec.constant_rows);
  const std::uint64_t data_bytes = layout.bytes(spec.rows);
  std::vector<std::uint64_t> tensor_addr, output_addr;
  for (std::uint32_t t = 0; t < spec.tensors; ++t) {
    if (spec.in_view(t)) {
      tensor_addr.push_back(spec.tensor_views[t]->addr);
      continue;
    }
    tensor_addr.push_back(addr);
    addr += data_bytes;
  }
  for (const ExpressionOutput& output : spec.outputs) {
    if (output.view) {
      output_addr.push_back(output.view->addr);
      continue;
    }
    output_addr.push_back(addr);
    addr += data_bytes;
  }
  const std::uint64_t prog_addr = acc_rows::region_start(addr);
  const std::uint64_t blocks = (spec.rows + plan.block_rows - 1) / plan.block_rows;
  // At most two loads of the constants, then a load per tensor, an instruction per step and a
  // store (and ACTIVATE) per output a block, and HALT.
  const std::uint64_t most =
      3 + blocks * (spec.tensors + spec.steps.size() + 2 * spec.outputs.size());
  if (prog_addr + most * isa::kInstrBytes > 0xFFFFFFFFull) {
    throw std::invalid_argument("the expression's tensors exceed the core's 32-bit host addresses");
  }
  for (const std::uint64_t a : tensor_addr) {
    plan.tensor_addr.push_back(static_cast<std::uint32_t>(a));
  }
  for (const std::uint64_t a : output_addr) {
    plan.output_addr.push_back(static_cast<std::uint32_t>(a));
  }
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  if (constant_rows != 0) {
    // Into bank 1 as well where blocks run there.
    for (std::uint64_t bank = 0; bank < std::min<std::uint64_t>(blocks, 2); ++bank) {
      acc_rows::load(p, static_cast<std::uint32_t>(bank * bank_rows),
                     static_cast<std::uint32_t>(constant_rows), plan.constants_addr,
                     plan.row_stride);
    }
  }
  const std::uint32_t tiles = plan.tiles;
  const auto block_size = [&](std::uint64_t k) {
    return static_cast<std::uint32_t>(
        std::min<std::uint64_t>(plan.block_rows, spec.rows - k * plan.block_rows));
  };
  // Block k's slots in bank k mod 2, above its constant rows.
  const auto slot_row = [&](std::uint64_t k, std::int64_t slot) {
    return static_cast<std::uint32_t>((k % 2) * bank_rows + constant_rows +
                                      static_cast<std::uint64_t>(slot) * plan.block_rows * tiles);
  };
  const auto row_of = [&](std::uint64_t k, const ExpressionValue& v) {
    return v.kind == Kind::Row ? static_cast<std::uint32_t>((k % 2) * bank_rows + v.index * tiles)
                               : slot_row(k, slots.of[full_index(spec, v)]);
  };
  const std::uint32_t tile_bytes = 4 * config.dim;
  const auto load_block = [&](std::uint64_t k) {
    for (std::uint32_t t = 0; t < spec.tensors; ++t) {
      if (slots.of[t] < 0) continue;
      if (spec.in_view(t)) {
        // A view's rows: an iteration a row, its tiles one after the other.
        const ExpressionView& view = *spec.tensor_views[t];
        acc_rows::load(p, slot_row(k, slots.of[t]), tiles,
                       plan.tensor_addr[t] + k * plan.block_rows * view.pitch, tile_bytes,
                       block_size(k), view.pitch);
        continue;
      }
      acc_rows::load(p, slot_row(k, slots.of[t]), block_size(k) * tiles,
                     plan.tensor_addr[t] + layout.bytes(k * plan.block_rows), plan.row_stride);
    }
  };
  load_block(0);
  for (std::uint64_t k = 0; k < blocks; ++k) {
    if (k + 1 < blocks) load_block(k + 1);
    const std::uint32_t block = block_size(k);
    for (std::size_t s = 0; s < spec.steps.size(); ++s) {
      const ExpressionStep& step = spec.steps[s];
      const std::uint32_t result = slot_row(k, slots.of[spec.tensors + s]);
      if (!step.op) {
        isa::ActivateArgs a;
        a.f32 = true;
        a.func = step.func;
        a.alpha = step.alpha;
        a.rows = block * tiles;
        a.addr_a = row_of(k, step.a);
        a.addr_b = result;
        p.activate(a);
        continue;
      }
      isa::EltwiseArgs e;
      e.op = *step.op;
      e.addr_a = row_of(k, step.a);
      e.bias_addr = row_of(k, step.b);
      e.addr_b = result;
      if (step.a.kind != Kind::Row && step.b.kind != Kind::Row) {
        e.rows = block * tiles;  // row for row
      } else if (tiles == 1 && step.b.kind == Kind::Row) {
        e.rows = block;  // against one row, ROW's broadcast
        e.row = true;
      } else {
        // A row's tiles against each row's: an iteration a row, the constant row's at step 0.
        e.count = block;
        e.rows = tiles;
        e.step_a = step.a.kind == Kind::Row ? 0 : tiles;
        e.bias_step = step.b.kind == Kind::Row ? 0 : tiles;
        e.step_b = tiles;
      }
      p.eltwise(e);
    }
    for (std::size_t o = 0; o < spec.outputs.size(); ++o) {
      const ExpressionOutput& output = spec.outputs[o];
      const std::uint32_t rows = slot_row(k, slots.of[full_index(spec, output.value)]);
      if (!output.view) {
        acc_rows::store(p, rows, block * tiles,
                        plan.output_addr[o] + layout.bytes(k * plan.block_rows), plan.row_stride);
        continue;
      }
      const std::uint64_t host_addr =
          plan.output_addr[o] + k * plan.block_rows * output.view->pitch;
      if (!output.bf16) {
        acc_rows::store(p, rows, tiles, host_addr, tile_bytes, block, output.view->pitch);
        continue;
      }
      // bf16 rows: rounded by the activation unit (the identity, N-OUT) into the unified buffer,
      // the block's half of it, then written from there.
      isa::ActivateArgs round;
      round.func = isa::Func::None;
      round.rows = block * tiles;
      round.addr_a = rows;
      round.addr_b = static_cast<std::uint32_t>(k % 2 * plan.block_rows * tiles);
      p.activate(round);
      isa::WriteHostArgs store;
      store.count = block;
      store.rows = tiles;
      store.addr_a = round.addr_b;
      store.step_a = tiles;
      store.host_addr = static_cast<std::uint32_t>(host_addr);
      store.host_stride = 2 * config.dim;
      store.host_step = output.view->pitch;
      p.write_host(store);
    }
  }
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

void write_expression_inputs(const ExpressionPlan& plan, HostMemory& memory,
                             const std::vector<std::vector<num::fp32_t>>& tensors,
                             const std::vector<std::vector<num::fp32_t>>& constants) {
  const ExpressionSpec& spec = plan.spec;
  const std::uint64_t size = spec.rows * spec.length;
  bool shaped = tensors.size() == spec.tensors && constants.size() == spec.constant_rows &&
                std::all_of(constants.begin(), constants.end(),
                            [&](const auto& c) { return c.size() == spec.length; });
  for (std::uint32_t t = 0; shaped && t < spec.tensors; ++t) {
    shaped = spec.in_view(t) || tensors[t].size() == size;
  }
  if (!shaped) {
    throw std::invalid_argument(fmt::format(
        "the expression takes {} tensors of {} values and {} rows of {}; given {} and {}",
        spec.tensors, size, spec.constant_rows, spec.length, tensors.size(), constants.size()));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  const acc_rows::Layout layout{plan.config.dim, spec.length, plan.tiles, plan.row_stride};
  std::vector<num::fp32_t> rows;
  for (const std::vector<num::fp32_t>& c : constants) rows.insert(rows.end(), c.begin(), c.end());
  acc_rows::write(memory, plan.constants_addr, layout, rows.data(), rows.size(), 0);
  for (std::uint32_t t = 0; t < spec.tensors; ++t) {
    if (!spec.in_view(t))
      acc_rows::write(memory, plan.tensor_addr[t], layout, tensors[t].data(), size, 0);
  }
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

std::vector<std::vector<num::fp32_t>> read_expression_outputs(const ExpressionPlan& plan,
                                                              const HostMemory& memory) {
  const acc_rows::Layout layout{plan.config.dim, plan.spec.length, plan.tiles, plan.row_stride};
  std::vector<std::vector<num::fp32_t>> out;
  for (std::size_t o = 0; o < plan.spec.outputs.size(); ++o) {
    if (plan.spec.outputs[o].view) continue;
    out.push_back(
        acc_rows::read(memory, plan.output_addr[o], layout, plan.spec.rows * plan.spec.length));
  }
  return out;
}

ExpressionRun execute_expression(const ExpressionPlan& plan, Backend& backend,
                                 const std::vector<std::vector<num::fp32_t>>& tensors,
                                 const std::vector<std::vector<num::fp32_t>>& constants) {
  write_expression_inputs(plan, backend.memory(), tensors, constants);
  ExpressionRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_expression_outputs(plan, backend.memory());
  return run;
}

std::vector<std::vector<num::fp32_t>> reference_expression(
    const ExpressionSpec& spec, const std::vector<std::vector<num::fp32_t>>& tensors,
    const std::vector<std::vector<num::fp32_t>>& constants) {
  const std::uint64_t size = spec.rows * spec.length;
  if (tensors.size() != spec.tensors || constants.size() != spec.constant_rows ||
      std::any_of(tensors.begin(), tensors.end(),
                  [&](const auto& t) { return t.size() != size; }) ||
      std::any_of(constants.begin(), constants.end(),
                  [&](const auto& c) { return c.size() != spec.length; })) {
    throw std::invalid_argument("the expression's reference takes every tensor's and row's values");
  }
  std::vector<std::vector<num::fp32_t>> out(spec.outputs.size(), std::vector<num::fp32_t>(size));
  std::vector<num::fp32_t> results(spec.steps.size());
  for (std::uint64_t n = 0; n < size; ++n) {
    const auto value = [&](const ExpressionValue& v) {
      return v.kind == Kind::Tensor ? tensors[v.index][n]
             : v.kind == Kind::Row  ? constants[v.index][n % spec.length]
                                    : results[v.index];
    };
    for (std::size_t s = 0; s < spec.steps.size(); ++s) {
      const ExpressionStep& step = spec.steps[s];
      results[s] = step.op
                       ? eltwise_lane(*step.op, false, value(step.a), value(step.b))
                       : num::act_func(static_cast<unsigned>(step.func), value(step.a), step.alpha);
    }
    for (std::size_t o = 0; o < spec.outputs.size(); ++o) {
      const num::fp32_t v = value(spec.outputs[o].value);
      out[o][n] = spec.outputs[o].bf16 ? num::bf16_to_fp32(num::fp32_to_bf16(v)) : v;
    }
  }
  return out;
}

}  // namespace tpu
