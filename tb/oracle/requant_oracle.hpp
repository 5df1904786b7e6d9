// Independent oracle for the int8 requantisation of the contract (Q-REQ, docs/numerics.md,
// section "Integers (int8 mode)"), written from what the steps mean rather than from TensorFlow
// Lite's bit tricks: every value is an exact integer in __int128, every division a floor
// division, every rounding an explicit comparison of the remainder with half the divisor.
// Shares no code with the reference model (sw/numerics/quant.cpp).
//
// The tie rules, derived from the contract's formulas (and confirmed by the tests, which build
// exact ties for every shift):
// - SRDHM(a, b) is a * b / 2^31 rounded to nearest, ties toward +infinity, then saturated to
//   int32. For p = a * b >= 0 the contract computes trunc((p + 2^30) / 2^31) = floor(p / 2^31 +
//   1/2): ties go up, away from zero. For p < 0 it computes trunc((p + 1 - 2^30) / 2^31) =
//   -floor((-p + 2^30 - 1) / 2^31), and at p = -(k + 1/2) 2^31 that is -k: ties go up too, toward
//   zero. So 1.5 -> 2 and -1.5 -> -1. Only INT32_MIN * INT32_MIN (2^31 after the division)
//   saturates.
// - RDBP(x, e) is x / 2^e rounded to nearest, ties away from zero. With r = x mod 2^e (the bits
//   x & (2^e - 1)) and floor(x / 2^e) = x >> e, the contract adds 1 when r > 2^(e-1) - 1 for
//   x >= 0 (so at the tie r = 2^(e-1): up) and when r > 2^(e-1) for x < 0 (so not at the tie: down,
//   away from zero). So 1.5 -> 2 and -1.5 -> -2. e = 0 is exact.
// The two rules agree everywhere except at negative ties.
#pragma once

#include <cstdint>

namespace tpu::oracle {

__extension__ typedef __int128 int128;  // __extension__: -Wpedantic accepts it

// floor(n / d) for d > 0, whatever n's sign (C++'s / truncates toward zero).
inline int128 floor_div(int128 n, int128 d) {
  int128 q = n / d;
  if (n % d != 0 && n < 0) --q;
  return q;
}

inline int128 pow2(int e) {
  return int128{1} << e;
}

// The int32 congruent to v modulo 2^32: "wrap".
inline std::int32_t wrap32(int128 v) {
  int128 r = v - floor_div(v, pow2(32)) * pow2(32);  // in [0, 2^32)
  if (r >= pow2(31)) r -= pow2(32);
  return static_cast<std::int32_t>(r);
}

inline int128 saturate32(int128 v) {
  if (v > INT32_MAX) return INT32_MAX;
  if (v < INT32_MIN) return INT32_MIN;
  return v;
}

// n / 2^e rounded to nearest, ties toward +infinity: floor, then up if the remainder is at
// least half the divisor.
inline int128 round_half_up_pow2(int128 n, int e) {
  const int128 q = floor_div(n, pow2(e));
  const int128 r = n - q * pow2(e);  // in [0, 2^e)
  return 2 * r >= pow2(e) ? q + 1 : q;
}

// n / 2^e rounded to nearest, ties away from zero: round the magnitude half up, restore the sign.
inline int128 round_half_away_pow2(int128 n, int e) {
  const int128 magnitude = n < 0 ? -n : n;
  const int128 rounded = round_half_up_pow2(magnitude, e);
  return n < 0 ? -rounded : rounded;
}

// SRDHM: a * b / 2^31, nearest, ties toward +infinity, saturated.
inline std::int32_t srdhm(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(saturate32(round_half_up_pow2(int128{a} * b, 31)));
}

// True when a * b / 2^31 is exactly halfway between two integers (an SRDHM tie).
inline bool srdhm_is_tie(std::int32_t a, std::int32_t b) {
  const int128 p = int128{a} * b;
  return p - floor_div(p, pow2(31)) * pow2(31) == pow2(30);
}

// RDBP: x / 2^e, nearest, ties away from zero; e in [0, 31].
inline std::int32_t rdbp(std::int32_t x, int e) {
  return static_cast<std::int32_t>(round_half_away_pow2(x, e));
}

// True when x / 2^e is exactly halfway between two integers (an RDBP tie).
inline bool rdbp_is_tie(std::int32_t x, int e) {
  return e > 0 && int128{x} - floor_div(x, pow2(e)) * pow2(e) == pow2(e - 1);
}

// x * M * 2^(s - 31) as Q-REQ computes it: the left shift's product wraps, then two roundings.
inline std::int32_t multiply_by_quantized_multiplier(std::int32_t x, std::int32_t m, int s) {
  const std::int32_t shifted = wrap32(int128{x} * pow2(s > 0 ? s : 0));
  return rdbp(srdhm(shifted, m), s < 0 ? -s : 0);
}

// Q-REQ whole: wrap the biased sum, scale, add the zero point exactly, clamp to [lo, hi].
inline std::int8_t requantize(std::int32_t sum, std::int32_t bias, std::int32_t m, int s, int zo,
                              int lo, int hi) {
  const std::int32_t x = wrap32(int128{sum} + bias);
  const int128 out = int128{multiply_by_quantized_multiplier(x, m, s)} + zo;
  return static_cast<std::int8_t>(out < lo ? lo : out > hi ? hi : out);
}

}  // namespace tpu::oracle
