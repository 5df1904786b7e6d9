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

// The small core with a vector unit of two lanes (two groups a row), `acc_depth` accumulator
// rows: the vector programs' tests (softmax, elementwise operators, pooling, depthwise
// convolution, layer norm).
inline HardwareConfig small_vector_core(unsigned acc_depth = 64) {
  HardwareConfig c = small_core();
  c.acc_depth = acc_depth;
  c.vector_lanes = 2;
  return c;
}

// The same with the int8 datapath too: the int8 vector programs' tests (depthwise convolution,
// addition, pooling).
inline HardwareConfig small_int8_vector_core(unsigned acc_depth = 64) {
  HardwareConfig c = small_vector_core(acc_depth);
  c.int8 = true;
  return c;
}

}  // namespace tpu::test
