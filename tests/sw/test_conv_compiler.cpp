// Convolutions from their images (tpu::plan_conv) on the functional model: random geometries
// (batches, channels over several tiles, kernels, strides, dilations, padding), bf16 with every
// epilogue and int8 with zero points, requantisation and int32 sums, each against the product of
// its im2col matrix (tests/common/conv_operands.hpp) by the reference computation, bit for bit.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>

#include "common/conv_operands.hpp"
#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/compiler.hpp"
#include "tpu/model.hpp"

namespace tpu {
namespace {

using test::small_core;

HardwareConfig int8_core() {
  HardwareConfig config = small_core();
  config.int8 = true;
  return config;
}

// The plan of a random convolution, or none where its image is too wide for the small core's
// unified buffer (a block of rows and the halo its kernel reaches, per phase and channel tile):
// counted in `refused`, which the tests keep to a few.
std::optional<GemmPlan> plan_or_refuse(const HardwareConfig& config, const GemmSpec& spec,
                                       const ConvGeometry& g, int& refused) {
  try {
    return plan_conv(config, spec, g);
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("too wide"), std::string::npos) << error.what();
    ++refused;
    return std::nullopt;
  }
}

// The plan run on the functional model from the images and the filters as the im2col product's
// B: its result, the run checked to halt and to read only memory it wrote.
template <typename T, typename Columns>
auto run_on_model(const HardwareConfig& config, const GemmPlan& plan,
                  const test::ConvImages<T>& images, const num::Matrix<T>& b,
                  const Columns* columns) {
  FunctionalModel model(config, plan.memory_bytes);
  auto run = execute_conv(plan, model, images.first(), images.image_stride(),
                          conv_weights(config, plan.conv, b), columns);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  EXPECT_EQ(model.uninitialized_reads(), 0u) << "the program read memory it never wrote";
  return std::move(run.out);
}

// The im2col product's spec of a convolution's spec and geometry.
GemmSpec im2col_spec(GemmSpec spec, const ConvGeometry& g) {
  spec.m = g.batch * g.out_h() * g.out_w();
  spec.k = g.taps() * g.channels;
  return spec;
}

TEST(ConvCompiler, Bf16ConvolutionsMatchTheirIm2colProducts) {
  const HardwareConfig config = small_core();
  oracle::OperandRng rng(test::test_seed());
  int refused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const ConvGeometry g = test::random_conv_geometry(rng, 3 * config.dim);
    GemmSpec s;
    s.n = static_cast<std::uint32_t>(rng.uniform(1, 2 * config.dim + 1));
    s.has_bias = rng.uniform(0, 1);
    s.act = static_cast<isa::Func>(rng.uniform(0, isa::kFuncCount - 1));
    if (s.act == isa::Func::Leaky) s.alpha = rng.bf16();
    s.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
    SCOPED_TRACE(test::describe(g) + " n " + std::to_string(s.n) + " act " +
                 std::to_string(static_cast<int>(s.act)));
    const num::MatrixBf16 values = oracle::random_bf16_matrix(
        rng, 1, std::size_t{g.batch} * (g.channels + 3) * g.height * g.width, 5);
    std::size_t next = 0;
    const test::ConvImages<num::bf16_t> images =
        test::random_conv_images<num::bf16_t>(rng, g, [&] { return values.data[next++]; });
    const GemmSpec im2col = im2col_spec(s, g);
    const num::MatrixBf16 b = oracle::random_bf16_matrix(rng, im2col.k, s.n, 5);
    const std::vector<num::fp32_t> bias = oracle::random_seed_matrix(rng, 1, s.n).data;
    const std::vector<num::fp32_t>* bias_used = s.has_bias ? &bias : nullptr;

    const std::optional<GemmPlan> plan = plan_or_refuse(config, s, g, refused);
    if (!plan) continue;
    ASSERT_EQ(run_on_model(config, *plan, images, b, bias_used).data,
              reference_gemm(im2col, images.im2col(num::bf16_t{}), b, nullptr, bias_used).data);
  }
  EXPECT_LE(refused, 10);
}

TEST(ConvCompiler, Int8ConvolutionsMatchTheirIm2colProducts) {
  const HardwareConfig config = int8_core();
  oracle::OperandRng rng(test::test_seed() + 1);
  std::mt19937_64 values(test::test_seed() + 1);
  std::uniform_int_distribution<int> int8(-128, 127);
  std::uniform_int_distribution<std::int32_t> multiplier(1 << 30, 0x7FFFFFFF), shift(-8, 4);
  int refused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const ConvGeometry g = test::random_conv_geometry(rng, 3 * config.dim);
    GemmSpec s;
    s.in = InType::Int8;
    s.n = static_cast<std::uint32_t>(rng.uniform(1, 2 * config.dim + 1));
    s.out = trial % 2 ? OutType::Int8 : OutType::Int32;
    s.input_zero_point = trial % 3 ? int8(values) : 0;
    RequantColumns requant;
    if (s.out == OutType::Int8) {
      s.output_zero_point = int8(values);
      s.clamp_lo = trial % 5 ? -128 : s.output_zero_point;
      for (std::uint32_t j = 0; j < s.n; ++j) {
        requant.bias.push_back(int8(values) * 1000);
        requant.multiplier.push_back(multiplier(values));
        requant.shift.push_back(shift(values));
      }
    }
    SCOPED_TRACE(test::describe(g) + " n " + std::to_string(s.n) + " za " +
                 std::to_string(s.input_zero_point));
    const test::ConvImages<std::int8_t> images = test::random_conv_images<std::int8_t>(
        rng, g, [&] { return static_cast<std::int8_t>(int8(values)); });
    const GemmSpec im2col = im2col_spec(s, g);
    num::MatrixI8 b(im2col.k, s.n);
    for (std::int8_t& v : b.data) v = static_cast<std::int8_t>(int8(values));
    const RequantColumns* requant_used = s.out == OutType::Int8 ? &requant : nullptr;

    const std::optional<GemmPlan> plan = plan_or_refuse(config, s, g, refused);
    if (!plan) continue;
    const num::MatrixI8 cols = images.im2col(static_cast<std::int8_t>(s.input_zero_point));
    ASSERT_EQ(run_on_model(config, *plan, images, b, requant_used).data,
              reference_gemm(im2col, cols, b, nullptr, requant_used).data);
  }
  EXPECT_LE(refused, 10);
}

// Rows of several images in several blocks, each loading the rows its kernel reaches past it:
// the host writes each padded image once (padding shared between rows and between images), not
// the taps' copies of it im2col would.
TEST(ConvCompiler, BlocksLoadTheirRowsAndTheKernelsReach) {
  const HardwareConfig config = small_core();
  ConvGeometry g;
  g.batch = 2;
  g.channels = 5;
  g.height = g.width = 6;
  g.kernel_h = g.kernel_w = 3;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  GemmSpec s;
  s.n = 3;
  const GemmPlan plan = plan_conv(config, s, g);
  // Rows of 6 pixels and a zero pixel, the right padding of one and the left of the next; 7 of
  // them an image, the last the bottom padding of one image and the top of the next.
  EXPECT_EQ(g.phase_w(), 7u);
  EXPECT_EQ(g.phase_h(), 7u);
  EXPECT_EQ(plan.spec.m, (7 * 7) + (5 * 7) + 6);  // image 0's 7 x 7 rows, then to (1, 5, 5)
  EXPECT_EQ(plan.spec.k, 9u * 8);                 // 9 taps of 2 channel tiles
  EXPECT_GT(plan.block_first.size(), 3u) << "the test wants several blocks";
  EXPECT_EQ(plan.a_span, plan.block_rows + 2 * 7 + 2);
  // The padded images once, and the rows the last taps read past them: 8 lanes of bf16.
  EXPECT_EQ(plan.a_bytes(), (90u + 16) * 8 * 2);
  EXPECT_EQ(plan.result_bytes(), 2u * 6 * 6 * 4 * 4);

  oracle::OperandRng rng(test::test_seed() + 2);
  const num::MatrixBf16 values = oracle::random_bf16_matrix(rng, 1, std::size_t{2} * 8 * 36, 0);
  std::size_t next = 0;
  const test::ConvImages<num::bf16_t> images =
      test::random_conv_images<num::bf16_t>(rng, g, [&] { return values.data[next++]; });
  const num::MatrixBf16 b = oracle::random_bf16_matrix(rng, 45, 3, 0);
  const std::vector<num::fp32_t>* no_bias = nullptr;
  EXPECT_EQ(
      run_on_model(config, plan, images, b, no_bias).data,
      reference_gemm(im2col_spec(s, g), images.im2col(num::bf16_t{}), b, nullptr, nullptr).data);
}

TEST(ConvCompiler, WhatThePlanCannotTakeIsRefused) {
  const HardwareConfig config = small_core();
  ConvGeometry g;
  g.batch = 1;
  g.channels = 4;
  g.height = g.width = 4;
  g.kernel_h = g.kernel_w = 3;
  GemmSpec s;
  s.n = 4;
  EXPECT_NO_THROW(plan_conv(config, s, g));
  ConvGeometry empty = g;
  empty.channels = 0;
  EXPECT_THROW(plan_conv(config, s, empty), std::invalid_argument);
  ConvGeometry large_kernel = g;
  large_kernel.kernel_h = 5;  // past the 4 rows of the unpadded image
  EXPECT_THROW(plan_conv(config, s, large_kernel), std::invalid_argument);
  ConvGeometry wide = g;
  wide.width = 100;  // two rows of 100 pixels reach past half the 256-row unified buffer
  EXPECT_THROW(plan_conv(config, s, wide), std::invalid_argument);
  GemmSpec seeded = s;
  seeded.has_c = true;
  EXPECT_THROW(plan_conv(config, seeded, g), std::invalid_argument);

  // A convolution's plan takes images, a GEMM's A.
  const GemmPlan conv = plan_conv(config, s, g);
  const GemmPlan gemm = plan_gemm(config, s);
  HostMemory memory;
  const num::MatrixBf16 b(conv.spec.k, s.n);
  EXPECT_THROW(write_gemm_inputs(conv, memory, num::MatrixBf16(1, 1), b, nullptr, nullptr),
               std::invalid_argument);
  const std::vector<num::bf16_t> x(64);
  EXPECT_THROW(write_conv_inputs(gemm, memory, x.data(), 16, b, nullptr), std::invalid_argument);
  EXPECT_THROW(write_conv_inputs(conv, memory, x.data(), 16, num::MatrixBf16(35, 4), nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
