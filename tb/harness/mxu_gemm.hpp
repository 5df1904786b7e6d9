// Runs a whole GEMM, out = A x W (+ seed), on the matrix unit: the matrices are
// cut into rows x cols weight tiles, and the partial sums of one K tile are the
// seeds of the next (N-ORDER), so the result does not depend on the array size.
#pragma once

#include "harness/mxu_stream.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu::harness {

struct GemmPlan {
  std::size_t m = 0, k = 0, n = 0;
  std::size_t k_tiles = 0, n_tiles = 0;
  std::vector<TileJob> jobs;  // job (kt, nt) at index kt * n_tiles + nt
};

// Padding of a K tile beyond K uses products of -0 (activation -0, weight +0):
// -0 is the identity of N-ADD, so a running -0 stays -0 as the contract wants.
GemmPlan plan_gemm(const ArrayConfig& config, const num::MatrixBf16& a, const num::MatrixBf16& w,
                   const num::MatrixFp32* seed);

// The M x N result out of the last K tile's jobs.
num::MatrixFp32 assemble_gemm(const ArrayConfig& config, const GemmPlan& plan,
                              const StreamResult& streamed);

num::MatrixFp32 run_gemm(MxuModel& model, const num::MatrixBf16& a, const num::MatrixBf16& w,
                         const num::MatrixFp32* seed, const StallProfile& stalls = {},
                         StreamStats* stats = nullptr);

}  // namespace tpu::harness
