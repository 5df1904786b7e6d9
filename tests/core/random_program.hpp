// Random legal programs for the core: every instruction kind with random
// sizes, strides, steps, flags and functions, over small regions of both
// banks of each memory and of host memory, so that instructions depend on
// each other in every way (RAW, WAR, WAW through the UB, the accumulators
// and host memory). A program first fills every on-chip row it will read,
// and ends by copying every row it used to host memory, so that comparing
// host memory compares the whole machine state.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/isa.hpp"

namespace tpu::testing {

struct RandomProgramShape {
  unsigned instructions = 40;  // random instructions between the fill and the dump
  unsigned ub_rows = 40;       // rows used at the start of each UB bank
  unsigned acc_rows = 24;      // rows used at the start of each accumulator bank
  unsigned max_rows = 24;      // rows per iteration
  unsigned max_count = 4;      // iterations
};

struct RandomProgram {
  std::vector<isa::Instruction> program;
  std::vector<std::uint8_t> host_data;  // to place at data_addr before running
  std::uint32_t data_addr = 0;
  std::uint32_t dump_addr = 0;   // where the final dump starts
  std::size_t memory_bytes = 0;  // host memory the layout needs
};

RandomProgram make_random_program(const HardwareConfig& config, const RandomProgramShape& shape,
                                  std::uint64_t seed);

}  // namespace tpu::testing
