// Convolutions from their images (tpu::plan_conv) on the functional model: random geometries
// (batches, channels over several tiles, kernels, strides, dilations, padding), bf16 with every
// epilogue and int8 with zero points, requantisation and int32 sums, each against the product of
// its im2col matrix (tests/common/conv_operands.hpp) by the reference computation, bit for bit.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/conv_operands.hpp"
#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/compiler.hpp"
#include "tpu/model.hpp"
#include "tpu/nn.hpp"

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
auto run_on_model(const HardwareConfig& config, const GemmPlan& plan, const T* images,
                  const ImageStrides& strides, const num::Matrix<T>& b, const Columns* columns) {
  FunctionalModel model(config, plan.memory_bytes);
  auto run =
      execute_conv(plan, model, images, strides, conv_weights(config, plan.conv, b), columns);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  EXPECT_EQ(model.uninitialized_reads(), 0u) << "the program read memory it never wrote";
  return std::move(run.out);
}

// Random cases of a type (test::random_bf16_conv or random_int8_conv) against their im2col
// products: a few images too wide for the small core are refused, the rest run on the model.
template <typename MakeCase>
void check_random_convolutions(const HardwareConfig& config, std::uint64_t seed,
                               MakeCase make_case) {
  oracle::OperandRng rng(seed);
  int refused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const ConvGeometry g = test::random_conv_geometry(rng, 3 * config.dim);
    const auto c = make_case(rng, g, trial);
    SCOPED_TRACE(c.describe());
    const std::optional<GemmPlan> plan = plan_or_refuse(config, c.spec, g, refused);
    if (!plan) continue;
    ASSERT_EQ(
        run_on_model(config, *plan, c.images.first(), c.images.strides(), c.b, c.columns_used())
            .data,
        c.expected().data);
    // The same images channels last (NHWC), the group's channels among the image's.
    const auto& images = c.images;
    const std::size_t plane = images.plane(), total = images.total_channels;
    std::vector<typename std::decay_t<decltype(images.values)>::value_type> nhwc(
        images.values.size());
    for (std::size_t n = 0; n < g.batch; ++n) {
      nn::transpose_into(&images.values[n * total * plane], total, plane, &nhwc[n * total * plane]);
    }
    ASSERT_EQ(run_on_model(config, *plan, nhwc.data() + images.first_channel,
                           ImageStrides{total * plane, 1, total}, c.b, c.columns_used())
                  .data,
              c.expected().data);
  }
  EXPECT_LE(refused, 10);
}

TEST(ConvCompiler, Bf16ConvolutionsMatchTheirIm2colProducts) {
  const HardwareConfig config = small_core();
  check_random_convolutions(
      config, test::test_seed(), [&](oracle::OperandRng& rng, const ConvGeometry& g, int) {
        return test::random_bf16_conv(rng, g, 2 * config.dim + 1, isa::func_count(config));
      });
}

TEST(ConvCompiler, Int8ConvolutionsMatchTheirIm2colProducts) {
  const HardwareConfig config = int8_core();
  check_random_convolutions(config, test::test_seed() + 1,
                            [&](oracle::OperandRng& rng, const ConvGeometry& g, int trial) {
                              return test::random_int8_conv(rng, g, 2 * config.dim + 1, trial);
                            });
}

// Rows of several images in several blocks, each loading the rows its kernel reaches past it:
// the host writes each padded image once (padding shared between rows and between images), not
// the taps' copies of it im2col would.
TEST(ConvCompiler, BlocksLoadTheirRowsAndTheKernelsReach) {
  const HardwareConfig config = small_core();
  const ConvGeometry g = test::square_conv(2, 5, 6, 3, 1);
  oracle::OperandRng rng(test::test_seed() + 2);
  const test::Bf16ConvCase c = test::random_bf16_conv(rng, g, 3, isa::func_count(config));
  const GemmPlan plan = plan_conv(config, c.spec, g);
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
  // The output pixels' rows: 4 columns (up to 3 filters) of fp32 or bf16.
  EXPECT_EQ(plan.result_bytes(), 2u * 6 * 6 * 4 * plan.out_elem_bytes());
  EXPECT_EQ(
      run_on_model(config, plan, c.images.first(), c.images.strides(), c.b, c.columns_used()).data,
      c.expected().data);
}

TEST(ConvCompiler, WhatThePlanCannotTakeIsRefused) {
  const HardwareConfig config = small_core();
  const ConvGeometry g = test::square_conv(1, 4, 4, 3, 0);
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
  EXPECT_THROW(write_conv_inputs(gemm, memory, x.data(), nchw_images(g, 16), b, nullptr),
               std::invalid_argument);
  EXPECT_THROW(write_conv_inputs(conv, memory, x.data(), nchw_images(g, 16), num::MatrixBf16(35, 4),
                                 nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
