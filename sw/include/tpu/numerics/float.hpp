// Reference model of the datapath arithmetic defined by the numerics contract (numerics.md,
// rules N-*). A soft-float on raw bit patterns: it never uses host floating point, so the host
// FPU can serve as an independent oracle (tb/oracle/host_float.hpp, in the tests).
#pragma once

#include <cstdint>

namespace tpu::num {

using bf16_t = std::uint16_t;  // raw bf16 bit pattern
using fp32_t = std::uint32_t;  // raw IEEE binary32 bit pattern

constexpr fp32_t kCanonicalNanFp32 = 0x7FC00000u;
constexpr bf16_t kCanonicalNanBf16 = 0x7FC0u;

// N-IN: a subnormal becomes the zero of the same sign, any NaN becomes the canonical NaN. The
// fp32 form is inline, in selects on the bits alone, so that the host's fast paths (the
// functional model's lanes, tpu/array_fold.hpp) take it as it is and vectorise it.
bf16_t canon_in_bf16(bf16_t x);
constexpr fp32_t canon_in_fp32(fp32_t x) {
  return (x & 0x7FFFFFFFu) > 0x7F800000u ? kCanonicalNanFp32
         : (x & 0x7F800000u) == 0        ? x & 0x80000000u
                                         : x;
}

// N-IN + N-MUL: exact product of two bf16 values as fp32; a magnitude >= 2^128 becomes
// infinity, a magnitude < 2^-126 becomes zero with sign sa^sb.
fp32_t mul_bf16(bf16_t a, bf16_t b);

// N-IN + N-ADD: binary32 addition, round to nearest even, results below 2^-126 flushed to a
// zero of the result's sign, exact zero sums are +0 except (-0) + (-0) = -0.
fp32_t add_fp32(fp32_t x, fp32_t y);

// The exact value a * b * 2^(scale - 48) (a, b < 2^25: significands with 24 fraction bits)
// rounded as IEEE binary32 rounds, to nearest even with gradual underflow, then flushed below
// 2^-126 to a zero of its sign; infinity from 2^128 on. The one rounding step of every multiplying
// function: fp32 products, the activation functions' approximations.
fp32_t round_product(bool negative, std::uint64_t a, std::uint64_t b, int scale);

// N-IN + N-VEC's mul: the IEEE binary32 product, round to nearest even, then results below
// 2^-126 flushed to a zero of the product's sign; inf * 0 is NaN; any NaN gives NaN.
fp32_t mul_fp32(fp32_t x, fp32_t y);

// N-IN + N-VEC's max and min: NaN if either is NaN, max(-0, +0) = +0, min(-0, +0) = -0.
fp32_t max_fp32(fp32_t x, fp32_t y);
fp32_t min_fp32(fp32_t x, fp32_t y);

// N-VEC's conversions (ELTWISE quant and dequant): an int32 rounded to fp32, nearest even (exact
// below 2^24 in magnitude); an fp32 after N-IN rounded to an int32, ties to even, past the int32
// range (infinities included) its nearest end, NaN 0.
fp32_t int32_to_fp32(std::int32_t x);
std::int32_t fp32_to_int32(fp32_t x);

// N-MAC: unfused multiply-add, add_fp32(s, mul_bf16(a, w)).
fp32_t mac(fp32_t s, bf16_t a, bf16_t w);

// N-OUT: fp32 -> bf16, round to nearest even, subnormals to signed zero, NaN to 0x7FC0.
bf16_t fp32_to_bf16(fp32_t x);

// Exact widening (x << 16). No N-IN canonicalisation: the bits are kept as they are.
fp32_t bf16_to_fp32(bf16_t x);

// Bit casts between the raw pattern and the host float (std::memcpy, no arithmetic).
float fp32_to_float(fp32_t x);
fp32_t float_to_fp32(float f);

}  // namespace tpu::num
