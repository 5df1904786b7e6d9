#include "tpu/numerics/float.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tpu::num {
namespace {

constexpr fp32_t kFp32SignMask = 0x80000000u;
constexpr fp32_t kFp32ExponentMask = 0x7F800000u;
constexpr fp32_t kFp32FractionMask = 0x007FFFFFu;
constexpr int kFp32FractionBits = 23;

constexpr bf16_t kBf16SignMask = 0x8000u;
constexpr bf16_t kBf16ExponentMask = 0x7F80u;
constexpr bf16_t kBf16FractionMask = 0x007Fu;
constexpr int kBf16FractionBits = 7;

constexpr int kExponentBias = 127;       // shared by bf16 and fp32
constexpr int kMaxBiasedExponent = 255;  // infinity / NaN encoding, shared by bf16 and fp32

bool is_nan_fp32(fp32_t x) {
  return (x & kFp32ExponentMask) == kFp32ExponentMask && (x & kFp32FractionMask) != 0;
}
bool is_inf_fp32(fp32_t x) {
  return (x & ~kFp32SignMask) == kFp32ExponentMask;
}
bool is_zero_fp32(fp32_t x) {
  return (x & ~kFp32SignMask) == 0;
}
int biased_exponent_fp32(fp32_t x) {
  return static_cast<int>((x & kFp32ExponentMask) >> kFp32FractionBits);
}

bool is_nan_bf16(bf16_t x) {
  return (x & kBf16ExponentMask) == kBf16ExponentMask && (x & kBf16FractionMask) != 0;
}
bool is_inf_bf16(bf16_t x) {
  return (x & ~kBf16SignMask) == kBf16ExponentMask;
}
bool is_zero_bf16(bf16_t x) {
  return (x & ~kBf16SignMask) == 0;
}
int biased_exponent_bf16(bf16_t x) {
  return (x & kBf16ExponentMask) >> kBf16FractionBits;
}

// A finite nonzero value written as (-1)^negative * significand * 2^exponent.
struct Exact {
  bool negative;
  int exponent;
  std::uint64_t significand;
};

// Only for normal numbers: callers have already applied N-IN and handled zero/inf/NaN.
Exact decode_normal_fp32(fp32_t x) {
  return {(x & kFp32SignMask) != 0, biased_exponent_fp32(x) - kExponentBias - kFp32FractionBits,
          (x & kFp32FractionMask) | (fp32_t{1} << kFp32FractionBits)};
}
Exact decode_normal_bf16(bf16_t x) {
  return {(x & kBf16SignMask) != 0, biased_exponent_bf16(x) - kExponentBias - kBf16FractionBits,
          static_cast<std::uint64_t>((x & kBf16FractionMask) | (1u << kBf16FractionBits))};
}

int bit_width(std::uint64_t v) {
  return 64 - __builtin_clzll(v);
}

// significand * 2^exponent rounded to `precision` significant bits, nearest even, with an
// unbounded exponent range (range limits are the caller's business). On return significand
// lies in [2^(precision-1), 2^precision). The one rounding primitive of this file: N-ADD
// rounds to 24 bits, N-OUT to 8, and N-MUL goes through it with nothing to round.
Exact round_to_precision(Exact value, int precision) {
  const int width = bit_width(value.significand);
  if (width <= precision) {
    const int grow = precision - width;
    return {value.negative, value.exponent - grow, value.significand << grow};
  }
  const int dropped = width - precision;
  const std::uint64_t kept = value.significand >> dropped;
  const std::uint64_t remainder = value.significand & ((std::uint64_t{1} << dropped) - 1);
  const std::uint64_t half = std::uint64_t{1} << (dropped - 1);
  const bool round_up = remainder > half || (remainder == half && (kept & 1) != 0);
  std::uint64_t rounded = kept + (round_up ? 1 : 0);
  int exponent = value.exponent + dropped;
  if (rounded >> precision != 0) {  // carried out of the top: rounded is exactly 2^precision
    rounded >>= 1;
    ++exponent;
  }
  return {value.negative, exponent, rounded};
}

// Rounds a finite nonzero value to fp32 (N-ADD) and applies the range rules shared by N-MUL
// and N-ADD: overflow to infinity, flush of magnitudes below 2^-126 to a signed zero.
// Flushing looks at the rounded value; for the values reaching here that equals looking at
// the exact one, because an exact sum or product below 2^-126 needs no rounding.
fp32_t round_and_pack(Exact value) {
  const Exact rounded = round_to_precision(value, kFp32FractionBits + 1);
  const fp32_t sign = rounded.negative ? kFp32SignMask : 0u;
  const int biased = rounded.exponent + kFp32FractionBits + kExponentBias;
  if (biased >= kMaxBiasedExponent) return sign | kFp32ExponentMask;
  if (biased <= 0) return sign;
  return sign | (static_cast<fp32_t>(biased) << kFp32FractionBits) |
         (static_cast<fp32_t>(rounded.significand) & kFp32FractionMask);
}

}  // namespace

// N-IN
bf16_t canon_in_bf16(bf16_t x) {
  if (is_nan_bf16(x)) return kCanonicalNanBf16;
  if (biased_exponent_bf16(x) == 0) return x & kBf16SignMask;  // zero or subnormal
  return x;
}

// N-IN
// N-MUL
fp32_t mul_bf16(bf16_t a, bf16_t b) {
  a = canon_in_bf16(a);  // N-IN
  b = canon_in_bf16(b);
  const bool negative = ((a ^ b) & kBf16SignMask) != 0;
  const fp32_t sign = negative ? kFp32SignMask : 0u;
  if (is_nan_bf16(a) || is_nan_bf16(b)) return kCanonicalNanFp32;
  const bool has_inf = is_inf_bf16(a) || is_inf_bf16(b);
  const bool has_zero = is_zero_bf16(a) || is_zero_bf16(b);
  if (has_inf && has_zero) return kCanonicalNanFp32;
  if (has_inf) return sign | kFp32ExponentMask;
  if (has_zero) return sign;
  // N-MUL: 8-bit x 8-bit significands give at most 16 bits, so round_and_pack never rounds
  // here; it only applies the overflow and flush rules.
  const Exact da = decode_normal_bf16(a);
  const Exact db = decode_normal_bf16(b);
  return round_and_pack({negative, da.exponent + db.exponent, da.significand * db.significand});
}

// N-ADD
fp32_t add_fp32(fp32_t x, fp32_t y) {
  x = canon_in_fp32(x);  // N-IN
  y = canon_in_fp32(y);
  if (is_nan_fp32(x) || is_nan_fp32(y)) return kCanonicalNanFp32;
  if (is_inf_fp32(x) && is_inf_fp32(y)) return x == y ? x : kCanonicalNanFp32;
  if (is_inf_fp32(x)) return x;
  if (is_inf_fp32(y)) return y;
  if (is_zero_fp32(x) && is_zero_fp32(y)) return x & y;  // -0 only for (-0) + (-0)
  if (is_zero_fp32(x)) return y;  // y is normal after N-IN: nothing to round or flush
  if (is_zero_fp32(y)) return x;

  // Exact sum in a 64-bit integer, then one rounding. The larger magnitude's 24-bit significand
  // sits at bits 62..39 (bit 63 takes the carry); the smaller one is shifted right to align and
  // any bits shifted out collapse into a sticky bit at bit 0, which keeps the sum on the same
  // side of every rounding boundary as the exact value. Bits are lost only for exponent
  // differences above 39, and then the sum's leading bit stays at 61 or above, so the rounding
  // point (23 bits below it) is far above the sticky bit.
  if ((y & ~kFp32SignMask) > (x & ~kFp32SignMask)) std::swap(x, y);
  const Exact big = decode_normal_fp32(x);
  const Exact small = decode_normal_fp32(y);
  constexpr int kHeadroom = 39;
  const int alignment = big.exponent - small.exponent;
  const std::uint64_t small_bits = small.significand << kHeadroom;
  std::uint64_t small_aligned = 1;  // alignment >= 64: the whole operand is sticky
  if (alignment < 64) {
    small_aligned = small_bits >> alignment;
    if ((small_aligned << alignment) != small_bits) small_aligned |= 1;
  }
  const std::uint64_t big_bits = big.significand << kHeadroom;
  const std::uint64_t sum =
      big.negative == small.negative ? big_bits + small_aligned : big_bits - small_aligned;
  if (sum == 0) return 0u;  // x + (-x) = +0 (N-ADD)
  return round_and_pack({big.negative, big.exponent - kHeadroom, sum});
}

// N-MAC: unfused, the product is flushed or saturated before the add.
fp32_t mac(fp32_t s, bf16_t a, bf16_t w) {
  return add_fp32(s, mul_bf16(a, w));
}

// N-OUT
bf16_t fp32_to_bf16(fp32_t x) {
  if (is_nan_fp32(x)) return kCanonicalNanBf16;
  const bf16_t sign = (x & kFp32SignMask) != 0 ? kBf16SignMask : bf16_t{0};
  if (is_inf_fp32(x)) return sign | kBf16ExponentMask;
  if (biased_exponent_fp32(x) == 0) return sign;  // zero or subnormal -> signed zero
  const Exact rounded = round_to_precision(decode_normal_fp32(x), kBf16FractionBits + 1);
  const int biased = rounded.exponent + kBf16FractionBits + kExponentBias;
  if (biased >= kMaxBiasedExponent) return sign | kBf16ExponentMask;  // rounded up to infinity
  return static_cast<bf16_t>(sign | (biased << kBf16FractionBits) |
                             (static_cast<int>(rounded.significand) & kBf16FractionMask));
}

fp32_t bf16_to_fp32(bf16_t x) {
  return static_cast<fp32_t>(x) << 16;
}

float fp32_to_float(fp32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

fp32_t float_to_fp32(float f) {
  fp32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

fp32_t round_product(bool negative, std::uint64_t a, std::uint64_t b, int scale) {
  constexpr int kUnitFractionBits = 24;
  constexpr int kProductTop = 49;  // a, b < 2^25
  constexpr int kDroppedBits = kProductTop - kFp32FractionBits;
  constexpr fp32_t kMinNormal = fp32_t{1} << kFp32FractionBits;
  const fp32_t sign = negative ? kFp32SignMask : 0u;
  const std::uint64_t product = a * b;
  if (product == 0) return sign;
  const int leading = 63 - __builtin_clzll(product);
  const std::uint64_t normalised = product << (kProductTop - leading);
  const int biased = leading + scale - 2 * kUnitFractionBits + kExponentBias;
  const std::uint64_t kept = normalised >> kDroppedBits;  // 24 bits, leading one included
  if (biased <= 0) {
    // Below 2^-126. IEEE rounds to the subnormal grid (2^-149), which reaches 2^-126 only from
    // [2^-126 - 2^-150, 2^-126): leading one at 2^-127 and the 23 bits after it all ones.
    const bool reaches_min_normal = biased == 0 && (kept & kFp32FractionMask) == kFp32FractionMask;
    return reaches_min_normal ? sign | kMinNormal : sign;
  }
  const bool guard = (normalised >> (kDroppedBits - 1)) & 1;
  const bool sticky = (normalised & ((std::uint64_t{1} << (kDroppedBits - 1)) - 1)) != 0;
  std::uint64_t rounded = kept + ((guard && (sticky || (kept & 1))) ? 1 : 0);
  int exponent = biased;
  if (rounded >> (kFp32FractionBits + 1)) {  // carried out: rounded is 2^24
    rounded >>= 1;
    ++exponent;
  }
  if (exponent >= kMaxBiasedExponent) return sign | kFp32ExponentMask;
  return sign | (static_cast<fp32_t>(exponent) << kFp32FractionBits) |
         (static_cast<fp32_t>(rounded) & kFp32FractionMask);
}

fp32_t mul_fp32(fp32_t x, fp32_t y) {
  x = canon_in_fp32(x);
  y = canon_in_fp32(y);
  if (is_nan_fp32(x) || is_nan_fp32(y)) return kCanonicalNanFp32;
  const fp32_t sign = (x ^ y) & kFp32SignMask;
  if ((is_inf_fp32(x) && is_zero_fp32(y)) || (is_zero_fp32(x) && is_inf_fp32(y))) {
    return kCanonicalNanFp32;
  }
  if (is_inf_fp32(x) || is_inf_fp32(y)) return sign | kFp32ExponentMask;
  if (is_zero_fp32(x) || is_zero_fp32(y)) return sign;
  // The significands in 1.24 and the unbiased exponents: round_product's scale.
  const auto unit = [](fp32_t v) {
    return (std::uint64_t{v & kFp32FractionMask} | (std::uint64_t{1} << kFp32FractionBits)) << 1;
  };
  return round_product(sign != 0, unit(x), unit(y),
                       biased_exponent_fp32(x) + biased_exponent_fp32(y) - 2 * kExponentBias);
}

fp32_t int32_to_fp32(std::int32_t x) {
  if (x == 0) return 0;
  // The magnitude as an exact value, 2^31 for INT32_MIN included.
  const auto magnitude = static_cast<std::uint64_t>(std::abs(static_cast<std::int64_t>(x)));
  const Exact value{x < 0, 0, magnitude};
  return round_and_pack(value);  // below 2^32: never overflows, never flushes
}

std::int32_t fp32_to_int32(fp32_t x) {
  x = canon_in_fp32(x);
  if (is_nan_fp32(x) || is_zero_fp32(x)) return 0;
  const bool negative = (x & kFp32SignMask) != 0;
  const int exponent = biased_exponent_fp32(x) - kExponentBias;  // |x| in [2^e, 2^(e+1))
  if (exponent >= 31) return negative ? INT32_MIN : INT32_MAX;   // -2^31 itself included
  if (exponent < -1) return 0;                                   // |x| < 1/2
  const Exact value = decode_normal_fp32(x);
  std::uint64_t magnitude = 0;
  if (value.exponent >= 0) {
    magnitude = value.significand << value.exponent;
  } else {
    const int dropped = -value.exponent;
    const std::uint64_t kept = value.significand >> dropped;
    const std::uint64_t remainder = value.significand & ((std::uint64_t{1} << dropped) - 1);
    const std::uint64_t half = std::uint64_t{1} << (dropped - 1);
    magnitude = kept + (remainder > half || (remainder == half && (kept & 1) != 0) ? 1 : 0);
  }
  return static_cast<std::int32_t>(negative ? -static_cast<std::int64_t>(magnitude)
                                            : static_cast<std::int64_t>(magnitude));
}

namespace {

// After N-IN and for non-NaN values: an unsigned key in the order of the values, -0 below +0.
std::uint32_t order_key(fp32_t canonical) {
  return (canonical & kFp32SignMask) != 0 ? ~canonical : canonical | kFp32SignMask;
}

}  // namespace

fp32_t max_fp32(fp32_t x, fp32_t y) {
  x = canon_in_fp32(x);
  y = canon_in_fp32(y);
  if (is_nan_fp32(x) || is_nan_fp32(y)) return kCanonicalNanFp32;
  return order_key(x) >= order_key(y) ? x : y;
}

fp32_t min_fp32(fp32_t x, fp32_t y) {
  x = canon_in_fp32(x);
  y = canon_in_fp32(y);
  if (is_nan_fp32(x) || is_nan_fp32(y)) return kCanonicalNanFp32;
  return order_key(x) >= order_key(y) ? y : x;
}

}  // namespace tpu::num
