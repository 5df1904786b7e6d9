#include "oracle/operand_sets.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tpu::oracle {
namespace {

constexpr fp32_t kFp32SignMask = 0x80000000u;
constexpr fp32_t kFp32FractionMask = 0x007FFFFFu;
constexpr unsigned kMaxFiniteBiasedExponent = 254;

template <typename T>
void sort_unique(std::vector<T>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

fp32_t pack_fp32(fp32_t sign, std::uint64_t biased_exponent, std::uint64_t fraction) {
  return sign | static_cast<fp32_t>(biased_exponent << 23) |
         (static_cast<fp32_t>(fraction) & kFp32FractionMask);
}

}  // namespace

std::vector<bf16_t> structured_bf16_operands() {
  struct ExponentRange {
    unsigned first, last;
  };
  constexpr std::array<ExponentRange, 5> kRanges{
      {{0, 3}, {60, 68}, {120, 134}, {187, 195}, {252, 255}}};
  std::vector<bf16_t> values;
  for (unsigned sign = 0; sign < 2; ++sign) {
    for (const ExponentRange& range : kRanges) {
      for (unsigned exponent = range.first; exponent <= range.last; ++exponent) {
        for (unsigned fraction = 0; fraction < 128; ++fraction) {
          values.push_back(static_cast<bf16_t>((sign << 15) | (exponent << 7) | fraction));
        }
      }
    }
  }
  sort_unique(values);
  return values;
}

std::vector<fp32_t> structured_fp32_operands() {
  constexpr std::array<unsigned, 12> kExponents{0, 1, 2, 23, 24, 25, 126, 127, 128, 253, 254, 255};
  std::vector<fp32_t> fractions{0, 1, 2, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFE, 0x7FFFFF};
  std::mt19937_64 fixed_engine(0x5EEDF00Du);  // fixed: the set must not change between runs
  for (int n = 0; n < 4; ++n) {
    fractions.push_back(static_cast<fp32_t>(fixed_engine()) & kFp32FractionMask);
  }
  std::vector<fp32_t> values;
  for (fp32_t sign : {0u, kFp32SignMask}) {
    for (unsigned exponent : kExponents) {
      for (fp32_t fraction : fractions) values.push_back(pack_fp32(sign, exponent, fraction));
    }
  }
  sort_unique(values);
  return values;
}

std::uint64_t seed_from_env(std::uint64_t fallback) {
  const char* text = std::getenv("TPU_TEST_SEED");
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long seed = std::strtoull(text, &end, 0);
  if (*end != '\0') {
    throw std::invalid_argument(std::string("TPU_TEST_SEED is not an integer: ") + text);
  }
  return seed;
}

OperandRng::OperandRng(std::uint64_t seed) : engine_(seed) {}

std::uint64_t OperandRng::uniform(std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t span = hi - lo + 1;
  // Modulo bias is below 2^-40 for the spans used here; a full 64-bit span wraps to 0.
  return span == 0 ? engine_() : lo + engine_() % span;
}

bool OperandRng::percent(unsigned p) {
  return uniform(0, 99) < p;
}

fp32_t OperandRng::sign32() {
  return percent(50) ? kFp32SignMask : 0u;
}

fp32_t OperandRng::normal_fp32_with_exponent(std::uint64_t biased_exponent) {
  return pack_fp32(sign32(), biased_exponent, uniform(0, kFp32FractionMask));
}

fp32_t OperandRng::special_fp32() {
  switch (uniform(0, 5)) {
    case 0:
      return sign32();  // signed zero
    case 1:
      return sign32() | 0x7F800000u;  // infinity
    case 2:
      return sign32() | 0x7F800000u | static_cast<fp32_t>(uniform(1, kFp32FractionMask));  // NaN
    case 3:
      return sign32() | static_cast<fp32_t>(uniform(1, kFp32FractionMask));  // subnormal
    case 4:
      return sign32() | 0x7F7FFFFFu;  // max finite
    default:
      return sign32() | 0x00800000u;  // min normal
  }
}

bf16_t OperandRng::special_bf16() {
  const unsigned sign = percent(50) ? 0x8000u : 0u;
  switch (uniform(0, 5)) {
    case 0:
      return static_cast<bf16_t>(sign);  // signed zero
    case 1:
      return static_cast<bf16_t>(sign | 0x7F80u);  // infinity
    case 2:
      return static_cast<bf16_t>(sign | 0x7F80u | uniform(1, 0x7F));  // NaN
    case 3:
      return static_cast<bf16_t>(sign | uniform(1, 0x7F));  // subnormal
    case 4:
      return static_cast<bf16_t>(sign | 0x7F7Fu);  // max finite
    default:
      return static_cast<bf16_t>(sign | 0x0080u);  // min normal
  }
}

bf16_t OperandRng::bf16_with_exponent(unsigned min_biased, unsigned max_biased) {
  return static_cast<bf16_t>((uniform(0, 1) << 15) | (uniform(min_biased, max_biased) << 7) |
                             uniform(0, 0x7F));
}

bf16_t OperandRng::bf16_finite_normal() {
  return bf16_with_exponent(1, kMaxFiniteBiasedExponent);
}

fp32_t OperandRng::fp32_finite_normal() {
  return normal_fp32_with_exponent(uniform(1, kMaxFiniteBiasedExponent));
}

bf16_t OperandRng::bf16() {
  const std::uint64_t draw = uniform(0, 99);
  if (draw < 10) return special_bf16();
  if (draw < 20) {
    // Squares of 2^-63 and 2^64 sit on the flush and overflow boundaries of N-MUL.
    switch (uniform(0, 2)) {
      case 0:
        return bf16_with_exponent(60, 68);
      case 1:
        return bf16_with_exponent(120, 134);
      default:
        return bf16_with_exponent(187, 195);
    }
  }
  return static_cast<bf16_t>(uniform(0, 0xFFFF));
}

fp32_t OperandRng::fp32() {
  const std::uint64_t draw = uniform(0, 99);
  if (draw < 10) return special_fp32();
  if (draw < 20) {
    switch (uniform(0, 2)) {
      case 0:
        return normal_fp32_with_exponent(uniform(1, 4));
      case 1:
        return normal_fp32_with_exponent(uniform(124, 130));
      default:
        return normal_fp32_with_exponent(uniform(250, kMaxFiniteBiasedExponent));
    }
  }
  return static_cast<fp32_t>(uniform(0, 0xFFFFFFFFu));
}

std::pair<fp32_t, fp32_t> OperandRng::fp32_pair() {
  if (percent(30)) return fp32_pair_finite_normal();
  const fp32_t x = fp32();
  return {x, fp32()};
}

std::pair<fp32_t, fp32_t> OperandRng::fp32_pair_finite_normal() {
  std::uint64_t x_exponent = uniform(1, kMaxFiniteBiasedExponent);
  const std::uint64_t cluster = uniform(0, 3);
  if (cluster == 0) x_exponent = uniform(1, 4);
  if (cluster == 1) x_exponent = uniform(250, kMaxFiniteBiasedExponent);
  fp32_t x = normal_fp32_with_exponent(x_exponent);

  switch (uniform(0, 2)) {
    case 0: {
      // y = -x nudged by a few ulps: massive cancellation, results that flush near 2^-126.
      const fp32_t nudged = ((x ^ kFp32SignMask) + static_cast<fp32_t>(uniform(0, 32))) - 16u;
      const fp32_t exponent = nudged & 0x7F800000u;
      const bool stays_normal = (nudged & kFp32SignMask) != (x & kFp32SignMask) && exponent != 0 &&
                                exponent != 0x7F800000u;
      return {x, stays_normal ? nudged : x ^ kFp32SignMask};
    }
    case 1: {
      // y a few binades below x, both with trailing zeros: exact halfway cases and sticky bits.
      const std::uint64_t distance = std::min<std::uint64_t>(uniform(0, 26), x_exponent - 1);
      fp32_t y = normal_fp32_with_exponent(x_exponent - distance);
      const fp32_t keep_mask = ~((fp32_t{1} << uniform(0, 23)) - 1u);
      x = (x & ~kFp32FractionMask) | (x & kFp32FractionMask & keep_mask);
      y = (y & ~kFp32FractionMask) | (y & kFp32FractionMask & keep_mask);
      return {x, y};
    }
    default:
      return {x, fp32_finite_normal()};
  }
}

}  // namespace tpu::oracle
