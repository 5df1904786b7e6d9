// Test operands for the numerics contract (numerics.md): structured sets that cover every
// exponent boundary, and a seeded random generator with mixed distributions.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "oracle/host_float.hpp"

namespace tpu::oracle {

// Both signs x all 128 fractions x biased exponents {0..3, 60..68, 120..134, 187..195,
// 252..255}: subnormals and zero, products near the 2^-126 flush boundary (60..68 squared,
// 0..3 times 120..134), near 1.0, near the 2^128 overflow boundary (187..195 squared,
// 252..254 times 120..134), infinity and NaN. Sorted, no duplicates: 2 * 41 * 128 = 10496
// values, so all pairs are 110,166,016 multiplier vectors.
std::vector<bf16_t> structured_bf16_operands();

// Both signs x biased exponents {0, 1, 2, 23, 24, 25, 126, 127, 128, 253, 254, 255} x fractions
// {0, 1, 2, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFE, 0x7FFFFF} plus 4 fixed pseudo-random
// fractions. Sorted, no duplicates: 2 * 12 * 12 = 288 values, 82,944 adder pairs.
std::vector<fp32_t> structured_fp32_operands();

// The seed a randomised test should use: TPU_TEST_SEED from the environment (decimal or 0x
// hex) if set, else `fallback`. Throws std::invalid_argument if the variable is malformed.
std::uint64_t seed_from_env(std::uint64_t fallback);

// Seeded generator of test operands. Same seed, same sequence, on every platform
// (std::mt19937_64 is fully specified and only raw engine output is used).
class OperandRng {
 public:
  explicit OperandRng(std::uint64_t seed);

  // Uniform integer in [lo, hi].
  std::uint64_t uniform(std::uint64_t lo, std::uint64_t hi);

  // Mixed: ~80% uniform random bits, ~10% special values (signed zeros, infinities, NaNs with
  // random sign and payload, subnormals, max finite, min normal), ~10% normals with exponents
  // near the multiplier's flush / overflow boundaries and near 1.0.
  bf16_t bf16();
  // Mixed like bf16(), with exponents clustered near 2^-126, 1.0 and the largest finite.
  fp32_t fp32();

  bf16_t bf16_finite_normal();
  fp32_t fp32_finite_normal();
  // Normal bf16 with random sign and fraction and a biased exponent in [min_biased, max_biased]
  // (within 1..254).
  bf16_t bf16_with_exponent(unsigned min_biased, unsigned max_biased);

  // Adder operand pairs: ~70% two independent fp32() draws, ~30% fp32_pair_finite_normal().
  std::pair<fp32_t, fp32_t> fp32_pair();
  // Normal pairs chosen so the sum is interesting: y close to -x (cancellation, flush), y a few
  // binades below x with trailing zero bits (rounding ties, sticky bits), or independent
  // exponents; x's exponent is often near 2^-126 or the largest finite.
  std::pair<fp32_t, fp32_t> fp32_pair_finite_normal();

 private:
  bool percent(unsigned p);  // true with probability p / 100
  fp32_t sign32();
  bf16_t special_bf16();
  fp32_t special_fp32();
  fp32_t normal_fp32_with_exponent(std::uint64_t biased_exponent);

  std::mt19937_64 engine_;
};

}  // namespace tpu::oracle
