// The int8 reference (sw/numerics/quant.cpp) against the independent oracle
// (tb/oracle/requant_oracle.hpp) and naive int64 sums: Q-MAC, Q-REQ (SRDHM, RDBP and the whole
// requantisation), Q-ZP and Q-SCALE. The quick suites hold structured cases (every shift, the
// multiplier's limits, exact ties built for every shift, wrapping shifts, clamps) and a few million
// random ones; RequantLarge checks 10^8 random requantisations (label ref_large).
// Randomised tests print their seed; TPU_TEST_SEED reproduces a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/test_seed.hpp"
#include "oracle/requant_oracle.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu {
namespace {

using tpu::test::test_seed;

using num::MatrixI32;
using num::MatrixI8;
using num::QuantActivation;
using num::QuantizedMultiplier;
using num::RequantParams;

constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kTwo30 = std::int32_t{1} << 30;
constexpr int kMaxReported = 10;  // mismatches printed per test; the rest are only counted

// ---- Random values, from raw engine output only (repeatable on every platform) ----------------

std::int64_t uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

std::int32_t random_int32(std::mt19937_64& rng) {
  return static_cast<std::int32_t>(static_cast<std::int64_t>(rng() >> 32) -
                                   (std::int64_t{1} << 31));
}

std::int8_t random_int8(std::mt19937_64& rng) {
  return static_cast<std::int8_t>(uniform(rng, -128, 127));
}

// The int32 whose two's complement is u (the tests' own conversion, not the reference's).
std::int32_t from_u32(std::uint32_t u) {
  return oracle::wrap32(u);
}

// A magnitude of random bit length, either sign: small and medium values as often as large ones.
std::int32_t random_scaled_int32(std::mt19937_64& rng) {
  const int bits = static_cast<int>(uniform(rng, 0, 31));
  const std::int64_t magnitude =
      static_cast<std::int64_t>(rng() & ((std::uint64_t{1} << bits) - 1));
  return static_cast<std::int32_t>((rng() & 1) != 0 ? -magnitude : magnitude);
}

std::int32_t random_multiplier(std::mt19937_64& rng) {
  return static_cast<std::int32_t>(uniform(rng, kTwo30, kMax));
}

// 0, +-1, +-2, +-3, +-2^k and +-(2^k +- 1) for k = 2..30, INT32_MIN, INT32_MIN + 1, INT32_MAX,
// INT32_MAX - 1: 183 values, sorted and distinct.
std::vector<std::int32_t> structured_int32() {
  std::vector<std::int64_t> v = {0, 1, -1, 2, -2, 3, -3, kMin, kMin + 1, kMax, kMax - 1};
  for (int k = 2; k <= 30; ++k) {
    const std::int64_t p = std::int64_t{1} << k;
    for (std::int64_t d : {p - 1, p, p + 1}) {
      v.push_back(d);
      v.push_back(-d);
    }
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::vector<std::int32_t> out;
  for (std::int64_t x : v) out.push_back(static_cast<std::int32_t>(x));
  return out;
}

// Q-REQ's limits of M, then `random` more in [2^30, 2^31 - 1].
std::vector<std::int32_t> test_multipliers(std::mt19937_64& rng, int random) {
  std::vector<std::int32_t> m = {0, kTwo30, kTwo30 + 1, kTwo30 + (kTwo30 >> 1), kMax - 1, kMax};
  for (int n = 0; n < random; ++n) m.push_back(random_multiplier(rng));
  return m;
}

// The inverse of an odd number modulo 2^32 (Newton's iteration doubles the correct bits).
std::uint32_t inverse_mod_2_32(std::uint32_t odd) {
  std::uint32_t inv = odd;  // correct to 3 bits
  for (int n = 0; n < 5; ++n) inv *= 2u - odd * inv;
  return inv;
}

// An a with a * b = 2^30 modulo 2^31, so that a * b / 2^31 is an exact half (an SRDHM tie), for
// b != 0 with at most 30 trailing zero bits; `high` picks one of the solutions (they differ by
// multiples of 2^(31 - t), t = b's trailing zeros). Its own trailing zeros are 30 - t.
std::int32_t srdhm_tie_partner(std::int32_t b, std::uint32_t high) {
  std::uint32_t u = static_cast<std::uint32_t>(b);
  int t = 0;
  while ((u & 1u) == 0) {
    u >>= 1;
    ++t;
  }
  const std::uint32_t modulus_mask = (std::uint32_t{1} << (31 - t)) - 1u;
  const std::uint32_t base = ((std::uint32_t{1} << (30 - t)) * inverse_mod_2_32(u)) & modulus_mask;
  return from_u32(base + (high << (31 - t)));
}

int trailing_zeros(std::int32_t x) {
  std::uint32_t u = static_cast<std::uint32_t>(x);
  int t = 0;
  while (t < 32 && (u & 1u) == 0) {
    u >>= 1;
    ++t;
  }
  return t;
}

// ---- Comparison with a bounded report -----------------------------------------------------------

class Mismatches {
 public:
  // Counts a mismatch and reports the first few; returns ok.
  template <typename Describe>
  bool expect(bool ok, Describe describe) {
    if (!ok && ++count_ <= kMaxReported) ADD_FAILURE() << describe();
    return ok;
  }
  long count() const { return count_; }

 private:
  long count_ = 0;
};

bool check_multiply(std::int32_t x, std::int32_t m, int s, Mismatches& mismatches) {
  const std::int32_t got = num::multiply_by_quantized_multiplier(x, {m, s});
  const std::int32_t want = oracle::multiply_by_quantized_multiplier(x, m, s);
  return mismatches.expect(got == want, [&] {
    return "multiply_by_quantized_multiplier(" + std::to_string(x) + ", M = " + std::to_string(m) +
           ", s = " + std::to_string(s) + ") = " + std::to_string(got) + ", oracle " +
           std::to_string(want);
  });
}

struct RequantCase {
  std::int32_t sum;
  RequantParams p;
};

std::string describe(const RequantCase& c) {
  return "requantize(sum = " + std::to_string(c.sum) + ", bias = " + std::to_string(c.p.bias) +
         ", M = " + std::to_string(c.p.m.multiplier) + ", s = " + std::to_string(c.p.m.shift) +
         ", zo = " + std::to_string(c.p.zero_point) + ", lo = " + std::to_string(c.p.lo) +
         ", hi = " + std::to_string(c.p.hi) + ")";
}

std::int8_t oracle_requantize(const RequantCase& c) {
  return oracle::requantize(c.sum, c.p.bias, c.p.m.multiplier, c.p.m.shift, c.p.zero_point, c.p.lo,
                            c.p.hi);
}

bool check_requantize(const RequantCase& c, Mismatches& mismatches) {
  const int got = num::requantize(c.sum, c.p);
  const int want = oracle_requantize(c);
  return mismatches.expect(got == want, [&] {
    return describe(c) + " = " + std::to_string(got) + ", oracle " + std::to_string(want);
  });
}

// A random requantisation: sums and biases of every size, every shift, M at its limits or
// random (0 now and then), every zero point, and a clamp that is sometimes the full range.
RequantCase random_requant_case(std::mt19937_64& rng) {
  RequantCase c{};
  const std::uint64_t pick = rng();
  c.sum = (pick & 1) != 0 ? random_int32(rng) : random_scaled_int32(rng);
  c.p.bias = (pick & 2) != 0 ? random_int32(rng) : random_scaled_int32(rng) >> 12;
  const std::uint64_t m_pick = (pick >> 2) & 31;
  c.p.m.multiplier = m_pick == 0   ? 0
                     : m_pick == 1 ? kTwo30
                     : m_pick == 2 ? kMax
                                   : random_multiplier(rng);
  c.p.m.shift = static_cast<int>(uniform(rng, -31, 30));
  c.p.zero_point = static_cast<int>(uniform(rng, -128, 127));
  if (((pick >> 7) & 3) == 0) {
    c.p.lo = -128;
    c.p.hi = 127;
  } else {
    const int a = static_cast<int>(uniform(rng, -128, 127));
    const int b = static_cast<int>(uniform(rng, -128, 127));
    c.p.lo = std::min(a, b);
    c.p.hi = std::max(a, b);
  }
  return c;
}

// ---- Q-MAC --------------------------------------------------------------------------------------

// The naive sum in int64 (exact for any K below 2^33), reduced modulo 2^32 at the end.
MatrixI32 naive_gemm_int8(const MatrixI8& a, const MatrixI8& w, const MatrixI32* c) {
  MatrixI32 out(a.rows, w.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < w.cols; ++j) {
      std::int64_t sum = c != nullptr ? c->at(i, j) : 0;
      for (std::size_t k = 0; k < a.cols; ++k) sum += std::int64_t{a.at(i, k)} * w.at(k, j);
      out.at(i, j) = oracle::wrap32(sum);
    }
  }
  return out;
}

::testing::AssertionResult SameMatrix(const MatrixI32& got, const MatrixI32& expected) {
  if (got.rows != expected.rows || got.cols != expected.cols) {
    return ::testing::AssertionFailure() << "shape " << got.rows << "x" << got.cols << ", expected "
                                         << expected.rows << "x" << expected.cols;
  }
  for (std::size_t i = 0; i < got.rows; ++i) {
    for (std::size_t j = 0; j < got.cols; ++j) {
      if (got.at(i, j) != expected.at(i, j)) {
        return ::testing::AssertionFailure() << "element (" << i << ", " << j << ") is "
                                             << got.at(i, j) << ", expected " << expected.at(i, j);
      }
    }
  }
  return ::testing::AssertionSuccess();
}

MatrixI8 random_matrix_i8(std::mt19937_64& rng, std::size_t rows, std::size_t cols) {
  MatrixI8 m(rows, cols);
  for (auto& v : m.data) v = random_int8(rng);
  return m;
}

TEST(QuantGemm, RandomShapesAgainstNaiveSum) {
  std::mt19937_64 rng(test_seed());
  for (int trial = 0; trial < 60; ++trial) {
    const auto rows = static_cast<std::size_t>(uniform(rng, 1, 24));
    const auto depth = static_cast<std::size_t>(uniform(rng, 1, 300));
    const auto cols = static_cast<std::size_t>(uniform(rng, 1, 24));
    const MatrixI8 a = random_matrix_i8(rng, rows, depth);
    const MatrixI8 w = random_matrix_i8(rng, depth, cols);
    MatrixI32 c(rows, cols);
    // Seeds near the limits, so that the sum wraps in both directions.
    for (auto& v : c.data)
      v = (rng() & 1) != 0 ? random_int32(rng) : kMax - (random_int32(rng) >> 20);
    const bool with_c = trial % 2 == 0;
    EXPECT_TRUE(SameMatrix(num::gemm_int8(a, w, with_c ? &c : nullptr),
                           naive_gemm_int8(a, w, with_c ? &c : nullptr)))
        << "trial " << trial << ", " << rows << "x" << depth << "x" << cols;
  }
}

// -128 * -128 = 2^14 at every k: K = 4096 gives 2^26, and a seed of INT32_MAX - 5 wraps.
TEST(QuantGemm, MinusOneTwentyEightAtK4096) {
  const MatrixI8 a(3, 4096, std::int8_t{-128});
  const MatrixI8 w(4096, 2, std::int8_t{-128});
  const MatrixI32 c(3, 2, kMax - 5);
  const MatrixI32 plain = num::gemm_int8(a, w);
  const MatrixI32 seeded = num::gemm_int8(a, w, &c);
  for (std::int32_t v : plain.data) EXPECT_EQ(v, std::int32_t{1} << 26);
  for (std::int32_t v : seeded.data) EXPECT_EQ(v, kMin + (1 << 26) - 6);  // wrapped
  EXPECT_TRUE(SameMatrix(seeded, naive_gemm_int8(a, w, &c)));
}

// Sums that wrap without any seed: 2^14 (2^17 + 1) = 2^31 + 2^14 and -16256 * 196608 < -2^31.
TEST(QuantGemm, SumWrapsAtDeepK) {
  constexpr std::size_t kDepth = (std::size_t{1} << 17) + 1;
  const MatrixI8 a(1, kDepth, std::int8_t{-128});
  const MatrixI8 w(kDepth, 1, std::int8_t{-128});
  EXPECT_EQ(num::gemm_int8(a, w).at(0, 0), kMin + (1 << 14));
  const MatrixI32 c(1, 1, -(1 << 14) - 1);
  EXPECT_EQ(num::gemm_int8(a, w, &c).at(0, 0), kMax);  // the seed wraps it back

  constexpr std::size_t kDeeper = (std::size_t{1} << 17) + (std::size_t{1} << 16);
  const MatrixI8 a2(1, kDeeper, std::int8_t{-128});
  const MatrixI8 w2(kDeeper, 1, std::int8_t{127});
  const std::int64_t exact = -16256 * static_cast<std::int64_t>(kDeeper);
  EXPECT_EQ(num::gemm_int8(a2, w2).at(0, 0),
            static_cast<std::int32_t>(exact + (std::int64_t{1} << 32)));
  EXPECT_TRUE(SameMatrix(num::gemm_int8(a2, w2), naive_gemm_int8(a2, w2, nullptr)));
}

TEST(QuantGemm, RejectsShapeMismatch) {
  const MatrixI8 a(2, 3);
  const MatrixI8 w(4, 2);
  EXPECT_THROW(num::gemm_int8(a, w), std::invalid_argument);
  const MatrixI8 w3(3, 2);
  const MatrixI32 c(2, 3);
  EXPECT_THROW(num::gemm_int8(a, w3, &c), std::invalid_argument);
  EXPECT_NO_THROW(num::gemm_int8(a, w3));
}

// ---- SRDHM --------------------------------------------------------------------------------------

TEST(QuantSrdhm, KnownValues) {
  using num::saturating_rounding_doubling_high_mul;
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, kMin), kMax);  // the one saturation
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, kMax), kMin + 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMax, kMax), kMax - 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, 1), -1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, -1), 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kTwo30, kTwo30), 1 << 29);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(0, kMin), 0);
  // Ties go toward +infinity: 0.5 -> 1, -0.5 -> 0, 1.5 -> 2, -1.5 -> -1.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kTwo30, 1), 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-kTwo30, 1), 0);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(3 << 29, 2), 2);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-(3 << 29), 2), -1);
  // Just off the ties, to nearest.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kTwo30 - 1, 1), 0);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-kTwo30 - 1, 1), -1);
}

TEST(QuantSrdhm, StructuredAndRandomAgainstOracle) {
  std::mt19937_64 rng(test_seed());
  const std::vector<std::int32_t> values = structured_int32();
  Mismatches mismatches;
  long checked = 0;
  auto check = [&](std::int32_t a, std::int32_t b) {
    const std::int32_t got = num::saturating_rounding_doubling_high_mul(a, b);
    const std::int32_t want = oracle::srdhm(a, b);
    mismatches.expect(got == want, [&] {
      return "SRDHM(" + std::to_string(a) + ", " + std::to_string(b) +
             ") = " + std::to_string(got) + ", oracle " + std::to_string(want);
    });
    ++checked;
  };
  for (std::int32_t a : values) {
    for (std::int32_t b : values) check(a, b);
  }
  for (int n = 0; n < 1000000; ++n) {
    check((n & 1) != 0 ? random_int32(rng) : random_scaled_int32(rng), random_int32(rng));
  }
  std::cout << "[ checked  ] " << checked << " SRDHM pairs\n";
  EXPECT_EQ(mismatches.count(), 0);
}

// Exact halves of both signs, built for random b and for Q-REQ's multipliers: ties go up.
TEST(QuantSrdhm, ExactTies) {
  std::mt19937_64 rng(test_seed());
  std::vector<std::int32_t> partners = test_multipliers(rng, 64);
  for (int n = 0; n < 2000; ++n) partners.push_back(random_int32(rng));
  for (int t = 0; t <= 30; ++t) partners.push_back(static_cast<std::int32_t>(std::int64_t{1} << t));
  Mismatches mismatches;
  long positive = 0;
  long negative = 0;
  for (std::int32_t b : partners) {
    if (b == 0 || b == kMin) continue;  // no exact half exists
    for (int n = 0; n < 64; ++n) {
      const std::int32_t a = srdhm_tie_partner(b, static_cast<std::uint32_t>(rng()));
      ASSERT_TRUE(oracle::srdhm_is_tie(a, b)) << a << " * " << b;
      const std::int64_t p = std::int64_t{a} * b;
      // Halfway: floor(p / 2^31) + 1 is the tie rounded up.
      const std::int64_t up = (p - (std::int64_t{1} << 30)) / (std::int64_t{1} << 31) + 1;
      const std::int32_t got = num::saturating_rounding_doubling_high_mul(a, b);
      mismatches.expect(got == oracle::srdhm(a, b) && got == up, [&] {
        return "tie SRDHM(" + std::to_string(a) + ", " + std::to_string(b) +
               ") = " + std::to_string(got) + ", expected " + std::to_string(up);
      });
      ++(p >= 0 ? positive : negative);
    }
  }
  std::cout << "[ ties     ] " << positive << " positive, " << negative << " negative\n";
  EXPECT_GT(positive, 10000);
  EXPECT_GT(negative, 10000);
  EXPECT_EQ(mismatches.count(), 0);
}

// ---- RDBP ---------------------------------------------------------------------------------------

TEST(QuantRdbp, KnownValues) {
  using num::rounding_divide_by_pot;
  // Ties away from zero: 2.5 -> 3, -2.5 -> -3, 0.5 -> 1, -0.5 -> -1.
  EXPECT_EQ(rounding_divide_by_pot(5, 1), 3);
  EXPECT_EQ(rounding_divide_by_pot(-5, 1), -3);
  EXPECT_EQ(rounding_divide_by_pot(1, 1), 1);
  EXPECT_EQ(rounding_divide_by_pot(-1, 1), -1);
  EXPECT_EQ(rounding_divide_by_pot(-4, 1), -2);
  EXPECT_EQ(rounding_divide_by_pot(11, 2), 3);  // 2.75
  EXPECT_EQ(rounding_divide_by_pot(-11, 2), -3);
  EXPECT_EQ(rounding_divide_by_pot(-9, 2), -2);  // -2.25
  EXPECT_EQ(rounding_divide_by_pot(kMin, 31), -1);
  EXPECT_EQ(rounding_divide_by_pot(kMax, 31), 1);
  EXPECT_EQ(rounding_divide_by_pot(kTwo30, 31), 1);    // 0.5
  EXPECT_EQ(rounding_divide_by_pot(-kTwo30, 31), -1);  // -0.5
  EXPECT_EQ(rounding_divide_by_pot(kTwo30 - 1, 31), 0);
  EXPECT_EQ(rounding_divide_by_pot(kMin, 0), kMin);
  EXPECT_EQ(rounding_divide_by_pot(kMax, 1), kTwo30);  // 2^30 - 0.5 rounds up without overflow
  EXPECT_THROW(rounding_divide_by_pot(1, -1), std::invalid_argument);
  EXPECT_THROW(rounding_divide_by_pot(1, 32), std::invalid_argument);
}

// Every exponent: structured and random x, and exact halves of both signs.
TEST(QuantRdbp, EveryExponentAgainstOracle) {
  std::mt19937_64 rng(test_seed());
  const std::vector<std::int32_t> values = structured_int32();
  Mismatches mismatches;
  long ties = 0;
  auto check = [&](std::int32_t x, int e) {
    const std::int32_t got = num::rounding_divide_by_pot(x, e);
    const std::int32_t want = oracle::rdbp(x, e);
    mismatches.expect(got == want, [&] {
      return "RDBP(" + std::to_string(x) + ", " + std::to_string(e) + ") = " + std::to_string(got) +
             ", oracle " + std::to_string(want);
    });
  };
  for (int e = 0; e <= 31; ++e) {
    for (std::int32_t x : values) check(x, e);
    for (int n = 0; n < 20000; ++n)
      check((n & 1) != 0 ? random_int32(rng) : random_scaled_int32(rng), e);
    if (e == 0) continue;
    // x = k 2^e + 2^(e-1) for k in [-2^(31-e), 2^(31-e) - 1]: the whole int32 range.
    const std::int64_t k_max = (std::int64_t{1} << (31 - e)) - 1;
    for (std::int64_t k :
         {-k_max - 1, -k_max, std::int64_t{-1}, std::int64_t{0}, k_max - 1, k_max}) {
      for (int n = 0; n < 100; ++n) {
        const std::int64_t kk = n == 0 ? k : uniform(rng, -k_max - 1, k_max);
        const std::int64_t x64 = kk * (std::int64_t{1} << e) + (std::int64_t{1} << (e - 1));
        const auto x = static_cast<std::int32_t>(x64);
        ASSERT_TRUE(oracle::rdbp_is_tie(x, e)) << x << " / 2^" << e;
        check(x, e);
        // Away from zero: k + 1 for x > 0, k for x < 0.
        EXPECT_EQ(num::rounding_divide_by_pot(x, e), x > 0 ? kk + 1 : kk) << x << " / 2^" << e;
        ++ties;
      }
    }
  }
  std::cout << "[ ties     ] " << ties << " RDBP ties\n";
  EXPECT_EQ(mismatches.count(), 0);
}

// ---- Q-REQ: the multiply and the whole requantisation -------------------------------------------

// Every shift from -31 to 30 x Q-REQ's limits of M and random M x structured and random x.
TEST(QuantRequant, MultiplyEveryShiftAndMultiplier) {
  std::mt19937_64 rng(test_seed());
  const std::vector<std::int32_t> values = structured_int32();
  const std::vector<std::int32_t> multipliers = test_multipliers(rng, 14);
  Mismatches mismatches;
  long checked = 0;
  for (int s = -31; s <= 30; ++s) {
    for (std::int32_t m : multipliers) {
      for (std::int32_t x : values) check_multiply(x, m, s, mismatches);
      for (int n = 0; n < 2000; ++n) {
        check_multiply((n & 1) != 0 ? random_int32(rng) : random_scaled_int32(rng), m, s,
                       mismatches);
      }
      checked += static_cast<long>(values.size()) + 2000;
    }
  }
  std::cout << "[ checked  ] " << checked << " multiplies\n";
  EXPECT_EQ(mismatches.count(), 0);
}

// x whose shifted value makes an exact half in SRDHM, for every shift where one exists
// (s <= 30 - trailing zeros of M; every s <= 0).
TEST(QuantRequant, SrdhmTiesThroughMultiply) {
  std::mt19937_64 rng(test_seed());
  const std::vector<std::int32_t> multipliers = test_multipliers(rng, 26);
  Mismatches mismatches;
  long ties = 0;
  for (std::int32_t m : multipliers) {
    if (m == 0) continue;
    for (int s = -31; s <= 30 - trailing_zeros(m); ++s) {
      for (int n = 0; n < 100; ++n) {
        const std::int32_t shifted = srdhm_tie_partner(m, static_cast<std::uint32_t>(rng()));
        const int left = std::max(s, 0);
        // Any high bits: the left shift wraps them away.
        const std::uint64_t x_bits =
            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(shifted)) >> left) |
            (left > 0 ? rng() << (32 - left) : 0);
        const std::int32_t x = from_u32(static_cast<std::uint32_t>(x_bits));
        ASSERT_EQ(oracle::wrap32(oracle::int128{x} << left), shifted);
        ASSERT_TRUE(oracle::srdhm_is_tie(shifted, m));
        check_multiply(x, m, s, mismatches);
        ++ties;
      }
    }
  }
  std::cout << "[ ties     ] " << ties << " SRDHM ties through the multiply\n";
  EXPECT_EQ(mismatches.count(), 0);
}

// x whose SRDHM result y0 is an exact half for RDBP, for every right shift 1..31: y0 is built,
// then an x with SRDHM(x, M) = y0 found next to y0 2^31 / M (SRDHM steps by M / 2^31 < 1 in x).
TEST(QuantRequant, RdbpTiesThroughMultiply) {
  std::mt19937_64 rng(test_seed());
  const std::vector<std::int32_t> multipliers = test_multipliers(rng, 26);
  Mismatches mismatches;
  long ties = 0;
  for (std::int32_t m : multipliers) {
    if (m == 0) continue;
    for (int e = 1; e <= 31; ++e) {
      const std::int64_t reach = m >> 1;  // |y0| <= M / 2 is reachable from an int32 x
      for (int n = 0; n < 100; ++n) {
        const std::int64_t k_lo = -((reach + (std::int64_t{1} << (e - 1))) >> e);
        const std::int64_t k_hi = (reach - (std::int64_t{1} << (e - 1))) >> e;
        if (k_lo > k_hi) break;
        const std::int64_t k = uniform(rng, k_lo, k_hi);
        const std::int64_t y0 = k * (std::int64_t{1} << e) + (std::int64_t{1} << (e - 1));
        const std::int64_t x0 = (y0 * (std::int64_t{1} << 31)) / m;
        bool found = false;
        for (std::int64_t x = x0 - 2; x <= x0 + 2 && !found; ++x) {
          if (x < kMin || x > kMax) continue;
          const auto x32 = static_cast<std::int32_t>(x);
          if (oracle::srdhm(x32, m) != y0) continue;
          found = true;
          ASSERT_TRUE(oracle::rdbp_is_tie(static_cast<std::int32_t>(y0), e));
          check_multiply(x32, m, -e, mismatches);
          EXPECT_EQ(num::multiply_by_quantized_multiplier(x32, {m, -e}), y0 > 0 ? k + 1 : k);
          ++ties;
        }
        ASSERT_TRUE(found) << "no x with SRDHM(x, " << m << ") = " << y0;
      }
    }
  }
  std::cout << "[ ties     ] " << ties << " RDBP ties through the multiply\n";
  EXPECT_GT(ties, 50000);
  EXPECT_EQ(mismatches.count(), 0);
}

// Left shifts wrap before the multiply: 2 * 2^30 is INT32_MIN, a negative result.
TEST(QuantRequant, LeftShiftWraps) {
  EXPECT_EQ(num::multiply_by_quantized_multiplier(2, {kTwo30, 30}), -kTwo30);
  EXPECT_EQ(num::multiply_by_quantized_multiplier(3, {kTwo30, 30}), -(1 << 29));  // 3 * 2^30
  EXPECT_EQ(num::multiply_by_quantized_multiplier(kTwo30, {kTwo30, 1}), kMin / 2);
  EXPECT_EQ(num::multiply_by_quantized_multiplier(1, {kTwo30, 1}), 1);  // M = 2^30, s = 1 is 1.0
  Mismatches mismatches;
  for (int s = 1; s <= 30; ++s) {
    for (std::int32_t x : structured_int32()) check_multiply(x, kMax, s, mismatches);
  }
  EXPECT_EQ(mismatches.count(), 0);
}

// y + zo leaves int32 on both sides before the clamp; a wrapping add would clamp the wrong way.
TEST(QuantRequant, ZeroPointAddedBeyondInt32) {
  // y = SRDHM(INT32_MAX, INT32_MAX) = 2^31 - 2, and 2^31 - 2 + 127 > INT32_MAX.
  ASSERT_EQ(num::multiply_by_quantized_multiplier(kMax, {kMax, 0}), kMax - 1);
  RequantCase high{kMax, {0, {kMax, 0}, 127, -128, 127}};
  EXPECT_EQ(num::requantize(high.sum, high.p), 127);
  EXPECT_EQ(oracle_requantize(high), 127);
  // x = 2 * 2^30 wraps to INT32_MIN, y = -(2^31 - 1), and y - 128 < INT32_MIN.
  ASSERT_EQ(num::multiply_by_quantized_multiplier(2, {kMax, 30}), kMin + 1);
  RequantCase low{1, {1, {kMax, 30}, -128, -128, 127}};
  EXPECT_EQ(num::requantize(low.sum, low.p), -128);
  EXPECT_EQ(oracle_requantize(low), -128);
  // The bias wraps too: INT32_MAX + 1 is INT32_MIN, and half of it is -2^30, not 2^30.
  RequantCase biased{kMax, {1, {kTwo30, 0}, 0, -128, 127}};
  EXPECT_EQ(num::requantize(biased.sum, biased.p), -128);
  EXPECT_EQ(oracle_requantize(biased), -128);
}

TEST(QuantRequant, Clamps) {
  const QuantizedMultiplier one{kTwo30, 1};  // y = x
  RequantParams p{0, one, 3, -5, 20};
  EXPECT_EQ(num::requantize(10, p), 13);
  EXPECT_EQ(num::requantize(17, p), 20);
  EXPECT_EQ(num::requantize(18, p), 20);
  EXPECT_EQ(num::requantize(100, p), 20);
  EXPECT_EQ(num::requantize(-7, p), -4);
  EXPECT_EQ(num::requantize(-8, p), -5);
  EXPECT_EQ(num::requantize(-(1 << 29), p), -5);
  EXPECT_EQ(num::requantize(1 << 29, p), 20);
  // s = 1 doubles x first, with a wrap: 2 INT32_MIN is 0 and 2 INT32_MAX is -2 (y = -1).
  EXPECT_EQ(num::requantize(kMin, p), 3);
  EXPECT_EQ(num::requantize(kMax, p), 2);
  p.bias = 7;
  EXPECT_EQ(num::requantize(10, p), 20);
  EXPECT_EQ(num::requantize(-14, p), -4);
  // M = 0: the output is the zero point, clamped.
  EXPECT_EQ(num::requantize(kMax, {0, {0, 0}, -7, -128, 127}), -7);
  EXPECT_EQ(num::requantize(kMax, {0, {0, 0}, -7, 0, 127}), 0);
  // Full range and a single point.
  EXPECT_EQ(num::requantize(1000, {0, one, 0, -128, 127}), 127);
  EXPECT_EQ(num::requantize(-1000, {0, one, 0, -128, 127}), -128);
  EXPECT_EQ(num::requantize(0, {0, one, 0, 42, 42}), 42);
}

TEST(QuantRequant, ClampBoundsForActivations) {
  using num::clamp_bounds;
  using num::relu6_quantized_six;
  EXPECT_EQ(clamp_bounds(QuantActivation::kNone, 17, 0.1), std::make_pair(-128, 127));
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu, -128, 0.1), std::make_pair(-128, 127));
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu, 5, 0.1), std::make_pair(5, 127));
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu, 127, 0.1), std::make_pair(127, 127));
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu6, -128, 6.0 / 255.0), std::make_pair(-128, 127));
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu6, -10, 0.05), std::make_pair(-10, 110));
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu6, 100, 0.05), std::make_pair(100, 127));
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu6, 3, 100.0), std::make_pair(3, 3));  // q6 = 0
  EXPECT_EQ(clamp_bounds(QuantActivation::kRelu6, 0, 1e-300), std::make_pair(0, 127));
  EXPECT_THROW(clamp_bounds(QuantActivation::kNone, 128, 0.1), std::invalid_argument);
  EXPECT_THROW(clamp_bounds(QuantActivation::kRelu, -129, 0.1), std::invalid_argument);
  EXPECT_THROW(clamp_bounds(QuantActivation::kRelu6, 0, 0.0), std::invalid_argument);

  EXPECT_EQ(relu6_quantized_six(6.0 / 255.0), 255);
  EXPECT_EQ(relu6_quantized_six(0.05), 120);
  EXPECT_EQ(relu6_quantized_six(12.0), 1);  // 0.5: half away from zero (to even would give 0)
  EXPECT_EQ(relu6_quantized_six(4.0), 2);   // 1.5
  EXPECT_EQ(relu6_quantized_six(48.0), 0);  // 0.125
  EXPECT_EQ(relu6_quantized_six(1e-300), std::numeric_limits<int>::max());
  EXPECT_EQ(relu6_quantized_six(std::numeric_limits<double>::denorm_min()),
            std::numeric_limits<int>::max());
  for (double bad : {0.0, -0.0, -1.0, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(relu6_quantized_six(bad), std::invalid_argument) << bad;
  }
}

TEST(QuantRequant, RejectsInvalidParameters) {
  using num::multiply_by_quantized_multiplier;
  using num::requantize;
  using num::valid_quantized_multiplier;
  EXPECT_TRUE(valid_quantized_multiplier({0, 0}));
  EXPECT_TRUE(valid_quantized_multiplier({kTwo30, -31}));
  EXPECT_TRUE(valid_quantized_multiplier({kMax, 30}));
  EXPECT_FALSE(valid_quantized_multiplier({kTwo30 - 1, 0}));
  EXPECT_FALSE(valid_quantized_multiplier({-kTwo30, 0}));
  EXPECT_FALSE(valid_quantized_multiplier({kMin, 0}));
  EXPECT_FALSE(valid_quantized_multiplier({kTwo30, 31}));
  EXPECT_FALSE(valid_quantized_multiplier({kTwo30, -32}));
  EXPECT_THROW(multiply_by_quantized_multiplier(1, {kTwo30 - 1, 0}), std::invalid_argument);
  EXPECT_THROW(multiply_by_quantized_multiplier(1, {kTwo30, 31}), std::invalid_argument);
  const QuantizedMultiplier one{kTwo30, 1};
  EXPECT_THROW(requantize(0, {0, {5, 0}, 0, -128, 127}), std::invalid_argument);
  EXPECT_THROW(requantize(0, {0, one, 128, -128, 127}), std::invalid_argument);
  EXPECT_THROW(requantize(0, {0, one, -129, -128, 127}), std::invalid_argument);
  EXPECT_THROW(requantize(0, {0, one, 0, -129, 127}), std::invalid_argument);
  EXPECT_THROW(requantize(0, {0, one, 0, -128, 128}), std::invalid_argument);
  EXPECT_THROW(requantize(0, {0, one, 0, 5, 4}), std::invalid_argument);
}

constexpr long kQuickRandomCases = 1000000;

TEST(QuantRequant, RandomAgainstOracle) {
  std::mt19937_64 rng(test_seed());
  Mismatches mismatches;
  long unclamped = 0;
  for (long n = 0; n < kQuickRandomCases; ++n) {
    const RequantCase c = random_requant_case(rng);
    check_requantize(c, mismatches);
    const int out = oracle_requantize(c);
    unclamped += out > c.p.lo && out < c.p.hi;
  }
  std::cout << "[ checked  ] " << kQuickRandomCases << " requantisations, " << unclamped
            << " strictly inside their clamp\n";
  EXPECT_GT(unclamped, kQuickRandomCases / 20);
  EXPECT_EQ(mismatches.count(), 0);
}

// ---- Q-SCALE ------------------------------------------------------------------------------------

::testing::AssertionResult Quantizes(double r, std::int32_t multiplier, int shift) {
  const QuantizedMultiplier q = num::quantize_multiplier(r);
  if (q.multiplier == multiplier && q.shift == shift) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "quantize_multiplier(" << r << ") = (" << q.multiplier << ", " << q.shift
         << "), expected (" << multiplier << ", " << shift << ")";
}

TEST(QuantScale, KnownValues) {
  EXPECT_TRUE(Quantizes(0.5, kTwo30, 0));
  EXPECT_TRUE(Quantizes(1.0, kTwo30, 1));
  EXPECT_TRUE(Quantizes(0.75, 3 << 29, 0));
  EXPECT_TRUE(Quantizes(0.1, 1717986918, -3));                  // 0.8 * 2^31 = 1717986918.4
  EXPECT_TRUE(Quantizes(std::nextafter(1.0, 0.0), kTwo30, 1));  // rounds to 2^31: renormalised
  EXPECT_TRUE(Quantizes(0.5 + std::ldexp(1.0, -32), kTwo30 + 1, 0));  // 2^30 + 0.5: away from 0
  EXPECT_TRUE(Quantizes(0.5 + std::ldexp(3.0, -32), kTwo30 + 2, 0));  // 2^30 + 1.5
  EXPECT_TRUE(Quantizes(0.0, 0, 0));
  EXPECT_TRUE(Quantizes(-0.0, 0, 0));
  EXPECT_TRUE(Quantizes(std::ldexp(1.0, 29), kTwo30, 30));
}

// The ends of the range, exactly where the contract puts them.
TEST(QuantScale, Boundaries) {
  // The largest accepted r: 2 r rounds below 2^31 at shift 30.
  const double refused = std::ldexp(1.0, 30) - 0.25;  // 2 r = 2^31 - 0.5 rounds up: s = 31
  EXPECT_THROW(num::quantize_multiplier(refused), std::invalid_argument);
  EXPECT_TRUE(Quantizes(std::nextafter(refused, 0.0), kMax, 30));
  EXPECT_THROW(num::quantize_multiplier(std::ldexp(1.0, 30)), std::invalid_argument);
  EXPECT_THROW(num::quantize_multiplier(std::numeric_limits<double>::max()), std::invalid_argument);
  // The smallest: shift -31. frexp's e = -32 survives only when f * 2^31 rounds to 2^31.
  EXPECT_TRUE(Quantizes(std::ldexp(1.0, -31), kTwo30, -30));
  EXPECT_TRUE(Quantizes(std::ldexp(1.0, -32), kTwo30, -31));
  EXPECT_TRUE(Quantizes(std::nextafter(std::ldexp(1.0, -32), 0.0), kTwo30, -31));
  const double last = std::ldexp(1.0, -32) - std::ldexp(1.0, -64);  // f * 2^31 = 2^31 - 0.5
  EXPECT_TRUE(Quantizes(last, kTwo30, -31));
  EXPECT_TRUE(Quantizes(std::nextafter(last, 0.0), 0, 0));  // 2^31 - 1 at e = -32: below -31
  EXPECT_TRUE(Quantizes(std::ldexp(1.0, -33), 0, 0));
  EXPECT_TRUE(Quantizes(std::numeric_limits<double>::denorm_min(), 0, 0));
}

TEST(QuantScale, RejectsNegativeAndNonFinite) {
  for (double bad :
       {-1e-300, -0.5, -std::numeric_limits<double>::denorm_min(),
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(num::quantize_multiplier(bad), std::invalid_argument) << bad;
  }
}

// M 2^(s - 31) is within half a unit of M's last place of r, M is normalised (valid), and an
// exact half rounds away from zero.
TEST(QuantScale, RoundTripWithinHalfUnit) {
  std::mt19937_64 rng(test_seed());
  long checked = 0;
  for (int n = 0; n < 200000; ++n) {
    const double f = 0.5 + std::ldexp(static_cast<double>(rng() >> 12), -53);  // [0.5, 1)
    const double r = std::ldexp(f, static_cast<int>(uniform(rng, -40, 31)));
    if (r >= std::ldexp(1.0, 30) - 0.25) {
      EXPECT_THROW(num::quantize_multiplier(r), std::invalid_argument) << r;
      continue;
    }
    const QuantizedMultiplier q = num::quantize_multiplier(r);
    ASSERT_TRUE(num::valid_quantized_multiplier(q)) << r;
    if (q.multiplier == 0) {
      EXPECT_LT(r, std::ldexp(1.0, -32)) << r;
      continue;
    }
    // Exact: M 2^(s - 31) and r are within a factor of 2 of each other (Sterbenz).
    const double error = std::ldexp(static_cast<double>(q.multiplier), q.shift - 31) - r;
    EXPECT_LE(std::fabs(error), std::ldexp(1.0, q.shift - 32)) << r;
    ++checked;
  }
  // Exact halves: r = (2n + 1) 2^(e - 32), so f * 2^31 = n + 1/2 rounds to n + 1.
  for (int n = 0; n < 20000; ++n) {
    const std::int64_t m = uniform(rng, kTwo30, kMax - 1);
    const int e = static_cast<int>(uniform(rng, -31, 30));
    const double r = std::ldexp(static_cast<double>(2 * m + 1), e - 32);
    EXPECT_TRUE(Quantizes(r, static_cast<std::int32_t>(m + 1), e));
    ++checked;
  }
  std::cout << "[ checked  ] " << checked << " multipliers\n";
}

// ---- Q-ZP ---------------------------------------------------------------------------------------

// sum of a * w + b' equals sum of (a - za) * w + b modulo 2^32, evaluated directly in int64.
TEST(QuantZeroPoint, FoldMatchesDirectEvaluation) {
  std::mt19937_64 rng(test_seed());
  for (int trial = 0; trial < 60; ++trial) {
    const auto rows = static_cast<std::size_t>(uniform(rng, 1, 8));
    const auto depth = static_cast<std::size_t>(uniform(rng, 1, 2000));
    const auto cols = static_cast<std::size_t>(uniform(rng, 1, 16));
    const int za = trial == 0 ? -128 : trial == 1 ? 127 : static_cast<int>(uniform(rng, -128, 127));
    const MatrixI8 a = random_matrix_i8(rng, rows, depth);
    const MatrixI8 w = random_matrix_i8(rng, depth, cols);
    std::vector<std::int32_t> bias(cols);
    for (auto& b : bias) b = (rng() & 1) != 0 ? random_int32(rng) : random_scaled_int32(rng);
    const std::vector<std::int32_t> folded = num::fold_input_zero_point(bias, za, w);
    const MatrixI32 sums = num::gemm_int8(a, w);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        std::int64_t direct = bias[j];
        for (std::size_t k = 0; k < depth; ++k)
          direct += (std::int64_t{a.at(i, k)} - za) * w.at(k, j);
        const std::int32_t via_fold = oracle::wrap32(oracle::int128{sums.at(i, j)} + folded[j]);
        ASSERT_EQ(via_fold, oracle::wrap32(direct))
            << "trial " << trial << ", (" << i << ", " << j << "), za = " << za;
      }
    }
  }
}

// za * sum of w beyond int32: -128 * -128 * (2^17 + 1) = 2^31 + 2^14, so b' = b - 2^31 - 2^14
// modulo 2^32.
TEST(QuantZeroPoint, FoldWraps) {
  constexpr std::size_t kDepth = (std::size_t{1} << 17) + 1;
  const MatrixI8 w(kDepth, 1, std::int8_t{-128});
  EXPECT_EQ(num::fold_input_zero_point({0}, -128, w)[0], kMax - (1 << 14) + 1);
  EXPECT_EQ(num::fold_input_zero_point({kMin}, -128, w)[0], -(1 << 14));
  EXPECT_EQ(num::fold_input_zero_point({kMax}, 0, w)[0], kMax);  // za = 0 changes nothing
}

TEST(QuantZeroPoint, RejectsBiasOfWrongLength) {
  const MatrixI8 w(3, 2);
  EXPECT_THROW(num::fold_input_zero_point({1, 2, 3}, 0, w), std::invalid_argument);
  EXPECT_NO_THROW(num::fold_input_zero_point({1, 2}, 0, w));
}

// ---- Q-ADD: TensorFlow Lite's int8 ADD ---------------------------------------------------------

// Q-ADD from the oracle's exact SRDHM, RDBP and Q-REQ.
int oracle_add(int a, int b, const num::QuantAddParams& p) {
  const auto rescaled = [](int q, int zero_point, num::QuantizedMultiplier m) {
    return oracle::multiply_by_quantized_multiplier((q - zero_point) * (1 << 20), m.multiplier,
                                                    m.shift);
  };
  const std::int32_t sum = rescaled(a, p.a_zero_point, p.a) + rescaled(b, p.b_zero_point, p.b);
  return oracle::requantize(sum, 0, p.out.multiplier, p.out.shift, p.zero_point, p.lo, p.hi);
}

TEST(QuantAdd, ParametersAreTensorFlowLites) {
  // Equal input scales: each input takes half of twice the larger, 2^30 with shift 0.
  const num::QuantAddParams same =
      num::quant_add_params(0.5, 3, 0.5, -4, 0.25, 7, num::QuantActivation::kNone);
  EXPECT_EQ(same.a.multiplier, 1 << 30);
  EXPECT_EQ(same.a.shift, 0);
  EXPECT_EQ(same.b.multiplier, 1 << 30);
  EXPECT_EQ(same.b.shift, 0);
  // The output: 2 * 0.5 / (2^20 * 0.25) = 2^-18, M = 2^30 with shift -17.
  EXPECT_EQ(same.out.multiplier, 1 << 30);
  EXPECT_EQ(same.out.shift, -17);
  EXPECT_EQ(same.a_zero_point, 3);
  EXPECT_EQ(same.b_zero_point, -4);
  EXPECT_EQ(same.zero_point, 7);
  EXPECT_EQ(same.lo, -128);
  EXPECT_EQ(same.hi, 127);
  // b at a quarter of a's scale: 0.125, M = 2^30, shift -2; relu's clamp from the zero point.
  const num::QuantAddParams quarter =
      num::quant_add_params(1.0, 0, 0.25, 0, 1.0, -20, num::QuantActivation::kRelu);
  EXPECT_EQ(quarter.b.multiplier, 1 << 30);
  EXPECT_EQ(quarter.b.shift, -2);
  EXPECT_EQ(quarter.lo, -20);
  EXPECT_THROW(num::quant_add_params(0.0, 0, 1.0, 0, 1.0, 0, num::QuantActivation::kNone),
               std::invalid_argument);
  EXPECT_THROW(num::quant_add_params(1.0, 0, 1.0, 0, std::nan(""), 0, num::QuantActivation::kNone),
               std::invalid_argument);
  EXPECT_THROW(num::quant_add_params(1.0, 128, 1.0, 0, 1.0, 0, num::QuantActivation::kNone),
               std::invalid_argument);
}

// Every pair of int8 values for random scales, zero points and activations: the oracle's bits,
// and the real sum within half an output step plus the roundings' errors (unless clamped).
TEST(QuantAdd, EveryPairAgainstOracleAndRealSum) {
  std::mt19937_64 rng(test_seed());
  std::uniform_real_distribution<double> log_scale(-8, 0);
  std::uniform_int_distribution<int> zero_point(-128, 127);
  Mismatches mismatches;
  long unclamped = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const double sa = std::exp2(log_scale(rng)), sb = std::exp2(log_scale(rng));
    const double sy = (sa + sb) * std::exp2(std::uniform_real_distribution<double>(-1, 1)(rng));
    const int za = zero_point(rng), zb = zero_point(rng), zy = zero_point(rng);
    const auto act = static_cast<num::QuantActivation>(trial % 3);
    const num::QuantAddParams p = num::quant_add_params(sa, za, sb, zb, sy, zy, act);
    // Each rescaled input rounds twice (SRDHM, then RDBP), within a unit of 2 max(sa, sb) / 2^20
    // each; the output's two roundings within half a step and a sliver.
    const double slack = 0.5 + std::exp2(-10) + 4 * std::max(sa, sb) / sy * std::exp2(-20);
    for (int a = -128; a <= 127; ++a) {
      for (int b = -128; b <= 127; ++b) {
        const int got = num::add_int8(static_cast<std::int8_t>(a), static_cast<std::int8_t>(b), p);
        const int want = oracle_add(a, b, p);
        mismatches.expect(got == want, [&] {
          return "add " + std::to_string(a) + " + " + std::to_string(b) + " = " +
                 std::to_string(got) + ", oracle " + std::to_string(want);
        });
        if (got == p.lo || got == p.hi) continue;
        ++unclamped;
        const double real = (sa * (a - za) + sb * (b - zb)) / sy + zy;
        mismatches.expect(std::fabs(got - real) <= slack, [&] {
          return "add " + std::to_string(a) + " + " + std::to_string(b) + " = " +
                 std::to_string(got) + ", the real sum " + std::to_string(real);
        });
      }
    }
  }
  EXPECT_GT(unclamped, 24 * 65536 / 10);
  EXPECT_EQ(mismatches.count(), 0);
}

TEST(QuantAdd, RejectsParametersOutOfRange) {
  num::QuantAddParams p =
      num::quant_add_params(1.0, 0, 1.0, 0, 1.0, 0, num::QuantActivation::kNone);
  EXPECT_NO_THROW(num::add_int8(1, 2, p));
  p.a_zero_point = -129;
  EXPECT_THROW(num::add_int8(1, 2, p), std::invalid_argument);
  p.a_zero_point = 0;
  p.out.multiplier = 5;  // neither 0 nor in [2^30, 2^31 - 1]
  EXPECT_THROW(num::add_int8(1, 2, p), std::invalid_argument);
}

// ---- Q-MEAN: the mean of int8 values
// -------------------------------------------------------------

// The sum moved up as far as 256 count 2^up <= 2^30 allows (and the multiplier, no lower than
// 2^-31); every sum of `count` int8 values for several counts against the oracle's Q-REQ of it
// and within half a step and a sliver of the real mean.
TEST(QuantMean, SumsMovedUpAndRequantised) {
  EXPECT_EQ(num::quant_mean_params(0.1, 0, 0.1, 0, 1, num::QuantActivation::kNone).up, 22);
  EXPECT_EQ(num::quant_mean_params(0.1, 0, 0.1, 0, 64, num::QuantActivation::kNone).up, 16);
  EXPECT_EQ(num::quant_mean_params(0.1, 0, 0.1, 0, 1 << 22, num::QuantActivation::kNone).up, 0);
  // x_scale / y_scale = 2^-20: the multiplier stops the shift at 11 (2^-31 = 2^-20 2^-11).
  EXPECT_EQ(
      num::quant_mean_params(std::ldexp(1.0, -20), 0, 1.0, 0, 1, num::QuantActivation::kNone).up,
      11);
  Mismatches mismatches;
  for (const std::uint64_t count : {1u, 3u, 4u, 49u, 64u, 1000u}) {
    const num::QuantMeanParams p =
        num::quant_mean_params(0.05, -9, 0.02, 17, count, num::QuantActivation::kRelu);
    for (std::int64_t sum = -128 * std::int64_t(count); sum <= 127 * std::int64_t(count);
         sum += std::max<std::int64_t>(1, std::int64_t(count) / 7)) {
      const int got = num::mean_int8(static_cast<std::int32_t>(sum), p);
      const int want = oracle::requantize(static_cast<std::int32_t>(sum * (1 << p.up)),
                                          p.requant.bias, p.requant.m.multiplier, p.requant.m.shift,
                                          p.requant.zero_point, p.requant.lo, p.requant.hi);
      mismatches.expect(got == want, [&] {
        return "mean of " + std::to_string(count) + " summing to " + std::to_string(sum) + " = " +
               std::to_string(got) + ", oracle " + std::to_string(want);
      });
      const double real = 0.05 * (double(sum) + 9.0 * double(count)) / double(count) / 0.02 + 17;
      if (got == p.requant.lo || got == p.requant.hi) continue;
      mismatches.expect(std::fabs(got - real) <= 0.5 + 1e-5, [&] {
        return "mean of " + std::to_string(count) + " summing to " + std::to_string(sum) + " = " +
               std::to_string(got) + ", the real mean " + std::to_string(real);
      });
    }
  }
  EXPECT_EQ(mismatches.count(), 0);
  EXPECT_THROW(num::quant_mean_params(0.1, 0, 0.1, 0, 0, num::QuantActivation::kNone),
               std::invalid_argument);
  EXPECT_THROW(num::quant_mean_params(0.1, 0, 0.1, 0, (1 << 22) + 1, num::QuantActivation::kNone),
               std::invalid_argument);
  EXPECT_THROW(num::quant_mean_params(0.1, 200, 0.1, 0, 4, num::QuantActivation::kNone),
               std::invalid_argument);
  EXPECT_THROW(num::quant_mean_params(-0.1, 0, 0.1, 0, 4, num::QuantActivation::kNone),
               std::invalid_argument);
}

// ---- RequantLarge: 10^8 random requantisations against the oracle ------------------------------

constexpr long kLargeRandomCases = 100000000;

TEST(RequantLarge, RandomAgainstOracle) {
  std::mt19937_64 rng(test_seed());
  Mismatches mismatches;
  long unclamped = 0;
  const auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < kLargeRandomCases; ++n) {
    const RequantCase c = random_requant_case(rng);
    const int got = num::requantize(c.sum, c.p);
    const int want = oracle_requantize(c);
    mismatches.expect(got == want, [&] {
      return describe(c) + " = " + std::to_string(got) + ", oracle " + std::to_string(want);
    });
    unclamped += want > c.p.lo && want < c.p.hi;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::testing::Test::RecordProperty("cases", std::to_string(kLargeRandomCases));
  std::cout << "[ checked  ] " << kLargeRandomCases << " requantisations (" << unclamped
            << " strictly inside their clamp) in " << seconds << " s\n";
  EXPECT_GT(unclamped, kLargeRandomCases / 20);
  EXPECT_EQ(mismatches.count(), 0);
}

}  // namespace
}  // namespace tpu
