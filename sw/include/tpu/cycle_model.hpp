// An analytical cycle model of a compiled GEMM (compiler.hpp) on the core:
// what each resource must do for each M block, and the busiest resource sets
// the pace, as in a roofline. The benchmark suite prints it beside the cycles
// the RTL takes, and a test keeps the two close, so the model stays a usable
// way to reason about the core (docs/perf/README.md).
#pragma once

#include <string>
#include <vector>

#include "tpu/compiler.hpp"

namespace tpu {

// The host memory the core reads and writes (the AXI memory model's timing).
struct MemoryTiming {
  unsigned read_latency = 8;     // cycles from a read request to its first beat
  unsigned write_latency = 4;    // cycles from a burst's last beat to its response
  double beats_per_cycle = 1.0;  // read and write bandwidth, each, in bus beats
};

struct CycleEstimate {
  double cycles = 0;  // from START to DONE
  double ideal = 0;   // M * K * N / Dim^2: every multiplier busy every cycle
  // Cycles each resource needs over the whole product (the steady state, no start or end).
  double array = 0;       // rows through the systolic array, and weight-tile swaps
  double read_bus = 0;    // weight tiles, A blocks, bias and C rows on the AXI read channel
  double activation = 0;  // bias, function and rounding, ActLanes values a cycle
  double write_bus = 0;   // results on the AXI write channel
  double startup = 0;     // before the array's first row: the first A block and weight tile
  double drain = 0;       // after its last row: the pipeline, the last ACTIVATE and WRITE_HOST
  std::string bound;      // the resource that sets the pace most often: "array", "read bus", ...

  double utilisation() const { return cycles > 0 ? ideal / cycles : 0; }
};

CycleEstimate estimate_cycles(const GemmPlan& plan, const MemoryTiming& timing = {});

// The cycles the vector unit spends on one ELTWISE when no other unit contends for the
// accumulators (VECTOR_BUSY), cycle by cycle as tpu_vector_unit takes it (docs/core.md, "Vector
// unit"): its reader reads a row's A (and B without ROW, ROW's row at each iteration's start)
// a read a cycle into two entries, waiting while a read's row is one still to be written; the
// lanes take Dim / vector_lanes cycles a row (Dim with LANES); the write of the last row ends it.
double eltwise_cycles(const HardwareConfig& config, const isa::Instruction& eltwise);

// A program of the vector unit (plan_softmax, plan_elementwise) from START to DONE. Each
// instruction waits for the one before it (each reads what the last wrote, or writes what it
// reads), so its cycles add up: the transfers' beats and latency, eltwise_cycles, ACTIVATE's rows
// through its lanes and pipeline.
double estimate_vector_program_cycles(const HardwareConfig& config,
                                      const std::vector<isa::Instruction>& program,
                                      const MemoryTiming& timing = {});

}  // namespace tpu
