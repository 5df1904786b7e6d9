// The sequential activation function unit (rtl/seq/tpu_seq_act.sv) against the reference model
// (sw/numerics/activation.cpp), bit for bit, as test_act_func checks the pipelined unit: every bf16
// input for every function code (leaky with slopes of every kind), special values with every code
// and slope, random fp32 inputs, and a random function per value. Throughout, in_valid_i and
// out_ready_i are held low at random and the inputs change at random whenever they are not being
// offered, so a result must wait in y_o and only the offered input may be taken. Then the
// handshakes on their own: the result held until taken, nothing taken while a value is in
// flight, and reset in the middle of a value. A value that takes more than kMaxValueCycles fails
// the test instead of hanging it.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <vector>

#include "Vseq_act.h"
#include "common/test_seed.hpp"
#include "handshake_unit.hpp"
#include "oracle/activation.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/numerics/activation.hpp"

namespace {

using tpu::num::ActFunc;
using tpu::num::bf16_t;
using tpu::num::fp32_t;
using tpu::test::test_seed;
namespace oracle = tpu::oracle;

constexpr std::uint64_t kRandomInputsPerFunction = 500'000;
// Codes 0..6; exp, reciprocal and reciprocal square root (7..9) are the vector unit's, and like
// 10..15 illegal codes here.
constexpr unsigned kFunctionCount = 7;
constexpr unsigned kFunctionCodes = 16;
// Cycles from acceptance to out_valid_o that no value may exceed (the slowest, gelu of a small
// |x|, takes about 200).
constexpr unsigned kMaxValueCycles = 300;

// 0.01, 0.2, 1, -0.5 and 0.
constexpr bf16_t kSlopes[] = {0x3C24u, 0x3E4Du, 0x3F80u, 0xBF00u, 0x0000u};
// -0, a subnormal, +-inf, a NaN, the largest finite, the smallest normal, -3.
constexpr bf16_t kSpecialSlopes[] = {0x8000u, 0x0001u, 0x7F80u, 0xFF80u,
                                     0x7FC1u, 0x7F7Fu, 0x0080u, 0xC040u};

struct ActInput {
  unsigned func;
  fp32_t x;
  bf16_t alpha;
};

// tpu_seq_act as the stream drives it: a function code, x and a slope in, y out.
struct ActUnit {
  using Model = Vseq_act;
  using Input = ActInput;
  static constexpr unsigned kMaxCycles = kMaxValueCycles;
  static void offer(Model& unit, const Input& in) {
    unit.func_i = static_cast<std::uint8_t>(in.func);
    unit.alpha_i = in.alpha;
    unit.x_i = in.x;
  }
  static void scramble(Model& unit, std::uint64_t noise) {
    unit.func_i = static_cast<std::uint8_t>(noise & 0xF);
    unit.alpha_i = static_cast<std::uint16_t>(noise >> 4);
    unit.x_i = static_cast<std::uint32_t>(noise >> 20);
  }
  static std::uint32_t result(const Model& unit) { return unit.y_o; }
  static std::uint32_t expected(const Input& in) {
    return tpu::num::act_func(in.func, in.x, in.alpha, false);
  }
  static void describe(std::ostream& out, const Input& in) {
    out << " func=" << in.func << " x=0x" << in.x << " alpha=0x" << in.alpha;
  }
};

using SeqActModel = tpu::test::HandshakeUnit<Vseq_act>;
using Stream = tpu::test::HandshakeStream<ActUnit>;
using tpu::test::wait_for_result;

std::vector<bf16_t> every_slope() {
  std::vector<bf16_t> slopes(std::begin(kSlopes), std::end(kSlopes));
  slopes.insert(slopes.end(), std::begin(kSpecialSlopes), std::end(kSpecialSlopes));
  return slopes;
}

// Every bf16 pattern widened to fp32 (x << 16).
std::vector<fp32_t> every_bf16_input() {
  std::vector<fp32_t> inputs;
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) inputs.push_back(bits << 16);
  return inputs;
}

TEST(RtlSeqAct, EveryBf16InputEveryFunction) {
  Stream stream(test_seed());
  for (unsigned func = 0; func < kFunctionCount; ++func) {
    if (func == static_cast<unsigned>(ActFunc::kLeaky)) continue;
    for (fp32_t x : every_bf16_input()) stream.feed({func, x, 0});
  }
  for (bf16_t alpha : every_slope())
    for (fp32_t x : every_bf16_input())
      stream.feed({static_cast<unsigned>(ActFunc::kLeaky), x, alpha});
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

// Zeros, subnormals, the normal extremes, infinities, NaNs with either sign and several
// payloads, and the boundaries of the unit's paths, each with its neighbours: relu6's 6,
// |x| = 2^-22 below which the fixed-point |x| is 0, tanh's series below 2^-4, tanh and gelu
// from 16, sigmoid from 32 and to -128, the scaled argument's saturation at 256, 1.0, and the
// flush of sigmoid and gelu near -87.3 and -13.2; plus the structured fp32 operands.
std::vector<fp32_t> special_inputs() {
  std::vector<fp32_t> inputs = oracle::structured_fp32_operands();
  const fp32_t magnitudes[] = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                               0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0x40C00000u,
                               0x34800000u, 0x34FFFFFFu, 0x3D800000u, 0x3D7FFFFFu, 0x41800000u,
                               0x41FFFFFFu, 0x42000000u, 0x43000000u, 0x437FFFFFu, 0x43800000u,
                               0x42AEAC50u, 0x41533333u, 0x3F800000u, 0x34000000u};
  for (fp32_t magnitude : magnitudes)
    for (fp32_t sign : {0u, 0x80000000u})
      for (fp32_t neighbour : {magnitude - 1, magnitude, magnitude + 1})
        inputs.push_back(sign | (neighbour & 0x7FFFFFFFu));
  return inputs;
}

TEST(RtlSeqAct, SpecialValuesEveryCodeAndSlope) {
  Stream stream(test_seed() + 1);
  for (fp32_t x : special_inputs())
    for (unsigned func = 0; func < kFunctionCodes; ++func)
      for (bf16_t alpha : every_slope()) stream.feed({func, x, alpha});
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

TEST(RtlSeqAct, RandomFp32InputsEveryFunction) {
  const std::uint64_t seed = test_seed();
  oracle::OperandRng rng(seed + 2);
  for (unsigned func = 0; func < kFunctionCount; ++func) {
    Stream stream(seed + 3 + func);
    for (std::uint64_t n = 0; n < kRandomInputsPerFunction; ++n)
      stream.feed({func, oracle::activation_input(rng), rng.bf16()});
    stream.drain();
    EXPECT_NO_MISMATCH(stream.mismatches()) << "func " << func;
    std::cout << "[ cycles   ] func " << func << ": mean " << stream.mean_cycles() << ", max "
              << stream.max_cycles() << " from acceptance to out_valid_o\n";
  }
}

TEST(RtlSeqAct, FunctionAndSlopeChangeEveryValue) {
  const std::uint64_t seed = test_seed();
  oracle::OperandRng rng(seed + 10);
  Stream stream(seed + 11, 50);
  for (std::uint64_t n = 0; n < 100'000; ++n) {
    const auto func = static_cast<unsigned>(rng.uniform(0, kFunctionCodes - 1));
    stream.feed({func, oracle::activation_input(rng), rng.bf16()});
  }
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

// A result stays in y_o until taken; an input offered meanwhile waits for that.
TEST(RtlSeqAct, ResultHeldUntilTaken) {
  tpu::test::expect_result_held_until_taken<ActUnit>(
      {static_cast<unsigned>(ActFunc::kGelu), 0xBF400000u, 0},      // gelu(-0.75)
      {static_cast<unsigned>(ActFunc::kSigmoid), 0x40200000u, 0});  // sigmoid(2.5)
}

// Reset in the middle of a value leaves the unit idle, and the next value is right.
TEST(RtlSeqAct, ResetInTheMiddleOfAValue) {
  SeqActModel unit(8);
  for (unsigned after : {1u, 20u, 90u, 150u}) {
    unit->in_valid_i = 1;
    unit->func_i = static_cast<std::uint8_t>(ActFunc::kGelu);
    unit->x_i = 0x3F912345u;
    unit.clock();
    unit->in_valid_i = 0;
    for (unsigned cycle = 0; cycle < after; ++cycle) unit.clock();
    unit.reset();
    EXPECT_TRUE(unit->in_ready_o) << "reset after " << after;
    EXPECT_FALSE(unit->out_valid_o) << "reset after " << after;
    const ActInput in{static_cast<unsigned>(ActFunc::kTanh), 0xBE7FFFFFu, 0};
    unit->in_valid_i = 1;
    unit->func_i = static_cast<std::uint8_t>(in.func);
    unit->x_i = in.x;
    unit.clock();
    unit->in_valid_i = 0;
    wait_for_result(unit, kMaxValueCycles);
    EXPECT_EQ(unit->y_o, tpu::num::act_func(in.func, in.x, in.alpha)) << "reset after " << after;
    unit->out_ready_i = 1;
    unit.clock();
  }
}

}  // namespace
