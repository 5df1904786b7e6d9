// Compiled GEMMs on the RTL: random and adversarial matrices, shapes that are
// not multiples of the array, C, bias, every function and both output types,
// each checked bit for bit against the reference computation and the
// functional model; and convolutions from their images (plan_conv) against the
// product of their im2col matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <type_traits>

#include "common/conv_operands.hpp"
#include "common/gemm_operands.hpp"
#include "common/test_seed.hpp"
#include "core_harness.hpp"
#include "tpu/compiler.hpp"

namespace tpu::testing {
namespace {

using Operands = test::GemmOperands;

// Runs the compiled GEMM on the RTL and the model and checks both against
// the reference. Returns the RTL's counters.
Counters check_gemm(const HardwareConfig& config, const GemmSpec& spec, const Operands& o,
                    const sim::RtlOptions& options = {}) {
  const GemmPlan plan = plan_gemm(config, spec);
  CoreHarness h(config, options, plan.memory_bytes);
  const num::MatrixFp32* c = o.c_for(spec);
  const std::vector<num::fp32_t>* bias = o.bias_for(spec);
  write_gemm_inputs(plan, h.rtl().memory(), o.a, o.b, c, bias);
  write_gemm_inputs(plan, h.model().memory(), o.a, o.b, c, bias);
  const BothResults r = h.run(plan.program, plan.prog_addr);
  EXPECT_TRUE(r.rtl.ok()) << regs::error_name(r.rtl.error);
  const num::MatrixFp32 want = reference_gemm(spec, o.a, o.b, c, bias);
  EXPECT_EQ(read_gemm_output(plan, h.rtl().memory()).data, want.data);
  return r.rtl.counters.value_or(Counters{});
}

Operands random_operands(oracle::OperandRng& rng, const GemmSpec& s, unsigned special_percent,
                         unsigned min_exp = 115, unsigned max_exp = 135) {
  return test::random_gemm_operands(rng, s, special_percent, special_percent, min_exp, max_exp);
}

std::string describe(const GemmSpec& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
         (s.has_c ? " +C" : "") + (s.has_bias ? " +bias" : "") + " act " +
         std::to_string(static_cast<int>(s.act)) + (s.out == OutType::Bf16 ? " bf16" : " fp32");
}

class CoreGemm : public ::testing::TestWithParam<std::string> {};

TEST_P(CoreGemm, RandomShapesAndOptions) {
  const HardwareConfig config = config_named(GetParam());
  oracle::OperandRng rng(test::test_seed());
  const unsigned d = config.dim;
  const int trials = d >= 16 ? 4 : 12;
  for (int t = 0; t < trials; ++t) {
    GemmSpec s;
    s.m = static_cast<std::uint32_t>(rng.uniform(1, 3 * d));
    s.k = static_cast<std::uint32_t>(rng.uniform(1, 3 * d));
    s.n = static_cast<std::uint32_t>(rng.uniform(1, 3 * d));
    s.has_c = rng.uniform(0, 1);
    s.has_bias = rng.uniform(0, 1);
    s.act = static_cast<isa::Func>(rng.uniform(0, isa::func_count(config) - 1));
    if (s.act == isa::Func::Leaky) s.alpha = rng.bf16();
    s.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
    SCOPED_TRACE(describe(s));
    check_gemm(config, s, random_operands(rng, s, 5));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST_P(CoreGemm, EveryFunctionWithBiasAndBothOutputs) {
  const HardwareConfig config = config_named(GetParam());
  oracle::OperandRng rng(test::test_seed() + 1);
  for (unsigned f = 0; f < isa::func_count(config); ++f) {
    for (OutType out : {OutType::Fp32, OutType::Bf16}) {
      GemmSpec s;
      s.m = config.dim + 3;
      s.k = config.dim + 1;
      s.n = config.dim;
      s.has_bias = true;
      s.act = static_cast<isa::Func>(f);
      if (s.act == isa::Func::Leaky) s.alpha = 0x3C24;  // 0.01
      s.out = out;
      SCOPED_TRACE(describe(s));
      check_gemm(config, s, random_operands(rng, s, 2, 118, 130));
    }
  }
}

TEST_P(CoreGemm, AdversarialValues) {
  const HardwareConfig config = config_named(GetParam());
  oracle::OperandRng rng(test::test_seed() + 2);
  const unsigned d = config.dim;
  GemmSpec s;
  s.m = 2 * d + 1;
  s.k = 2 * d + 1;
  s.n = d + 1;
  s.has_c = true;
  // Special values everywhere; huge exponents (products overflow); tiny ones
  // (products flush); both at once.
  for (auto [lo, hi, special] : {std::tuple{115u, 135u, 40u}, std::tuple{200u, 254u, 5u},
                                 std::tuple{1u, 70u, 5u}, std::tuple{1u, 254u, 10u}}) {
    SCOPED_TRACE("exponents " + std::to_string(lo) + ".." + std::to_string(hi));
    check_gemm(config, s, random_operands(rng, s, special, lo, hi));
  }
  // Cancellation: every product appears twice with opposite signs around a
  // small term, so sums fall to tiny values and rounding decides everything.
  Operands o = random_operands(rng, s, 0, 120, 130);
  for (std::size_t k = 1; k < s.k; k += 2) {
    for (std::size_t j = 0; j < s.n; ++j) {
      o.b.at(k, j) = static_cast<num::bf16_t>(o.b.at(k - 1, j) ^ 0x8000);
    }
    for (std::size_t i = 0; i < s.m; ++i) o.a.at(i, k) = o.a.at(i, k - 1);
  }
  SCOPED_TRACE("cancellation");
  check_gemm(config, s, o);
}

TEST_P(CoreGemm, RandomHostMemoryTiming) {
  const HardwareConfig config = config_named(GetParam());
  oracle::OperandRng rng(test::test_seed() + 3);
  GemmSpec s;
  s.m = 2 * config.dim + 5;
  s.k = 2 * config.dim + 3;
  s.n = 2 * config.dim - 1;
  s.has_bias = true;
  s.act = isa::Func::Relu;
  s.out = OutType::Bf16;
  sim::RtlOptions options;
  options.timing.read_latency = 23;
  options.timing.write_latency = 9;
  options.timing.beats_per_cycle = 0.4;
  options.timing.ar_stall = options.timing.aw_stall = options.timing.w_stall = 0.4;
  options.timing.r_gap = options.timing.b_gap = 0.4;
  options.timing.max_reads_in_flight = 2;
  options.timing.seed = test::test_seed();
  check_gemm(config, s, random_operands(rng, s, 5), options);
}

// A convolution's plan, or none where its image is too wide for this core's unified buffer
// (test_conv_compiler's cases).
std::optional<GemmPlan> fitting_plan(const HardwareConfig& config, const GemmSpec& spec,
                                     const ConvGeometry& g) {
  try {
    return plan_conv(config, spec, g);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// A convolution's plan run on the RTL and the model (the harness compares what they leave), its
// operands written into each by `write(memory)`: `read(memory)` of the RTL's result.
template <typename Write, typename Read>
auto run_on_both(const HardwareConfig& config, const GemmPlan& plan, Write write, Read read) {
  CoreHarness h(config, {}, plan.memory_bytes);
  write(h.rtl().memory());
  write(h.model().memory());
  const BothResults r = h.run(plan.program, plan.prog_addr);
  EXPECT_TRUE(r.rtl.ok()) << regs::error_name(r.rtl.error);
  return read(h.rtl().memory());
}

// B given as its transpose's rows (GemmSpec::b_transposed, attention's K), which READ_WEIGHTS T
// transposes into the weight tiles on a core with a vector unit: the bits of B laid out by the
// host, on the RTL and the model; K up to four times the weight FIFO's tiles, partial tiles of
// K and N. A core without a vector unit refuses the plan.
TEST_P(CoreGemm, BGivenTransposed) {
  const HardwareConfig config = config_named(GetParam());
  GemmSpec s;
  s.b_transposed = true;
  if (config.vector_lanes == 0) {
    EXPECT_THROW(plan_gemm(config, s), std::invalid_argument);
    return;
  }
  oracle::OperandRng rng(test::test_seed() + 7);
  const unsigned d = config.dim;
  for (int t = 0; t < (d >= 16 ? 3 : 8); ++t) {
    s.m = static_cast<std::uint32_t>(rng.uniform(1, 3 * d));
    s.k = static_cast<std::uint32_t>(rng.uniform(1, 4 * (config.weight_tiles + 1) * d));
    s.n = static_cast<std::uint32_t>(rng.uniform(1, 2 * d));
    s.has_bias = rng.uniform(0, 1);
    s.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
    SCOPED_TRACE(describe(s));
    const Operands o = random_operands(rng, s, 5);
    const num::MatrixBf16 bt = num::transposed(o.b);
    const GemmPlan plan = plan_gemm(config, s);
    const num::MatrixFp32 got = run_on_both(
        config, plan,
        [&](HostMemory& memory) {
          write_gemm_inputs(plan, memory, o.a, bt, nullptr, o.bias_for(s));
        },
        [&](const HostMemory& memory) { return read_gemm_output(plan, memory); });
    GemmSpec laid_out = s;
    laid_out.b_transposed = false;
    EXPECT_EQ(got.data, reference_gemm(laid_out, o.a, o.b, nullptr, o.bias_for(s)).data);
    if (::testing::Test::HasFailure()) return;
  }
}

// Random convolutions of a type (test::random_bf16_conv or random_int8_conv) on this core's RTL
// and model against their im2col products; images too wide for the core are left out.
template <typename MakeCase>
void check_random_convolutions(const HardwareConfig& config, std::uint64_t seed, int trials,
                               MakeCase make_case) {
  oracle::OperandRng rng(seed);
  int ran = 0;
  for (int t = 0; t < trials; ++t) {
    const ConvGeometry g = test::random_conv_geometry(rng, 2 * config.dim + 1);
    const auto c = make_case(rng, g, t);
    SCOPED_TRACE(c.describe());
    const std::optional<GemmPlan> plan = fitting_plan(config, c.spec, g);
    if (!plan) continue;
    const auto weights = conv_weights(config, g, c.b);
    const auto got = run_on_both(
        config, *plan,
        [&](HostMemory& memory) {
          write_conv_inputs(*plan, memory, c.images.first(), c.images.strides(), weights,
                            c.columns_used());
        },
        [&](const HostMemory& memory) {
          if constexpr (std::is_same_v<std::decay_t<decltype(c.b)>, num::MatrixI8>) {
            return read_gemm_output_int(*plan, memory);
          } else {
            return read_gemm_output(*plan, memory);
          }
        });
    ASSERT_EQ(got.data, c.expected().data);
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

// bf16 (and on a core with the int8 datapath, int8) convolutions from their images.
TEST_P(CoreGemm, ConvolutionsFromTheirImages) {
  const HardwareConfig config = config_named(GetParam());
  const int trials = config.dim >= 16 ? 2 : 4;
  check_random_convolutions(config, test::test_seed() + 5, trials,
                            [&](oracle::OperandRng& rng, const ConvGeometry& g, int) {
                              return test::random_bf16_conv(rng, g, 2 * config.dim,
                                                            isa::func_count(config));
                            });
  if (!config.int8) return;
  check_random_convolutions(config, test::test_seed() + 6, 4,
                            [&](oracle::OperandRng& rng, const ConvGeometry& g, int trial) {
                              return test::random_int8_conv(rng, g, 2 * config.dim, trial);
                            });
}

INSTANTIATE_TEST_SUITE_P(Tops, CoreGemm,
                         ::testing::Values("4x4_m1a1", "8x8_bus4", "16x16", "4x4_seq", "1x1_seq",
                                           "8x8_seq"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace tpu::testing
