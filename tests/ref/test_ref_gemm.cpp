// The reference GEMM (sw/numerics/gemm.cpp) against a naive loop on the host-FPU oracle, against
// itself tiled along K (N-ORDER), and against hand-written bit patterns for seeds and ordering.
// Randomised tests print their seed; TPU_TEST_SEED reproduces a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/test_seed.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu {
namespace {

using tpu::test::test_seed;

using num::bf16_t;
using num::fp32_t;
using num::MatrixBf16;
using num::MatrixFp32;

constexpr int kRandomTrials = 60;
constexpr std::uint64_t kMaxDimension = 50;

std::string hex(fp32_t bits) {
  std::ostringstream out;
  out << "0x" << std::uppercase << std::hex << std::setw(8) << std::setfill('0') << bits;
  return out.str();
}

template <typename T>
::testing::AssertionResult SameMatrix(const num::Matrix<T>& got, const num::Matrix<T>& expected) {
  if (got.rows != expected.rows || got.cols != expected.cols ||
      got.data.size() != expected.data.size()) {
    return ::testing::AssertionFailure() << "shape " << got.rows << "x" << got.cols << ", expected "
                                         << expected.rows << "x" << expected.cols;
  }
  for (std::size_t i = 0; i < got.rows; ++i) {
    for (std::size_t j = 0; j < got.cols; ++j) {
      if (got.at(i, j) != expected.at(i, j)) {
        return ::testing::AssertionFailure()
               << "element (" << i << ", " << j << ") is " << hex(got.at(i, j)) << ", expected "
               << hex(expected.at(i, j));
      }
    }
  }
  return ::testing::AssertionSuccess();
}

MatrixBf16 column_block(const MatrixBf16& m, std::size_t first, std::size_t last) {
  MatrixBf16 block(m.rows, last - first);
  for (std::size_t r = 0; r < m.rows; ++r) {
    for (std::size_t c = first; c < last; ++c) block.at(r, c - first) = m.at(r, c);
  }
  return block;
}

MatrixBf16 row_block(const MatrixBf16& m, std::size_t first, std::size_t last) {
  MatrixBf16 block(last - first, m.cols);
  for (std::size_t r = first; r < last; ++r) {
    for (std::size_t c = 0; c < m.cols; ++c) block.at(r - first, c) = m.at(r, c);
  }
  return block;
}

// N-ORDER spelled out with the host-FPU oracle.
MatrixFp32 oracle_gemm(const MatrixBf16& a, const MatrixBf16& w, const MatrixFp32* seed) {
  MatrixFp32 out(a.rows, w.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < w.cols; ++j) {
      fp32_t sum = seed != nullptr ? oracle::canon_in_fp32(seed->at(i, j)) : 0u;
      for (std::size_t k = 0; k < a.cols; ++k) {
        sum = oracle::add_fp32(sum, oracle::mul_bf16(a.at(i, k), w.at(k, j)));
      }
      out.at(i, j) = sum;
    }
  }
  return out;
}

MatrixBf16 bf16_matrix(std::size_t rows, std::size_t cols, std::initializer_list<bf16_t> values) {
  MatrixBf16 m(rows, cols);
  std::copy(values.begin(), values.end(), m.data.begin());
  return m;
}

MatrixFp32 fp32_matrix(std::size_t rows, std::size_t cols, std::initializer_list<fp32_t> values) {
  MatrixFp32 m(rows, cols);
  std::copy(values.begin(), values.end(), m.data.begin());
  return m;
}

TEST(Matrix, IsRowMajorAndFilled) {
  num::Matrix<int> m(2, 3, 7);
  EXPECT_EQ(m.data.size(), 6u);
  EXPECT_EQ(m.at(1, 2), 7);
  m.at(1, 0) = 42;
  EXPECT_EQ(m.data[3], 42);
}

TEST(GemmDirected, SmallIntegerProduct) {
  // [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]]
  const MatrixBf16 a = bf16_matrix(2, 2, {0x3F80, 0x4000, 0x4040, 0x4080});
  const MatrixBf16 w = bf16_matrix(2, 2, {0x40A0, 0x40C0, 0x40E0, 0x4100});
  const MatrixFp32 expected =
      fp32_matrix(2, 2, {0x41980000u, 0x41B00000u, 0x422C0000u, 0x42480000u});
  EXPECT_TRUE(SameMatrix(num::gemm(a, w), expected));
}

TEST(GemmDirected, FoldsInIncreasingK) {
  // Left fold: (2^24 + 1) rounds to 2^24 (tie to even), then - 2^24 gives +0. Summing in any
  // order that pairs 2^24 with -2^24 first would give 1.
  const MatrixBf16 a = bf16_matrix(1, 3, {0x4B80, 0x3F80, 0xCB80});
  const MatrixBf16 w = bf16_matrix(3, 1, {0x3F80, 0x3F80, 0x3F80});
  EXPECT_TRUE(SameMatrix(num::gemm(a, w), fp32_matrix(1, 1, {0x00000000u})));
}

TEST(GemmSeed, AbsentSeedStartsFromPositiveZero) {
  // (+0) + (-0) = +0; a -0 start would keep -0.
  const MatrixBf16 a = bf16_matrix(1, 1, {0x8000});
  const MatrixBf16 w = bf16_matrix(1, 1, {0x3F80});
  EXPECT_TRUE(SameMatrix(num::gemm(a, w), fp32_matrix(1, 1, {0x00000000u})));
}

TEST(GemmSeed, NegativeZeroSeedIsKept) {
  const MatrixBf16 a = bf16_matrix(1, 1, {0x8000});
  const MatrixBf16 w = bf16_matrix(1, 1, {0x3F80});
  const MatrixFp32 seed = fp32_matrix(1, 1, {0x80000000u});
  EXPECT_TRUE(SameMatrix(num::gemm(a, w, &seed), fp32_matrix(1, 1, {0x80000000u})));
}

TEST(GemmSeed, SubnormalSeedIsZero) {
  // 2^-127 + (-2^-126) would be -2^-127 and flush to -0; with the seed as +0 it is -2^-126.
  const MatrixBf16 a = bf16_matrix(1, 1, {0x8080});
  const MatrixBf16 w = bf16_matrix(1, 1, {0x3F80});
  const MatrixFp32 seed = fp32_matrix(1, 1, {0x00400000u});
  EXPECT_TRUE(SameMatrix(num::gemm(a, w, &seed), fp32_matrix(1, 1, {0x80800000u})));
}

TEST(GemmSeed, SubnormalSeedWithEmptyKIsSignedZero) {
  const MatrixBf16 a(2, 0);
  const MatrixBf16 w(0, 1);
  const MatrixFp32 seed = fp32_matrix(2, 1, {0x80000001u, 0x007FFFFFu});
  EXPECT_TRUE(SameMatrix(num::gemm(a, w, &seed), fp32_matrix(2, 1, {0x80000000u, 0x00000000u})));
  EXPECT_TRUE(SameMatrix(num::gemm(a, w), fp32_matrix(2, 1, {0x00000000u, 0x00000000u})));
}

TEST(GemmSeed, NaNSeedGivesCanonicalNaN) {
  const MatrixBf16 a = bf16_matrix(1, 2, {0x3F80, 0x4000});
  const MatrixBf16 w = bf16_matrix(2, 1, {0x3F80, 0x3F80});
  const MatrixFp32 seed = fp32_matrix(1, 1, {0xFFC12345u});
  EXPECT_TRUE(SameMatrix(num::gemm(a, w, &seed), fp32_matrix(1, 1, {0x7FC00000u})));
}

TEST(GemmShape, InnerDimensionMismatchThrows) {
  const MatrixBf16 a(2, 3);
  const MatrixBf16 w(4, 2);
  try {
    num::gemm(a, w);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("2x3"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("4x2"), std::string::npos) << error.what();
  }
}

TEST(GemmShape, SeedShapeMismatchThrows) {
  const MatrixBf16 a(2, 3);
  const MatrixBf16 w(3, 4);
  const MatrixFp32 wrong_seed(4, 2);
  EXPECT_THROW(num::gemm(a, w, &wrong_seed), std::invalid_argument);
  const MatrixFp32 right_seed(2, 4);
  EXPECT_NO_THROW(num::gemm(a, w, &right_seed));
}

TEST(GemmVsOracle, RandomShapesMatchNaiveOracleLoop) {
  oracle::OperandRng rng(test_seed());
  constexpr std::array<unsigned, 3> kSpecialPercents{0, 2, 10};
  for (int trial = 0; trial < kRandomTrials; ++trial) {
    const std::size_t m = rng.uniform(1, kMaxDimension);
    const std::size_t k = rng.uniform(1, kMaxDimension);
    const std::size_t n = rng.uniform(1, kMaxDimension);
    const unsigned special_percent = kSpecialPercents[trial % kSpecialPercents.size()];
    const MatrixBf16 a = oracle::random_bf16_matrix(rng, m, k, special_percent, 120, 134);
    const MatrixBf16 w = oracle::random_bf16_matrix(rng, k, n, special_percent, 120, 134);
    const MatrixFp32 seed = oracle::random_seed_matrix(rng, m, n, special_percent);
    const bool with_seed = trial % 2 == 1;
    const MatrixFp32* seed_or_null = with_seed ? &seed : nullptr;
    EXPECT_TRUE(SameMatrix(num::gemm(a, w, seed_or_null), oracle_gemm(a, w, seed_or_null)))
        << "trial " << trial << ": " << m << "x" << k << "x" << n << (with_seed ? " seeded" : "");
  }
}

TEST(GemmTiling, ChunkedKEqualsOneShot) {
  // N-ORDER: feeding each K chunk's output as the next chunk's seed gives the same bits.
  oracle::OperandRng rng(test_seed());
  constexpr std::array<unsigned, 3> kSpecialPercents{0, 2, 10};
  for (int trial = 0; trial < kRandomTrials; ++trial) {
    const std::size_t m = rng.uniform(1, kMaxDimension);
    const std::size_t k = rng.uniform(1, kMaxDimension);
    const std::size_t n = rng.uniform(1, kMaxDimension);
    const unsigned special_percent = kSpecialPercents[trial % kSpecialPercents.size()];
    const MatrixBf16 a = oracle::random_bf16_matrix(rng, m, k, special_percent, 120, 134);
    const MatrixBf16 w = oracle::random_bf16_matrix(rng, k, n, special_percent, 120, 134);
    const MatrixFp32 seed = oracle::random_seed_matrix(rng, m, n, special_percent);
    const MatrixFp32* initial_seed = trial % 2 == 1 ? &seed : nullptr;
    const MatrixFp32 one_shot = num::gemm(a, w, initial_seed);
    for (std::size_t tile : {1, 2, 3, 4, 7, 16}) {
      MatrixFp32 partial;
      const MatrixFp32* chunk_seed = initial_seed;
      for (std::size_t first = 0; first < k; first += tile) {
        const std::size_t last = std::min(first + tile, k);
        partial = num::gemm(column_block(a, first, last), row_block(w, first, last), chunk_seed);
        chunk_seed = &partial;
      }
      EXPECT_TRUE(SameMatrix(partial, one_shot))
          << "trial " << trial << ": " << m << "x" << k << "x" << n << ", K tile " << tile;
    }
  }
}

TEST(RoundToBf16, ElementwiseLiterals) {
  const MatrixFp32 m = fp32_matrix(
      2, 3, {0x3FFF8000u, 0x7F7F8000u, 0x807FFFFFu, 0xFFC00001u, 0x3F808000u, 0x3F818000u});
  const MatrixBf16 expected = bf16_matrix(2, 3, {0x4000, 0x7F80, 0x8000, 0x7FC0, 0x3F80, 0x3F82});
  const MatrixBf16 got = num::round_to_bf16(m);
  ASSERT_EQ(got.rows, 2u);
  ASSERT_EQ(got.cols, 3u);
  EXPECT_EQ(got.data, expected.data);
}

TEST(RoundToBf16, MatchesOracleElementwise) {
  oracle::OperandRng rng(test_seed());
  const MatrixFp32 m = oracle::random_seed_matrix(rng, 37, 41, 50);
  const MatrixBf16 got = num::round_to_bf16(m);
  ASSERT_EQ(got.data.size(), m.data.size());
  for (std::size_t n = 0; n < m.data.size(); ++n) {
    EXPECT_EQ(got.data[n], oracle::fp32_to_bf16(m.data[n])) << "input " << hex(m.data[n]);
  }
}

}  // namespace
}  // namespace tpu
