// Softmax along rows on a core with a vector unit: y = e^(x - max) * (1 / sum e^(x - max)), each
// step an instruction of the core in fp32 (N-SOFTMAX of docs/numerics.md):
//   max   the row's maximum: its accumulator rows combined lane by lane (ELTWISE max), then
//         folded along the row from -inf (ELTWISE max LANES);
//   x - max, e^(x - max)   ELTWISE sub against that row, ACTIVATE exp in place (F32);
//   sum   combined and folded likewise (ELTWISE add, then add LANES from -0);
//   1/sum, product         ACTIVATE recip in place, ELTWISE mul by that row.
// A row of N values takes ceil(N / D) accumulator rows, the lanes past N padded with -inf (whose
// e^ is +0, which leaves the sum as it is). The plan runs the rows in blocks that fit the
// accumulators; the host writes the rows (fp32) and reads the results (fp32).
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu {

struct SoftmaxPlan {
  HardwareConfig config;
  std::uint32_t rows = 0;        // softmaxes, each over one row
  std::uint32_t length = 0;      // N: the values of a row
  std::uint32_t tiles = 0;       // accumulator rows a row takes, ceil(N / D)
  std::uint32_t block_rows = 0;  // rows a pass through the accumulators takes
  std::uint32_t row_stride = 0;  // host bytes between accumulator rows (4 D, aligned to the bus)
  // Host memory: the two seed rows (-inf and -0 in lane 0), the input rows, the result rows
  // (each softmax row as `tiles` rows of row_stride bytes), the program.
  std::uint32_t seed_addr = 0, in_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  // Bytes the host writes (the seed rows, the rows, the program) and reads (the results).
  std::uint64_t written_bytes() const;
  std::uint64_t read_bytes() const;
};

// Its host memory from `base` up (rounded up to 64 bytes): below it lies what the caller keeps
// there (a session's weights). Throws std::invalid_argument with one line for a core without a
// vector unit, an empty shape, a row too long for the accumulators, or tensors beyond the core's
// 32-bit host addresses.
SoftmaxPlan plan_softmax(const HardwareConfig& config, std::uint32_t rows, std::uint32_t length,
                         std::uint64_t base = 0);

// x: rows x length fp32 values, row-major. Grows the memory to the plan's size.
void write_softmax_inputs(const SoftmaxPlan& plan, HostMemory& memory,
                          const std::vector<num::fp32_t>& x);
std::vector<num::fp32_t> read_softmax_output(const SoftmaxPlan& plan, const HostMemory& memory);

struct SoftmaxRun {
  RunResult result;
  std::vector<num::fp32_t> out;  // empty unless the core reached HALT without an error
};
SoftmaxRun execute_softmax(const SoftmaxPlan& plan, Backend& backend,
                           const std::vector<num::fp32_t>& x);

// The bits the plan's program gives on a core of `config`'s array size, computed on the host
// from the contract's operations (num::), in the program's order.
std::vector<num::fp32_t> reference_softmax(const HardwareConfig& config, std::uint32_t rows,
                                           std::uint32_t length, const std::vector<num::fp32_t>& x);

}  // namespace tpu
