// Depthwise convolution on the vector unit (tpu/depthwise.hpp): the plan's program on the
// functional model gives reference_depthwise's bits, and those are the matrix unit's: the
// reference GEMM (N-ORDER's fold of N-MAC) of each channel's im2col rows and its filter, then
// the bias and the function as the activation unit applies them (N-ACT), and the host FPU's
// oracle (oracle::depthwise_values) where it has the function. Padding, strides,
// dilations, one spatial dimension, a bias or none, each function, bf16 results, channels that
// do not fill a row of the array, images in bands of output rows and of channel tiles, output
// rows in chunks of columns; special values; the program reads only rows it wrote; the refusals.
// int8: the program gives reference_depthwise_int8's bits, which are the reference int8 GEMM's of
// the im2col rows (the input zero point in the padding, Q-ZP folded into the bias) requantised by
// Q-REQ, with zero points, clamps and per-channel multipliers.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/eltwise.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/depthwise.hpp"
#include "tpu/model.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/numerics/gemm.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu {
namespace {

DepthwiseSpec spec_of(std::uint32_t batch, std::uint32_t channels, std::uint32_t h, std::uint32_t w,
                      std::uint32_t k, std::uint32_t stride, std::uint32_t pad,
                      std::uint32_t dilation = 1) {
  DepthwiseSpec s;
  s.batch = batch;
  s.channels = channels;
  s.height = h;
  s.width = w;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.dilation_h = s.dilation_w = dilation;
  s.pad_top = s.pad_left = pad;
  const std::uint32_t extent = (k - 1) * dilation + 1;
  s.out_h = (h + 2 * pad - extent) / stride + 1;
  s.out_w = (w + 2 * pad - extent) / stride + 1;
  return s;
}

std::vector<num::fp32_t> values(oracle::OperandRng& rng, std::size_t count, double scale) {
  std::vector<num::fp32_t> x(count);
  for (num::fp32_t& v : x) {
    v = oracle::as_bits(
        static_cast<float>((static_cast<double>(rng.uniform(0, 2'000'000)) / 1e6 - 1.0) * scale));
  }
  return x;
}

struct Outcome {
  std::vector<num::fp32_t> out;
  std::uint64_t uninitialized_reads = 0;
  std::uint32_t bands = 0, group = 0, chunk = 0;
};

Outcome run_on_model(const HardwareConfig& config, const DepthwiseSpec& spec,
                     const std::vector<num::fp32_t>& x, const std::vector<num::fp32_t>& w,
                     const std::vector<num::fp32_t>& bias) {
  const DepthwisePlan plan = plan_depthwise(config, spec, 0x40);
  FunctionalModel model(config, 0);
  const DepthwiseRun run = execute_depthwise(plan, model, x, w, bias);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  return {run.out, model.uninitialized_reads(), plan.bands, plan.group, plan.chunk};
}

// Where output pixel q (of out_h x out_w) of image n, channel c, takes tap t from: its index in
// x (NCHW), or -1 in the padding: the im2col row of the convolution's product.
std::int64_t tap_input(const DepthwiseSpec& s, std::size_t n, std::size_t c, std::size_t q,
                       std::size_t t) {
  const std::int64_t iy = std::int64_t(q / s.out_w) * s.stride_h - s.pad_top +
                          std::int64_t(t / s.kernel_w) * s.dilation_h;
  const std::int64_t ix = std::int64_t(q % s.out_w) * s.stride_w - s.pad_left +
                          std::int64_t(t % s.kernel_w) * s.dilation_w;
  if (iy < 0 || ix < 0 || iy >= s.height || ix >= s.width) return -1;
  return static_cast<std::int64_t>(((n * s.channels + c) * s.height + std::size_t(iy)) * s.width +
                                   std::size_t(ix));
}

// The matrix unit's bits for the same convolution: per channel, its im2col rows (+0 in the
// padding) times its filter by the reference GEMM, then N-ACT's bias (-0 without one) and
// function, N-OUT where the results are bf16.
std::vector<num::fp32_t> matrix_unit_bits(const DepthwiseSpec& s, const std::vector<num::fp32_t>& x,
                                          const std::vector<num::fp32_t>& w,
                                          const std::vector<num::fp32_t>& bias) {
  const std::size_t taps = s.taps(), plane = std::size_t{s.out_h} * s.out_w;
  std::vector<num::fp32_t> y(std::size_t{s.batch} * s.channels * plane);
  for (std::size_t c = 0; c < s.channels; ++c) {
    num::MatrixBf16 a(std::size_t{s.batch} * plane, taps), f(taps, 1);
    for (std::size_t t = 0; t < taps; ++t) f.at(t, 0) = num::fp32_to_bf16(w[c * taps + t]);
    for (std::size_t n = 0; n < s.batch; ++n) {
      for (std::size_t q = 0; q < plane; ++q) {
        for (std::size_t t = 0; t < taps; ++t) {
          const std::int64_t i = tap_input(s, n, c, q, t);
          a.at(n * plane + q, t) = i < 0 ? num::bf16_t{0} : num::fp32_to_bf16(x[std::size_t(i)]);
        }
      }
    }
    const num::MatrixFp32 sums = num::gemm(a, f);
    for (std::size_t n = 0; n < s.batch; ++n) {
      for (std::size_t q = 0; q < plane; ++q) {
        num::fp32_t v = num::add_fp32(sums.at(n * plane + q, 0), s.bias ? bias[c] : 0x80000000u);
        v = num::act_func(static_cast<unsigned>(s.func), v, 0);
        if (s.bf16_out) v = num::bf16_to_fp32(num::fp32_to_bf16(v));
        y[(n * s.channels + c) * plane + q] = v;
      }
    }
  }
  return y;
}

TEST(Depthwise, ModelGivesTheMatrixUnitsBits) {
  oracle::OperandRng rng(test::test_seed());
  const HardwareConfig config = test::small_vector_core(256);
  struct Case {
    const char* what;
    DepthwiseSpec spec;
  };
  DepthwiseSpec relu6 = spec_of(2, 6, 5, 5, 3, 1, 1);
  relu6.bias = true;
  relu6.func = isa::Func::Relu6;
  DepthwiseSpec sigmoid_bf16 = spec_of(1, 4, 6, 6, 3, 2, 1);
  sigmoid_bf16.bias = true;
  sigmoid_bf16.func = isa::Func::Sigmoid;
  sigmoid_bf16.bf16_out = true;
  DepthwiseSpec one_row = spec_of(2, 3, 1, 9, 1, 1, 0);
  one_row.kernel_w = 3;
  one_row.pad_left = 1;
  one_row.out_w = 9;
  DepthwiseSpec uneven = spec_of(1, 5, 7, 6, 3, 2, 0);
  uneven.pad_top = 1;  // padding above, none after: the last windows end inside the image
  uneven.out_h = 4;
  uneven.out_w = 2;
  uneven.func = isa::Func::Tanh;
  DepthwiseSpec gelu = spec_of(1, 4, 4, 4, 2, 1, 0);
  gelu.func = isa::Func::Gelu;
  gelu.bias = true;
  // 20 channels (5 tiles of 4) with 3x3 filters, 51 accumulator rows of filters and bias of
  // the 128 of a bank: bands of two channel tiles, one output column a chunk.
  DepthwiseSpec tiles = spec_of(2, 20, 6, 8, 3, 1, 1);
  tiles.bias = true;
  tiles.func = isa::Func::Relu;
  const Case cases[] = {
      {"3x3 stride 1 pad 1, bias, relu6 (MobileNet's)", relu6},
      {"3x3 stride 2 pad 1, sigmoid, bf16 results", sigmoid_bf16},
      {"3x3 dilation 2 pad 2", spec_of(2, 4, 7, 7, 3, 1, 2, 2)},
      {"5x5 stride 1 pad 2", spec_of(1, 3, 6, 5, 5, 1, 2)},
      {"one spatial dimension", one_row},
      {"padding before only, tanh", uneven},
      {"2x2 unpadded, bias, gelu", gelu},
      {"an image in bands of rows", spec_of(1, 4, 24, 24, 3, 1, 1)},
      {"channel tiles in bands", tiles},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const DepthwiseSpec& s = c.spec;
    const std::vector<num::fp32_t> x =
        values(rng, std::size_t{s.batch} * s.channels * s.height * s.width, 8.0);
    const std::vector<num::fp32_t> w = values(rng, std::size_t{s.channels} * s.taps(), 1.0);
    const std::vector<num::fp32_t> bias =
        s.bias ? values(rng, s.channels, 2.0) : std::vector<num::fp32_t>{};
    const Outcome outcome = run_on_model(config, s, x, w, bias);
    const std::vector<num::fp32_t> want = reference_depthwise(s, x, w, bias);
    EXPECT_EQ(outcome.out, want);
    EXPECT_EQ(matrix_unit_bits(s, x, w, bias), want);
    if (s.func == isa::Func::None || s.func == isa::Func::Relu || s.func == isa::Func::Relu6) {
      EXPECT_EQ(oracle::depthwise_values(s, x, w, bias), want);
    }
    EXPECT_EQ(outcome.uninitialized_reads, 0u);
  }
  const Outcome rows =
      run_on_model(config, cases[7].spec, values(rng, 4 * 24 * 24, 1), values(rng, 4 * 9, 1), {});
  EXPECT_GT(rows.bands, 1u);
  const Outcome grouped = run_on_model(config, tiles, values(rng, 2 * 20 * 6 * 8, 1),
                                       values(rng, 20 * 9, 1), values(rng, 20, 1));
  EXPECT_EQ(grouped.group, 2u);
  EXPECT_EQ(grouped.chunk, 1u);
  // 3 groups of tiles of 2 images, each in bands of 2 of its 6 output rows (32 accumulator rows
  // of 41 beside the scratch).
  EXPECT_EQ(grouped.bands, 18u);
}

TEST(Depthwise, SpecialValuesAndZerosFoldAsTheMatrixUnitDoes) {
  const HardwareConfig config = test::small_vector_core(256);
  const DepthwiseSpec s = spec_of(1, 1, 2, 2, 3, 1, 1);
  const num::fp32_t nan = 0x7FC00000u, inf = 0x7F800000u, minus_zero = 0x80000000u;
  const num::fp32_t one = 0x3F800000u, minus_one = 0xBF800000u, tiny = 0x00400000u;
  // Filters of -1: the padding's products are -0; x of zeros and subnormals (read as zeros):
  // every product a zero, the sum +0 as the fold from +0 gives it. Infinities and NaN.
  const std::vector<num::fp32_t> w_negative(9, minus_one);
  const std::vector<std::vector<num::fp32_t>> images = {
      {minus_zero, 0, tiny, minus_zero}, {inf, 1, 2, 3}, {inf, 0xFF800000u, 0, 0}, {nan, 0, 0, 0}};
  for (const auto& x : images) {
    for (const auto& w : {w_negative, std::vector<num::fp32_t>(9, one)}) {
      const std::vector<num::fp32_t> y = run_on_model(config, s, x, w, {}).out;
      EXPECT_EQ(y, reference_depthwise(s, x, w, {}));
      EXPECT_EQ(y, matrix_unit_bits(s, x, w, {}));
      EXPECT_EQ(y, oracle::depthwise_values(s, x, w, {}));
    }
  }
  EXPECT_EQ(run_on_model(config, s, images[0], w_negative, {}).out,
            std::vector<num::fp32_t>(4, 0u));
  EXPECT_EQ(run_on_model(config, s, images[3], w_negative, {}).out[0], num::kCanonicalNanFp32);
}

// The int8 datapath's bits for the same convolution: per channel, the reference int8 GEMM
// (Q-MAC) of its im2col rows (the input zero point in the padding) and its filter, the bias
// folded with the input zero point (Q-ZP), then Q-REQ.
std::vector<std::int8_t> int8_product_bits(const DepthwiseSpec& s,
                                           const std::vector<std::int8_t>& x,
                                           const std::vector<std::int8_t>& w,
                                           const std::vector<std::int32_t>& bias,
                                           const std::vector<num::QuantizedMultiplier>& m) {
  const std::size_t taps = s.taps(), plane = std::size_t{s.out_h} * s.out_w;
  std::vector<std::int8_t> y(std::size_t{s.batch} * s.channels * plane);
  for (std::size_t c = 0; c < s.channels; ++c) {
    num::MatrixI8 a(std::size_t{s.batch} * plane, taps), f(taps, 1);
    for (std::size_t t = 0; t < taps; ++t) f.at(t, 0) = w[c * taps + t];
    for (std::size_t n = 0; n < s.batch; ++n) {
      for (std::size_t q = 0; q < plane; ++q) {
        for (std::size_t t = 0; t < taps; ++t) {
          const std::int64_t i = tap_input(s, n, c, q, t);
          a.at(n * plane + q, t) =
              i < 0 ? static_cast<std::int8_t>(s.input_zero_point) : x[std::size_t(i)];
        }
      }
    }
    const num::MatrixI32 sums = num::gemm_int8(a, f);
    const std::vector<std::int32_t> folded =
        num::fold_input_zero_point({s.bias ? bias[c] : 0}, s.input_zero_point, f);
    const num::RequantParams params{folded[0], m[c], s.output_zero_point, s.clamp_lo, s.clamp_hi};
    for (std::size_t r = 0; r < sums.rows; ++r) {
      const std::size_t n = r / plane, q = r % plane;
      y[(n * s.channels + c) * plane + q] = num::requantize(sums.at(r, 0), params);
    }
  }
  return y;
}

TEST(Depthwise, Int8GivesTheInt8ProductsBits) {
  oracle::OperandRng rng(test::test_seed() + 1);
  const HardwareConfig config = test::small_int8_vector_core(256);
  DepthwiseSpec relu6 = spec_of(2, 6, 5, 5, 3, 1, 1);
  relu6.int8 = true;
  relu6.bias = true;
  relu6.input_zero_point = -7;
  relu6.output_zero_point = 12;
  relu6.clamp_lo = 12;  // relu and relu6 as the clamp of the requantisation
  relu6.clamp_hi = 90;
  DepthwiseSpec strided = spec_of(1, 9, 8, 7, 3, 2, 1);
  strided.int8 = true;
  strided.input_zero_point = 100;
  strided.output_zero_point = -128;
  DepthwiseSpec tiles = spec_of(2, 20, 6, 8, 3, 1, 1);  // bands of channel tiles (as above)
  tiles.int8 = true;
  tiles.bias = true;
  tiles.input_zero_point = 3;
  DepthwiseSpec dilated = spec_of(1, 4, 7, 7, 3, 1, 2, 2);
  dilated.int8 = true;
  dilated.bias = true;
  dilated.input_zero_point = -128;
  for (const DepthwiseSpec& s : {relu6, strided, tiles, dilated}) {
    SCOPED_TRACE(::testing::Message() << s.channels << " channels, stride " << s.stride_h);
    const oracle::DepthwiseInt8Operands o = oracle::depthwise_int8_operands(rng, s);
    const std::vector<std::int8_t>& x = o.x;
    const std::vector<std::int8_t>& w = o.w;
    const std::vector<std::int32_t>& bias = o.bias;
    const std::vector<num::QuantizedMultiplier>& m = o.multipliers;
    const DepthwisePlan plan = plan_depthwise(config, s, 0x40);
    FunctionalModel model(config, 0);
    const DepthwiseInt8Run run = execute_depthwise_int8(plan, model, x, w, bias, m);
    ASSERT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                                 << model.error_detail();
    const std::vector<std::int8_t> want = reference_depthwise_int8(s, x, w, bias, m);
    EXPECT_EQ(run.out, want);
    EXPECT_EQ(int8_product_bits(s, x, w, bias, m), want);
    EXPECT_EQ(model.uninitialized_reads(), 0u);
    // Not every output clamped: the multipliers keep most inside the range.
    std::size_t inside = 0;
    for (const std::int8_t v : want) inside += v > s.clamp_lo && v < s.clamp_hi;
    EXPECT_GT(inside, want.size() / 4);
  }
}

// Batches of 1 to 6 images of 4 to 20 channels, in bf16 and int8, whose bands differ in size (a
// last band of fewer images or output rows, a last group of fewer tiles): each band's results
// wait in the unified buffer until the band after the next is loaded, and the reference's bits.
TEST(Depthwise, BandsOfEverySizeKeepTheirResults) {
  oracle::OperandRng rng(test::test_seed() + 2);
  const HardwareConfig config = test::small_int8_vector_core(256);
  std::size_t bands_seen = 0;
  for (const std::uint32_t batch : {1u, 2u, 3u, 5u, 6u}) {
    for (const std::uint32_t channels : {4u, 13u, 20u}) {
      for (const std::uint32_t size : {3u, 6u, 9u}) {
        DepthwiseSpec s = spec_of(batch, channels, size, size, 3, 1, 1);
        s.bias = true;
        SCOPED_TRACE(::testing::Message()
                     << batch << " images of " << channels << " channels, " << size << "x" << size);
        s.int8 = true;
        s.input_zero_point = 9;
        const oracle::DepthwiseInt8Operands o = oracle::depthwise_int8_operands(rng, s);
        const DepthwisePlan plan8 = plan_depthwise(config, s, 0x40);
        bands_seen += plan8.bands;
        FunctionalModel model8(config, 0);
        const DepthwiseInt8Run run8 =
            execute_depthwise_int8(plan8, model8, o.x, o.w, o.bias, o.multipliers);
        ASSERT_TRUE(run8.result.ok());
        EXPECT_EQ(run8.out, reference_depthwise_int8(s, o.x, o.w, o.bias, o.multipliers));
        s.int8 = false;
        s.input_zero_point = 0;
        s.bf16_out = true;
        s.func = isa::Func::Relu;
        const std::vector<num::fp32_t> x = values(rng, o.x.size(), 4.0);
        const std::vector<num::fp32_t> w = values(rng, o.w.size(), 1.0);
        const std::vector<num::fp32_t> bias = values(rng, channels, 1.0);
        EXPECT_EQ(run_on_model(config, s, x, w, bias).out, reference_depthwise(s, x, w, bias));
      }
    }
  }
  EXPECT_GT(bands_seen, 100u);
}

TEST(Depthwise, RefusesWhatItCannotRun) {
  const HardwareConfig config = test::small_vector_core(256);
  const DepthwiseSpec good = spec_of(1, 4, 4, 4, 3, 1, 1);
  EXPECT_NO_THROW(plan_depthwise(config, good));
  EXPECT_THROW(plan_depthwise(test::small_core(), good), std::invalid_argument);
  DepthwiseSpec bad = good;
  bad.batch = 0;
  EXPECT_THROW(plan_depthwise(config, bad), std::invalid_argument);
  bad = good;
  bad.dilation_w = 0;
  EXPECT_THROW(plan_depthwise(config, bad), std::invalid_argument);
  bad = good;
  bad.func = isa::Func::Exp;
  EXPECT_THROW(plan_depthwise(config, bad), std::invalid_argument);
  bad = good;
  bad.int8 = true;  // a core without the int8 datapath
  EXPECT_THROW(plan_depthwise(config, bad), std::invalid_argument);
  bad.input_zero_point = 128;
  EXPECT_THROW(plan_depthwise(test::small_int8_vector_core(256), bad), std::invalid_argument);
  bad.input_zero_point = 0;
  bad.func = isa::Func::Relu;  // int8's activation is the clamp
  EXPECT_THROW(plan_depthwise(test::small_int8_vector_core(256), bad), std::invalid_argument);
  // 9x9 filters of 64 channels: 1,297 rows of filters for 128 a bank.
  bad = spec_of(1, 64, 9, 9, 9, 1, 4);
  EXPECT_THROW(plan_depthwise(config, bad), std::invalid_argument);
  const DepthwisePlan plan = plan_depthwise(config, good);
  HostMemory memory;
  EXPECT_THROW(write_depthwise_inputs(plan, memory, std::vector<num::fp32_t>(63),
                                      std::vector<num::fp32_t>(36), {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
