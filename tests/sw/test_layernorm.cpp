// Layer normalisation on the vector unit (tpu/layernorm.hpp): the plan's program on the
// functional model gives reference_layernorm's bits, for rows shorter than the array, as long,
// longer and not a multiple of it, blocks that do not fit the accumulators at once, with and
// without beta; reference_layernorm is within its error bound of the layer norm computed in
// double precision; the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/layernorm.hpp"
#include "tpu/model.hpp"

namespace tpu {
namespace {

// Values of a few units around a random offset, as a layer's activations are.
std::vector<num::fp32_t> values(oracle::OperandRng& rng, std::size_t count, double spread) {
  std::vector<num::fp32_t> x(count);
  const double offset = static_cast<double>(rng.uniform(0, 2000)) / 100.0 - 10.0;
  for (num::fp32_t& v : x) {
    v = oracle::as_bits(static_cast<float>(
        offset + spread * (static_cast<double>(rng.uniform(0, 1'000'000)) / 5e5 - 1.0)));
  }
  return x;
}

struct Operands {
  std::vector<num::fp32_t> x, gamma, beta;
};

Operands operands(oracle::OperandRng& rng, const LayerNormSpec& spec) {
  return {values(rng, std::size_t{spec.rows} * spec.length, 3.0), values(rng, spec.length, 1.0),
          spec.has_beta ? values(rng, spec.length, 1.0) : std::vector<num::fp32_t>{}};
}

TEST(LayerNorm, ModelGivesTheReferenceBitsWithinItsBoundOfDouble) {
  oracle::OperandRng rng(test::test_seed());
  const HardwareConfig config = test::small_vector_core();
  double worst = 0;
  // Shorter than a row of the array, as long, longer, and 2.5 rows; 23 rows of 10 take several
  // blocks.
  for (const std::uint32_t length : {3u, 4u, 8u, 10u}) {
    for (const std::uint32_t rows : {1u, 5u, 23u}) {
      for (const bool has_beta : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << rows << " rows of " << length << (has_beta ? " +beta" : ""));
        LayerNormSpec spec;
        spec.rows = rows;
        spec.length = length;
        spec.epsilon = oracle::as_bits(1e-5f);
        spec.has_beta = has_beta;
        const Operands o = operands(rng, spec);
        const LayerNormPlan plan = plan_layernorm(config, spec, 0x80);
        FunctionalModel model(config, 0);
        const LayerNormRun run = execute_layernorm(plan, model, o.x, o.gamma, o.beta);
        ASSERT_TRUE(run.result.ok()) << model.error_detail();
        const std::vector<num::fp32_t> want =
            reference_layernorm(config, spec, o.x, o.gamma, o.beta);
        EXPECT_EQ(run.out, want);
        EXPECT_EQ(model.uninitialized_reads(), 0u);
        if (rows == 23) {
          EXPECT_GT((rows + plan.block_rows - 1) / plan.block_rows, 1u);
        }
        for (std::uint32_t m = 0; m < rows; ++m) {
          double mean = 0, var = 0;
          for (std::uint32_t j = 0; j < length; ++j) mean += oracle::as_float(o.x[m * length + j]);
          mean /= length;
          for (std::uint32_t j = 0; j < length; ++j) {
            const double dev = oracle::as_float(o.x[m * length + j]) - mean;
            var += dev * dev;
          }
          var /= length;
          const double inv = 1.0 / std::sqrt(var + 1e-5);
          double largest = 0;
          for (std::uint32_t j = 0; j < length; ++j) {
            largest = std::max(largest, std::fabs(double{oracle::as_float(o.x[m * length + j])}));
          }
          for (std::uint32_t j = 0; j < length; ++j) {
            const double normalised = (oracle::as_float(o.x[m * length + j]) - mean) * inv;
            const double truth = normalised * oracle::as_float(o.gamma[j]) +
                                 (has_beta ? oracle::as_float(o.beta[j]) : 0.0);
            // Relative to the terms' size: the normalised value times gamma, where x - mean
            // cancels the row's largest value (over the deviation), and beta.
            const double size = std::fabs(oracle::as_float(o.gamma[j])) *
                                    (1 + std::fabs(normalised) + largest * inv) +
                                (has_beta ? std::fabs(oracle::as_float(o.beta[j])) : 0.0);
            const double error = std::fabs(oracle::as_float(want[m * length + j]) - truth) / size;
            worst = std::max(worst, error);
            EXPECT_LT(error, std::ldexp(1.0, -16));
          }
        }
      }
    }
  }
  std::cout << "[ error    ] worst 2^" << std::log2(worst) << '\n';
}

TEST(LayerNorm, RefusesWhatItCannotRun) {
  const HardwareConfig config = test::small_vector_core();
  LayerNormSpec spec;
  spec.rows = 2;
  spec.length = 8;
  EXPECT_NO_THROW(plan_layernorm(config, spec));
  EXPECT_THROW(plan_layernorm(test::small_core(), spec), std::invalid_argument);  // no unit
  LayerNormSpec bad = spec;
  bad.rows = 0;
  EXPECT_THROW(plan_layernorm(config, bad), std::invalid_argument);
  bad = spec;
  bad.length = 4 * 20;  // 20 tiles: 2 x 20 + 1 + 1 rows a row and 24 constant rows exceed 64
  EXPECT_THROW(plan_layernorm(config, bad), std::invalid_argument);
  const LayerNormPlan plan = plan_layernorm(config, spec);
  HostMemory memory;
  EXPECT_THROW(write_layernorm_inputs(plan, memory, std::vector<num::fp32_t>(16),
                                      std::vector<num::fp32_t>(7), {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
