// The GEMM compiler on the functional model: every shape (including sizes that
// are not multiples of the array), with and without C and bias, every
// function and both output types, against the reference computation
// (tpu::reference_gemm: num::gemm, then bias, function and rounding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "common/gemm_operands.hpp"
#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "tpu/array_fold.hpp"
#include "tpu/compiler.hpp"
#include "tpu/model.hpp"

namespace tpu {
namespace {

using test::small_core;

using Operands = test::GemmOperands;

Operands random_operands(oracle::OperandRng& rng, const GemmSpec& s) {
  return test::random_gemm_operands(rng, s, 5, 10);
}

num::MatrixFp32 run_on_model(const HardwareConfig& config, const GemmSpec& spec, const Operands& o,
                             std::uint64_t* uninitialized = nullptr) {
  const GemmPlan plan = plan_gemm(config, spec);
  FunctionalModel model(config, plan.memory_bytes);
  write_gemm_inputs(plan, model.memory(), o.a, o.b, o.c_for(spec), o.bias_for(spec));
  const RunResult r = model.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  EXPECT_TRUE(r.ok()) << regs::error_name(r.error) << ": " << model.error_detail();
  if (uninitialized) *uninitialized = model.uninitialized_reads();
  return read_gemm_output(plan, model.memory());
}

TEST(Compiler, ShapesAndOptionsMatchReference) {
  const HardwareConfig config = small_core();
  oracle::OperandRng rng(test::test_seed());
  for (int trial = 0; trial < 60; ++trial) {
    GemmSpec s;
    s.m = static_cast<std::uint32_t>(rng.uniform(1, 40));
    s.k = static_cast<std::uint32_t>(rng.uniform(1, 30));
    s.n = static_cast<std::uint32_t>(rng.uniform(1, 30));
    s.has_c = rng.uniform(0, 1);
    s.has_bias = rng.uniform(0, 1);
    s.act = static_cast<isa::Func>(rng.uniform(0, isa::func_count(config) - 1));
    if (s.act == isa::Func::Leaky) s.alpha = rng.bf16();
    s.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
    SCOPED_TRACE(testing::Message()
                 << s.m << "x" << s.k << "x" << s.n << " c=" << s.has_c << " bias=" << s.has_bias
                 << " act=" << int(s.act) << " bf16=" << (s.out == OutType::Bf16));
    const Operands o = random_operands(rng, s);
    std::uint64_t uninitialized = 0;
    const num::MatrixFp32 got = run_on_model(config, s, o, &uninitialized);
    const num::MatrixFp32 want = reference_gemm(s, o.a, o.b, o.c_for(s), o.bias_for(s));
    ASSERT_EQ(got.data, want.data);
    EXPECT_EQ(uninitialized, 0u) << "the program read memory it never wrote";
  }
}

// The functional model's products on every fold path this CPU runs and on one thread or two
// (TPU_FOLD_PATH, TPU_MODEL_THREADS): the reference's bits each time. On the 128x128 core a
// block of 1,024 rows of a 2,048 x 256 x 128 product is 2^25 multiply-adds a MATMUL, which two
// threads share; the 16x16 core's K loop of 16 tiles folds as one; the specials and the seeds'
// subnormals go through every path; and an int8 product's K loop.
TEST(Compiler, TheModelsFoldPathsAndThreadsGiveTheReferenceBits) {
  oracle::OperandRng rng(test::test_seed() + 3);
  for (const char* core : {"16x16", "128x128_bus64"}) {
    const HardwareConfig& config = *find_core_config(core);
    GemmSpec s;
    s.m = 2048;
    s.k = 256;
    s.n = 128;
    s.has_c = true;
    s.has_bias = true;
    const Operands o = test::random_gemm_operands(rng, s, 3, 3);
    const num::MatrixFp32 want = reference_gemm(s, o.a, o.b, o.c_for(s), o.bias_for(s));
    for (const detail::FoldPath path : detail::available_fold_paths()) {
      for (const char* threads : {"1", "2"}) {
        SCOPED_TRACE(std::string(core) + ", " + detail::fold_path_name(path) + ", " + threads +
                     " thread(s)");
        ASSERT_EQ(setenv("TPU_FOLD_PATH", detail::fold_path_name(path), 1), 0);
        ASSERT_EQ(setenv("TPU_MODEL_THREADS", threads, 1), 0);
        EXPECT_EQ(run_on_model(config, s, o).data, want.data);
      }
    }
  }
  // int8 (Q-MAC, a zero point folded into the seeds): 128 tiles of K, a K loop, on each path.
  GemmSpec s8;
  s8.m = 64;
  s8.k = 2048;
  s8.n = 32;
  s8.in = InType::Int8;
  s8.out = OutType::Int32;
  s8.input_zero_point = -7;
  num::MatrixI8 a8(s8.m, s8.k), b8(s8.k, s8.n);
  for (auto& v : a8.data) v = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
  for (auto& v : b8.data) v = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
  const HardwareConfig& config = *find_core_config("16x16");
  const GemmPlan plan = plan_gemm(config, s8);
  const num::MatrixI32 want8 = reference_gemm(s8, a8, b8, nullptr, nullptr);
  for (const detail::FoldPath path : detail::available_fold_paths()) {
    SCOPED_TRACE(std::string("int8, ") + detail::fold_path_name(path));
    ASSERT_EQ(setenv("TPU_FOLD_PATH", detail::fold_path_name(path), 1), 0);
    FunctionalModel model(config, plan.memory_bytes);
    write_gemm_inputs(plan, model.memory(), a8, b8, nullptr, nullptr);
    ASSERT_TRUE(model.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size())).ok());
    EXPECT_EQ(read_gemm_output_int(plan, model.memory()).data, want8.data);
  }
  ASSERT_EQ(unsetenv("TPU_FOLD_PATH"), 0);
  ASSERT_EQ(unsetenv("TPU_MODEL_THREADS"), 0);
  ASSERT_EQ(setenv("TPU_MODEL_THREADS", "0", 1), 0);
  EXPECT_THROW(FunctionalModel(small_core(), 0), std::runtime_error);
  ASSERT_EQ(unsetenv("TPU_MODEL_THREADS"), 0);
}

TEST(Compiler, ManyBlocksUseBothBanksAndTheirOwnRows) {
  // M well past one block, K past several tiles: blocks alternate banks.
  const HardwareConfig config = small_core();
  oracle::OperandRng rng(test::test_seed() + 1);
  GemmSpec s;
  s.m = 70;
  s.k = 37;
  s.n = 9;
  s.has_bias = true;
  s.out = OutType::Bf16;
  const GemmPlan plan = plan_gemm(config, s);
  EXPECT_LT(plan.block_rows, s.m) << "the test wants several M blocks";
  const Operands o = random_operands(rng, s);
  EXPECT_EQ(run_on_model(config, s, o).data, reference_gemm(s, o.a, o.b, nullptr, &o.bias).data);
}

TEST(Compiler, FirstBlockIsSmallWhenTheNextLoadsBehindIt) {
  // 512 x 512 x 512 on the default core: the array starts after a 64-row block.
  const GemmPlan big = plan_gemm(HardwareConfig{}, [] {
    GemmSpec s;
    s.m = s.k = s.n = 512;
    return s;
  }());
  EXPECT_EQ(big.block_first, (std::vector<std::uint32_t>{0, 64, 288, 512}));

  // The same shape of plan on the small core, checked on the model.
  const HardwareConfig config = small_core();
  oracle::OperandRng rng(test::test_seed() + 2);
  GemmSpec s;
  s.m = 100;
  s.k = 8;
  s.n = 64;
  const GemmPlan plan = plan_gemm(config, s);
  ASSERT_GT(plan.block_first.size(), 2u);
  EXPECT_LT(plan.block_first[1], plan.block_first[2] - plan.block_first[1]);
  const Operands o = random_operands(rng, s);
  EXPECT_EQ(run_on_model(config, s, o).data, reference_gemm(s, o.a, o.b, nullptr, nullptr).data);
}

TEST(Compiler, BadShapesAreRejected) {
  const HardwareConfig config = small_core();
  GemmSpec s;
  s.m = 0;
  EXPECT_THROW(plan_gemm(config, s), std::invalid_argument);
  s.m = 4;
  s.k = 4 * 1000;  // a row of A needs 1000 UB rows, half the buffer has 128
  EXPECT_THROW(plan_gemm(config, s), std::invalid_argument);
  s.k = 4;
  s.alpha = 0x3c00;  // a slope without the leaky function
  EXPECT_THROW(plan_gemm(config, s), std::invalid_argument);
  const GemmPlan plan = plan_gemm(config, GemmSpec{});
  HostMemory memory;
  num::MatrixBf16 wrong(2, 2);
  EXPECT_THROW(write_gemm_inputs(plan, memory, wrong, wrong, nullptr, nullptr),
               std::invalid_argument);
}

// B written once at a fixed address, below the other operands, then used by two products with
// different A: each the reference's bits, and the second run leaves B's bytes untouched and
// writes nothing where the first put B.
TEST(Compiler, ResidentWeightsAreReadWhereTheyLie) {
  const HardwareConfig config = small_core();
  oracle::OperandRng rng(test::test_seed());
  GemmSpec s;
  s.m = 9;
  s.k = 7;
  s.n = 6;
  const Operands first = random_operands(rng, s);
  Operands second = random_operands(rng, s);
  second.b = first.b;
  const std::uint32_t weights_addr = 128;
  GemmPlacement placement;
  placement.weights_addr = weights_addr;
  placement.base = weights_addr + weights_bytes(config, s);
  const GemmPlan plan = plan_gemm(config, s, placement);
  EXPECT_TRUE(plan.weights_resident);
  EXPECT_EQ(plan.b_addr, weights_addr);
  EXPECT_GE(plan.a_addr, placement.base);
  FunctionalModel model(config, 0);
  write_weights(config, model.memory(), weights_addr, first.b);
  const std::vector<std::uint8_t> image(model.memory().data() + weights_addr,
                                        model.memory().data() + placement.base);
  for (const Operands* o : {&first, static_cast<const Operands*>(&second)}) {
    const GemmRun run = execute_gemm(plan, model, o->a, o->b);
    ASSERT_TRUE(run.result.ok());
    EXPECT_EQ(run.out.data, reference_gemm(s, o->a, o->b, nullptr, nullptr).data);
    EXPECT_TRUE(std::equal(image.begin(), image.end(), model.memory().data() + weights_addr));
  }
  // Without the weights written, the same plan multiplies by zeros: it does not write B.
  FunctionalModel empty(config, 0);
  const GemmRun unwritten = execute_gemm(plan, empty, first.a, first.b);
  ASSERT_TRUE(unwritten.result.ok());
  EXPECT_EQ(unwritten.out.data,
            reference_gemm(s, first.a, num::MatrixBf16(s.k, s.n), nullptr, nullptr).data);
}

TEST(Compiler, ResidentWeightsMustLieBelowTheOperands) {
  const HardwareConfig config = small_core();
  GemmSpec s;
  s.k = 8;
  s.n = 8;
  GemmPlacement placement;
  placement.base = 256;
  placement.weights_addr = 256 - 64;  // 128 bytes of B from there reach the operands
  EXPECT_THROW(plan_gemm(config, s, placement), std::invalid_argument);
  placement.weights_addr = 8;  // not a multiple of kOperandAlign
  EXPECT_THROW(plan_gemm(config, s, placement), std::invalid_argument);
  placement.weights_addr = 0;
  EXPECT_NO_THROW(plan_gemm(config, s, placement));
}

}  // namespace
}  // namespace tpu
