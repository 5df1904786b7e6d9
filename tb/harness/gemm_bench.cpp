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

namespace {

// An int8 product (Q-MAC, with Q-REQ's columns for int8 results) with random operands, on the
// RTL and then the functional model.
void measure_int8(GemmMeasurement& m, const HardwareConfig& config, const GemmSpec& spec,
                  sim::RtlBackend& rtl, oracle::OperandRng& rng) {
  const auto random_int8 = [&](std::uint32_t rows, std::uint32_t cols) {
    num::MatrixI8 matrix(rows, cols);
    for (auto& v : matrix.data) v = static_cast<std::int8_t>(int(rng.uniform(0, 255)) - 128);
    return matrix;
  };
  const num::MatrixI8 a = random_int8(spec.m, spec.k);
  const num::MatrixI8 b = random_int8(spec.k, spec.n);
  num::MatrixI32 c(spec.m, spec.n);
  for (auto& v : c.data) v = static_cast<std::int32_t>(rng.uniform(0, 0xFFFFFFFFu));
  RequantColumns requant;
  for (std::uint32_t j = 0; j < spec.n; ++j) {
    requant.bias.push_back(static_cast<std::int32_t>(rng.uniform(0, 1u << 16)) - (1 << 15));
    requant.multiplier.push_back(static_cast<std::int32_t>(rng.uniform(1u << 30, (1u << 31) - 1)));
    requant.shift.push_back(-static_cast<int>(rng.uniform(6, 12)));
  }
  const num::MatrixI32* c_in = spec.has_c ? &c : nullptr;
  const RequantColumns* requant_in = spec.out == OutType::Int8 ? &requant : nullptr;
  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  const num::MatrixI32 out = run_gemm(rtl, spec, a, b, c_in, requant_in, &result);
  m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.counters = *result.counters;
  FunctionalModel model(config, m.plan.memory_bytes);
  m.exact = run_gemm(model, spec, a, b, c_in, requant_in).data == out.data;
}

}  // namespace

GemmMeasurement measure_gemm(const HardwareConfig& config, const GemmSpec& spec,
                             const sim::AxiTiming& timing, std::uint64_t seed) {
  GemmMeasurement m;
  m.plan = plan_gemm(config, spec);
  oracle::OperandRng rng(seed);
  sim::RtlOptions options;
  options.memory_bytes = m.plan.memory_bytes;
  options.timing = timing;
  sim::RtlBackend rtl(config, options);
  if (spec.int8()) {
    measure_int8(m, config, spec, rtl, rng);
    return m;
  }
  const auto a = oracle::random_bf16_matrix(rng, spec.m, spec.k, 1);
  const auto b = oracle::random_bf16_matrix(rng, spec.k, spec.n, 1);
  const auto c = oracle::random_seed_matrix(rng, spec.m, spec.n, 1);
  const auto bias = oracle::random_seed_matrix(rng, 1, spec.n, 1).data;
  const num::MatrixFp32* c_in = spec.has_c ? &c : nullptr;
  const std::vector<num::fp32_t>* bias_in = spec.has_bias ? &bias : nullptr;

  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  const num::MatrixFp32 out = run_gemm(rtl, spec, a, b, c_in, bias_in, &result);
  m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.counters = *result.counters;

  FunctionalModel model(config, m.plan.memory_bytes);
  m.exact = run_gemm(model, spec, a, b, c_in, bias_in).data == out.data;
  return m;
}

GemmMeasurement measure_conv(const HardwareConfig& config, const GemmSpec& spec,
                             const ConvGeometry& geometry, const sim::AxiTiming& timing,
                             std::uint64_t seed) {
  GemmMeasurement m;
  m.plan = plan_conv(config, spec, geometry);
  oracle::OperandRng rng(seed);
  const std::size_t image = std::size_t{geometry.channels} * geometry.height * geometry.width;
  const auto images = oracle::random_bf16_matrix(rng, geometry.batch, image, 1);
  const auto filters =
      oracle::random_bf16_matrix(rng, std::size_t{geometry.taps()} * geometry.channels, spec.n, 1);
  const num::MatrixBf16 b = conv_weights(config, geometry, filters);
  const auto bias = oracle::random_seed_matrix(rng, 1, spec.n, 1).data;
  const std::vector<num::fp32_t>* bias_in = spec.has_bias ? &bias : nullptr;
  sim::RtlOptions options;
  options.memory_bytes = m.plan.memory_bytes;
  options.timing = timing;
  sim::RtlBackend rtl(config, options);
  const auto start = std::chrono::steady_clock::now();
  const GemmRun run =
      execute_conv(m.plan, rtl, images.data.data(), nchw_images(m.plan.conv, image), b, bias_in);
  m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  require_halt(run.result);
  m.counters = *run.result.counters;
  FunctionalModel model(config, m.plan.memory_bytes);
  m.exact =
      execute_conv(m.plan, model, images.data.data(), nchw_images(m.plan.conv, image), b, bias_in)
          .out.data == run.out.data;
  return m;
}

}  // namespace tpu::harness
