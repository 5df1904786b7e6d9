#include "harness/gemm_bench.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

#include "harness/rtl_backend.hpp"
#include "harness/top_model.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/model.hpp"

namespace tpu::harness {

HardwareConfig compiled_top_named(const std::string& name) {
  std::string known;
  for (const HardwareConfig& c : compiled_tops()) {
    if (c.name() == name) return c;
    known += (known.empty() ? "" : ", ") + c.name();
  }
  throw std::invalid_argument("no compiled tpu_top configuration " + name + " (compiled: " +
                              known + ")");
}

GemmMeasurement measure_gemm(const HardwareConfig& config, const GemmSpec& spec,
                             const AxiTiming& timing, std::uint64_t seed) {
  GemmMeasurement m;
  m.plan = plan_gemm(config, spec);
  oracle::OperandRng rng(seed);
  const auto a = oracle::random_bf16_matrix(rng, spec.m, spec.k, 1);
  const auto b = oracle::random_bf16_matrix(rng, spec.k, spec.n, 1);
  const auto c = oracle::random_seed_matrix(rng, spec.m, spec.n, 1);
  const auto bias = oracle::random_seed_matrix(rng, 1, spec.n, 1).data;
  const ref::MatrixFp32* c_in = spec.has_c ? &c : nullptr;
  const std::vector<ref::fp32_t>* bias_in = spec.has_bias ? &bias : nullptr;
  const auto count = static_cast<std::uint32_t>(m.plan.program.size());

  RtlOptions options;
  options.memory_bytes = m.plan.memory_bytes;
  options.timing = timing;
  RtlBackend rtl(config, options);
  write_gemm_inputs(m.plan, rtl.memory(), a, b, c_in, bias_in);
  const auto start = std::chrono::steady_clock::now();
  const RunResult result = rtl.run(m.plan.prog_addr, count);
  m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    throw std::runtime_error(std::string("core stopped: ") + regs::error_name(result.error));
  }
  m.counters = *result.counters;

  FunctionalModel model(config, m.plan.memory_bytes);
  write_gemm_inputs(m.plan, model.memory(), a, b, c_in, bias_in);
  m.exact = model.run(m.plan.prog_addr, count).ok() &&
            read_gemm_output(m.plan, rtl.memory()).data ==
                read_gemm_output(m.plan, model.memory()).data;
  return m;
}

}  // namespace tpu::harness
