// Moves of values on a core's DMA, with no arithmetic: a tensor's output assembled from runs of
// its inputs' values (a Transpose that keeps its trailing axes in place, a Gather, a Slice or a
// Concat along an axis before them), each run `run` consecutive values, a whole number of array
// rows. Every core runs it (READ_HOST and WRITE_HOST only; int8 values a core with the int8
// datapath): the values pass through the accumulators (fp32, or any 32-bit values) or the unified
// buffer (int8, READ_HOST I8), bit for bit.
//
// Layout: the sources' values one after the other (concatenated, as `sources` lists their run
// counts) as host rows of D values (fp32 rows 4 D bytes apart, aligned to the bus; int8 rows of D
// bytes), the output's likewise. The program reads the output's runs in blocks: each arithmetic
// progression of source runs (a run, then the run `step` runs on, ...) one READ_HOST of
// `count` iterations, into a block of rows in one half of the memory, which a WRITE_HOST then
// writes out, two blocks in flight.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/program.hpp"

namespace tpu {

struct MoveSpec {
  bool int8 = false;                // int8 values (1 byte each), else 32-bit ones (fp32)
  std::uint64_t run = 0;            // values a run: a multiple of the array size
  std::uint64_t source_runs = 0;    // runs of the sources together
  std::vector<std::uint64_t> from;  // output run r is source run from[r]
};

struct MovePlan {
  MoveSpec spec;
  HardwareConfig config;
  std::uint32_t row_stride = 0;  // host bytes between rows (of D values)
  std::uint32_t block_rows = 0;  // rows a block takes
  std::uint64_t reads = 0;       // READ_HOSTs: the progressions of source runs
  // Host memory: the sources' rows, the output's, the program.
  std::uint32_t in_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  std::uint64_t written_bytes() const;  // the sources, the program
  std::uint64_t read_bytes() const;     // the output
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a run that is not a whole number of array rows or takes more than half the memory it
// passes through, int8 values on a core without the int8 datapath, no output, a source run out
// of range, or tensors beyond the core's 32-bit host addresses.
MovePlan plan_move(const HardwareConfig& config, const MoveSpec& spec, std::uint64_t base = 0);

// The sources' values (32-bit values as their bits, or int8 values), concatenated: source_runs x
// run of them. Grows the memory to the plan's size.
void write_move_input(const MovePlan& plan, HostMemory& memory,
                      const std::vector<std::uint32_t>& x);
void write_move_input(const MovePlan& plan, HostMemory& memory, const std::vector<std::int8_t>& x);
std::vector<std::uint32_t> read_move_output(const MovePlan& plan, const HostMemory& memory);
std::vector<std::int8_t> read_move_int8_output(const MovePlan& plan, const HostMemory& memory);

template <typename Value>
struct MoveRun {
  RunResult result;
  std::vector<Value> out;  // empty unless the core reached HALT without an error
};
MoveRun<std::uint32_t> execute_move(const MovePlan& plan, Backend& backend,
                                    const std::vector<std::uint32_t>& x);
MoveRun<std::int8_t> execute_move(const MovePlan& plan, Backend& backend,
                                  const std::vector<std::int8_t>& x);

// What the program gives: output run r the values of source run from[r].
template <typename Value>
std::vector<Value> reference_move(const MoveSpec& spec, const std::vector<Value>& x) {
  std::vector<Value> y;
  y.reserve(spec.from.size() * spec.run);
  for (const std::uint64_t source : spec.from) {
    y.insert(y.end(), x.begin() + static_cast<std::ptrdiff_t>(source * spec.run),
             x.begin() + static_cast<std::ptrdiff_t>((source + 1) * spec.run));
  }
  return y;
}

}  // namespace tpu
