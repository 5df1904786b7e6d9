// One lane of ELTWISE (N-VEC) as the host computes it, the independent expectation of the
// vector unit's tests and of make sim: fp32 by the host FPU's oracle (oracle/host_float.hpp),
// int32 by plain integer arithmetic; and the elementwise operators built on it, pooling and the
// depthwise convolution.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/depthwise.hpp"
#include "tpu/elementwise.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/numerics/quant.hpp"
#include "tpu/pool.hpp"

namespace tpu::oracle {

// The host's conversions: an int32 to the nearest float (the FPU's rounding, nearest even), and
// a float to the nearest integer, ties to even (std::nearbyint), saturated; NaN 0 and a
// subnormal its zero (N-IN).
inline fp32_t from_int32(std::int32_t x) {
  return as_bits(static_cast<float>(x));
}
inline std::int32_t to_int32(fp32_t x) {
  const float f = as_float(x);
  if (std::isnan(f) || std::fpclassify(f) == FP_SUBNORMAL) return 0;
  const double r = std::nearbyint(static_cast<double>(f));
  if (r >= 2147483647.0) return INT32_MAX;
  if (r <= -2147483648.0) return INT32_MIN;
  return static_cast<std::int32_t>(r);
}

inline fp32_t eltwise_lane(isa::VectorOp op, bool int32, fp32_t a, fp32_t b) {
  const auto sa = static_cast<std::int32_t>(a), sb = static_cast<std::int32_t>(b);
  switch (op) {
    case isa::VectorOp::Add:
      return int32 ? a + b : add_fp32(a, b);
    case isa::VectorOp::Sub:
      return int32 ? a - b : add_fp32(a, b ^ 0x80000000u);
    case isa::VectorOp::Mul:
      return int32 ? a * b : mul_fp32(a, b);
    case isa::VectorOp::Max:
      return int32 ? (sa > sb ? a : b) : max_min_fp32(a, b, true);
    case isa::VectorOp::Min:
      return int32 ? (sa < sb ? a : b) : max_min_fp32(a, b, false);
    case isa::VectorOp::Quant:
      return static_cast<fp32_t>(to_int32(mul_fp32(int32 ? from_int32(sa) : a, b)));
    case isa::VectorOp::Dequant:
      return mul_fp32(int32 ? from_int32(sa) : a, b);
  }
  return 0;
}

// The result rows of one ELTWISE over `rows` rows of d lanes: row r of A against row r of B
// (row 0 with `broadcast`), lane by lane, or with `lanes` the fold along row r of A from B's
// lane 0, in every lane.
inline std::vector<fp32_t> eltwise_rows(isa::VectorOp op, bool int32, bool lanes, bool broadcast,
                                        const std::vector<fp32_t>& a, const std::vector<fp32_t>& b,
                                        std::size_t rows, std::size_t d) {
  std::vector<fp32_t> out;
  out.reserve(rows * d);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t b_row = broadcast ? 0 : r;
    fp32_t fold = b[b_row * d];
    for (std::size_t j = 0; j < d; ++j) fold = eltwise_lane(op, int32, fold, a[r * d + j]);
    for (std::size_t j = 0; j < d; ++j) {
      out.push_back(lanes ? fold : eltwise_lane(op, int32, a[r * d + j], b[b_row * d + j]));
    }
  }
  return out;
}

// An elementwise operator's result (tpu/elementwise.hpp) value by value: a's value n mod its
// period against b's by eltwise_lane (int32 lanes with spec.int32), then the function (N-ACT)
// where there is one.
inline std::vector<fp32_t> elementwise_values(const ElementwiseSpec& spec,
                                              const std::vector<fp32_t>& a,
                                              const std::vector<fp32_t>& b) {
  std::vector<fp32_t> y;
  y.reserve(spec.size);
  for (std::uint64_t n = 0; n < spec.size; ++n) {
    fp32_t v = a[n % a.size()];
    if (spec.op) v = eltwise_lane(*spec.op, spec.int32, v, b[n % b.size()]);
    if (spec.func != isa::Func::None) {
      v = num::act_func(static_cast<unsigned>(spec.func), v, spec.alpha);
    }
    y.push_back(v);
  }
  return y;
}

// A pooling's result (tpu/pool.hpp, NCHW) window by window: the values inside the image folded
// from -inf by max, or from -0 by add in (ky, kx) order, a sum then multiplied by the IEEE
// reciprocal of the count (with count_inside, of the values the window folded).
inline std::vector<fp32_t> pool_values(const PoolSpec& s, const std::vector<fp32_t>& x) {
  std::vector<fp32_t> y;
  for (std::uint64_t image = 0; image < std::uint64_t{s.batch} * s.channels; ++image) {
    for (std::int64_t oy = 0; oy < std::int64_t{s.out_h}; ++oy) {
      for (std::int64_t ox = 0; ox < std::int64_t{s.out_w}; ++ox) {
        fp32_t fold = s.max ? 0xFF800000u : 0x80000000u;
        std::uint32_t inside = 0;  // the window's values inside the image
        for (std::int64_t ky = 0; ky < std::int64_t{s.kernel_h}; ++ky) {
          for (std::int64_t kx = 0; kx < std::int64_t{s.kernel_w}; ++kx) {
            const std::int64_t iy = oy * s.stride_h - s.pad_top + ky;
            const std::int64_t ix = ox * s.stride_w - s.pad_left + kx;
            if (iy < 0 || ix < 0 || iy >= std::int64_t{s.height} || ix >= std::int64_t{s.width}) {
              continue;
            }
            const fp32_t v =
                x[(image * s.height + std::uint64_t(iy)) * s.width + std::uint64_t(ix)];
            fold = eltwise_lane(s.max ? isa::VectorOp::Max : isa::VectorOp::Add, false, v, fold);
            ++inside;
          }
        }
        const float r = 1.0f / static_cast<float>(s.count_inside ? inside : s.count);
        y.push_back(s.max ? fold : mul_fp32(fold, as_bits(r)));
      }
    }
  }
  return y;
}

// A depthwise convolution's result (tpu/depthwise.hpp, NCHW) as the matrix unit's product of its
// im2col rows gives it, output by output: from +0, N-MAC of each tap's bf16 value (+0 in the
// padding) and bf16 filter in (ky, kx) order, then the bias (or -0) by N-ADD and relu or relu6
// (the functions this oracle has: maximum with +0, minimum with 6), bf16 where the results are.
inline std::vector<fp32_t> depthwise_values(const DepthwiseSpec& s, const std::vector<fp32_t>& x,
                                            const std::vector<fp32_t>& w,
                                            const std::vector<fp32_t>& bias) {
  std::vector<fp32_t> y;
  const std::uint64_t taps = s.taps();
  for (std::uint64_t image = 0; image < std::uint64_t{s.batch} * s.channels; ++image) {
    const std::uint64_t c = image % s.channels;
    for (std::int64_t oy = 0; oy < std::int64_t{s.out_h}; ++oy) {
      for (std::int64_t ox = 0; ox < std::int64_t{s.out_w}; ++ox) {
        fp32_t sum = 0;
        for (std::int64_t ky = 0; ky < std::int64_t{s.kernel_h}; ++ky) {
          for (std::int64_t kx = 0; kx < std::int64_t{s.kernel_w}; ++kx) {
            const std::int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
            const std::int64_t ix = ox * s.stride_w - s.pad_left + kx * s.dilation_w;
            const bool inside =
                iy >= 0 && ix >= 0 && iy < std::int64_t{s.height} && ix < std::int64_t{s.width};
            const bf16_t a =
                inside
                    ? fp32_to_bf16(
                          x[(image * s.height + std::uint64_t(iy)) * s.width + std::uint64_t(ix)])
                    : bf16_t{0};
            const bf16_t f = fp32_to_bf16(w[c * taps + std::uint64_t(ky * s.kernel_w + kx)]);
            sum = add_fp32(sum, mul_bf16(a, f));
          }
        }
        sum = add_fp32(sum, s.bias ? bias[c] : 0x80000000u);
        if (s.func == isa::Func::Relu || s.func == isa::Func::Relu6) {
          sum = max_min_fp32(sum, 0, true);
        }
        if (s.func == isa::Func::Relu6) sum = max_min_fp32(sum, as_bits(6.0f), false);
        y.push_back(s.bf16_out ? fp32_t{fp32_to_bf16(sum)} << 16 : sum);
      }
    }
  }
  return y;
}

// Random operands of an int8 depthwise convolution (tpu/depthwise.hpp): int8 images and filters,
// biases in [-10000, 10000] and multipliers of 2^-9 times [1, 2), which leave most outputs inside
// the int8 range.
struct DepthwiseInt8Operands {
  std::vector<std::int8_t> x, w;
  std::vector<std::int32_t> bias;
  std::vector<num::QuantizedMultiplier> multipliers;
};
inline DepthwiseInt8Operands depthwise_int8_operands(OperandRng& rng, const DepthwiseSpec& s) {
  const auto int8 = [&] {
    return static_cast<std::int8_t>(static_cast<int>(rng.uniform(0, 255)) - 128);
  };
  DepthwiseInt8Operands o;
  o.x.resize(std::size_t{s.batch} * s.channels * s.height * s.width);
  o.w.resize(std::size_t{s.channels} * s.taps());
  for (std::int8_t& v : o.x) v = int8();
  for (std::int8_t& v : o.w) v = int8();
  for (std::uint32_t c = 0; c < s.channels; ++c) {
    if (s.bias) o.bias.push_back(static_cast<std::int32_t>(rng.uniform(0, 20000)) - 10000);
    o.multipliers.push_back(num::quantize_multiplier(
        std::ldexp(1.0 + static_cast<double>(rng.uniform(0, 999)) / 1000, -9)));
  }
  return o;
}

}  // namespace tpu::oracle
