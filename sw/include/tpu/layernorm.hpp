// Layer normalisation along rows on a core with a vector unit (N-LAYERNORM of
// docs/numerics.md): y = (x - mean) * rsqrt(var + eps) * gamma + beta, each step an instruction
// of the core in fp32:
//   mean   the row's sum (its accumulator rows combined lane by lane, ELTWISE add, then folded
//          along the row from -0, ELTWISE add LANES), times 1/N (ELTWISE mul);
//   d      x - mean (ELTWISE sub against that row), in place;
//   var    the sum of d * d likewise (ELTWISE mul into rows of their own, the lanes past N
//          multiplied by 0), times 1/N, plus eps (ELTWISE add);
//   inv    ACTIVATE rsqrt in place;
//   y      d * inv, then * gamma and + beta (ELTWISE mul and add against gamma's and beta's rows).
// A row of N values takes ceil(N / D) accumulator rows, the lanes past N +0. The plan runs the
// rows in blocks that fit the accumulators; the host writes the rows (fp32) and reads the
// results (fp32).
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu {

struct LayerNormSpec {
  std::uint32_t rows = 0;    // normalisations, each over one row
  std::uint32_t length = 0;  // N: the values of a row
  num::fp32_t epsilon = 0;   // added to the variance
  bool has_beta = false;     // a bias after the scale
};

struct LayerNormPlan {
  LayerNormSpec spec;
  HardwareConfig config;
  std::uint32_t tiles = 0;       // accumulator rows a row takes, ceil(N / D)
  std::uint32_t block_rows = 0;  // rows a pass through the accumulators takes
  std::uint32_t row_stride = 0;  // host bytes between accumulator rows
  // Host memory: the constant rows (the seed, 1/N, eps, the mask of the last tile's lanes, gamma's
  // and beta's tiles), the input rows, the result rows, the program.
  std::uint32_t const_addr = 0, in_addr = 0, out_addr = 0, prog_addr = 0;
  std::uint32_t const_rows = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  std::uint64_t written_bytes() const;  // the constant rows, the input, the program
  std::uint64_t read_bytes() const;     // the result
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a core without a vector unit, an empty shape, a row too long for the accumulators,
// or tensors beyond the core's 32-bit host addresses.
LayerNormPlan plan_layernorm(const HardwareConfig& config, const LayerNormSpec& spec,
                             std::uint64_t base = 0);

// x: rows x length values; gamma and beta: length values each (beta empty without has_beta).
void write_layernorm_inputs(const LayerNormPlan& plan, HostMemory& memory,
                            const std::vector<num::fp32_t>& x,
                            const std::vector<num::fp32_t>& gamma,
                            const std::vector<num::fp32_t>& beta);
std::vector<num::fp32_t> read_layernorm_output(const LayerNormPlan& plan, const HostMemory& memory);

struct LayerNormRun {
  RunResult result;
  std::vector<num::fp32_t> out;  // empty unless the core reached HALT without an error
};
LayerNormRun execute_layernorm(const LayerNormPlan& plan, Backend& backend,
                               const std::vector<num::fp32_t>& x,
                               const std::vector<num::fp32_t>& gamma,
                               const std::vector<num::fp32_t>& beta);

// The bits the plan's program gives on a core of `config`'s array size, computed on the host
// from the contract's operations in the program's order.
std::vector<num::fp32_t> reference_layernorm(const HardwareConfig& config,
                                             const LayerNormSpec& spec,
                                             const std::vector<num::fp32_t>& x,
                                             const std::vector<num::fp32_t>& gamma,
                                             const std::vector<num::fp32_t>& beta);

}  // namespace tpu
