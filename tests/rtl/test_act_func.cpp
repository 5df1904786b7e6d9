// The activation function unit in RTL (rtl/core/tpu_act_func.sv) against the reference model
// (sw/numerics/activation.cpp), bit for bit: every bf16 input for every function code, special
// values, random fp32 inputs, function and slope changing every cycle, and the pipeline timing; as
// the default core builds it, with SplitStages (a register after each multiplier, one after the
// shift of 2^-n and one between normalising and rounding), as the FPGA builds have it, and without
// the vector unit's functions (VectorFunctions off), as a core without a vector unit has it.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "Vact_func.h"
#include "Vact_func_base.h"
#include "Vact_func_split.h"
#include "Vact_func_tpu_pkg.h"
#include "common/test_seed.hpp"
#include "harness/unit_model.hpp"
#include "mismatch_log.hpp"
#include "oracle/activation.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/numerics/activation.hpp"

namespace {

using tpu::harness::UnitModel;
using tpu::num::ActFunc;
using tpu::num::bf16_t;
using tpu::num::fp32_t;
using tpu::test::test_seed;
namespace oracle = tpu::oracle;

// The builds of the unit and their latencies: tpu_pkg::ActFuncLatency, exported by Verilator (the
// parameters are marked public), and tpu_pkg::ActFuncSplitLatency with SplitStages.
struct Unsplit {
  using Model = Vact_func;
  static constexpr unsigned kLatency = Vact_func_tpu_pkg::ActFuncLatency;
  static constexpr bool kVectorFunctions = true;
};
struct Split {
  using Model = Vact_func_split;
  static constexpr unsigned kLatency = Vact_func_tpu_pkg::ActFuncSplitLatency;
  static constexpr bool kVectorFunctions = true;
};
struct Base {
  using Model = Vact_func_base;
  static constexpr unsigned kLatency = Vact_func_tpu_pkg::ActFuncLatency;
  static constexpr bool kVectorFunctions = false;
};

constexpr std::uint64_t kRandomInputsPerFunction = 1'000'000;
// Codes 0..9 (7..9 exp, reciprocal and reciprocal square root, illegal without the vector
// unit's functions); 10..15 are illegal.
constexpr unsigned kFunctionCount = 10;
constexpr unsigned kFunctionCodes = 16;

// 0.01, 0.2, 1, -0.5 and 0.
constexpr bf16_t kSlopes[] = {0x3C24u, 0x3E4Du, 0x3F80u, 0xBF00u, 0x0000u};

struct Input {
  unsigned func;
  fp32_t x;
  bf16_t alpha;
};

// Counts mismatches against the reference model of a build (with or without the vector unit's
// functions) and keeps the first few for the failure message.
class Mismatches : public tpu::test::MismatchLog {
 public:
  explicit Mismatches(bool vector_functions) : vector_functions_(vector_functions) {}
  void check(std::uint32_t got, const Input& in) {
    const std::uint32_t want = tpu::num::act_func(in.func, in.x, in.alpha, vector_functions_);
    MismatchLog::check(got, want, [&](std::ostream& out) {
      out << " func=" << in.func << " x=0x" << in.x << " alpha=0x" << in.alpha;
    });
  }

 private:
  bool vector_functions_;
};

// Streams inputs through the unit, one per clock with en_i high, and checks each output against
// the reference model's result for the input fed kLatency clocks earlier.
template <typename Build>
class Stream {
 public:
  void feed(const Input& in) {
    unit_->func_i = static_cast<std::uint8_t>(in.func);
    unit_->alpha_i = in.alpha;
    unit_->x_i = in.x;
    unit_->en_i = 1;
    unit_.clock();
    in_flight_.push_back(in);
    if (in_flight_.size() == Build::kLatency) {
      mismatches_.check(unit_->y_o, in_flight_.front());
      in_flight_.pop_front();
    }
  }
  // Pushes the last real inputs out with zeros behind them (these are checked as well).
  void drain() {
    for (unsigned n = 1; n < Build::kLatency; ++n) feed({0, 0, 0});
  }
  const Mismatches& mismatches() const { return mismatches_; }

 private:
  UnitModel<typename Build::Model> unit_;
  std::deque<Input> in_flight_;
  Mismatches mismatches_{Build::kVectorFunctions};
};

// Every bf16 pattern widened to fp32 (x << 16).
std::vector<fp32_t> every_bf16_input() {
  std::vector<fp32_t> inputs;
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) inputs.push_back(bits << 16);
  return inputs;
}

template <typename Build>
class RtlAct : public ::testing::Test {};
using Builds = ::testing::Types<Unsplit, Split, Base>;
class BuildNames {
 public:
  template <typename Build>
  static std::string GetName(int) {
    if (std::is_same_v<Build, Split>) return "Split";
    return std::is_same_v<Build, Base> ? "Base" : "Unsplit";
  }
};
TYPED_TEST_SUITE(RtlAct, Builds, BuildNames);

TYPED_TEST(RtlAct, EveryBf16InputEveryFunction) {
  Stream<TypeParam> stream;
  for (unsigned func = 0; func < kFunctionCount; ++func) {
    if (func == static_cast<unsigned>(ActFunc::kLeaky)) continue;
    for (fp32_t x : every_bf16_input()) stream.feed({func, x, 0});
  }
  for (bf16_t alpha : kSlopes)
    for (fp32_t x : every_bf16_input())
      stream.feed({static_cast<unsigned>(ActFunc::kLeaky), x, alpha});
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

// Zeros, subnormals, the normal extremes, infinities, NaNs with either sign and several
// payloads, and the boundaries of the unit's ranges (relu6's 6, tanh's series below 2^-4,
// gelu's identity from 16, the scaled argument's saturation at 256, sigmoid's and gelu's flush
// near -87.3 and -13.2, exp's overflow at 88.72, the reciprocal's flush from 2^126 on), each with
// its neighbours, plus the structured fp32 operands.
std::vector<fp32_t> special_inputs() {
  std::vector<fp32_t> inputs = oracle::structured_fp32_operands();
  const fp32_t magnitudes[] = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                               0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0x40C00000u,
                               0x3D800000u, 0x41800000u, 0x43800000u, 0x42AEAC50u, 0x41533333u,
                               0x3F800000u, 0x34000000u, 0x42B17218u, 0x7E800000u, 0x7F000000u};
  for (fp32_t magnitude : magnitudes)
    for (fp32_t sign : {0u, 0x80000000u})
      for (fp32_t neighbour : {magnitude - 1, magnitude, magnitude + 1})
        inputs.push_back(sign | (neighbour & 0x7FFFFFFFu));
  return inputs;
}

TYPED_TEST(RtlAct, SpecialValuesEveryCodeAndSlope) {
  // Special slopes: +-0, a subnormal, +-inf, NaN, the largest finite, the smallest normal.
  std::vector<bf16_t> alphas(std::begin(kSlopes), std::end(kSlopes));
  for (unsigned special : {0x8000u, 0x0001u, 0x7F80u, 0xFF80u, 0x7FC1u, 0x7F7Fu, 0x0080u})
    alphas.push_back(static_cast<bf16_t>(special));
  Stream<TypeParam> stream;
  for (fp32_t x : special_inputs())
    for (unsigned func = 0; func < kFunctionCodes; ++func)
      for (bf16_t alpha : alphas) stream.feed({func, x, alpha});
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

TYPED_TEST(RtlAct, RandomFp32InputsEveryFunction) {
  oracle::OperandRng rng(test_seed());
  Stream<TypeParam> stream;
  for (unsigned func = 0; func < kFunctionCount; ++func)
    for (std::uint64_t n = 0; n < kRandomInputsPerFunction; ++n)
      stream.feed({func, oracle::activation_input(rng), rng.bf16()});
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

TYPED_TEST(RtlAct, FunctionAndSlopeChangeEveryCycle) {
  oracle::OperandRng rng(test_seed() + 1);
  Stream<TypeParam> stream;
  for (std::uint64_t n = 0; n < kRandomInputsPerFunction; ++n) {
    const auto func = static_cast<unsigned>(rng.uniform(0, kFunctionCodes - 1));
    stream.feed({func, oracle::activation_input(rng), rng.bf16()});
  }
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

// Pulses rst_ni. UnitModel drives rst_ni low before the model's first evaluation, which
// Verilator does not take for a falling edge, so its reset does not reach the registers.
template <typename Model>
void reset(UnitModel<Model>& unit) {
  unit->rst_ni = 1;
  unit->eval();
  unit->rst_ni = 0;
  unit->eval();
  unit->rst_ni = 1;
  unit->eval();
}

// A value fed in cycle t is at y_o in cycle t + kLatency, and not earlier.
TYPED_TEST(RtlAct, LatencyIsTheBuildsLatency) {
  constexpr unsigned kLatency = TypeParam::kLatency;
  UnitModel<typename TypeParam::Model> unit;
  reset(unit);
  EXPECT_EQ(unit->y_o, 0u) << "reset clears the output register";
  // Distinct values through the identity: the output says which input it came from.
  constexpr fp32_t kFirst = 0x42F60000u;  // 123.0, nothing the reset state produces
  for (unsigned cycle = 0; cycle < 4 * kLatency; ++cycle) {
    unit->func_i = static_cast<std::uint8_t>(ActFunc::kNone);
    unit->x_i = kFirst + cycle;
    unit->en_i = 1;
    unit.clock();
    if (cycle + 1 >= kLatency) {
      ASSERT_EQ(unit->y_o, kFirst + cycle + 1 - kLatency) << "after clock " << cycle + 1;
    } else {
      ASSERT_TRUE(unit->y_o < kFirst || unit->y_o > kFirst + cycle)
          << "an input reached y_o after " << cycle + 1 << " clocks";
    }
  }
}

// Under a random clock enable the output after n enabled clocks is the result for the input
// applied at enabled clock n - kLatency, and it holds while the enable is low, whatever the
// inputs do meanwhile.
TYPED_TEST(RtlAct, ClockEnableFreezesThePipeline) {
  constexpr unsigned kLatency = TypeParam::kLatency;
  const std::uint64_t seed = test_seed() + 2;
  UnitModel<typename TypeParam::Model> unit(static_cast<std::uint32_t>(seed));
  oracle::OperandRng rng(seed);
  std::deque<Input> in_flight;
  std::uint64_t enabled = 0;
  std::uint32_t previous_output = unit->y_o;
  Mismatches m(TypeParam::kVectorFunctions);
  std::uint64_t changed_while_frozen = 0;
  for (int cycle = 0; cycle < 200'000; ++cycle) {
    const bool enable = rng.uniform(0, 99) < 60;
    const Input in{static_cast<unsigned>(rng.uniform(0, kFunctionCount - 1)),
                   oracle::activation_input(rng), rng.bf16()};
    unit->func_i = static_cast<std::uint8_t>(in.func);
    unit->alpha_i = in.alpha;
    unit->x_i = in.x;
    unit->en_i = enable;
    unit.clock();
    if (enable) {
      in_flight.push_back(in);
      ++enabled;
    } else if (unit->y_o != previous_output) {
      ++changed_while_frozen;
    }
    previous_output = unit->y_o;
    if (enabled >= kLatency) {
      while (in_flight.size() > kLatency) in_flight.pop_front();
      m.check(unit->y_o, in_flight.front());
    }
  }
  EXPECT_EQ(changed_while_frozen, 0u);
  EXPECT_NO_MISMATCH(m);
}

}  // namespace
