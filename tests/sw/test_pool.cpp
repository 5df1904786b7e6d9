// Pooling on the vector unit (tpu/pool.hpp): the plan's program on the functional model gives
// reference_pool's bits, which are the host FPU oracle's (oracle::pool_values); reference_pool
// gives the largest value of each window exactly and its mean within 2^-20 of double precision's;
// windows with padding, strides larger and smaller than the kernel, global windows, one spatial
// dimension, channels that do not fill a row of the array, images that take several bands (of
// output rows, of channel tiles) and bands of several images; the program reads only rows it wrote;
// the int8 average (Q-MEAN) against the exact oracle's requantisation of each window's sum, the
// int8 maximum against the float one's; the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/eltwise.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "oracle/requant_oracle.hpp"
#include "tpu/model.hpp"
#include "tpu/pool.hpp"

namespace tpu {
namespace {

PoolSpec spec_of(bool max, std::uint32_t batch, std::uint32_t channels, std::uint32_t h,
                 std::uint32_t w, std::uint32_t k, std::uint32_t stride, std::uint32_t pad) {
  PoolSpec s;
  s.max = max;
  s.batch = batch;
  s.channels = channels;
  s.height = h;
  s.width = w;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = pad;
  s.out_h = (h + 2 * pad - k) / stride + 1;
  s.out_w = (w + 2 * pad - k) / stride + 1;
  s.count = k * k;  // padding counted
  return s;
}

// Values of a layer's activations: a few units around 0, exact in a few bits less than fp32's.
std::vector<num::fp32_t> activations(oracle::OperandRng& rng, std::size_t count) {
  std::vector<num::fp32_t> x(count);
  for (num::fp32_t& v : x) {
    v = oracle::as_bits(
        static_cast<float>(static_cast<double>(rng.uniform(0, 2'000'000)) / 1e5 - 10.0));
  }
  return x;
}

struct Outcome {
  std::vector<num::fp32_t> out;
  std::uint64_t uninitialized_reads = 0;
  std::uint32_t bands = 0;
};

Outcome run_on_model(const HardwareConfig& config, const PoolSpec& spec,
                     const std::vector<num::fp32_t>& x) {
  const PoolPlan plan = plan_pool(config, spec, 0x40);
  FunctionalModel model(config, 0);
  const PoolRun run = execute_pool(plan, model, x);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  return {run.out, model.uninitialized_reads(), plan.bands};
}

// Each window's largest value and mean in double precision from the values inside the image.
void expect_near_windows(const PoolSpec& s, const std::vector<num::fp32_t>& x,
                         const std::vector<num::fp32_t>& y) {
  std::size_t e = 0;
  for (std::uint32_t image = 0; image < s.batch * s.channels; ++image) {
    for (std::int64_t oy = 0; oy < std::int64_t{s.out_h}; ++oy) {
      for (std::int64_t ox = 0; ox < std::int64_t{s.out_w}; ++ox) {
        double best = -INFINITY, sum = 0, inside = 0;
        for (std::int64_t ky = 0; ky < std::int64_t{s.kernel_h}; ++ky) {
          for (std::int64_t kx = 0; kx < std::int64_t{s.kernel_w}; ++kx) {
            const std::int64_t iy = oy * s.stride_h - s.pad_top + ky;
            const std::int64_t ix = ox * s.stride_w - s.pad_left + kx;
            if (iy < 0 || ix < 0 || iy >= std::int64_t{s.height} || ix >= std::int64_t{s.width}) {
              continue;
            }
            const double v = oracle::as_float(
                x[(std::size_t{image} * s.height + std::size_t(iy)) * s.width + std::size_t(ix)]);
            best = std::max(best, v);
            sum += v;
            ++inside;
          }
        }
        const double got = oracle::as_float(y[e++]);
        const double mean = sum / (s.count_inside ? inside : s.count);
        if (s.max) {
          EXPECT_EQ(got, best);
        } else {
          EXPECT_NEAR(got, mean, std::ldexp(std::fabs(mean) + 1, -20));
        }
      }
    }
  }
}

TEST(Pool, ModelGivesTheReferenceBits) {
  oracle::OperandRng rng(test::test_seed());
  const HardwareConfig config = test::small_vector_core(256);
  struct Case {
    const char* what;
    PoolSpec spec;
  };
  PoolSpec global_mean = spec_of(false, 3, 5, 3, 5, 1, 1, 0);
  global_mean.kernel_h = 3;
  global_mean.kernel_w = 5;
  global_mean.out_h = global_mean.out_w = 1;
  global_mean.count = 15;
  PoolSpec global_max = global_mean;
  global_max.max = true;
  // A global average whose image takes a band for each of its three channel tiles.
  PoolSpec wide_mean = spec_of(false, 2, 10, 8, 8, 8, 1, 0);
  wide_mean.count = 64;
  // Averages of the values inside the image (padding not counted): windows of 4, 6 and 9 values
  // at the corners, the edges and inside; of several bands of output rows at stride 2.
  PoolSpec inside_mean = spec_of(false, 2, 5, 5, 6, 3, 1, 1);
  inside_mean.count_inside = true;
  PoolSpec inside_bands = spec_of(false, 2, 4, 16, 12, 3, 2, 1);
  inside_bands.count_inside = true;
  PoolSpec one_row = spec_of(true, 2, 3, 1, 9, 1, 2, 0);
  one_row.kernel_w = 3;
  one_row.pad_left = 1;
  one_row.out_w = 5;
  const Case cases[] = {
      {"max 3x3 stride 2 pad 1 (ResNet's)", spec_of(true, 2, 6, 8, 8, 3, 2, 1)},
      {"max 2x2 stride 2", spec_of(true, 3, 4, 6, 6, 2, 2, 0)},
      {"max 3x3 stride 1 pad 1", spec_of(true, 1, 3, 5, 7, 3, 1, 1)},
      {"max 2x2 stride 3", spec_of(true, 1, 2, 8, 8, 2, 3, 0)},
      {"average 2x2 stride 2", spec_of(false, 2, 5, 6, 6, 2, 2, 0)},
      {"average 3x3 stride 1 pad 1, padding counted", spec_of(false, 1, 4, 5, 5, 3, 1, 1)},
      {"global average", global_mean},
      {"global max", global_max},
      {"max along one dimension", one_row},
      {"max over an image that takes several bands", spec_of(true, 2, 4, 16, 12, 3, 2, 1)},
      {"average over an image that takes several bands", spec_of(false, 1, 8, 12, 12, 2, 2, 0)},
      {"global average a channel tile a band", wide_mean},
      {"average 3x3 stride 1 pad 1, padding not counted", inside_mean},
      {"average 3x3 stride 2 pad 1 over several bands, padding not counted", inside_bands},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const PoolSpec& s = c.spec;
    const std::vector<num::fp32_t> x =
        activations(rng, std::size_t{s.batch} * s.channels * s.height * s.width);
    const Outcome outcome = run_on_model(config, s, x);
    const std::vector<num::fp32_t> want = reference_pool(s, x);
    EXPECT_EQ(outcome.out, want);
    EXPECT_EQ(oracle::pool_values(s, x), want);
    EXPECT_EQ(outcome.uninitialized_reads, 0u);
    expect_near_windows(s, x, want);
  }
  // Bands of output rows: 6 for two images of 16 rows of 12 pixels in 126 accumulator rows;
  // bands of whole images: 2 for three images of 6 x 6 pixels, two to a band.
  EXPECT_EQ(run_on_model(config, cases[9].spec, activations(rng, 2 * 4 * 16 * 12)).bands, 6u);
  EXPECT_EQ(run_on_model(config, cases[1].spec, activations(rng, 3 * 4 * 6 * 6)).bands, 2u);
  EXPECT_EQ(run_on_model(config, wide_mean, activations(rng, 2 * 10 * 8 * 8)).bands, 6u);
}

TEST(Pool, SpecialValuesFoldAsTheContractSays) {
  const HardwareConfig config = test::small_vector_core(256);
  PoolSpec s = spec_of(true, 1, 1, 2, 2, 2, 2, 0);
  const num::fp32_t nan = 0x7FC00000u, inf = 0x7F800000u, ninf = 0xFF800000u;
  // A NaN anywhere in the window gives NaN; -inf alone stays -inf; -0 and +0 give +0.
  const std::vector<std::vector<num::fp32_t>> windows = {{0x3F800000u, nan, 0, 0},
                                                         {ninf, ninf, ninf, ninf},
                                                         {0x80000000u, 0, 0x80000000u, 0x80000000u},
                                                         {inf, 1, 2, 3}};
  for (const auto& x : windows) {
    const std::vector<num::fp32_t> y = run_on_model(config, s, x).out;
    EXPECT_EQ(y, reference_pool(s, x));
  }
  EXPECT_EQ(run_on_model(config, s, windows[0]).out[0], num::kCanonicalNanFp32);
  EXPECT_EQ(run_on_model(config, s, windows[2]).out[0], 0u);
}

// Random int8 images for an int8 pooling, its program's run on the functional model (which must
// halt and read only rows it wrote) and reference_pool_int8's values, which it must give.
struct Int8Outcome {
  std::vector<std::int8_t> x, want;
};
Int8Outcome run_int8_on_model(const HardwareConfig& config, const PoolSpec& s,
                              oracle::OperandRng& rng) {
  Int8Outcome o;
  o.x.resize(std::size_t{s.batch} * s.channels * s.height * s.width);
  for (std::int8_t& v : o.x) v = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
  const PoolPlan plan = plan_pool(config, s, 0x40);
  FunctionalModel model(config, 0);
  const PoolInt8Run run = execute_pool_int8(plan, model, o.x);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  o.want = reference_pool_int8(s, o.x);
  EXPECT_EQ(run.out, o.want);
  EXPECT_EQ(model.uninitialized_reads(), 0u);
  return o;
}

// The int8 average (Q-MEAN): the program on the functional model gives reference_pool_int8's
// bits, which are the exact oracle's Q-REQ of each window's sum moved up (the zero points' share
// in the bias), and an unclamped result lies within half a step and a sliver of the real mean.
TEST(Pool, Int8AverageGivesQMeansBits) {
  oracle::OperandRng rng(test::test_seed() + 2);
  const HardwareConfig config = test::small_int8_vector_core(256);
  PoolSpec wide_mean = spec_of(false, 2, 10, 8, 8, 8, 1, 0);  // a channel tile a band
  wide_mean.count = 64;
  struct Case {
    const char* what;
    PoolSpec spec;
    int x_zero_point, y_zero_point;
    double y_scale;
    num::QuantActivation act;
  };
  const Case cases[] = {
      {"average 2x2 stride 2", spec_of(false, 2, 5, 6, 6, 2, 2, 0), -7, 3, 0.03,
       num::QuantActivation::kNone},
      {"average 3x3 pad 1, padding counted, relu", spec_of(false, 1, 4, 5, 5, 3, 1, 1), -20, -30,
       0.03, num::QuantActivation::kRelu},
      {"global average over several bands", wide_mean, -128, -128, 0.05,
       num::QuantActivation::kNone},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PoolSpec s = c.spec;
    s.int8 = true;
    const double x_scale = 0.05, y_scale = c.y_scale;
    s.mean =
        num::quant_mean_params(x_scale, c.x_zero_point, y_scale, c.y_zero_point, s.count, c.act);
    const num::RequantParams& q = s.mean.requant;
    const auto [x, want] = run_int8_on_model(config, s, rng);
    // Each window's sum, the oracle's Q-REQ of it, and the real mean (padding counted as the
    // input zero point, as the count says).
    const std::size_t plane = std::size_t{s.height} * s.width;
    std::size_t e = 0, inside = 0;
    for (std::size_t image = 0; image < std::size_t{s.batch} * s.channels; ++image) {
      for (std::int64_t oy = 0; oy < s.out_h; ++oy) {
        for (std::int64_t ox = 0; ox < s.out_w; ++ox, ++e) {
          std::int64_t sum = 0;
          for (std::int64_t ky = 0; ky < s.kernel_h; ++ky) {
            for (std::int64_t kx = 0; kx < s.kernel_w; ++kx) {
              const std::int64_t iy = oy * s.stride_h - s.pad_top + ky;
              const std::int64_t ix = ox * s.stride_w - s.pad_left + kx;
              if (iy < 0 || ix < 0 || iy >= s.height || ix >= s.width) continue;
              sum += x[image * plane + std::size_t(iy * s.width + ix)];
            }
          }
          ASSERT_EQ(int{want[e]}, int{oracle::requantize(
                                      static_cast<std::int32_t>(sum * (1 << s.mean.up)), q.bias,
                                      q.m.multiplier, q.m.shift, q.zero_point, q.lo, q.hi)});
          const double mean =
              x_scale * (double(sum) - double(s.count) * c.x_zero_point) / s.count / y_scale;
          if (want[e] == q.lo || want[e] == q.hi) continue;
          ++inside;
          EXPECT_NEAR(want[e] - c.y_zero_point, mean, 0.5 + 1e-5);
        }
      }
    }
    EXPECT_GT(inside, want.size() / 4);
  }
}

// int8 max pooling: the program on the functional model gives reference_pool_int8's values, which
// are the float pooling's maxima of the same values (exact in fp32), padding not counted.
TEST(Pool, Int8MaxGivesTheLargestValues) {
  oracle::OperandRng rng(test::test_seed() + 4);
  const HardwareConfig config = test::small_int8_vector_core(256);
  PoolSpec global = spec_of(true, 2, 10, 8, 8, 8, 1, 0);  // a channel tile a band
  const PoolSpec cases[] = {spec_of(true, 2, 6, 8, 8, 3, 2, 1), spec_of(true, 3, 4, 6, 6, 2, 2, 0),
                            global};
  for (PoolSpec s : cases) {
    SCOPED_TRACE(::testing::Message()
                 << s.kernel_h << "x" << s.kernel_w << " over " << s.height << "x" << s.width);
    s.int8 = true;
    const auto [x, want] = run_int8_on_model(config, s, rng);
    PoolSpec as_float = s;
    as_float.int8 = false;
    std::vector<num::fp32_t> values;
    for (const std::int8_t v : x) values.push_back(oracle::as_bits(static_cast<float>(v)));
    const std::vector<num::fp32_t> maxima = reference_pool(as_float, values);
    ASSERT_EQ(maxima.size(), want.size());
    for (std::size_t e = 0; e < want.size(); ++e) {
      EXPECT_EQ(oracle::as_bits(static_cast<float>(want[e])), maxima[e]) << "output " << e;
    }
  }
}

// The caller's tensors channels last (a sequence's tokens, each a row of channels): the same
// windows over the same values as the NCHW pool of their transposition, float and int8, each
// result where NHWC puts it.
TEST(Pool, ChannelsLastPoolsTheSameWindows) {
  oracle::OperandRng rng(test::test_seed() + 5);
  const HardwareConfig config = test::small_int8_vector_core(256);
  for (PoolSpec s : {spec_of(false, 2, 6, 7, 1, 7, 1, 0), spec_of(true, 3, 5, 4, 4, 2, 2, 0)}) {
    SCOPED_TRACE(s.max ? "max 2x2" : "mean over 7 tokens");
    if (s.width == 1) {  // the tokens: a window of the whole sequence
      s.kernel_w = 1;
      s.out_h = s.out_w = 1;
      s.count = 7;
    }
    const std::size_t plane = std::size_t{s.height} * s.width;
    const std::size_t out_plane = std::size_t{s.out_h} * s.out_w;
    const std::vector<num::fp32_t> nchw = activations(rng, s.batch * s.channels * plane);
    // NHWC: value (n, c, q) at (n plane + q) C + c.
    const auto to_nhwc = [&](const std::vector<num::fp32_t>& v, std::size_t pixels) {
      std::vector<num::fp32_t> t(v.size());
      for (std::size_t n = 0; n < s.batch; ++n)
        for (std::size_t c = 0; c < s.channels; ++c)
          for (std::size_t q = 0; q < pixels; ++q)
            t[(n * pixels + q) * s.channels + c] = v[(n * s.channels + c) * pixels + q];
      return t;
    };
    PoolSpec last = s;
    last.channels_last = true;
    const Outcome outcome = run_on_model(config, last, to_nhwc(nchw, plane));
    EXPECT_EQ(outcome.out, reference_pool(last, to_nhwc(nchw, plane)));
    EXPECT_EQ(outcome.out, to_nhwc(reference_pool(s, nchw), out_plane));
    EXPECT_EQ(outcome.uninitialized_reads, 0u);
    if (!s.max) continue;
    last.int8 = true;
    std::vector<std::int8_t> x(nchw.size());
    for (std::int8_t& v : x) v = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
    const PoolPlan plan = plan_pool(config, last, 0x40);
    FunctionalModel model(config, 0);
    const PoolInt8Run run = execute_pool_int8(plan, model, x);
    ASSERT_TRUE(run.result.ok()) << model.error_detail();
    EXPECT_EQ(run.out, reference_pool_int8(last, x));
    std::vector<num::fp32_t> x_nhwc_bits, y_bits;
    for (const std::int8_t v : x) x_nhwc_bits.push_back(oracle::as_bits(static_cast<float>(v)));
    for (const std::int8_t v : run.out) y_bits.push_back(oracle::as_bits(static_cast<float>(v)));
    PoolSpec as_float = last;
    as_float.int8 = false;
    EXPECT_EQ(y_bits, reference_pool(as_float, x_nhwc_bits));
  }
}

TEST(Pool, RefusesWhatItCannotRun) {
  const HardwareConfig config = test::small_vector_core(256);
  const PoolSpec good = spec_of(true, 1, 4, 4, 4, 2, 2, 0);
  EXPECT_NO_THROW(plan_pool(config, good));
  EXPECT_THROW(plan_pool(test::small_core(), good), std::invalid_argument);  // no vector unit
  PoolSpec bad = good;
  bad.batch = 0;
  EXPECT_THROW(plan_pool(config, bad), std::invalid_argument);
  bad = good;
  bad.out_h = 3;  // the third output row's window starts past the image
  EXPECT_THROW(plan_pool(config, bad), std::invalid_argument);
  bad = good;
  bad.pad_top = 2;  // the first output row's window lies in the padding
  EXPECT_THROW(plan_pool(config, bad), std::invalid_argument);
  bad = good;
  bad.max = false;
  bad.count = 0;
  EXPECT_THROW(plan_pool(config, bad), std::invalid_argument);
  bad = good;
  bad.count_inside = true;  // a maximum counts nothing
  EXPECT_THROW(plan_pool(config, bad), std::invalid_argument);
  bad = good;
  bad.stride_w = 0;
  EXPECT_THROW(plan_pool(config, bad), std::invalid_argument);
  // An output row whose input rows do not fit a bank: 2 x 300 pixels of a channel each.
  bad = spec_of(true, 1, 1, 2, 300, 2, 2, 0);
  EXPECT_THROW(plan_pool(config, bad), std::invalid_argument);
  const PoolPlan plan = plan_pool(config, good);
  HostMemory memory;
  EXPECT_THROW(write_pool_input(plan, memory, std::vector<num::fp32_t>(63)), std::invalid_argument);
  // int8: on a core with the int8 datapath, an average's parameters in Q-REQ's ranges.
  PoolSpec mean8 = good;
  mean8.max = false;
  mean8.count = 4;
  mean8.int8 = true;
  mean8.mean = num::quant_mean_params(0.1, 0, 0.1, 0, 4, num::QuantActivation::kNone);
  const HardwareConfig int8 = test::small_int8_vector_core(256);
  EXPECT_NO_THROW(plan_pool(int8, mean8));
  EXPECT_THROW(plan_pool(config, mean8), std::invalid_argument);
  bad = mean8;
  bad.mean.requant.zero_point = 300;
  EXPECT_THROW(plan_pool(int8, bad), std::invalid_argument);
  EXPECT_THROW(write_pool_input(plan_pool(int8, mean8), memory, std::vector<num::fp32_t>(64)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
