// Independent oracles for the activation functions (N-ACT, docs/numerics.md, section Activation functions), on the host FPU.
// relu, relu6 and leaky relu are exact: IEEE float operations with the explicit flush, like the
// rest of tb/oracle. Sigmoid, tanh and gelu are computed in double precision (std::exp,
// std::tanh, std::erfc, a few units of 2^-53 off), which is far closer than the approximations
// being measured. Shares no code with the reference model (sw/numerics/activation.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"

namespace tpu::oracle {

inline fp32_t relu(fp32_t x) {
  const float f = as_float(canon_in_fp32(x));
  if (std::isnan(f)) return kCanonicalNanFp32;
  return f > 0.0f ? as_bits(f) : as_bits(0.0f);  // -0 and -inf give +0
}

inline fp32_t relu6(fp32_t x) {
  const float f = as_float(canon_in_fp32(x));
  if (std::isnan(f)) return kCanonicalNanFp32;
  if (!(f > 0.0f)) return as_bits(0.0f);
  return as_bits(f < 6.0f ? f : 6.0f);
}

// x for x >= 0 (-0 included), else the IEEE float product x * alpha with the flush.
inline fp32_t leaky_relu(fp32_t x, bf16_t alpha) {
  const float f = as_float(canon_in_fp32(x));
  if (std::isnan(f)) return kCanonicalNanFp32;
  if (f >= 0.0f) return as_bits(f);
  return flush_result(f * as_float(canon_in_fp32(static_cast<fp32_t>(alpha) << 16)));
}

// The functions of x after N-IN, in double precision. x must not be NaN.
inline double sigmoid_double(fp32_t x) {
  return 1.0 / (1.0 + std::exp(-static_cast<double>(as_float(canon_in_fp32(x)))));
}

inline double tanh_double(fp32_t x) {
  return std::tanh(static_cast<double>(as_float(canon_in_fp32(x))));
}

// x Phi(x) = x erfc(-x/sqrt(2)) / 2; gelu(-inf) = -0 (the formula would give -inf * 0).
inline double gelu_double(fp32_t x) {
  const double d = as_float(canon_in_fp32(x));
  if (std::isinf(d) && d < 0) return -0.0;
  return d * std::erfc(-d / std::sqrt(2.0)) / 2.0;
}

inline double exp_double(fp32_t x) {
  return std::exp(static_cast<double>(as_float(canon_in_fp32(x))));
}

// 1/x; a subnormal x reads as a zero of its sign (N-IN), so 1/x is an infinity of that sign.
inline double recip_double(fp32_t x) {
  return 1.0 / static_cast<double>(as_float(canon_in_fp32(x)));
}

// 1/sqrt(x): +-inf at +-0 (IEEE's rSqrt), NaN below zero.
inline double rsqrt_double(fp32_t x) {
  const double d = as_float(canon_in_fp32(x));
  if (d == 0.0) return 1.0 / d;
  return 1.0 / std::sqrt(d);
}

// A real value rounded by N-OUT's rules: to nearest even at 8 significant bits with an
// unbounded exponent, then magnitudes below 2^-126 to a zero of the value's sign; 2^128 and
// beyond are infinity.
inline bf16_t round_real_to_bf16(double v) {
  const bf16_t sign = std::signbit(v) ? bf16_t{0x8000} : bf16_t{0};
  if (v == 0.0) return sign;
  if (std::isinf(v)) return static_cast<bf16_t>(sign | 0x7F80u);
  int exponent;
  const double fraction = std::frexp(std::fabs(v), &exponent);  // in [0.5, 1)
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(fraction, 8)), exponent - 8);
  if (rounded < std::ldexp(1.0, -126)) return sign;
  return static_cast<bf16_t>(sign | (as_bits(static_cast<float>(rounded)) >> 16));
}

// Distance in units in the last place between two bf16 results of N-OUT (never subnormal):
// the number of representable values from one to the other, with +0 and -0 the same point and
// +-2^-126 one step from zero. Neither may be NaN.
inline int bf16_ulp_distance(bf16_t a, bf16_t b) {
  const auto position = [](bf16_t v) {
    const int magnitude = v & 0x7FFF;
    const int steps = magnitude == 0 ? 0 : magnitude - 0x7F;  // 0x0080 (2^-126) is step 1
    return (v & 0x8000) ? -steps : steps;
  };
  return std::abs(position(a) - position(b));
}

// Random inputs for the activation functions: half OperandRng::fp32()'s mix (special values,
// boundary exponents, uniformly random bits: mostly far outside [2^-27, 512), where sigmoid,
// tanh and gelu saturate or are linear), half with random sign and fraction and a biased
// exponent in 100..135, where they are not.
inline fp32_t activation_input(OperandRng& rng) {
  if (rng.uniform(0, 1) == 0) return rng.fp32();
  return static_cast<fp32_t>((rng.uniform(0, 1) << 31) | (rng.uniform(100, 135) << 23) |
                             rng.uniform(0, 0x7FFFFF));
}

}  // namespace tpu::oracle
