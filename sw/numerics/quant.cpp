#include "tpu/numerics/quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

namespace tpu::num {
namespace {

constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();

std::string shape(std::size_t rows, std::size_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

// Every "wrap" of the contract is done on std::uint32_t, where overflow is defined modulo 2^32;
// the signed operations would be undefined behaviour. This turns the 32 bits back into the int32
// they mean in two's complement, without the conversion that is implementation-defined before
// C++20.
std::int32_t from_bits(std::uint32_t u) {
  return u < 0x80000000u ? static_cast<std::int32_t>(u)
                         : static_cast<std::int32_t>(u - 0x80000000u) + kInt32Min;
}

// The conversion to unsigned is defined modulo 2^32.
std::uint32_t to_bits(std::int32_t x) {
  return static_cast<std::uint32_t>(x);
}

// x >> e as the contract means it (arithmetic: floor(x / 2^e)), written so that it does not lean
// on the implementation-defined right shift of a negative value before C++20: for x < 0,
// -x - 1 >= 0 and floor(x / 2^e) = -((-x - 1) >> e) - 1.
std::int32_t arithmetic_shift_right(std::int32_t x, int e) {
  if (x >= 0) return x >> e;
  return static_cast<std::int32_t>(-((-static_cast<std::int64_t>(x) - 1) >> e) - 1);
}

void check_zero_point(int zero_point, const char* who) {
  if (zero_point < -128 || zero_point > 127) {
    throw std::invalid_argument(std::string(who) + ": zero point " + std::to_string(zero_point) +
                                " is outside [-128, 127]");
  }
}

void check_multiplier(QuantizedMultiplier m, const char* who) {
  if (!valid_quantized_multiplier(m)) {
    throw std::invalid_argument(std::string(who) + ": multiplier " + std::to_string(m.multiplier) +
                                " with shift " + std::to_string(m.shift) +
                                " is not valid (M = 0 or in [2^30, 2^31 - 1], shift in [-31, 30])");
  }
}

}  // namespace

MatrixI32 gemm_int8(const MatrixI8& a, const MatrixI8& w, const MatrixI32* c) {
  if (a.cols != w.rows) {
    throw std::invalid_argument("gemm_int8: a is " + shape(a.rows, a.cols) + " but w is " +
                                shape(w.rows, w.cols) + "; a.cols must equal w.rows");
  }
  if (c != nullptr && (c->rows != a.rows || c->cols != w.cols)) {
    throw std::invalid_argument("gemm_int8: c is " + shape(c->rows, c->cols) +
                                " but the output is " + shape(a.rows, w.cols));
  }
  MatrixI32 out(a.rows, w.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < w.cols; ++j) {
      // Q-MAC: the product of two int8 is exact in int; the sum wraps, so it runs modulo 2^32.
      std::uint32_t sum = c != nullptr ? to_bits(c->at(i, j)) : 0u;
      for (std::size_t k = 0; k < a.cols; ++k) {
        sum += to_bits(static_cast<std::int32_t>(a.at(i, k)) * w.at(k, j));
      }
      out.at(i, j) = from_bits(sum);
    }
  }
  return out;
}

std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  // Q-REQ, SRDHM. INT32_MIN * INT32_MIN = 2^62 is the only product whose doubled high half,
  // 2^31, does not fit; every other |a * b| <= 2^62 - 2^31 and the result fits.
  if (a == kInt32Min && b == kInt32Min) return kInt32Max;
  const std::int64_t ab = static_cast<std::int64_t>(a) * b;
  const std::int64_t nudge = ab >= 0 ? (std::int64_t{1} << 30) : (1 - (std::int64_t{1} << 30));
  // C++ integer division truncates toward zero, as the contract's division does.
  return static_cast<std::int32_t>((ab + nudge) / (std::int64_t{1} << 31));
}

std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) {
  if (exponent < 0 || exponent > 31) {
    throw std::invalid_argument("rounding_divide_by_pot: exponent " + std::to_string(exponent) +
                                " is outside [0, 31]");
  }
  // Q-REQ, RDBP: the remainder x & (2^e - 1) is taken on the bits (x's two's complement), and
  // the threshold one higher for negative x, which turns a tie into a round away from zero.
  const std::uint32_t mask = (std::uint32_t{1} << exponent) - 1u;
  const std::uint32_t remainder = to_bits(x) & mask;
  const std::uint32_t threshold = (mask >> 1) + (x < 0 ? 1u : 0u);
  // The increment cannot overflow: it needs remainder > 0, so exponent >= 1 and x >> e < 2^30.
  return arithmetic_shift_right(x, exponent) + (remainder > threshold ? 1 : 0);
}

bool valid_quantized_multiplier(QuantizedMultiplier m) {
  const bool multiplier_ok = m.multiplier == 0 || m.multiplier >= (std::int32_t{1} << 30);
  return multiplier_ok && m.shift >= -31 && m.shift <= 30;
}

std::int32_t multiply_by_quantized_multiplier(std::int32_t x, QuantizedMultiplier m) {
  check_multiplier(m, "multiply_by_quantized_multiplier");
  // Q-REQ: a positive shift multiplies before the high multiply, wrapping; a negative one
  // divides after it with its own rounding (the double rounding of TFLite's default build).
  const int left = std::max(m.shift, 0);
  const int right = std::max(-m.shift, 0);
  const std::int32_t shifted = from_bits(to_bits(x) << left);
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, m.multiplier),
                                right);
}

std::int8_t requantize(std::int32_t sum, const RequantParams& p) {
  check_multiplier(p.m, "requantize");
  check_zero_point(p.zero_point, "requantize");
  if (p.lo < -128 || p.hi > 127 || p.lo > p.hi) {
    throw std::invalid_argument("requantize: clamp [" + std::to_string(p.lo) + ", " +
                                std::to_string(p.hi) + "] is not within [-128, 127]");
  }
  // Q-REQ: the bias is added with a wrap, like any other term of the int32 sum.
  const std::int32_t x = from_bits(to_bits(sum) + to_bits(p.bias));
  const std::int32_t y = multiply_by_quantized_multiplier(x, p.m);
  // y + zo in 64 bits: y can be within 127 of either int32 limit (a left shift that wraps to
  // INT32_MIN, say), and a wrapped sum would land on the wrong side of the clamp.
  const std::int64_t out = static_cast<std::int64_t>(y) + p.zero_point;
  return static_cast<std::int8_t>(std::clamp<std::int64_t>(out, p.lo, p.hi));
}

QuantizedMultiplier quantize_multiplier(double real_multiplier) {
  if (!std::isfinite(real_multiplier) || real_multiplier < 0.0) {
    throw std::invalid_argument("quantize_multiplier: " + std::to_string(real_multiplier) +
                                " is not a finite value >= 0");
  }
  if (real_multiplier == 0.0) return {0, 0};  // Q-SCALE: r = 0 (either zero) gives M = 0, s = 0
  int e = 0;
  const double f = std::frexp(real_multiplier, &e);  // f in [0.5, 1), subnormal r included
  // f * 2^31 only moves the exponent, so it is exact and std::round (half away from zero) is
  // the one rounding. The result is in [2^30, 2^31].
  std::int64_t q = static_cast<std::int64_t>(std::round(f * 2147483648.0));
  if (q == (std::int64_t{1} << 31)) {  // f rounded up to 1: renormalise
    q = std::int64_t{1} << 30;
    ++e;
  }
  if (e < -31) {  // below the smallest shift: the product rounds to the zero point anyway
    q = 0;
    e = 0;
  }
  if (e > 30) {
    throw std::invalid_argument("quantize_multiplier: " + std::to_string(real_multiplier) +
                                " needs shift " + std::to_string(e) + " > 30");
  }
  return {static_cast<std::int32_t>(q), e};
}

std::vector<std::int32_t> fold_input_zero_point(const std::vector<std::int32_t>& bias,
                                                int input_zero_point, const MatrixI8& w) {
  if (bias.size() != w.cols) {
    throw std::invalid_argument("fold_input_zero_point: " + std::to_string(bias.size()) +
                                " biases for w of " + shape(w.rows, w.cols));
  }
  // Q-ZP: modulo 2^32 the fold is exact, so all of it runs on std::uint32_t.
  std::vector<std::int32_t> folded(bias.size());
  for (std::size_t j = 0; j < w.cols; ++j) {
    std::uint32_t column_sum = 0;
    for (std::size_t k = 0; k < w.rows; ++k) column_sum += to_bits(w.at(k, j));
    folded[j] = from_bits(to_bits(bias[j]) - to_bits(input_zero_point) * column_sum);
  }
  return folded;
}

int relu6_quantized_six(double output_scale) {
  if (!std::isfinite(output_scale) || !(output_scale > 0.0)) {
    throw std::invalid_argument("relu6_quantized_six: output scale " +
                                std::to_string(output_scale) + " is not positive and finite");
  }
  const double six = 6.0 / output_scale;
  // Anything from 255 up already leaves hi at 127; the saturation only keeps the conversion
  // defined for absurdly small scales.
  if (!(six < 2147483647.0)) return std::numeric_limits<int>::max();
  return static_cast<int>(std::round(six));  // half away from zero, as Q-REQ says
}

std::pair<int, int> clamp_bounds(QuantActivation act, int zero_point, double output_scale) {
  check_zero_point(zero_point, "clamp_bounds");
  switch (act) {
    case QuantActivation::kNone:
      return {-128, 127};
    case QuantActivation::kRelu:
      return {std::max(zero_point, -128), 127};
    case QuantActivation::kRelu6: {
      // In 64 bits: q6 may be saturated at INT_MAX.
      const std::int64_t hi =
          std::min<std::int64_t>(127, std::int64_t{zero_point} + relu6_quantized_six(output_scale));
      return {std::max(zero_point, -128), static_cast<int>(hi)};
    }
  }
  throw std::invalid_argument("clamp_bounds: unknown activation");
}

QuantAddParams quant_add_params(double a_scale, int a_zero_point, double b_scale, int b_zero_point,
                                double y_scale, int y_zero_point, QuantActivation act) {
  for (const double scale : {a_scale, b_scale, y_scale}) {
    if (!(scale > 0) || !std::isfinite(scale)) {
      throw std::invalid_argument("quant_add_params: a scale that is not positive and finite");
    }
  }
  for (const int zero_point : {a_zero_point, b_zero_point, y_zero_point}) {
    check_zero_point(zero_point, "quant_add_params");
  }
  QuantAddParams p;
  const double twice_max_scale = 2 * std::max(a_scale, b_scale);
  p.a_zero_point = a_zero_point;
  p.b_zero_point = b_zero_point;
  p.a = quantize_multiplier(a_scale / twice_max_scale);
  p.b = quantize_multiplier(b_scale / twice_max_scale);
  p.out = quantize_multiplier(twice_max_scale / (std::ldexp(1.0, kAddLeftShift) * y_scale));
  p.zero_point = y_zero_point;
  std::tie(p.lo, p.hi) = clamp_bounds(act, y_zero_point, y_scale);
  return p;
}

QuantMeanParams quant_mean_params(double x_scale, int x_zero_point, double y_scale,
                                  int y_zero_point, std::uint64_t count, QuantActivation act) {
  if (count == 0 || count > (1u << 22)) {
    throw std::invalid_argument("quant_mean_params: a mean of " + std::to_string(count) +
                                " values (1 to 2^22)");
  }
  for (const double scale : {x_scale, y_scale}) {
    if (!(scale > 0) || !std::isfinite(scale)) {
      throw std::invalid_argument("quant_mean_params: a scale that is not positive and finite");
    }
  }
  check_zero_point(x_zero_point, "quant_mean_params");
  QuantMeanParams p;
  const double real = x_scale / (static_cast<double>(count) * y_scale);
  // Not so far up that the multiplier falls below Q-SCALE's smallest, 2^-31.
  while (256 * count << (p.up + 1) <= (std::uint64_t{1} << 30) &&
         std::ldexp(real, -(p.up + 1)) >= std::ldexp(1.0, -31)) {
    ++p.up;
  }
  // |count z 2^up| <= 2^29: exact in int32.
  p.requant.bias = -static_cast<std::int32_t>(count) * x_zero_point * (1 << p.up);
  p.requant.m = quantize_multiplier(std::ldexp(real, -p.up));
  p.requant.zero_point = y_zero_point;
  std::tie(p.requant.lo, p.requant.hi) = clamp_bounds(act, y_zero_point, y_scale);
  return p;
}

std::int8_t mean_int8(std::int32_t sum, const QuantMeanParams& p) {
  if (p.up < 0 || p.up > 30) {
    throw std::invalid_argument("mean_int8: a shift of " + std::to_string(p.up) + " (0 to 30)");
  }
  return requantize(from_bits(to_bits(sum) << p.up), p.requant);
}

QuantizeParams quantize_params(float scale, int zero_point) {
  check_zero_point(zero_point, "quantize_params");
  const float reciprocal = 1.0f / scale;
  if (!(scale > 0) || !std::isnormal(reciprocal)) {
    throw std::invalid_argument("quantize_params: a scale of " + std::to_string(scale) +
                                ", not positive with a normal fp32 reciprocal");
  }
  QuantizeParams p;
  p.reciprocal = float_to_fp32(reciprocal);
  p.zero_point = zero_point;
  return p;
}

std::int8_t quantize_int8(fp32_t x, const QuantizeParams& p) {
  check_zero_point(p.zero_point, "quantize_int8");
  const std::int64_t q = std::int64_t{fp32_to_int32(mul_fp32(x, p.reciprocal))} + p.zero_point;
  return static_cast<std::int8_t>(std::clamp<std::int64_t>(q, p.lo, p.hi));
}

fp32_t dequantize_int8(std::int8_t q, int zero_point, fp32_t scale) {
  check_zero_point(zero_point, "dequantize_int8");
  return mul_fp32(int32_to_fp32(q - zero_point), scale);
}

std::int8_t add_int8(std::int8_t a, std::int8_t b, const QuantAddParams& p) {
  check_zero_point(p.a_zero_point, "add_int8");
  check_zero_point(p.b_zero_point, "add_int8");
  // (q - z) 2^20 is at most 255 2^20 in magnitude: no wrap.
  const auto rescaled = [](std::int8_t q, int zero_point, QuantizedMultiplier m) {
    return multiply_by_quantized_multiplier((q - zero_point) * (1 << kAddLeftShift), m);
  };
  const std::int32_t sum = rescaled(a, p.a_zero_point, p.a) + rescaled(b, p.b_zero_point, p.b);
  return requantize(sum, {0, p.out, p.zero_point, p.lo, p.hi});
}

}  // namespace tpu::num
