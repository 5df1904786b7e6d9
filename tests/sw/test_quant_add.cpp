// int8 addition on the vector unit (tpu/quant_add.hpp): the plan's program on the functional
// model gives Q-ADD's bits (num::add_int8 of each pair, which tests/ref/test_ref_quant.cpp checks
// against the exact oracle): every pair of int8 values, zero points at both ends, the clamps of
// relu and relu6, inputs of very different scales, sizes that leave a row part empty and that
// take many blocks; the program reads only rows it wrote; the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/model.hpp"
#include "tpu/numerics/quant.hpp"
#include "tpu/quant_add.hpp"

namespace tpu {
namespace {

struct Outcome {
  std::vector<std::int8_t> out;
  std::uint64_t uninitialized_reads = 0;
  std::uint32_t blocks = 0;
};

Outcome run_on_model(const HardwareConfig& config, const QuantAddSpec& spec,
                     const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b) {
  const QuantAddPlan plan = plan_quant_add(config, spec, 0x40);
  FunctionalModel model(config, 0);
  const QuantAddRun run = execute_quant_add(plan, model, a, b);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  const auto blocks =
      static_cast<std::uint32_t>((plan.rows + plan.block_rows - 1) / plan.block_rows);
  return {run.out, model.uninitialized_reads(), blocks};
}

std::vector<std::int8_t> random_int8(oracle::OperandRng& rng, std::size_t count) {
  std::vector<std::int8_t> v(count);
  for (std::int8_t& x : v) x = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
  return v;
}

TEST(QuantAdd, EveryPairGivesTheReferenceBits) {
  const HardwareConfig config = test::small_int8_vector_core();
  std::vector<std::int8_t> a, b;
  for (int x = -128; x <= 127; ++x) {
    for (int y = -128; y <= 127; ++y) {
      a.push_back(static_cast<std::int8_t>(x));
      b.push_back(static_cast<std::int8_t>(y));
    }
  }
  struct Case {
    double sa;
    int za;
    double sb;
    int zb;
    double sy;
    int zy;
    num::QuantActivation act;
  };
  for (const Case& c : {Case{0.05, 3, 0.05, -4, 0.1, 7, num::QuantActivation::kNone},
                        Case{0.02, -128, 0.3, 0, 0.6, -128, num::QuantActivation::kRelu},
                        Case{1.0 / 64, 10, 1.0 / 1024, 0, 0.03, -20, num::QuantActivation::kRelu6},
                        Case{0.7, 127, 0.7, -128, 1.5, 0, num::QuantActivation::kNone}}) {
    SCOPED_TRACE(::testing::Message() << "scales " << c.sa << ", " << c.sb << " -> " << c.sy);
    QuantAddSpec spec;
    spec.size = a.size();
    spec.params = num::quant_add_params(c.sa, c.za, c.sb, c.zb, c.sy, c.zy, c.act);
    const Outcome outcome = run_on_model(config, spec, a, b);
    const std::vector<std::int8_t> want = reference_quant_add(spec, a, b);
    EXPECT_EQ(outcome.out, want);
    EXPECT_EQ(outcome.uninitialized_reads, 0u);
    EXPECT_GT(outcome.blocks, 100u);
    // Not every result at the clamp: the cases sum inside the output's range for most pairs.
    std::size_t inside = 0;
    for (const std::int8_t v : want) inside += v > spec.params.lo && v < spec.params.hi;
    EXPECT_GT(inside, want.size() / 8);
  }
}

// Sizes from 1 value to several blocks, rows left part empty, on a 4x4 and an 8x8 core.
TEST(QuantAdd, SizesThatLeaveRowsPartEmpty) {
  oracle::OperandRng rng(test::test_seed() + 3);
  HardwareConfig wide = test::small_int8_vector_core();
  wide.dim = 8;
  wide.vector_lanes = 4;
  for (const HardwareConfig& config : {test::small_int8_vector_core(), wide}) {
    for (const std::uint64_t size : {1u, 3u, 4u, 5u, 63u, 64u, 65u, 1000u}) {
      SCOPED_TRACE(::testing::Message()
                   << size << " values on " << config.dim << "x" << config.dim);
      QuantAddSpec spec;
      spec.size = size;
      spec.params = num::quant_add_params(0.04, -9, 0.06, 21, 0.08, 5, num::QuantActivation::kNone);
      const std::vector<std::int8_t> a = random_int8(rng, size), b = random_int8(rng, size);
      const Outcome outcome = run_on_model(config, spec, a, b);
      EXPECT_EQ(outcome.out, reference_quant_add(spec, a, b));
      EXPECT_EQ(outcome.uninitialized_reads, 0u);
    }
  }
}

TEST(QuantAdd, RefusesWhatItCannotRun) {
  QuantAddSpec spec;
  spec.size = 10;
  spec.params = num::quant_add_params(0.1, 0, 0.1, 0, 0.1, 0, num::QuantActivation::kNone);
  EXPECT_NO_THROW(plan_quant_add(test::small_int8_vector_core(), spec));
  EXPECT_THROW(plan_quant_add(test::small_vector_core(), spec), std::invalid_argument);  // no int8
  HardwareConfig no_vector = test::small_core();
  no_vector.int8 = true;
  EXPECT_THROW(plan_quant_add(no_vector, spec), std::invalid_argument);
  QuantAddSpec empty = spec;
  empty.size = 0;
  EXPECT_THROW(plan_quant_add(test::small_int8_vector_core(), empty), std::invalid_argument);
  QuantAddSpec bad = spec;
  bad.params.zero_point = 200;
  EXPECT_THROW(plan_quant_add(test::small_int8_vector_core(), bad), std::invalid_argument);
  const QuantAddPlan plan = plan_quant_add(test::small_int8_vector_core(), spec);
  FunctionalModel model(test::small_int8_vector_core(), 0);
  EXPECT_THROW(
      execute_quant_add(plan, model, std::vector<std::int8_t>(9), std::vector<std::int8_t>(10)),
      std::invalid_argument);
}

}  // namespace
}  // namespace tpu
