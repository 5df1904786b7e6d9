// The arithmetic units in RTL against the host-FPU oracle (tb/oracle), which
// shares no code with the RTL: structured operand pairs, 10^7 random vectors,
// directed special cases, and every pipeline depth under a random clock enable.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <iostream>

#include "Vbf16_mul_s0.h"
#include "Vbf16_mul_s1.h"
#include "Vbf16_mul_s2.h"
#include "Vfp32_add_s0.h"
#include "Vfp32_add_s1.h"
#include "Vfp32_add_s2.h"
#include "Vfp32_add_s3.h"
#include "Vfp32_to_bf16_s0.h"
#include "Vfp32_to_bf16_s1.h"
#include "Vvector_lane.h"
#include "common/test_seed.hpp"
#include "directed_vectors.hpp"
#include "harness/unit_model.hpp"
#include "mismatch_log.hpp"
#include "oracle/eltwise.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"

namespace {

using tpu::test::test_seed;

using tpu::harness::UnitModel;
namespace oracle = tpu::oracle;

constexpr std::uint64_t kRandomVectors = 10'000'000;

// Mismatches, each described by the raw inputs that gave it.
class Mismatches : public tpu::test::MismatchLog {
 public:
  template <typename... Fields>
  void check(std::uint32_t got, std::uint32_t want, Fields... inputs) {
    MismatchLog::check(got, want, [&](std::ostream& out) { ((out << " in=0x" << inputs), ...); });
  }
};

std::uint32_t eval_mul(UnitModel<Vbf16_mul_s0>& unit, std::uint16_t a, std::uint16_t b) {
  unit->a_i = a;
  unit->b_i = b;
  unit->eval();
  return unit->product_o;
}
std::uint32_t eval_add(UnitModel<Vfp32_add_s0>& unit, std::uint32_t x, std::uint32_t y) {
  unit->x_i = x;
  unit->y_i = y;
  unit->eval();
  return unit->sum_o;
}
std::uint16_t eval_round(UnitModel<Vfp32_to_bf16_s0>& unit, std::uint32_t x) {
  unit->value_i = x;
  unit->eval();
  return unit->value_o;
}

TEST(RtlMul, EveryStructuredPairMatchesOracle) {
  UnitModel<Vbf16_mul_s0> unit;
  const auto operands = oracle::structured_bf16_operands();
  Mismatches m;
  for (auto a : operands)
    for (auto b : operands) m.check(eval_mul(unit, a, b), oracle::mul_bf16(a, b), a, b);
  EXPECT_NO_MISMATCH(m);
}

TEST(RtlMul, RandomPairsMatchOracle) {
  UnitModel<Vbf16_mul_s0> unit;
  oracle::OperandRng rng(test_seed());
  Mismatches m;
  for (std::uint64_t i = 0; i < kRandomVectors; ++i) {
    const auto a = rng.bf16(), b = rng.bf16();
    m.check(eval_mul(unit, a, b), oracle::mul_bf16(a, b), a, b);
  }
  EXPECT_NO_MISMATCH(m);
}

TEST(RtlMul, DirectedCases) {
  UnitModel<Vbf16_mul_s0> unit;
  for (const auto& c : tpu::test::kMulCases) {
    EXPECT_EQ(eval_mul(unit, c.a, c.b), c.expected) << c.what;
    EXPECT_EQ(oracle::mul_bf16(c.a, c.b), c.expected) << "oracle disagrees: " << c.what;
  }
}

TEST(RtlAdd, EveryStructuredPairMatchesOracle) {
  UnitModel<Vfp32_add_s0> unit;
  const auto operands = oracle::structured_fp32_operands();
  Mismatches m;
  for (auto x : operands)
    for (auto y : operands) m.check(eval_add(unit, x, y), oracle::add_fp32(x, y), x, y);
  EXPECT_NO_MISMATCH(m);
}

TEST(RtlAdd, RandomPairsMatchOracle) {
  UnitModel<Vfp32_add_s0> unit;
  oracle::OperandRng rng(test_seed() + 1);
  Mismatches m;
  for (std::uint64_t i = 0; i < kRandomVectors; ++i) {
    const auto [x, y] = (i % 2) ? rng.fp32_pair() : rng.fp32_pair_finite_normal();
    m.check(eval_add(unit, x, y), oracle::add_fp32(x, y), x, y);
  }
  EXPECT_NO_MISMATCH(m);
}

TEST(RtlAdd, DirectedCases) {
  UnitModel<Vfp32_add_s0> unit;
  for (const auto& c : tpu::test::kAddCases) {
    EXPECT_EQ(eval_add(unit, c.x, c.y), c.expected) << c.what;
    EXPECT_EQ(eval_add(unit, c.y, c.x), c.expected) << "swapped: " << c.what;
    EXPECT_EQ(oracle::add_fp32(c.x, c.y), c.expected) << "oracle disagrees: " << c.what;
  }
}

std::uint32_t eval_lane(UnitModel<Vvector_lane>& unit, tpu::isa::VectorOp op, bool int32,
                        std::uint32_t a, std::uint32_t b) {
  unit->op_i = static_cast<std::uint8_t>(op);
  unit->int32_i = int32;
  unit->a_i = a;
  unit->b_i = b;
  unit->eval();
  return unit->result_o;
}

// Every operation of the vector unit's lane, fp32 and int32, against the host's (N-VEC):
// structured pairs and random ones, and for the conversions integers of every magnitude (make
// verify-exhaustive takes every input of both).
TEST(RtlVectorLane, EveryOperationMatchesOracle) {
  UnitModel<Vvector_lane> unit;
  const auto operands = oracle::structured_fp32_operands();
  oracle::OperandRng rng(test_seed() + 3);
  std::vector<std::uint32_t> ints;
  for (int bit = 0; bit < 32; ++bit) {
    for (const std::uint32_t v : {1u << bit, (1u << bit) + 1, (1u << bit) - 1, (3u << bit) >> 1}) {
      ints.push_back(v);
      ints.push_back(0u - v);
    }
  }
  for (int i = 0; i < 2000; ++i) ints.push_back(static_cast<std::uint32_t>(rng.uniform(0, ~0u)));
  Mismatches m;
  for (int code = 0; code < static_cast<int>(tpu::isa::kVectorOpCount); ++code) {
    const auto op = static_cast<tpu::isa::VectorOp>(code);
    for (const bool int32 : {false, true}) {
      const auto check = [&](std::uint32_t a, std::uint32_t b) {
        m.check(eval_lane(unit, op, int32, a, b), oracle::eltwise_lane(op, int32, a, b), code,
                int32, a, b);
      };
      for (auto a : operands)
        for (auto b : operands) check(a, b);
      for (int i = 0; i < 200000; ++i) {
        const auto [a, b] = rng.fp32_pair();
        check(a, b);
      }
      for (const std::uint32_t a : ints)
        for (const std::uint32_t b : {0x3F800000u, 0x3EFFFFFFu, 0x40400000u, 0xC0000001u, 7u})
          check(a, b);
    }
  }
  EXPECT_NO_MISMATCH(m);
}

TEST(RtlRound, RandomValuesMatchOracle) {
  UnitModel<Vfp32_to_bf16_s0> unit;
  oracle::OperandRng rng(test_seed() + 2);
  Mismatches m;
  for (std::uint64_t i = 0; i < kRandomVectors; ++i) {
    const auto x = rng.fp32();
    m.check(eval_round(unit, x), oracle::fp32_to_bf16(x), x);
  }
  EXPECT_NO_MISMATCH(m);
}

TEST(RtlRound, DirectedCases) {
  UnitModel<Vfp32_to_bf16_s0> unit;
  for (const auto& c : tpu::test::kRoundCases) {
    EXPECT_EQ(eval_round(unit, c.value), c.expected) << c.what;
    EXPECT_EQ(oracle::fp32_to_bf16(c.value), c.expected) << "oracle disagrees: " << c.what;
  }
}

// A pipelined unit under a random clock enable: after n enabled clocks the
// output must be the oracle's answer for the input applied at enabled clock
// n - stages, and it must hold while the enable is low.
template <typename VUnit>
void check_pipeline(unsigned stages, std::uint64_t seed,
                    const std::function<std::uint32_t(VUnit&, oracle::OperandRng&)>& apply,
                    const std::function<std::uint32_t(VUnit&)>& output) {
  UnitModel<VUnit> unit(static_cast<std::uint32_t>(seed));
  oracle::OperandRng rng(seed);
  std::deque<std::uint32_t> expected;
  std::uint64_t enabled = 0;
  Mismatches m;
  for (int cycle = 0; cycle < 200'000; ++cycle) {
    const bool enable = rng.uniform(0, 99) < 70;
    unit->en_i = enable;
    const std::uint32_t want = apply(*unit.operator->(), rng);
    unit->eval();
    if (enable) expected.push_back(want);
    unit.clock();
    if (enable) ++enabled;
    if (enabled >= stages) {
      // The input applied `stages` enabled clocks ago must be at the output.
      while (expected.size() > stages) expected.pop_front();
      m.check(output(*unit.operator->()), expected.front(), static_cast<std::uint32_t>(cycle));
    }
  }
  EXPECT_NO_MISMATCH(m);
}

template <typename VUnit>
void check_mul_pipeline(unsigned stages) {
  check_pipeline<VUnit>(
      stages, test_seed() + stages,
      [](VUnit& u, oracle::OperandRng& rng) {
        u.a_i = rng.bf16();
        u.b_i = rng.bf16();
        return oracle::mul_bf16(u.a_i, u.b_i);
      },
      [](VUnit& u) { return std::uint32_t{u.product_o}; });
}

template <typename VUnit>
void check_add_pipeline(unsigned stages) {
  check_pipeline<VUnit>(
      stages, test_seed() + 10 + stages,
      [](VUnit& u, oracle::OperandRng& rng) {
        const auto [x, y] = rng.fp32_pair();
        u.x_i = x;
        u.y_i = y;
        return oracle::add_fp32(x, y);
      },
      [](VUnit& u) { return std::uint32_t{u.sum_o}; });
}

TEST(RtlPipelines, Mul1Stage) {
  check_mul_pipeline<Vbf16_mul_s1>(1);
}
TEST(RtlPipelines, Mul2Stages) {
  check_mul_pipeline<Vbf16_mul_s2>(2);
}
TEST(RtlPipelines, Add1Stage) {
  check_add_pipeline<Vfp32_add_s1>(1);
}
TEST(RtlPipelines, Add2Stages) {
  check_add_pipeline<Vfp32_add_s2>(2);
}
TEST(RtlPipelines, Add3Stages) {
  check_add_pipeline<Vfp32_add_s3>(3);
}
TEST(RtlPipelines, Round1Stage) {
  check_pipeline<Vfp32_to_bf16_s1>(
      1, test_seed() + 20,
      [](Vfp32_to_bf16_s1& u, oracle::OperandRng& rng) {
        u.value_i = rng.fp32();
        return std::uint32_t{oracle::fp32_to_bf16(u.value_i)};
      },
      [](Vfp32_to_bf16_s1& u) { return std::uint32_t{u.value_o}; });
}

}  // namespace
