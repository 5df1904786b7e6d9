// Expressions on the vector unit (tpu/vector_expression.hpp): the plan's program on the
// functional model gives, value by value, the host FPU oracle's ELTWISE lanes and the activation
// functions (oracle/expression.hpp), for an LSTM cell with peepholes and a clip and a GRU cell's
// update, over rows shorter than an accumulator row, of one and of several tiles, in one block
// and in many; the program reads only rows it wrote; a value's slot goes to the next once it is
// read for the last time; the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/expression_views.hpp"
#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/expression.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/model.hpp"
#include "tpu/vector_expression.hpp"

namespace tpu {
namespace {

using Values = std::vector<std::vector<num::fp32_t>>;

std::vector<num::fp32_t> draw(oracle::OperandRng& rng, std::uint64_t count) {
  std::vector<num::fp32_t> values(count);
  for (num::fp32_t& v : values) v = rng.fp32();
  return values;
}

TEST(VectorExpression, ModelGivesTheOraclesBitsForAnLstmCell) {
  oracle::OperandRng rng(test::test_seed() + 20);
  const HardwareConfig config = test::small_vector_core(256);
  // Rows of 3 (less than the 4 lanes), 4 and 10 (three tiles, the last half full); one row, a few,
  // and many blocks.
  for (const std::uint32_t length : {3u, 4u, 10u}) {
    for (const std::uint64_t rows : {1u, 5u, 300u}) {
      SCOPED_TRACE(testing::Message() << rows << " rows of " << length);
      const ExpressionBuilder e = oracle::lstm_cell_expression(rng, rows, length, 3.0f);
      const ExpressionPlan plan = plan_expression(config, e.spec(), 0x100);
      FunctionalModel model(config, 0);
      const ExpressionRun run = execute_expression(plan, model, e.tensors(), e.constants());
      ASSERT_TRUE(run.result.ok())
          << regs::error_name(run.result.error) << ": " << model.error_detail();
      const Values want = oracle::expression_values(e.spec(), e.tensors(), e.constants());
      EXPECT_EQ(run.out, want);
      EXPECT_EQ(reference_expression(e.spec(), e.tensors(), e.constants()), want);
      EXPECT_EQ(model.uninitialized_reads(), 0u);
      if (rows == 300) {
        EXPECT_LT(plan.block_rows, rows);  // several blocks
      }
    }
  }
}

// A GRU's new state, (1 - z) * candidate + z * H: a constant row as the first operand of a
// subtraction, a tensor read by two steps.
TEST(VectorExpression, AConstantRowAsTheFirstOperand) {
  oracle::OperandRng rng(test::test_seed() + 21);
  const HardwareConfig config = test::small_vector_core();
  using Op = isa::VectorOp;
  for (const std::uint32_t length : {2u, 4u, 6u}) {
    ExpressionBuilder e(7, length);
    const auto z = e.func(isa::Func::Sigmoid, e.tensor(draw(rng, 7 * length)));
    const auto candidate = e.func(isa::Func::Tanh, e.tensor(draw(rng, 7 * length)));
    const auto state = e.tensor(draw(rng, 7 * length));
    const auto keep =
        e.op(Op::Sub, e.row(std::vector<num::fp32_t>(length, oracle::as_bits(1.0f))), z);
    e.output(e.op(Op::Add, e.op(Op::Mul, keep, candidate), e.op(Op::Mul, z, state)));
    const ExpressionPlan plan = plan_expression(config, e.spec());
    FunctionalModel model(config, 0);
    const ExpressionRun run = execute_expression(plan, model, e.tensors(), e.constants());
    ASSERT_TRUE(run.result.ok()) << regs::error_name(run.result.error);
    EXPECT_EQ(run.out, oracle::expression_values(e.spec(), e.tensors(), e.constants()));
    EXPECT_EQ(model.uninitialized_reads(), 0u);
  }
}

// Tensors and outputs in views of the core's memory (another program's rows, `pitch` bytes
// apart): read and written where they lie, fp32 or bf16 (N-OUT), the bytes between their rows
// untouched, over many blocks; only the plan's own tensors and outputs cross the bus.
TEST(VectorExpression, ViewsAreReadAndWrittenWhereTheyLie) {
  oracle::OperandRng rng(test::test_seed() + 22);
  const HardwareConfig config = test::small_vector_core();
  constexpr std::uint64_t kRows = 40;
  constexpr std::uint32_t kLength = 8;  // two tiles
  const ExpressionView x_view{0x4000, 48}, product_view{0x6000, 64}, tanh_view{0x8000, 32};
  ExpressionBuilder e(kRows, kLength);
  const std::vector<num::fp32_t> x_values = draw(rng, kRows * kLength);
  const ExpressionValue x = e.tensor_in(x_view, x_values);
  const ExpressionValue y = e.tensor(draw(rng, kRows * kLength));
  e.output_to(e.op(isa::VectorOp::Mul, x, y), product_view);
  e.output_to(e.func(isa::Func::Tanh, x), tanh_view, true);
  e.output(e.op(isa::VectorOp::Add, x, y));
  const ExpressionView copy_view{0x9000, 32};
  e.output_to(x, copy_view);  // the tensor as it is, from one view into another
  const ExpressionPlan plan = plan_expression(config, e.spec(), 0xA000);
  EXPECT_LT(plan.block_rows, kRows);
  FunctionalModel model(config, 0);
  HostMemory& memory = model.memory();
  memory.resize(plan.memory_bytes);
  // Every byte a sentinel, then x's rows in its view.
  memory.write_array(0, std::vector<std::uint8_t>(plan.memory_bytes, 0xA5));
  test::write_view(memory, x_view, x_values, kRows, kLength);
  const ExpressionRun run = execute_expression(plan, model, e.tensors(), e.constants());
  ASSERT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                               << model.error_detail();
  const Values want = oracle::expression_values(e.spec(), e.tensors(), e.constants());
  EXPECT_EQ(reference_expression(e.spec(), e.tensors(), e.constants()), want);
  ASSERT_EQ(run.out.size(), 1u);  // the read-back output alone
  EXPECT_EQ(run.out[0], want[2]);
  test::expect_view(memory, product_view, kRows, kLength, false, 0xA5, want[0]);
  test::expect_view(memory, tanh_view, kRows, kLength, true, 0xA5, want[1]);
  test::expect_view(memory, copy_view, kRows, kLength, false, 0xA5, x_values);
  EXPECT_EQ(model.uninitialized_reads(), 0u);
  // The host writes y and the program, and reads one output.
  EXPECT_EQ(plan.written_bytes(), kRows * 2 * 16 + plan.program.size() * isa::kInstrBytes);
  EXPECT_EQ(plan.read_bytes(), kRows * 2 * 16);
}

// A chain of steps, each reading the one before for the last time, keeps one slot; values read
// later keep theirs until then.
TEST(VectorExpression, SlotsGoToTheNextValueAfterTheirLastRead) {
  const HardwareConfig config = test::small_vector_core();
  ExpressionBuilder chain(4, 4);
  auto v = chain.tensor(std::vector<num::fp32_t>(16));
  for (int s = 0; s < 6; ++s) v = chain.func(isa::Func::Tanh, v);
  chain.output(v);
  EXPECT_EQ(plan_expression(config, chain.spec()).slots, 1u);
  ExpressionBuilder kept(4, 4);
  const auto x = kept.tensor(std::vector<num::fp32_t>(16));
  const auto y = kept.func(isa::Func::Tanh, x);
  const auto z = kept.func(isa::Func::Sigmoid, y);
  kept.output(kept.op(isa::VectorOp::Mul, kept.op(isa::VectorOp::Add, x, y), z));
  EXPECT_EQ(plan_expression(config, kept.spec()).slots, 3u);  // x, y and z at once
  // What the host moves: the tensor, the program, then the output.
  const ExpressionPlan plan = plan_expression(config, chain.spec());
  EXPECT_EQ(plan.written_bytes(), 4u * 16 + plan.program.size() * isa::kInstrBytes);
  EXPECT_EQ(plan.read_bytes(), 4u * 16);
}

TEST(VectorExpression, RefusesWhatItCannotRun) {
  const HardwareConfig config = test::small_vector_core();
  ExpressionBuilder good(3, 4);
  const auto x = good.tensor(std::vector<num::fp32_t>(12));
  const auto one = good.row(std::vector<num::fp32_t>(4));
  good.output(good.op(isa::VectorOp::Add, x, one));
  EXPECT_NO_THROW(plan_expression(config, good.spec()));
  EXPECT_THROW(plan_expression(test::small_core(), good.spec()), std::invalid_argument);
  const auto refused = [&](const auto& change) {
    ExpressionSpec spec = good.spec();
    change(spec);
    EXPECT_THROW(plan_expression(config, spec), std::invalid_argument);
  };
  refused([](ExpressionSpec& s) { s.rows = 0; });
  refused([](ExpressionSpec& s) { s.outputs.clear(); });
  refused([](ExpressionSpec& s) { s.outputs[0].value.index = 1; });       // no step 1
  refused([](ExpressionSpec& s) { s.outputs[0].value = s.steps[0].b; });  // a row
  refused([](ExpressionSpec& s) { s.outputs[0].bf16 = true; });  // bf16, not in a view
  refused([](ExpressionSpec& s) { s.tensor_views = {ExpressionView{0x1004, 16}}; });  // unaligned
  refused([](ExpressionSpec& s) { s.tensor_views = {ExpressionView{0x1000, 8}}; });  // rows overlap
  refused([](ExpressionSpec& s) {  // views for two tensors of one
    s.tensor_views = {ExpressionView{0x1000, 16}, ExpressionView{0x2000, 16}};
  });
  refused([](ExpressionSpec& s) { s.steps[0].a.index = 1; });       // no tensor 1
  refused([](ExpressionSpec& s) { s.steps[0].b.index = 1; });       // no row 1
  refused([](ExpressionSpec& s) { s.steps[0].a = s.steps[0].b; });  // two rows
  refused([](ExpressionSpec& s) {                                   // a step of itself
    s.steps[0].a = {ExpressionValue::Kind::Step, 0};
  });
  refused([](ExpressionSpec& s) {  // a function of a row
    s.steps[0].op.reset();
    s.steps[0].func = isa::Func::Relu;
    s.steps[0].a = s.steps[0].b;
  });
  refused([](ExpressionSpec& s) {  // a slope for a function other than leaky
    s.steps[0].op.reset();
    s.steps[0].func = isa::Func::Relu;
    s.steps[0].alpha = 0x3E00;
  });
  refused([](ExpressionSpec& s) {  // no such function
    s.steps[0].op.reset();
    s.steps[0].func = static_cast<isa::Func>(isa::kFuncCount);
  });
  // 40 tensors at once do not fit a bank of 32 accumulator rows.
  ExpressionBuilder wide(2, 4);
  auto sum = wide.tensor(std::vector<num::fp32_t>(8));
  std::vector<ExpressionValue> many;
  for (int t = 0; t < 40; ++t) many.push_back(wide.tensor(std::vector<num::fp32_t>(8)));
  for (const ExpressionValue& t : many) sum = wide.op(isa::VectorOp::Add, sum, t);
  wide.output(sum);
  EXPECT_THROW(plan_expression(config, wide.spec()), std::invalid_argument);
  // Operands of sizes other than the plan's.
  const ExpressionPlan plan = plan_expression(config, good.spec());
  HostMemory memory;
  EXPECT_THROW(
      write_expression_inputs(plan, memory, {std::vector<num::fp32_t>(11)}, good.constants()),
      std::invalid_argument);
}

}  // namespace
}  // namespace tpu
