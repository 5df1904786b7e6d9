// One compiled GEMM (or convolution) measured on the RTL backend: random operands, the run's
// performance counters and wall time, and the result checked bit for bit
// against the functional model. The benchmarks (core_bench, bench_suite) and
// the cycle-model test share it.
#pragma once

#include <cstdint>
#include <string>

#include "backends/axi_memory.hpp"
#include "tpu/backend.hpp"
#include "tpu/compiler.hpp"

namespace tpu::harness {

struct GemmMeasurement {
  GemmPlan plan;
  Counters counters{};
  double wall_seconds = 0;  // the RTL run alone
  bool exact = false;       // the RTL's output equals the functional model's, bit for bit
};

// A compiled tpu_top configuration by name ("16x16"); std::invalid_argument
// listing the compiled ones otherwise.
HardwareConfig compiled_top_named(const std::string& name);

// Throws std::runtime_error when the core stops with an error. The wall time
// covers the RTL run with its operand placement and result read-back.
GemmMeasurement measure_gemm(const HardwareConfig& config, const GemmSpec& spec,
                             const sim::AxiTiming& timing, std::uint64_t seed = 1);

// The same for a convolution from its images (plan_conv), bf16 operands: random images and
// filters, the RTL's result checked against the functional model's.
GemmMeasurement measure_conv(const HardwareConfig& config, const GemmSpec& spec,
                             const ConvGeometry& geometry, const sim::AxiTiming& timing,
                             std::uint64_t seed = 1);

}  // namespace tpu::harness
