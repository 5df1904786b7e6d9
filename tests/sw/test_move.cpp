// Moves of values on the core's DMA (tpu/move.hpp): the plan's program on the functional model
// gives reference_move's values, which are the runs the spec names, bit for bit (NaNs with their
// payloads, subnormals, int8): a transposition of the leading axes, a selection that repeats and
// reverses runs, many blocks; the reads are the progressions of source runs; the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/model.hpp"
#include "tpu/move.hpp"

namespace tpu {
namespace {

// The runs of x [a, b, run] in the order of its transposition [b, a, run].
MoveSpec transposition(std::uint64_t a, std::uint64_t b, std::uint64_t run, bool int8) {
  MoveSpec spec;
  spec.int8 = int8;
  spec.run = run;
  spec.source_runs = a * b;
  for (std::uint64_t j = 0; j < b; ++j) {
    for (std::uint64_t i = 0; i < a; ++i) spec.from.push_back(i * b + j);
  }
  return spec;
}

template <typename Value>
std::vector<Value> run_on_model(const HardwareConfig& config, const MoveSpec& spec,
                                const std::vector<Value>& x, std::uint64_t* reads = nullptr) {
  const MovePlan plan = plan_move(config, spec, 0x40);
  FunctionalModel model(config, 0);
  const MoveRun<Value> run = execute_move(plan, model, x);
  EXPECT_TRUE(run.result.ok()) << model.error_detail();
  EXPECT_EQ(model.uninitialized_reads(), 0u);
  if (reads) *reads = plan.reads;
  return run.out;
}

TEST(Move, TranspositionsGiveTheRunsBitForBit) {
  const HardwareConfig config = test::small_vector_core();  // 4 x 4, 64 accumulator rows
  oracle::OperandRng rng(test::test_seed());
  for (const std::uint64_t run : {4u, 12u}) {
    SCOPED_TRACE(::testing::Message() << "runs of " << run);
    const MoveSpec spec = transposition(7, 9, run, false);
    std::vector<std::uint32_t> x(spec.source_runs * run);
    for (std::uint32_t& v : x) v = rng.fp32();  // NaNs, subnormals, infinities among them
    std::uint64_t reads = 0;
    const std::vector<std::uint32_t> y = run_on_model(config, spec, x, &reads);
    EXPECT_EQ(y, reference_move(spec, x));
    // Value (j, i, k) of the transposition is value (i, j, k) of x.
    for (std::uint64_t j = 0; j < 9; ++j) {
      for (std::uint64_t i = 0; i < 7; ++i) {
        for (std::uint64_t k = 0; k < run; ++k) {
          ASSERT_EQ(y[(j * 7 + i) * run + k], x[(i * 9 + j) * run + k]);
        }
      }
    }
    // One read a progression: a column of x's runs, unless a block ends in it.
    EXPECT_LT(reads, spec.from.size() / 2);
  }
}

TEST(Move, Int8AndIrregularSelections) {
  const HardwareConfig config = test::small_int8_vector_core();
  oracle::OperandRng rng(test::test_seed() + 1);
  MoveSpec spec;
  spec.int8 = true;
  spec.run = 8;
  spec.source_runs = 20;
  for (const std::uint64_t source : {3u, 3u, 3u, 19u, 0u, 5u, 10u, 15u, 2u, 1u, 0u}) {
    spec.from.push_back(source);  // a repeat, a progression, a reversal
  }
  std::vector<std::int8_t> x(spec.source_runs * spec.run);
  for (std::int8_t& v : x) v = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
  EXPECT_EQ(run_on_model(config, spec, x), reference_move(spec, x));
  spec.int8 = false;
  std::vector<std::uint32_t> bits(x.size());
  for (std::uint32_t& v : bits) v = rng.fp32();
  EXPECT_EQ(run_on_model(config, spec, bits), reference_move(spec, bits));
}

TEST(Move, RefusesWhatItCannotDo) {
  const HardwareConfig config = test::small_vector_core();
  MoveSpec spec = transposition(2, 3, 6, false);  // runs of 6 on a core of rows of 4
  EXPECT_THROW(plan_move(config, spec), std::invalid_argument);
  spec = transposition(2, 3, 4, false);
  spec.from.push_back(6);
  EXPECT_THROW(plan_move(config, spec), std::invalid_argument);
  spec.from.clear();
  EXPECT_THROW(plan_move(config, spec), std::invalid_argument);
  spec = transposition(2, 3, 4 * 64, false);  // a run of 64 rows, the accumulators' all
  EXPECT_THROW(plan_move(config, spec), std::invalid_argument);
  spec = transposition(2, 3, 4, true);  // int8 on a core without the int8 datapath
  EXPECT_THROW(plan_move(config, spec), std::invalid_argument);
  spec = transposition(2, 3, 4, false);
  const MovePlan plan = plan_move(config, spec);
  FunctionalModel model(config, 0);
  EXPECT_THROW(execute_move(plan, model, std::vector<std::int8_t>(24)), std::invalid_argument);
  EXPECT_THROW(execute_move(plan, model, std::vector<std::uint32_t>(23)), std::invalid_argument);
}

}  // namespace
}  // namespace tpu
