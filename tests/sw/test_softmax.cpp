// Softmax on the vector unit (tpu/softmax.hpp): the plan's program on the functional model gives
// reference_softmax's bits; reference_softmax is within its error bound of the softmax computed
// in double precision; rows shorter, as long as and longer than the array, blocks that do not fit
// the accumulators at once; special values; the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/model.hpp"
#include "tpu/softmax.hpp"

namespace tpu {
namespace {

// Values of a few units around a random offset, as a layer's logits are.
std::vector<num::fp32_t> logits(oracle::OperandRng& rng, std::size_t count) {
  std::vector<num::fp32_t> x(count);
  const double offset = static_cast<double>(rng.uniform(0, 2000)) / 100.0 - 10.0;
  for (num::fp32_t& v : x) {
    const double spread = static_cast<double>(rng.uniform(0, 1'000'000)) / 1e5 - 5.0;
    v = oracle::as_bits(static_cast<float>(offset + spread));
  }
  return x;
}

std::vector<num::fp32_t> run_on_model(const HardwareConfig& config, std::uint32_t rows,
                                      std::uint32_t length, const std::vector<num::fp32_t>& x) {
  const SoftmaxPlan plan = plan_softmax(config, rows, length);
  FunctionalModel model(config, plan.memory_bytes);
  const SoftmaxRun run = execute_softmax(plan, model, x);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  return run.out;
}

TEST(Softmax, ModelGivesTheReferenceBits) {
  oracle::OperandRng rng(test::test_seed());
  const HardwareConfig config = test::small_vector_core();
  // Shorter than a row of the array, as long, and two and a half rows.
  for (const std::uint32_t length : {1u, 3u, 4u, 10u}) {
    for (const std::uint32_t rows : {1u, 5u, 23u}) {  // 23 rows of 10 take three blocks
      SCOPED_TRACE(testing::Message() << rows << " rows of " << length);
      const std::vector<num::fp32_t> x = logits(rng, std::size_t{rows} * length);
      EXPECT_EQ(run_on_model(config, rows, length, x), reference_softmax(config, rows, length, x));
    }
  }
}

TEST(Softmax, BlocksThatFillTheAccumulators) {
  const HardwareConfig config = test::small_vector_core(16);
  const SoftmaxPlan plan = plan_softmax(config, 40, 9);  // 3 tiles, 5 rows each: 2 rows a block
  EXPECT_EQ(plan.tiles, 3u);
  EXPECT_EQ(plan.block_rows, 2u);
  oracle::OperandRng rng(test::test_seed() + 1);
  const std::vector<num::fp32_t> x = logits(rng, 40 * 9);
  EXPECT_EQ(run_on_model(config, 40, 9, x), reference_softmax(config, 40, 9, x));
}

// Against the softmax in double precision: the sub's and the sum's fp32 rounding, exp's and
// recip's approximations (2^-17.6 and 2^-16) and the product's rounding stay within 2^-14
// relative for rows of up to a few hundred values (measured: 2^-15.7 at worst).
TEST(Softmax, ReferenceWithinItsBoundOfDouble) {
  oracle::OperandRng rng(test::test_seed() + 2);
  for (const std::uint32_t dim : {4u, 16u}) {
    HardwareConfig config = test::small_vector_core();
    config.dim = dim;
    for (const std::uint32_t length : {1u, 7u, 16u, 300u}) {
      const std::uint32_t rows = 20;
      const std::vector<num::fp32_t> x = logits(rng, std::size_t{rows} * length);
      const std::vector<num::fp32_t> y = reference_softmax(config, rows, length, x);
      double worst = 0;
      for (std::uint32_t m = 0; m < rows; ++m) {
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::uint32_t n = 0; n < length; ++n) {
          top = std::max(top, double{oracle::as_float(x[m * length + n])});
        }
        for (std::uint32_t n = 0; n < length; ++n) {
          sum += std::exp(double{oracle::as_float(x[m * length + n])} - top);
        }
        for (std::uint32_t n = 0; n < length; ++n) {
          const double truth = std::exp(double{oracle::as_float(x[m * length + n])} - top) / sum;
          const double got = oracle::as_float(y[m * length + n]);
          if (truth < 0x1p-100) {
            EXPECT_LE(std::fabs(got - truth), 0x1p-120);
            continue;
          }
          worst = std::max(worst, std::fabs(got - truth) / truth);
        }
      }
      EXPECT_LE(worst, 0x1p-14) << "dim " << dim << ", rows of " << length;
      std::cout << "[ error    ] dim " << dim << ", rows of " << length << ": worst relative 2^"
                << std::log2(worst) << '\n';
    }
  }
}

TEST(Softmax, SpecialValues) {
  const HardwareConfig config = test::small_vector_core();
  constexpr num::fp32_t kInf = 0x7F800000u, kMinusInf = 0xFF800000u, kNan = 0x7FC00000u;
  constexpr num::fp32_t kOne = 0x3F800000u, kZero = 0;
  // -inf among finite values gives +0; equal values share 1 equally; a NaN or +inf spoils its
  // row (inf - inf); a huge range underflows to zeros beside the maximum's 1.
  const std::vector<num::fp32_t> x = {
      kMinusInf,   kOne, kOne,        kOne,        kOne,   // -inf and equals
      kOne,        kOne, kOne,        kOne,        kOne,   // all equal
      kNan,        kOne, kOne,        kOne,        kOne,   // NaN
      kInf,        kOne, kOne,        kOne,        kOne,   // +inf
      0x42C80000u, kOne, 0xC2C80000u, 0x80000001u, kZero,  // 100, 1, -100, -subnormal, 0
  };
  const std::vector<num::fp32_t> y = run_on_model(config, 5, 5, x);
  ASSERT_EQ(y, reference_softmax(config, 5, 5, x));
  EXPECT_EQ(y[0], kZero);
  for (int n = 1; n < 5; ++n) EXPECT_EQ(y[n], 0x3E800000u) << n;  // 1/4
  for (int n = 5; n < 10; ++n) {                                  // 1/5, from recip's table
    EXPECT_NEAR(oracle::as_float(y[n]), 0.2, 0.2 * 0x1p-15) << n;
  }
  for (int n = 10; n < 20; ++n) EXPECT_EQ(y[n], num::kCanonicalNanFp32) << n;
  EXPECT_EQ(y[20], kOne);
  for (int n = 21; n < 25; ++n) EXPECT_EQ(y[n], kZero) << n;
}

TEST(Softmax, Refusals) {
  EXPECT_THROW(plan_softmax(test::small_core(), 2, 3), std::invalid_argument);  // no vector unit
  try {
    plan_softmax(test::small_core(), 2, 3);
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "softmax on the core needs a vector unit; " +
                                         test::small_core().name() + " has none");
  }
  EXPECT_THROW(plan_softmax(test::small_vector_core(), 0, 3), std::invalid_argument);
  EXPECT_THROW(plan_softmax(test::small_vector_core(), 2, 0), std::invalid_argument);
  EXPECT_THROW(plan_softmax(test::small_vector_core(16), 1, 4 * 13),
               std::invalid_argument);  // 13 tiles
  const SoftmaxPlan plan = plan_softmax(test::small_vector_core(), 2, 3);
  HostMemory memory;
  EXPECT_THROW(write_softmax_inputs(plan, memory, std::vector<num::fp32_t>(5)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
