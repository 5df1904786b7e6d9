// Elementwise operators on the vector unit (tpu/elementwise.hpp): the plan's program on the
// functional model gives, value by value, the host FPU oracle's ELTWISE lane (oracle/eltwise.hpp)
// followed by the activation function, for every operation, for operands of the result's size
// and repeating ones (a period dividing the array's size, not dividing it, longer than a row, a
// scalar; either operand), results shorter than a row and many blocks, special values; the
// program reads only rows it wrote, overlaps its blocks in the cycle model; the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/eltwise.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/cycle_model.hpp"
#include "tpu/elementwise.hpp"
#include "tpu/model.hpp"

namespace tpu {
namespace {

struct Outcome {
  std::vector<num::fp32_t> out;
  std::uint64_t uninitialized_reads = 0;
};

Outcome run_on_model(const HardwareConfig& config, const ElementwiseSpec& spec,
                     const std::vector<num::fp32_t>& a, const std::vector<num::fp32_t>& b) {
  const ElementwisePlan plan = plan_elementwise(config, spec, 0x100);
  FunctionalModel model(config, 0);
  const ElementwiseRun run = execute_elementwise(plan, model, a, b);
  EXPECT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  return {run.out, model.uninitialized_reads()};
}

std::vector<num::fp32_t> draw(oracle::OperandRng& rng, std::uint64_t count) {
  std::vector<num::fp32_t> values(count);
  for (num::fp32_t& v : values) v = rng.fp32();
  return values;
}

TEST(Elementwise, ModelGivesTheOraclesBitsForEveryBroadcast) {
  oracle::OperandRng rng(test::test_seed());
  const HardwareConfig config = test::small_vector_core();
  const isa::VectorOp ops[] = {isa::VectorOp::Add, isa::VectorOp::Sub, isa::VectorOp::Mul,
                               isa::VectorOp::Max, isa::VectorOp::Min};
  // Results shorter than a row, a few rows, and many blocks; periods 1 (a scalar), 2 (dividing
  // the 4 lanes), 3 (not dividing them), 6 (longer than a row), 12 (three rows).
  const std::uint64_t sizes[] = {3, 12, 360};
  const std::uint64_t periods[] = {1, 2, 3, 6, 12};
  for (const isa::VectorOp op : ops) {
    for (const std::uint64_t size : sizes) {
      // Both whole, then each operand repeating in turn.
      std::vector<std::pair<std::uint64_t, std::uint64_t>> shapes = {{size, size}};
      for (const std::uint64_t period : periods) {
        if (period >= size || size % period != 0) continue;
        shapes.emplace_back(size, period);
        shapes.emplace_back(period, size);
      }
      for (const auto& [a_period, b_period] : shapes) {
        ElementwiseSpec spec;
        spec.op = op;
        spec.size = size;
        spec.a_period = a_period;
        spec.b_period = b_period;
        spec.func = rng.uniform(0, 1) != 0 ? isa::Func::Relu : isa::Func::None;
        SCOPED_TRACE(testing::Message() << "op " << static_cast<int>(op) << ", " << size
                                        << " values, periods " << a_period << " and " << b_period
                                        << ", func " << static_cast<int>(spec.func));
        const std::vector<num::fp32_t> a = draw(rng, a_period), b = draw(rng, b_period);
        const Outcome outcome = run_on_model(config, spec, a, b);
        const std::vector<num::fp32_t> want = oracle::elementwise_values(spec, a, b);
        EXPECT_EQ(outcome.out, want);
        EXPECT_EQ(reference_elementwise(spec, a, b), want);
        EXPECT_EQ(outcome.uninitialized_reads, 0u);
      }
    }
  }
}

// int32 lanes (ELTWISE I32): the wrapping integer operations of two tensors, a bias repeating
// along them, and a dequantisation by scales that repeat (a product's int32 sums to fp32, per
// column), against the oracle's integer arithmetic and fp32 product; no function with them.
TEST(Elementwise, Int32LanesWrapAndDequantise) {
  oracle::OperandRng rng(test::test_seed() + 4);
  const HardwareConfig config = test::small_vector_core();
  const auto ints = [&](std::uint64_t count) {
    std::vector<num::fp32_t> values(count);
    for (num::fp32_t& v : values) v = static_cast<num::fp32_t>(rng.uniform(0, 0xFFFFFFFF));
    values[0] = 0x7FFFFFFFu;  // the largest, which an add wraps past
    return values;
  };
  const isa::VectorOp ops[] = {isa::VectorOp::Add, isa::VectorOp::Sub, isa::VectorOp::Mul,
                               isa::VectorOp::Max, isa::VectorOp::Min, isa::VectorOp::Dequant};
  for (const isa::VectorOp op : ops) {
    for (const std::uint64_t period : {std::uint64_t{90}, std::uint64_t{6}, std::uint64_t{1}}) {
      SCOPED_TRACE(testing::Message() << "op " << static_cast<int>(op) << ", period " << period);
      ElementwiseSpec spec;
      spec.op = op;
      spec.int32 = true;
      spec.size = 90;
      spec.a_period = spec.size;
      spec.b_period = period;
      const std::vector<num::fp32_t> a = ints(spec.size);
      const std::vector<num::fp32_t> b =
          op == isa::VectorOp::Dequant ? draw(rng, period) : ints(period);
      const Outcome outcome = run_on_model(config, spec, a, b);
      const std::vector<num::fp32_t> want = oracle::elementwise_values(spec, a, b);
      EXPECT_EQ(outcome.out, want);
      EXPECT_EQ(reference_elementwise(spec, a, b), want);
      EXPECT_EQ(outcome.uninitialized_reads, 0u);
    }
  }
  // The sum of the largest int32 and 1 wraps to the smallest.
  ElementwiseSpec spec;
  spec.op = isa::VectorOp::Add;
  spec.int32 = true;
  spec.size = spec.a_period = 1;
  spec.b_period = 1;
  EXPECT_EQ(run_on_model(config, spec, {0x7FFFFFFFu}, {1}).out,
            std::vector<num::fp32_t>{0x80000000u});
  spec.func = isa::Func::Relu;
  EXPECT_THROW(plan_elementwise(config, spec), std::invalid_argument);
}

TEST(Elementwise, FunctionsAloneAndAfterAnOperation) {
  oracle::OperandRng rng(test::test_seed() + 1);
  const HardwareConfig config = test::small_vector_core();
  const isa::Func functions[] = {isa::Func::Relu,    isa::Func::Relu6, isa::Func::Leaky,
                                 isa::Func::Sigmoid, isa::Func::Tanh,  isa::Func::Gelu,
                                 isa::Func::Exp,     isa::Func::Recip, isa::Func::Rsqrt};
  for (const isa::Func func : functions) {
    for (const bool with_op : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "func " << static_cast<int>(func) << (with_op ? " after mul" : ""));
      ElementwiseSpec spec;
      spec.func = func;
      spec.alpha = func == isa::Func::Leaky ? 0x3E00 : 0;  // 0.125
      spec.size = 50;
      spec.a_period = spec.size;
      std::vector<num::fp32_t> b;
      if (with_op) {
        spec.op = isa::VectorOp::Mul;
        spec.b_period = 1;
        b = {oracle::as_bits(-0.5f)};
      }
      const std::vector<num::fp32_t> a = draw(rng, spec.size);
      const Outcome outcome = run_on_model(config, spec, a, b);
      EXPECT_EQ(outcome.out, oracle::elementwise_values(spec, a, b));
      EXPECT_EQ(outcome.uninitialized_reads, 0u);
    }
  }
}

TEST(Elementwise, BlocksOverlapInTheCycleModel) {
  HardwareConfig config = test::small_vector_core();
  ElementwiseSpec spec;
  spec.op = isa::VectorOp::Add;
  spec.func = isa::Func::Relu;
  spec.size = 4 * 200;  // 200 rows: blocks of 8 in four regions of 16 accumulator rows
  spec.a_period = spec.b_period = spec.size;
  const ElementwisePlan plan = plan_elementwise(config, spec);
  EXPECT_EQ(plan.block_rows, 8u);
  EXPECT_EQ(plan.rows, 200u);
  // Each instruction alone, one after another (less the start and end each estimate has once),
  // against the program as the core overlaps it.
  const double start_and_end = estimate_vector_program_cycles(config, {});
  double serial = start_and_end;
  for (const isa::Instruction& in : plan.program) {
    serial += estimate_vector_program_cycles(config, {in}) - start_and_end;
  }
  const double overlapped = estimate_vector_program_cycles(config, plan.program);
  std::cout << "[ cycles   ] 200 rows: serial " << serial << ", overlapped " << overlapped << '\n';
  EXPECT_LT(overlapped, 0.9 * serial);
  // No faster than the vector unit's own work.
  double vector_unit = 0;
  for (const isa::Instruction& in : plan.program) {
    if (in.opcode() == isa::Opcode::Eltwise) vector_unit += eltwise_cycles(config, in);
  }
  EXPECT_GT(overlapped, vector_unit);
  // What the host moves: the two operands, the program, then the result.
  EXPECT_EQ(plan.written_bytes(), 2u * 200 * 16 + plan.program.size() * isa::kInstrBytes);
  EXPECT_EQ(plan.read_bytes(), 200u * 16);
}

TEST(Elementwise, RefusesWhatItCannotRun) {
  const HardwareConfig config = test::small_vector_core();
  const auto refused = [](const HardwareConfig& c, const ElementwiseSpec& spec) {
    EXPECT_THROW(plan_elementwise(c, spec), std::invalid_argument);
  };
  ElementwiseSpec add;
  add.op = isa::VectorOp::Add;
  add.size = 12;
  add.a_period = add.b_period = 12;
  EXPECT_NO_THROW(plan_elementwise(config, add));
  refused(test::small_core(), add);  // no vector unit
  ElementwiseSpec bad = add;
  bad.size = 0;
  refused(config, bad);  // an empty result
  bad = add;
  bad.b_period = 5;
  refused(config, bad);  // a period that does not divide the result
  bad.b_period = 0;
  refused(config, bad);
  bad = add;
  bad.a_period = 2;
  bad.b_period = 3;
  refused(config, bad);  // both repeat
  bad = add;
  bad.size = bad.b_period = 960;
  bad.a_period = 120;
  refused(config, bad);  // a period of 30 accumulator rows and two blocks do not fit a bank of 32
  ElementwiseSpec alone;
  alone.size = alone.a_period = 8;
  refused(config, alone);  // neither an operation nor a function
  alone.func = isa::Func::Relu;
  EXPECT_NO_THROW(plan_elementwise(config, alone));
  alone.a_period = 4;
  refused(config, alone);  // one operand that repeats
  alone.a_period = 8;
  alone.b_period = 8;
  refused(config, alone);  // a second operand without an operation
  alone.b_period = 0;
  alone.alpha = 0x3E00;
  refused(config, alone);  // a slope for a function other than leaky
  alone.alpha = 0;
  alone.func = static_cast<isa::Func>(isa::kFuncCount);
  refused(config, alone);  // no such function
  // Operands of sizes other than the plan's.
  const ElementwisePlan plan = plan_elementwise(config, add);
  HostMemory memory;
  EXPECT_THROW(write_elementwise_inputs(plan, memory, std::vector<num::fp32_t>(12),
                                        std::vector<num::fp32_t>(11)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
