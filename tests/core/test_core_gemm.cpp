// Compiled GEMMs on the RTL: random and adversarial matrices, shapes that are
// not multiples of the array, C, bias, every function and both output types,
// each checked bit for bit against the reference computation and the
// functional model; and convolutions from their images (plan_conv) against the
// product of their im2col matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

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
    s.act = static_cast<isa::Func>(rng.uniform(0, isa::kFuncCount - 1));
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
  for (unsigned f = 0; f < isa::kFuncCount; ++f) {
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

// The im2col product's spec of a convolution's.
GemmSpec im2col_spec(GemmSpec spec, const ConvGeometry& g) {
  spec.m = g.batch * g.out_h() * g.out_w();
  spec.k = g.taps() * g.channels;
  return spec;
}

// int8 convolutions (Q-MAC, the padding the input zero point; requantised or int32 sums) on a
// core with the int8 datapath, as ConvolutionsFromTheirImages checks bf16 ones.
void check_int8_convolutions(const HardwareConfig& config) {
  oracle::OperandRng rng(test::test_seed() + 6);
  const auto int8 = [&] { return static_cast<std::int8_t>(int(rng.uniform(0, 255)) - 128); };
  int ran = 0;
  for (int t = 0; t < 4; ++t) {
    const ConvGeometry g = test::random_conv_geometry(rng, 2 * config.dim + 1);
    GemmSpec s;
    s.in = InType::Int8;
    s.n = static_cast<std::uint32_t>(rng.uniform(1, 2 * config.dim));
    s.out = t % 2 ? OutType::Int8 : OutType::Int32;
    s.input_zero_point = int8();
    RequantColumns requant;
    if (s.out == OutType::Int8) {
      s.output_zero_point = int8();
      for (std::uint32_t j = 0; j < s.n; ++j) {
        requant.bias.push_back(static_cast<std::int32_t>(rng.uniform(0, 1u << 16)) - (1 << 15));
        requant.multiplier.push_back(
            static_cast<std::int32_t>(rng.uniform(1u << 30, (1u << 31) - 1)));
        requant.shift.push_back(-static_cast<int>(rng.uniform(6, 12)));
      }
    }
    SCOPED_TRACE(test::describe(g) + " n " + std::to_string(s.n));
    const test::ConvImages<std::int8_t> images =
        test::random_conv_images<std::int8_t>(rng, g, int8);
    const GemmSpec im2col = im2col_spec(s, g);
    num::MatrixI8 b(im2col.k, s.n);
    for (std::int8_t& v : b.data) v = int8();
    const RequantColumns* requant_used = s.out == OutType::Int8 ? &requant : nullptr;
    const std::optional<GemmPlan> plan = fitting_plan(config, s, g);
    if (!plan) continue;
    const num::MatrixI8 weights = conv_weights(config, g, b);
    const num::MatrixI32 got = run_on_both(
        config, *plan,
        [&](HostMemory& memory) {
          write_conv_inputs(*plan, memory, images.first(), images.image_stride(), weights,
                            requant_used);
        },
        [&](const HostMemory& memory) { return read_gemm_output_int(*plan, memory); });
    const num::MatrixI8 cols = images.im2col(static_cast<std::int8_t>(s.input_zero_point));
    ASSERT_EQ(got.data, reference_gemm(im2col, cols, b, nullptr, requant_used).data);
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST_P(CoreGemm, ConvolutionsFromTheirImages) {
  const HardwareConfig config = config_named(GetParam());
  oracle::OperandRng rng(test::test_seed() + 5);
  const int trials = config.dim >= 16 ? 2 : 4;
  int ran = 0;
  for (int t = 0; t < trials; ++t) {
    const ConvGeometry g = test::random_conv_geometry(rng, 2 * config.dim + 1);
    GemmSpec s;
    s.n = static_cast<std::uint32_t>(rng.uniform(1, 2 * config.dim));
    s.has_bias = rng.uniform(0, 1);
    s.act = static_cast<isa::Func>(rng.uniform(0, isa::kFuncCount - 1));
    if (s.act == isa::Func::Leaky) s.alpha = rng.bf16();
    s.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
    SCOPED_TRACE(test::describe(g) + " n " + std::to_string(s.n));
    const num::MatrixBf16 values = oracle::random_bf16_matrix(
        rng, 1, std::size_t{g.batch} * (g.channels + 3) * g.height * g.width, 5);
    std::size_t next = 0;
    const test::ConvImages<num::bf16_t> images =
        test::random_conv_images<num::bf16_t>(rng, g, [&] { return values.data[next++]; });
    const GemmSpec im2col = im2col_spec(s, g);
    const num::MatrixBf16 b = oracle::random_bf16_matrix(rng, im2col.k, s.n, 5);
    const std::vector<num::fp32_t> bias = oracle::random_seed_matrix(rng, 1, s.n).data;
    const std::vector<num::fp32_t>* bias_used = s.has_bias ? &bias : nullptr;
    const std::optional<GemmPlan> plan = fitting_plan(config, s, g);
    if (!plan) continue;
    const num::MatrixBf16 weights = conv_weights(config, g, b);
    const num::MatrixFp32 got = run_on_both(
        config, *plan,
        [&](HostMemory& memory) {
          write_conv_inputs(*plan, memory, images.first(), images.image_stride(), weights,
                            bias_used);
        },
        [&](const HostMemory& memory) { return read_gemm_output(*plan, memory); });
    ASSERT_EQ(got.data,
              reference_gemm(im2col, images.im2col(num::bf16_t{}), b, nullptr, bias_used).data);
    ++ran;
  }
  EXPECT_GT(ran, 0);
  if (config.int8) check_int8_convolutions(config);
}

INSTANTIATE_TEST_SUITE_P(Tops, CoreGemm,
                         ::testing::Values("4x4_m1a1", "8x8_bus4", "16x16", "4x4_seq", "1x1_seq",
                                           "8x8_seq"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace tpu::testing
