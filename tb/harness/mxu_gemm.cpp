#include "harness/mxu_gemm.hpp"

#include <stdexcept>
#include <string>

namespace tpu::harness {
namespace {

constexpr bf16_t kNegativeZeroBf16 = 0x8000;
constexpr bf16_t kPositiveZeroBf16 = 0x0000;

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

}  // namespace

GemmPlan plan_gemm(const ArrayConfig& config, const num::MatrixBf16& a, const num::MatrixBf16& w,
                   const num::MatrixFp32* seed) {
  if (a.rows == 0 || a.cols == 0 || w.cols == 0) throw std::invalid_argument("gemm: empty matrix");
  if (a.cols != w.rows) {
    throw std::invalid_argument("gemm: A is " + std::to_string(a.rows) + "x" +
                                std::to_string(a.cols) + " but W is " + std::to_string(w.rows) +
                                "x" + std::to_string(w.cols));
  }
  if (seed && (seed->rows != a.rows || seed->cols != w.cols))
    throw std::invalid_argument("gemm: seed is not M x N");

  const std::size_t rows = config.rows, cols = config.cols;
  GemmPlan plan;
  plan.m = a.rows;
  plan.k = a.cols;
  plan.n = w.cols;
  plan.k_tiles = ceil_div(plan.k, rows);
  plan.n_tiles = ceil_div(plan.n, cols);

  for (std::size_t kt = 0; kt < plan.k_tiles; ++kt) {
    for (std::size_t nt = 0; nt < plan.n_tiles; ++nt) {
      TileJob job;
      job.m = plan.m;
      job.weights.assign(rows * cols, kPositiveZeroBf16);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t kk = kt * rows + r;
        for (std::size_t c = 0; c < cols; ++c) {
          const std::size_t nn = nt * cols + c;
          if (kk < plan.k && nn < plan.n) job.weights[r * cols + c] = w.at(kk, nn);
        }
      }
      job.acts.assign(plan.m * rows, kNegativeZeroBf16);
      for (std::size_t i = 0; i < plan.m; ++i) {
        for (std::size_t r = 0; r < rows && kt * rows + r < plan.k; ++r) {
          job.acts[i * rows + r] = a.at(i, kt * rows + r);
        }
      }
      if (kt > 0) {
        job.seed_from = (kt - 1) * plan.n_tiles + nt;
      } else {
        job.seeds.assign(plan.m * cols, 0u);
        if (seed) {
          for (std::size_t i = 0; i < plan.m; ++i) {
            for (std::size_t c = 0; c < cols && nt * cols + c < plan.n; ++c) {
              job.seeds[i * cols + c] = seed->at(i, nt * cols + c);
            }
          }
        }
      }
      plan.jobs.push_back(std::move(job));
    }
  }
  return plan;
}

num::MatrixFp32 assemble_gemm(const ArrayConfig& config, const GemmPlan& plan,
                              const StreamResult& streamed) {
  num::MatrixFp32 out(plan.m, plan.n);
  const std::size_t last_k = plan.k_tiles - 1;
  for (std::size_t nt = 0; nt < plan.n_tiles; ++nt) {
    const std::vector<fp32_t>& rows_out = streamed.results.at(last_k * plan.n_tiles + nt);
    for (std::size_t i = 0; i < plan.m; ++i) {
      for (std::size_t c = 0; c < config.cols && nt * config.cols + c < plan.n; ++c) {
        out.at(i, nt * config.cols + c) = rows_out.at(i * config.cols + c);
      }
    }
  }
  return out;
}

num::MatrixFp32 run_gemm(MxuModel& model, const num::MatrixBf16& a, const num::MatrixBf16& w,
                         const num::MatrixFp32* seed, const StallProfile& stalls,
                         StreamStats* stats) {
  const GemmPlan plan = plan_gemm(model.config(), a, w, seed);
  const StreamResult streamed = run_stream(model, plan.jobs, stalls);
  if (stats) *stats = streamed.stats;
  return assemble_gemm(model.config(), plan, streamed);
}

}  // namespace tpu::harness
