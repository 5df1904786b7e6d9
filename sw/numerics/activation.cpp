#include "tpu/numerics/activation.hpp"

#include <cstdint>

#include "tpu/numerics/act_tables.hpp"

namespace tpu::num {
namespace {

namespace tables = act_tables;

constexpr fp32_t kSignMask = 0x80000000u;
constexpr fp32_t kSix = 0x40C00000u;
constexpr fp32_t kInfinityMagnitude = 0x7F800000u;
constexpr fp32_t kFractionMask = 0x007FFFFFu;
constexpr int kFractionBits = 23;
constexpr int kExponentBias = 127;

// Fixed-point formats (docs/numerics.md, section Activation functions). "1.24" values lie in [0, 1] (exp2, reciprocal, the
// final product's operands); "8.22" values lie in [0, 256) (|x|, the arguments of exp2, the
// Mills term).
constexpr int kUnitFractionBits = 24;
constexpr std::uint64_t kOne = std::uint64_t{1} << kUnitFractionBits;
constexpr int kArgFractionBits = 22;
constexpr int kArgBits = 30;
constexpr std::uint64_t kArgMax = (std::uint64_t{1} << kArgBits) - 1;
constexpr int kConstantFractionBits = 24;

// |x| in 8.22 is (significand << 6) >> (134 - biased exponent): for |x| in [128, 256) the
// significand's leading one lands on bit 29, the top of the 30-bit format.
constexpr int kArgShiftOrigin = 134;
// tanh uses its odd series below 2^-4 (biased exponent 123), exp2 and the reciprocal above.
constexpr int kTanhSeriesExponentLimit = 123;
// gelu(x) is x (x >= 0) or -0 (x < 0) from |x| >= 16 (biased exponent 131) on.
constexpr int kGeluIdentityExponent = 131;

// |x| of a canonical, non-NaN fp32 value as fields.
struct Magnitude {
  int biased_exponent;        // 0 for zero, 255 for infinity
  std::uint64_t significand;  // 1.23, hidden bit included; 0 for zero
};

Magnitude decode(fp32_t x) {
  const int biased = static_cast<int>((x >> kFractionBits) & 0xFF);
  const std::uint64_t significand =
      biased == 0 ? 0 : (x & kFractionMask) | (std::uint64_t{1} << kFractionBits);
  return {biased, significand};
}

// |x| in 8.22, truncated. Only for |x| < 256 (biased exponent <= 134).
std::uint64_t fixed_magnitude(const Magnitude& in) {
  const int shift = kArgShiftOrigin - in.biased_exponent;
  return shift >= kArgBits ? 0 : (in.significand << 6) >> shift;
}

// |x| * k in 8.22 for a constant k with 24 fraction bits: floor(fixed |x| * k / 2^24), saturated
// to the largest 8.22 value (also for every |x| >= 256, infinity included).
std::uint64_t scaled_argument(const Magnitude& in, std::uint64_t k) {
  if (in.biased_exponent > kArgShiftOrigin) return kArgMax;
  const std::uint64_t scaled = (fixed_magnitude(in) * k) >> kConstantFractionBits;
  return scaled > kArgMax ? kArgMax : scaled;
}

// Linear interpolation in a node table: base[index] -/+ delta[index] * fraction / 2^bits,
// truncated.
std::uint64_t interpolate_down(const std::uint32_t* base, const std::uint32_t* delta,
                               std::uint64_t index, std::uint64_t fraction, int fraction_bits) {
  return base[index] - ((delta[index] * fraction) >> fraction_bits);
}
std::uint64_t interpolate_up(const std::uint32_t* base, const std::uint32_t* delta,
                             std::uint64_t index, std::uint64_t fraction, int fraction_bits) {
  return base[index] + ((delta[index] * fraction) >> fraction_bits);
}

// 2^-w for w in 8.22, as a shift n = floor(w) and a mantissa 2^-(w - n) in 1.24, in (0.5, 1].
struct PowerOfTwo {
  int shift;
  std::uint64_t mantissa;
};

PowerOfTwo exp2_neg(std::uint64_t w) {
  constexpr int kInterpolationBits = kArgFractionBits - tables::kExp2IndexBits;
  const std::uint64_t fraction = w & ((std::uint64_t{1} << kArgFractionBits) - 1);
  return {static_cast<int>(w >> kArgFractionBits),
          interpolate_down(tables::kExp2Base, tables::kExp2Delta, fraction >> kInterpolationBits,
                           fraction & ((std::uint64_t{1} << kInterpolationBits) - 1),
                           kInterpolationBits)};
}

// mantissa * 2^-shift in 1.24, truncated: the value 2^-w itself.
std::uint64_t unscaled(const PowerOfTwo& p) {
  return p.shift > kUnitFractionBits ? 0 : p.mantissa >> p.shift;
}

// 1/(1 + v) in 1.24 for v in [0, 1] (1.24).
std::uint64_t reciprocal_one_plus(std::uint64_t v) {
  if (v == kOne) return kOne / 2;
  constexpr int kInterpolationBits = kUnitFractionBits - tables::kRecipIndexBits;
  return interpolate_down(tables::kRecipBase, tables::kRecipDelta, v >> kInterpolationBits,
                          v & ((std::uint64_t{1} << kInterpolationBits) - 1), kInterpolationBits);
}

// The Mills term M(t) in 3.22 (M < 6) for t = |x| in 8.22, t < 16. Nodes every 1/32 on [0, 4),
// 1/16 on [4, 8) and 1/8 on [8, 16); the interpolation fraction is the 17 bits below the step.
std::uint64_t mills_term(std::uint64_t t) {
  constexpr int kInterpolationBits = 17;
  std::uint64_t index, fraction;
  if (t >> 25) {  // [8, 16)
    index = 192 + ((t >> 19) & 63);
    fraction = t >> 2;
  } else if (t >> 24) {  // [4, 8)
    index = 128 + ((t >> 18) & 63);
    fraction = t >> 1;
  } else {  // [0, 4)
    index = t >> 17;
    fraction = t;
  }
  return interpolate_up(tables::kMillsBase, tables::kMillsDelta, index,
                        fraction & ((std::uint64_t{1} << kInterpolationBits) - 1),
                        kInterpolationBits);
}

// The significand of a normal fp32 or bf16 value in 1.24.
std::uint64_t unit_significand(const Magnitude& in) {
  return in.significand << (kUnitFractionBits - kFractionBits);
}

int unbiased(const Magnitude& in) {
  return in.biased_exponent - kExponentBias;
}

// sigmoid(x) = 1/(1 + u) for x >= 0 and u/(1 + u) for x < 0, with u = 2^-(|x| log2 e).
fp32_t act_sigmoid(bool negative, const Magnitude& in) {
  const PowerOfTwo u = exp2_neg(scaled_argument(in, tables::kLog2E));
  const std::uint64_t r = reciprocal_one_plus(unscaled(u));
  if (!negative) return round_product(false, r, kOne, 0);
  return round_product(false, u.mantissa, r, -u.shift);
}

// tanh(|x|) = |x| (1 - x^2/3) below 2^-4, else (1 - u)/(1 + u) with u = 2^-(2|x| log2 e); odd.
fp32_t act_tanh(bool negative, const Magnitude& in) {
  if (in.biased_exponent < kTanhSeriesExponentLimit) {
    const std::uint64_t m = scaled_argument(in, tables::kInvSqrt3);  // |x|/sqrt(3)
    const std::uint64_t series =
        kOne - ((m * m) >> (2 * kArgFractionBits - kUnitFractionBits));  // 1 - x^2/3
    return round_product(negative, unit_significand(in), series, unbiased(in));
  }
  const PowerOfTwo u = exp2_neg(scaled_argument(in, tables::kTwoLog2E));
  const std::uint64_t v = unscaled(u);
  return round_product(negative, kOne - v, reciprocal_one_plus(v), 0);
}

// gelu(x) = x (1 - Q(|x|)) for x >= 0 and -|x| Q(|x|) for x < 0, where the normal tail is
// Q(t) = 2^-(t^2 log2(e)/2 + M(t)).
fp32_t act_gelu(fp32_t x, bool negative, const Magnitude& in) {
  if (in.biased_exponent >= kGeluIdentityExponent) return negative ? kSignMask : x;
  const std::uint64_t m = scaled_argument(in, tables::kGeluScale);  // |x| sqrt(log2(e)/2)
  const PowerOfTwo q = exp2_neg(((m * m) >> kArgFractionBits) + mills_term(fixed_magnitude(in)));
  if (!negative)
    return round_product(false, unit_significand(in), kOne - unscaled(q), unbiased(in));
  return round_product(true, unit_significand(in), q.mantissa, unbiased(in) - q.shift);
}

// e^x = 2^(x log2 e). For x < 0 that is 2^-w with w = |x| log2 e. For x >= 0 it is
// 2^c * 2^-(c - w) with c = ceil(w), so that the table is read at c - w in [0, 1).
fp32_t act_exp(bool negative, const Magnitude& in) {
  const std::uint64_t w = scaled_argument(in, tables::kLog2E);
  if (negative) {
    const PowerOfTwo u = exp2_neg(w);
    return round_product(false, u.mantissa, kOne, -u.shift);
  }
  constexpr std::uint64_t kArgFractionMask = (std::uint64_t{1} << kArgFractionBits) - 1;
  const std::uint64_t below = (std::uint64_t{0} - w) & kArgFractionMask;  // c - w
  const int ceiling = static_cast<int>((w + kArgFractionMask) >> kArgFractionBits);
  return round_product(false, exp2_neg(below).mantissa, kOne, ceiling);
}

// 1/x = 2^-e' / m for x = m 2^e', m in [1, 2): the reciprocal table at v = m - 1.
fp32_t act_recip(bool negative, const Magnitude& in) {
  const std::uint64_t v = unit_significand(in) - kOne;
  return round_product(negative, reciprocal_one_plus(v), kOne, -unbiased(in));
}

// 1/sqrt(x) = 2^-q / sqrt(m 2^p) for x = m 2^(2q + p), p in {0, 1}: the table's half p at
// v = m - 1. Only for x > 0 (the other inputs are exact cases of act_func).
fp32_t act_rsqrt(const Magnitude& in) {
  constexpr int kInterpolationBits = kUnitFractionBits + 1 - tables::kRsqrtIndexBits;
  const int e = unbiased(in);
  const int q = e >= 0 ? e / 2 : -((1 - e) / 2);  // floor(e / 2)
  const std::uint64_t half = static_cast<std::uint64_t>(e - 2 * q);
  const std::uint64_t v = unit_significand(in) - kOne;
  const std::uint64_t index = (half << (tables::kRsqrtIndexBits - 1)) | (v >> kInterpolationBits);
  const std::uint64_t r =
      interpolate_down(tables::kRsqrtBase, tables::kRsqrtDelta, index,
                       v & ((std::uint64_t{1} << kInterpolationBits) - 1), kInterpolationBits);
  return round_product(false, r, kOne, -q);
}

// leaky(x) = x for x not negative (-0 included), else the IEEE product x * alpha with the flush.
fp32_t act_leaky(fp32_t x, bf16_t alpha) {
  const bool x_zero = (x & ~kSignMask) == 0;
  if ((x & kSignMask) == 0 || x_zero) return x;
  return mul_fp32(x, bf16_to_fp32(alpha));
}

}  // namespace

fp32_t act_func(unsigned func, fp32_t x, bf16_t alpha, bool vector_functions) {
  x = canon_in_fp32(x);  // N-IN
  if (x == kCanonicalNanFp32) return x;
  const bool negative = (x & kSignMask) != 0;
  if (!vector_functions && func >= static_cast<unsigned>(ActFunc::kExp)) return x;
  switch (static_cast<ActFunc>(func)) {
    case ActFunc::kRelu:
      return negative ? 0u : x;
    case ActFunc::kRelu6:
      if (negative) return 0u;
      return x >= kSix ? kSix : x;  // +inf included
    case ActFunc::kLeaky:
      return act_leaky(x, alpha);
    case ActFunc::kSigmoid:
      return act_sigmoid(negative, decode(x));
    case ActFunc::kTanh:
      return act_tanh(negative, decode(x));
    case ActFunc::kGelu:
      return act_gelu(x, negative, decode(x));
    case ActFunc::kExp:
      return act_exp(negative, decode(x));
    case ActFunc::kRecip:
      if ((x & ~kSignMask) == 0) return x | kInfinityMagnitude;          // 1/(+-0) = +-inf
      if ((x & ~kSignMask) == kInfinityMagnitude) return x & kSignMask;  // 1/(+-inf) = +-0
      return act_recip(negative, decode(x));
    case ActFunc::kRsqrt:
      if ((x & ~kSignMask) == 0) return x | kInfinityMagnitude;  // +-0 gives +-inf
      if (negative) return kCanonicalNanFp32;
      if (x == kInfinityMagnitude) return 0u;
      return act_rsqrt(decode(x));
    default:  // kNone and the illegal codes
      return x;
  }
}

}  // namespace tpu::num
