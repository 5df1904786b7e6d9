// The matrix unit in RTL against the reference model (sw/numerics), on every
// compiled array configuration: GEMMs of many shapes, seeded partial sums,
// special values, back-to-back tiles with an exact cycle count, random stalls,
// random initial register values, and live SVA assertions.
#include <gtest/gtest.h>

#include <iostream>

#include "common/test_seed.hpp"
#include "harness/mxu_gemm.hpp"
#include "harness/tile_jobs.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu::harness {
// Test names and failure messages show the configuration as "4x4_m0a0".
void PrintTo(const ArrayConfig& config, std::ostream* os) {
  *os << config.name();
}
}  // namespace tpu::harness

namespace {

using tpu::test::test_seed;

using tpu::harness::ArrayConfig;
using tpu::harness::MxuModel;
using tpu::harness::StallProfile;
using tpu::harness::TileJob;
using tpu::num::MatrixBf16;
using tpu::num::MatrixFp32;
namespace harness = tpu::harness;
namespace oracle = tpu::oracle;
namespace num = tpu::num;

std::string first_difference(const MatrixFp32& got, const MatrixFp32& want) {
  for (std::size_t i = 0; i < want.rows; ++i) {
    for (std::size_t j = 0; j < want.cols; ++j) {
      if (got.at(i, j) != want.at(i, j)) {
        char text[96];
        std::snprintf(text, sizeof text, "(%zu,%zu): got 0x%08x want 0x%08x", i, j, got.at(i, j),
                      want.at(i, j));
        return text;
      }
    }
  }
  return "none";
}

#define EXPECT_SAME_BITS(got, want) \
  EXPECT_TRUE((got).data == (want).data) << "first difference " << first_difference(got, want)

class MxuTest : public ::testing::TestWithParam<ArrayConfig> {
 protected:
  std::unique_ptr<MxuModel> model(std::uint32_t random_init_seed = 1) {
    return harness::make_model(GetParam(), {random_init_seed});
  }
  const ArrayConfig& config() const { return GetParam(); }
};

TEST_P(MxuTest, RandomGemmsOfManyShapesMatchReference) {
  oracle::OperandRng rng(test_seed());
  auto mxu = model();
  const std::size_t r = config().rows, c = config().cols;
  // Edges, exact multiples, and random sizes up to three times the array.
  std::vector<std::array<std::size_t, 3>> shapes = {
      {1, 1, 1}, {1, r, c}, {r, r, c}, {3 * r, 3 * r, 3 * c}, {2, 2 * r + 1, c + 1}, {5, r + 1, 1}};
  for (int i = 0; i < 14; ++i) {
    shapes.push_back(
        {rng.uniform(1, 3 * std::max(r, c)), rng.uniform(1, 3 * r), rng.uniform(1, 3 * c)});
  }
  for (const auto& [m, k, n] : shapes) {
    SCOPED_TRACE("M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n));
    const MatrixBf16 a = oracle::random_bf16_matrix(rng, m, k, 3);
    const MatrixBf16 w = oracle::random_bf16_matrix(rng, k, n, 3);
    EXPECT_SAME_BITS(harness::run_gemm(*mxu, a, w, nullptr), num::gemm(a, w));
  }
}

TEST_P(MxuTest, SeededPartialSumsMatchReference) {
  oracle::OperandRng rng(test_seed() + 1);
  auto mxu = model();
  for (int i = 0; i < 6; ++i) {
    const std::size_t m = rng.uniform(1, 20), k = rng.uniform(1, 3 * config().rows),
                      n = rng.uniform(1, 3 * config().cols);
    const MatrixBf16 a = oracle::random_bf16_matrix(rng, m, k, 5);
    const MatrixBf16 w = oracle::random_bf16_matrix(rng, k, n, 5);
    const MatrixFp32 seed = oracle::random_seed_matrix(rng, m, n);
    EXPECT_SAME_BITS(harness::run_gemm(*mxu, a, w, &seed), num::gemm(a, w, &seed));
  }
}

// A -0 seed must survive K padding: the padding products are -0, the identity.
// K = rows + 1 makes two K tiles, the second padded (on a 1x1 array there is no
// padding and the test checks -0 carried from one K tile to the next).
TEST_P(MxuTest, NegativeZeroSeedSurvivesPadding) {
  auto mxu = model();
  const std::size_t k = config().rows + 1;
  MatrixBf16 a(2, k, 0x8000);  // -0 activations: every product is -0 or +0
  MatrixBf16 w(k, 3, 0x3F80);
  MatrixFp32 seed(2, 3, 0x80000000);
  const MatrixFp32 want = num::gemm(a, w, &seed);
  ASSERT_EQ(want.at(0, 0), 0x80000000u);  // -0 + (-0 * 1) ... stays -0
  EXPECT_SAME_BITS(harness::run_gemm(*mxu, a, w, &seed), want);
}

TEST_P(MxuTest, SpecialValuesMatchReference) {
  oracle::OperandRng rng(test_seed() + 2);
  auto mxu = model();
  for (int i = 0; i < 4; ++i) {
    const std::size_t m = rng.uniform(1, 12), k = rng.uniform(1, 2 * config().rows + 2),
                      n = rng.uniform(1, 2 * config().cols + 2);
    MatrixBf16 a(m, k), w(k, n);
    // Extreme exponents: products overflow to inf or flush to zero.
    for (auto& v : a.data)
      v = rng.uniform(0, 99) < 30 ? rng.bf16() : rng.bf16_with_exponent(1, 254);
    for (auto& v : w.data)
      v = rng.uniform(0, 99) < 30 ? rng.bf16() : rng.bf16_with_exponent(1, 254);
    const MatrixFp32 seed = oracle::random_seed_matrix(rng, m, n);
    EXPECT_SAME_BITS(harness::run_gemm(*mxu, a, w, &seed), num::gemm(a, w, &seed));
  }
}

// Tiles streamed back to back: the cycle count must equal the fill + stream +
// drain formula of docs/architecture.md, so a single bubble fails the test.
TEST_P(MxuTest, BackToBackTilesHaveNoBubble) {
  oracle::OperandRng rng(test_seed() + 3);
  auto mxu = model();
  const ArrayConfig& cfg = config();
  const std::size_t period = cfg.min_tile_period();
  const std::vector<std::size_t> rows_per_tile = {period, period + 3, 2 * period, period, 7};
  const auto tiles = harness::random_independent_tiles(rng, cfg, rows_per_tile);
  const auto streamed = harness::run_stream(*mxu, tiles.jobs);
  for (std::size_t j = 0; j < tiles.jobs.size(); ++j) {
    EXPECT_EQ(streamed.results[j], tiles.expected[j]) << "tile " << j;
  }
  // Every tile but the last has at least `period` rows, so tiles follow each
  // other with no gap: weights, then every row once, then the pipeline drain.
  std::uint64_t total_rows = 0;
  for (std::size_t m : rows_per_tile) total_rows += m;
  EXPECT_EQ(streamed.stats.cycles, cfg.rows + total_rows + cfg.latency());
  EXPECT_EQ(streamed.stats.cycles, harness::expected_stream_cycles(cfg, rows_per_tile));
}

// Tiles shorter than the weight load are bound by it, one tile per period.
TEST_P(MxuTest, ShortTilesAreBoundByWeightLoading) {
  oracle::OperandRng rng(test_seed() + 4);
  auto mxu = model();
  const ArrayConfig& cfg = config();
  const std::vector<std::size_t> rows_per_tile = {1, 2, 1, 3};
  const auto tiles = harness::random_independent_tiles(rng, cfg, rows_per_tile);
  const auto streamed = harness::run_stream(*mxu, tiles.jobs);
  for (std::size_t j = 0; j < tiles.jobs.size(); ++j) {
    EXPECT_EQ(streamed.results[j], tiles.expected[j]) << "tile " << j;
  }
  EXPECT_EQ(streamed.stats.cycles, harness::expected_stream_cycles(cfg, rows_per_tile));
}

TEST_P(MxuTest, RandomStallsKeepResultsExact) {
  oracle::OperandRng rng(test_seed() + 5);
  auto mxu = model();
  for (int i = 0; i < 4; ++i) {
    const std::size_t m = rng.uniform(1, 40), k = rng.uniform(1, 3 * config().rows),
                      n = rng.uniform(1, 3 * config().cols);
    const MatrixBf16 a = oracle::random_bf16_matrix(rng, m, k, 3);
    const MatrixBf16 w = oracle::random_bf16_matrix(rng, k, n, 3);
    const MatrixFp32 seed = oracle::random_seed_matrix(rng, m, n);
    StallProfile stalls;
    stalls.weight_gap = 0.1 * (i + 1);
    stalls.act_gap = 0.15 * (i + 1);
    stalls.seed_gap = 0.05 * (i + 1);
    stalls.result_block = 0.1 * (i + 1);
    stalls.seed = rng.uniform(1, 1u << 30);
    EXPECT_SAME_BITS(harness::run_gemm(*mxu, a, w, &seed, stalls), num::gemm(a, w, &seed));
  }
}

// Registers start from random values (--x-initial unique); reset must make the
// result independent of them.
TEST_P(MxuTest, ResultsDoNotDependOnInitialRegisterValues) {
  oracle::OperandRng rng(test_seed() + 6);
  const MatrixBf16 a = oracle::random_bf16_matrix(rng, 9, 2 * config().rows + 1, 3);
  const MatrixBf16 w = oracle::random_bf16_matrix(rng, 2 * config().rows + 1, config().cols + 2, 3);
  const MatrixFp32 want = num::gemm(a, w);
  for (std::uint32_t init = 1; init <= 4; ++init) {
    auto mxu = model(init * 7919u);
    EXPECT_SAME_BITS(harness::run_gemm(*mxu, a, w, nullptr), want);
  }
}

std::string config_name(const ::testing::TestParamInfo<ArrayConfig>& info) {
  return info.param.name();
}

INSTANTIATE_TEST_SUITE_P(Arrays, MxuTest, ::testing::ValuesIn(harness::compiled_configs()),
                         config_name);

// N-MAC is unfused: on a 1x1 array with K = 1 the result is add(seed, mul(a, w)),
// which differs from a fused multiply-add exactly when the product overflows or
// is flushed. Expected values worked out by hand (docs/numerics.md).
TEST(MxuUnfusedMac, OverflowAndFlushHappenBeforeTheAdd) {
  struct Case {
    tpu::num::fp32_t seed;
    tpu::num::bf16_t a, w;
    tpu::num::fp32_t unfused, fused;
    const char* what;
  };
  const Case cases[] = {
      {0xFF000000, 0x5F80, 0x5F80, 0x7F800000, 0x7F000000,
       "-2^127 + 2^64*2^64: the product overflows to +inf first"},
      {0x01000000, 0x2000, 0x1FC0, 0x01000000, 0x01300000,
       "2^-125 + 2^-63*1.5*2^-64: the product is flushed first"},
  };
  auto mxu = harness::make_model({1, 1, 0, 0});
  for (const Case& c : cases) {
    MatrixBf16 a(1, 1, c.a), w(1, 1, c.w);
    MatrixFp32 seed(1, 1, c.seed);
    const MatrixFp32 got = harness::run_gemm(*mxu, a, w, &seed);
    EXPECT_EQ(got.at(0, 0), c.unfused) << c.what;
    EXPECT_NE(got.at(0, 0), c.fused) << c.what;
  }
}

// The environment breaks the stream protocol: the assertion must fire.
TEST(MxuAssertions, WithdrawnActivationIsCaught) {
  auto mxu = harness::make_model({4, 4, 0, 0});
  mxu->reset();
  std::vector<tpu::num::bf16_t> row(4, 0x3F80);
  std::vector<tpu::num::fp32_t> seeds(4, 0);
  // No weights loaded, so the activation is not taken; then it is withdrawn.
  mxu->drive_acts(true, row, false);
  mxu->drive_seeds(true, seeds);
  mxu->drive_weights(false, row);
  mxu->drive_res_ready(true);
  mxu->settle();
  ASSERT_FALSE(mxu->act_ready());
  mxu->clock();
  mxu->drive_acts(false, row, false);
  EXPECT_THROW(mxu->clock(), harness::AssertionFailure);
}

TEST(MxuJobs, MalformedJobsAreRejected) {
  auto mxu = harness::make_model({2, 3, 0, 0});
  TileJob bad;
  bad.m = 1;
  bad.weights.assign(5, 0);  // should be 2 x 3
  bad.acts.assign(2, 0);
  bad.seeds.assign(3, 0);
  EXPECT_THROW(harness::run_stream(*mxu, {bad}), std::invalid_argument);
  EXPECT_THROW(harness::make_model({7, 7, 0, 0}), std::invalid_argument);
  const MatrixBf16 a(2, 3), w(4, 2);
  EXPECT_THROW(harness::run_gemm(*mxu, a, w, nullptr), std::invalid_argument);
}

}  // namespace
