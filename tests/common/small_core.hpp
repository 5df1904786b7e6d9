// A small array core (4x4, 256 unified-buffer rows, 64 accumulator rows, a 16-byte bus, two
// weight tiles) for tests on the functional model: big enough for every block and tile case of
// the GEMM compiler, small enough that a few rows of operands span several blocks.
#pragma once

#include "tpu/backend.hpp"

namespace tpu::test {

inline HardwareConfig small_core() {
  HardwareConfig c;
  c.dim = 4;
  c.ub_depth = 256;
  c.acc_depth = 64;
  c.bus_bytes = 16;
  c.weight_tiles = 2;
  return c;
}

}  // namespace tpu::test
