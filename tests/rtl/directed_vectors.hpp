// Directed cases for every special case of docs/numerics.md, with the expected
// bit patterns worked out by hand (the comment on each line says how).
#pragma once

#include <cstdint>

namespace tpu::test {

struct MulCase {
  std::uint16_t a, b;
  std::uint32_t expected;
  const char* what;
};
struct AddCase {
  std::uint32_t x, y;
  std::uint32_t expected;
  const char* what;
};
struct RoundCase {
  std::uint32_t value;
  std::uint16_t expected;
  const char* what;
};

inline constexpr MulCase kMulCases[] = {
    {0x3F80, 0x3F80, 0x3F800000, "1 * 1"},
    {0xBF80, 0xBF80, 0x3F800000, "-1 * -1"},
    {0x3FC0, 0x3FC0, 0x40100000, "1.5 * 1.5 = 2.25 (normalise by one place)"},
    {0x3FFF, 0x3FFF, 0x407E0100, "(255/128)^2 = 0xFE01 / 2^14, all 16 product bits kept"},
    {0x0000, 0x3F80, 0x00000000, "+0 * 1"},
    {0x8000, 0x3F80, 0x80000000, "-0 * 1 = -0"},
    {0x8000, 0x8000, 0x00000000, "-0 * -0 = +0"},
    {0x0040, 0x4000, 0x00000000, "subnormal input is +0 (N-IN)"},
    {0x8040, 0x4000, 0x80000000, "negative subnormal input is -0 (N-IN)"},
    {0x7F80, 0x3F80, 0x7F800000, "inf * 1"},
    {0x7F80, 0xBF80, 0xFF800000, "inf * -1"},
    {0x7F80, 0x0000, 0x7FC00000, "inf * 0 = NaN"},
    {0x0001, 0xFF80, 0x7FC00000, "subnormal * -inf = NaN (subnormal is zero)"},
    {0xFFC1, 0x3F80, 0x7FC00000, "negative NaN with payload -> canonical NaN"},
    {0x7F81, 0x0000, 0x7FC00000, "signalling NaN * 0 -> canonical NaN"},
    {0x7F00, 0x4000, 0x7F800000, "2^127 * 2 = 2^128 overflows"},
    {0x5F80, 0xDF80, 0xFF800000, "2^64 * -2^64 overflows to -inf"},
    {0x5F00, 0x5F80, 0x7F000000, "2^63 * 2^64 = 2^127, largest power"},
    {0x7F7F, 0x3F80, 0x7F7F0000, "max bf16 * 1"},
    {0x7F7F, 0x7F7F, 0x7F800000, "max * max overflows"},
    {0x2000, 0x2000, 0x00800000, "2^-63 * 2^-63 = 2^-126, smallest normal"},
    {0x1F80, 0x2000, 0x00000000, "2^-64 * 2^-63 = 2^-127 flushed"},
    {0x9F80, 0x2000, 0x80000000, "-2^-64 * 2^-63 flushed to -0"},
    {0x0080, 0x3F00, 0x00000000, "2^-126 * 0.5 flushed"},
    {0x0080, 0x3F80, 0x00800000, "2^-126 * 1 kept"},
    {0x2000, 0x2001, 0x00810000, "2^-126 * (1 + 2^-7): just above the flush limit"},
    {0x1FC0, 0x2040, 0x00900000, "2.25 * 2^-127: saved from the flush by normalising"},
};

inline constexpr AddCase kAddCases[] = {
    {0x3F800000, 0x3F800000, 0x40000000, "1 + 1"},
    {0x00000000, 0x80000000, 0x00000000, "+0 + -0 = +0"},
    {0x80000000, 0x00000000, 0x00000000, "-0 + +0 = +0"},
    {0x80000000, 0x80000000, 0x80000000, "-0 + -0 = -0"},
    {0x3F800000, 0xBF800000, 0x00000000, "x + -x = +0"},
    {0xBF800000, 0x3F800000, 0x00000000, "-x + x = +0"},
    {0x80000000, 0xBF800000, 0xBF800000, "-0 + -1 = -1"},
    {0x7F800000, 0xFF800000, 0x7FC00000, "inf - inf = NaN"},
    {0x7F800000, 0x3F800000, 0x7F800000, "inf + 1"},
    {0xFF800000, 0x7F7FFFFF, 0xFF800000, "-inf + max"},
    {0xFFFFFFFF, 0x3F800000, 0x7FC00000, "NaN with payload -> canonical"},
    {0x3F800000, 0x7F800001, 0x7FC00000, "signalling NaN -> canonical"},
    {0x00400000, 0x3F800000, 0x3F800000, "subnormal operand is zero (N-IN)"},
    {0x00400000, 0x80000000, 0x00000000, "subnormal (+0) + -0 = +0"},
    {0x80400000, 0x80000000, 0x80000000, "negative subnormal (-0) + -0 = -0"},
    {0x007FFFFF, 0x00800000, 0x00800000, "subnormal + min normal = min normal"},
    {0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000, "max + max overflows"},
    {0x7F7FFFFF, 0x73000000, 0x7F800000, "max + half ulp: tie, odd -> rounds up to inf"},
    {0x7F7FFFFF, 0x72800000, 0x7F7FFFFF, "max + quarter ulp stays max"},
    {0xFF7FFFFF, 0xF3000000, 0xFF800000, "-max - half ulp overflows to -inf"},
    {0x00C00000, 0x80800000, 0x00000000, "1.5*2^-126 - 2^-126 flushed to +0"},
    {0x80C00000, 0x00800000, 0x80000000, "-1.5*2^-126 + 2^-126 flushed to -0"},
    {0x00800001, 0x80800000, 0x00000000, "difference of one subnormal ulp flushed"},
    {0x01000000, 0x80800000, 0x00800000, "2^-125 - 2^-126 = 2^-126 kept"},
    {0x3F800000, 0x33800000, 0x3F800000, "1 + 2^-24: tie, even -> 1"},
    {0x3F800001, 0x33800000, 0x3F800002, "(1+2^-23) + 2^-24: tie, odd -> up"},
    {0x3F800000, 0x33800001, 0x3F800001, "1 + just over half ulp -> up"},
    {0x3FFFFFFF, 0x33800000, 0x40000000, "rounding carries into the exponent"},
    {0x4B800000, 0x3F800000, 0x4B800000, "2^24 + 1: tie, even -> 2^24"},
    {0x4B800000, 0x40000000, 0x4B800001, "2^24 + 2 exact"},
    {0x3F800001, 0xBF800000, 0x34000000, "cancellation: (1+2^-23) - 1 = 2^-23"},
    {0x3F800000, 0xB3800001, 0x3F7FFFFF, "1 - (2^-24 + 2^-47) rounds to 1 - 2^-24"},
    {0x7F000000, 0x00800000, 0x7F000000, "huge + tiny: tiny only sticky"},
    {0x3F800000, 0xB3000000, 0x3F800000,
     "1 - 2^-25: tie between 1 - 2^-24 (odd) and 1 (even) -> 1"},
    {0x40400000, 0xC0000000, 0x3F800000, "3 - 2 = 1 (normalise left)"},
};

inline constexpr RoundCase kRoundCases[] = {
    {0x3F800000, 0x3F80, "1 exact"},
    {0x3F808000, 0x3F80, "tie, even -> down"},
    {0x3F818000, 0x3F82, "tie, odd -> up"},
    {0x3F808001, 0x3F81, "just over half -> up"},
    {0x3F807FFF, 0x3F80, "just under half -> down"},
    {0x3FFF8000, 0x4000, "carry into the exponent"},
    {0xBFFF8000, 0xC000, "negative carry into the exponent"},
    {0x7F7F8000, 0x7F80, "rounds up to infinity"},
    {0x7F7F7FFF, 0x7F7F, "largest that stays finite"},
    {0x7F800000, 0x7F80, "+inf"},
    {0xFF800000, 0xFF80, "-inf"},
    {0x7F800001, 0x7FC0, "NaN that truncation would turn into inf"},
    {0xFFC00000, 0x7FC0, "negative NaN -> canonical"},
    {0x007FFFFF, 0x0000, "largest subnormal -> +0, not rounded up"},
    {0x80000001, 0x8000, "negative subnormal -> -0"},
    {0x00000000, 0x0000, "+0"},
    {0x80000000, 0x8000, "-0"},
    {0x00800000, 0x0080, "smallest normal"},
    {0x80FF8000, 0x8100, "negative tie, odd -> away from zero"},
};

}  // namespace tpu::test
