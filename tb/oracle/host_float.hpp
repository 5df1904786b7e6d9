// Independent oracle for the numerics contract (numerics.md), built on the host FPU as the
// contract prescribes: IEEE float multiply and add (round to nearest even) followed by an
// explicit flush, and Eigen 3.4's bfloat16 conversion for normal values. It shares no code
// with the soft-float reference model (sw/numerics). Needs -ffp-contract=off and no -ffast-math.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tpu::oracle {

using bf16_t = std::uint16_t;  // raw bf16 bit pattern
using fp32_t = std::uint32_t;  // raw IEEE binary32 bit pattern

constexpr fp32_t kCanonicalNanFp32 = 0x7FC00000u;
constexpr bf16_t kCanonicalNanBf16 = 0x7FC0u;

inline float as_float(fp32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline fp32_t as_bits(float f) {
  fp32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// bf16 is the top half of a binary32, so widening is exact.
inline float widen(bf16_t x) {
  return as_float(static_cast<fp32_t>(x) << 16);
}

// N-IN, classified by the host's fpclassify.
inline fp32_t canon_in_fp32(fp32_t x) {
  const float f = as_float(x);
  switch (std::fpclassify(f)) {
    case FP_NAN:
      return kCanonicalNanFp32;
    case FP_SUBNORMAL:
      return as_bits(std::copysign(0.0f, f));
    default:
      return x;
  }
}

// The explicit flush after an FPU operation: canonical NaN, magnitudes below 2^-126
// (subnormal or underflowed to zero) to a zero of the result's sign.
inline fp32_t flush_result(float r) {
  if (std::isnan(r)) return kCanonicalNanFp32;
  if (std::fabs(r) < std::numeric_limits<float>::min()) return as_bits(std::copysign(0.0f, r));
  return as_bits(r);
}

// N-MUL. Any product below 2^128 has at most 16 significant bits and is exact in float; one
// >= 2^128 rounds to infinity. Below 2^-126 the FPU may round, but never up to 2^-126: a product
// in [2^-127, 2^-126) is exact as a subnormal (its lowest bit weighs at least 2^-142) and a
// smaller one cannot round past 2^-127. So the flush sees every tiny product as tiny, and an
// underflowed zero has the IEEE sign sa^sb.
inline fp32_t mul_bf16(bf16_t a, bf16_t b) {
  const float fa = as_float(canon_in_fp32(static_cast<fp32_t>(a) << 16));
  const float fb = as_float(canon_in_fp32(static_cast<fp32_t>(b) << 16));
  return flush_result(fa * fb);
}

// N-ADD. After N-IN both operands are multiples of 2^-149, so a sum below 2^-126 is exact and
// the flush decision cannot depend on rounding. IEEE gives the N-ADD zero signs directly.
inline fp32_t add_fp32(fp32_t x, fp32_t y) {
  return flush_result(as_float(canon_in_fp32(x)) + as_float(canon_in_fp32(y)));
}

// N-VEC's mul: the IEEE product (the FPU rounds to nearest even, on the subnormal grid below
// 2^-126), then the flush.
inline fp32_t mul_fp32(fp32_t x, fp32_t y) {
  return flush_result(as_float(canon_in_fp32(x)) * as_float(canon_in_fp32(y)));
}

// N-VEC's max and min by the host's comparisons; zeros that compare equal resolve by sign.
inline fp32_t max_min_fp32(fp32_t x, fp32_t y, bool want_max) {
  const float fx = as_float(canon_in_fp32(x));
  const float fy = as_float(canon_in_fp32(y));
  if (std::isnan(fx) || std::isnan(fy)) return kCanonicalNanFp32;
  if (fx == 0.0f && fy == 0.0f) {
    const bool negative =
        want_max ? std::signbit(fx) && std::signbit(fy) : std::signbit(fx) || std::signbit(fy);
    return as_bits(negative ? -0.0f : 0.0f);
  }
  return as_bits((fx > fy) == want_max ? fx : fy);
}

// Eigen's round-to-nearest-even conversion. Only for normal finite inputs: Eigen rounds the
// bits of a subnormal instead of flushing it, and keeps the sign of a NaN; callers with other
// inputs use fp32_to_bf16.
inline bf16_t round_bf16(fp32_t normal) {
  return Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(as_float(normal)));
}

// N-OUT: special values explicitly, normal values through Eigen (a carry may reach infinity).
inline bf16_t fp32_to_bf16(fp32_t x) {
  const float f = as_float(x);
  const bf16_t sign = std::signbit(f) ? bf16_t{0x8000} : bf16_t{0};
  switch (std::fpclassify(f)) {
    case FP_NAN:
      return kCanonicalNanBf16;
    case FP_INFINITE:
      return static_cast<bf16_t>(sign | 0x7F80u);
    case FP_ZERO:
    case FP_SUBNORMAL:
      return sign;
    default:
      return round_bf16(x);
  }
}

}  // namespace tpu::oracle
