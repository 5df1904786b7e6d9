#include "tpu/move.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"

namespace tpu {
namespace {

// A run's rows, the output's and the sources'.
std::uint64_t run_rows(const MovePlan& plan) {
  return plan.spec.run / plan.config.dim;
}

acc_rows::Rows kind(const MoveSpec& spec) {
  return spec.int8 ? acc_rows::Rows::UbInt8 : acc_rows::Rows::Acc;
}

}  // namespace

std::uint64_t MovePlan::written_bytes() const {
  return spec.source_runs * run_rows(*this) * row_stride + program.size() * isa::kInstrBytes;
}

std::uint64_t MovePlan::read_bytes() const {
  return spec.from.size() * run_rows(*this) * row_stride;
}

MovePlan plan_move(const HardwareConfig& config, const MoveSpec& spec, std::uint64_t base) {
  isa::validate_config(config);
  const std::uint32_t d = config.dim;
  if (spec.run == 0 || spec.run % d != 0) {
    throw std::invalid_argument(
        fmt::format("a move of runs of {} values, not a whole number of the {} core's rows of {}",
                    spec.run, config.name(), d));
  }
  if (spec.int8 && !config.int8) {
    throw std::invalid_argument("a move of int8 values needs the int8 datapath; " + config.name() +
                                " lacks it");
  }
  if (spec.from.empty()) throw std::invalid_argument("a move with no output");
  for (const std::uint64_t source : spec.from) {
    if (source >= spec.source_runs) {
      throw std::invalid_argument(
          fmt::format("a move from run {} of sources of {} runs", source, spec.source_runs));
    }
  }
  MovePlan plan;
  plan.spec = spec;
  plan.config = config;
  plan.row_stride = spec.int8 ? d : std::max(4 * d, config.bus_bytes);
  const std::uint64_t rows_a_run = run_rows(plan);
  // Two blocks in flight: one in each half of the memory the values pass through, a whole
  // number of runs each.
  const std::uint64_t half = (spec.int8 ? config.ub_depth : config.acc_depth) / 2;
  const std::uint64_t out_rows = spec.from.size() * rows_a_run;
  const std::uint64_t room = std::min<std::uint64_t>(half, acc_rows::kMaxRowsField);
  const std::uint64_t block_runs =
      std::max<std::uint64_t>(1, std::min(room, acc_rows::block_cap(out_rows, 1)) / rows_a_run);
  if (rows_a_run > room) {
    throw std::invalid_argument(fmt::format("a move's runs of {} rows exceed half the {} core's {}",
                                            rows_a_run, config.name(),
                                            spec.int8 ? "unified buffer" : "accumulators"));
  }
  plan.block_rows = static_cast<std::uint32_t>(block_runs * rows_a_run);
  const std::uint64_t run_bytes = rows_a_run * plan.row_stride;
  const std::uint64_t in_addr = acc_rows::region_start(base);
  const std::uint64_t out_addr = acc_rows::region_start(in_addr + spec.source_runs * run_bytes);
  const std::uint64_t prog_addr = acc_rows::region_start(out_addr + spec.from.size() * run_bytes);
  if (prog_addr > 0xFFFFFFFFull || run_bytes * spec.source_runs > 0xFFFFFFFFull) {
    throw std::invalid_argument("the move's tensors exceed the core's 32-bit host addresses");
  }
  plan.in_addr = static_cast<std::uint32_t>(in_addr);
  plan.out_addr = static_cast<std::uint32_t>(out_addr);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  const auto rows32 = static_cast<std::uint32_t>(rows_a_run);
  std::uint64_t block = 0;  // blocks written so far
  for (std::uint64_t first = 0; first < spec.from.size(); first += block_runs, ++block) {
    const std::uint64_t end = std::min<std::uint64_t>(spec.from.size(), first + block_runs);
    const auto at = static_cast<std::uint32_t>((block % 2) * half);
    // The block's runs, each arithmetic progression of sources (a step of 0 or more) one read.
    for (std::uint64_t r = first; r < end;) {
      const std::uint64_t step =
          r + 1 < end && spec.from[r + 1] >= spec.from[r] ? spec.from[r + 1] - spec.from[r] : 0;
      std::uint64_t count = 1;
      while (r + count < end && count < acc_rows::kMaxRowsField &&
             spec.from[r + count] == spec.from[r] + count * step &&
             step * run_bytes <= 0xFFFFFFFFull) {
        ++count;
      }
      acc_rows::load(p, static_cast<std::uint32_t>(at + (r - first) * rows_a_run), rows32,
                     plan.in_addr + spec.from[r] * run_bytes, plan.row_stride,
                     static_cast<std::uint32_t>(count),
                     static_cast<std::uint32_t>(count > 1 ? step * run_bytes : 0), kind(spec));
      ++plan.reads;
      r += count;
    }
    acc_rows::store(p, at, static_cast<std::uint32_t>((end - first) * rows_a_run),
                    plan.out_addr + first * run_bytes, plan.row_stride, 1, 0, kind(spec));
  }
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

namespace {

// Rows of D values: fp32 (any 32-bit values) or int8.
acc_rows::Layout rows_of(const MovePlan& plan) {
  return plan.spec.int8 ? acc_rows::Layout::int8(plan.config, plan.config.dim)
                        : acc_rows::Layout::of(plan.config, plan.config.dim);
}

// The sources' rows and the program.
template <typename Value>
void write_input(const MovePlan& plan, HostMemory& memory, const std::vector<Value>& x) {
  const std::uint64_t values = plan.spec.source_runs * plan.spec.run;
  if (x.size() != values) {
    throw std::invalid_argument(
        fmt::format("a move's sources of {} values, the plan's {}", x.size(), values));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  acc_rows::write(memory, plan.in_addr, rows_of(plan), x.data(), x.size(), Value{0});
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

template <typename Value>
std::vector<Value> read_output(const MovePlan& plan, const HostMemory& memory) {
  return acc_rows::read<Value>(memory, plan.out_addr, rows_of(plan),
                               plan.spec.from.size() * plan.spec.run);
}

void check_kind(const MovePlan& plan, bool int8) {
  if (plan.spec.int8 != int8) {
    throw std::invalid_argument(int8 ? "int8 values for a move of 32-bit ones"
                                     : "32-bit values for a move of int8 ones");
  }
}

template <typename Value>
MoveRun<Value> execute(const MovePlan& plan, Backend& backend, const std::vector<Value>& x) {
  write_input(plan, backend.memory(), x);
  MoveRun<Value> run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_output<Value>(plan, backend.memory());
  return run;
}

}  // namespace

void write_move_input(const MovePlan& plan, HostMemory& memory,
                      const std::vector<std::uint32_t>& x) {
  check_kind(plan, false);
  write_input(plan, memory, x);
}

void write_move_input(const MovePlan& plan, HostMemory& memory, const std::vector<std::int8_t>& x) {
  check_kind(plan, true);
  write_input(plan, memory, x);
}

std::vector<std::uint32_t> read_move_output(const MovePlan& plan, const HostMemory& memory) {
  check_kind(plan, false);
  return read_output<std::uint32_t>(plan, memory);
}

std::vector<std::int8_t> read_move_int8_output(const MovePlan& plan, const HostMemory& memory) {
  check_kind(plan, true);
  return read_output<std::int8_t>(plan, memory);
}

MoveRun<std::uint32_t> execute_move(const MovePlan& plan, Backend& backend,
                                    const std::vector<std::uint32_t>& x) {
  check_kind(plan, false);
  return execute(plan, backend, x);
}

MoveRun<std::int8_t> execute_move(const MovePlan& plan, Backend& backend,
                                  const std::vector<std::int8_t>& x) {
  check_kind(plan, true);
  return execute(plan, backend, x);
}

}  // namespace tpu
