#include "harness/gemm_bench.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

#include "backends/rtl_backend.hpp"
#include "backends/top_model.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/model.hpp"

namespace tpu::harness {

HardwareConfig compiled_top_named(const std::string& name) {
  std::string known;
  for (const HardwareConfig& c : tpu::core_configs()) {
    if (c.name() == name) return c;
    known += (known.empty() ? "" : ", ") + c.name();
  }
  throw std::invalid_argument("no compiled tpu_top configuration " + name + " (compiled: " +
                              known + ")");
}

GemmMeasurement measure_gemm(const HardwareConfig& config, const GemmSpec& spec,
                             const sim::AxiTiming& timing, std::uint64_t seed) {
  GemmMeasurement m;
  m.plan = plan_gemm(config, spec);
  oracle::OperandRng rng(seed);
  const auto a = oracle::random_bf16_matrix(rng, spec.m, spec.k, 1);
  const auto b = oracle::random_bf16_matrix(rng, spec.k, spec.n, 1);
  const auto c = oracle::random_seed_matrix(rng, spec.m, spec.n, 1);
  const auto bias = oracle::random_seed_matrix(rng, 1, spec.n, 1).data;
  const num::MatrixFp32* c_in = spec.has_c ? &c : nullptr;
  const std::vector<num::fp32_t>* bias_in = spec.has_bias ? &bias : nullptr;

  sim::RtlOptions options;
  options.memory_bytes = m.plan.memory_bytes;
  options.timing = timing;
  sim::RtlBackend rtl(config, options);
  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  const num::MatrixFp32 out = run_gemm(rtl, spec, a, b, c_in, bias_in, &result);
  m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.counters = *result.counters;

  FunctionalModel model(config, m.plan.memory_bytes);
  m.exact = run_gemm(model, spec, a, b, c_in, bias_in).data == out.data;
  return m;
}

}  // namespace tpu::harness
