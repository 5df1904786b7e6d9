// The sequential fp32 adder (rtl/seq/tpu_seq_add.sv) against the reference model's add_fp32
// (sw/numerics/float.cpp), bit for bit: the directed cases of the pipelined adder, every pair of
// the structured fp32 operands and of a list of special values, constructed pairs (exact
// cancellation, neighbours one ulp apart, rounding carries into the next binade, sums at the
// flush boundary, every exponent difference from 0 to 40) and 2,000,000 random pairs. Throughout,
// in_valid_i and out_ready_i are held low at random and the inputs change at random whenever
// they are not offered, so a result must wait in sum_o and only the offered pair may be taken.
// Then the handshakes on their own: the result held until taken, nothing taken while a sum is in
// flight, and reset in the middle of a sum. A sum that takes more than kMaxSumCycles fails the test
// instead of hanging it.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <utility>
#include <vector>

#include "Vseq_add.h"
#include "common/test_seed.hpp"
#include "directed_vectors.hpp"
#include "handshake_unit.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/numerics/float.hpp"

namespace {

using tpu::num::fp32_t;
using tpu::test::test_seed;
namespace oracle = tpu::oracle;

constexpr std::uint64_t kRandomPairs = 2'000'000;
// Clock edges from acceptance to out_valid_o that no sum may exceed (the design takes at most 58).
constexpr unsigned kMaxSumCycles = 200;

constexpr fp32_t kSignMask = 0x80000000u;
constexpr fp32_t kFractionMask = 0x007FFFFFu;

fp32_t pack(fp32_t sign, unsigned biased_exponent, fp32_t fraction) {
  return sign | (static_cast<fp32_t>(biased_exponent) << 23) | (fraction & kFractionMask);
}

// tpu_seq_add as the stream drives it: a pair in, the sum out.
struct AddUnit {
  using Model = Vseq_add;
  struct Input {
    fp32_t x;
    fp32_t y;
  };
  static constexpr unsigned kMaxCycles = kMaxSumCycles;
  static void offer(Model& unit, const Input& in) {
    unit.x_i = in.x;
    unit.y_i = in.y;
  }
  static void scramble(Model& unit, std::uint64_t noise) {
    unit.x_i = static_cast<std::uint32_t>(noise);
    unit.y_i = static_cast<std::uint32_t>(noise >> 32);
  }
  static std::uint32_t result(const Model& unit) { return unit.sum_o; }
  static std::uint32_t expected(const Input& in) { return tpu::num::add_fp32(in.x, in.y); }
  static void describe(std::ostream& out, const Input& in) {
    out << " x=0x" << in.x << " y=0x" << in.y;
  }
};

using SeqAddModel = tpu::test::HandshakeUnit<Vseq_add>;
using Stream = tpu::test::HandshakeStream<AddUnit>;
using tpu::test::wait_for_result;

void report_cycles(const Stream& stream) {
  std::cout << "[ cycles   ] mean " << stream.mean_cycles() << ", max " << stream.max_cycles()
            << " from acceptance to out_valid_o\n";
}

// Zeros, subnormals, the smallest and largest normals and their neighbours, infinities, NaNs
// (quiet, signalling, with payloads), 1 and its neighbours, powers of two near the flush
// boundary; both signs.
std::vector<fp32_t> special_values() {
  const fp32_t magnitudes[] = {0x00000000u, 0x00000001u, 0x00400000u, 0x007FFFFFu, 0x00800000u,
                               0x00800001u, 0x00FFFFFFu, 0x01000000u, 0x01000001u, 0x0D000000u,
                               0x3F7FFFFFu, 0x3F800000u, 0x3F800001u, 0x3FC00000u, 0x3FFFFFFFu,
                               0x4B800000u, 0x7F000000u, 0x7F7FFFFEu, 0x7F7FFFFFu, 0x7F800000u,
                               0x7F800001u, 0x7FBFFFFFu, 0x7FC00000u, 0x7FFFFFFFu};
  std::vector<fp32_t> values;
  for (fp32_t magnitude : magnitudes)
    for (fp32_t sign : {0u, kSignMask}) values.push_back(sign | magnitude);
  return values;
}

// Pairs built to hit the adder's edges.
std::vector<std::pair<fp32_t, fp32_t>> constructed_pairs() {
  std::vector<std::pair<fp32_t, fp32_t>> pairs;
  const fp32_t fractions[] = {0x000000u, 0x000001u, 0x000002u, 0x3FFFFFu, 0x400000u, 0x400001u,
                              0x555555u, 0x2AAAAAu, 0x7FFFFEu, 0x7FFFFFu, 0x123456u, 0x6DB6DBu};
  const unsigned exponents[] = {1, 2, 3, 24, 25, 26, 27, 100, 126, 127, 128, 200, 252, 253, 254};
  // Exact cancellation, and neighbours a few ulps apart with equal and opposite signs.
  for (unsigned e : exponents)
    for (fp32_t f : fractions)
      for (fp32_t sign : {0u, kSignMask}) {
        const fp32_t x = pack(sign, e, f);
        for (fp32_t delta = 0; delta <= 3; ++delta)
          for (fp32_t neighbour : {x + delta, x - delta}) {
            if (((neighbour >> 23) & 0xFFu) == 0 || ((neighbour >> 23) & 0xFFu) == 0xFFu) continue;
            pairs.emplace_back(x, neighbour ^ kSignMask);
            pairs.emplace_back(x, neighbour);
          }
      }
  // Rounding carries into the next binade: 1.11..1 * 2^e plus about half an ulp, and the
  // largest finite plus about half an ulp (overflow to infinity or not).
  for (unsigned e : {1u, 24u, 126u, 127u, 253u, 254u})
    for (unsigned below = 23; below <= 27; ++below) {
      if (e <= below) continue;
      for (fp32_t f : {0x000000u, 0x000001u, 0x7FFFFFu, 0x400000u})
        for (fp32_t sign : {0u, kSignMask}) {
          const fp32_t x = pack(sign, e, 0x7FFFFFu);
          pairs.emplace_back(x, pack(sign, e - below, f));
          pairs.emplace_back(pack(sign, e - below, f), x);
          pairs.emplace_back(x, pack(sign ^ kSignMask, e - below, f));
        }
    }
  // Sums at the flush boundary: operands near 2^-126 whose difference falls below it or not.
  for (unsigned ex = 1; ex <= 3; ++ex)
    for (unsigned ey = 1; ey <= 3; ++ey)
      for (fp32_t f : fractions)
        for (fp32_t g : fractions) {
          pairs.emplace_back(pack(0, ex, f), pack(kSignMask, ey, g));
          pairs.emplace_back(pack(kSignMask, ex, f), pack(0, ey, g));
        }
  // Every exponent difference from 0 to 40, both orders, all four sign combinations.
  for (unsigned distance = 0; distance <= 40; ++distance)
    for (unsigned e : {41u, 127u, 254u})
      for (fp32_t f : fractions)
        for (fp32_t g : fractions)
          for (fp32_t signs = 0; signs < 4; ++signs) {
            const fp32_t x = pack((signs & 1u) != 0 ? kSignMask : 0u, e, f);
            const fp32_t y = pack((signs & 2u) != 0 ? kSignMask : 0u, e - distance, g);
            pairs.emplace_back(x, y);
            pairs.emplace_back(y, x);
          }
  return pairs;
}

TEST(RtlSeqAdd, DirectedCases) {
  Stream stream(test_seed());
  for (const auto& c : tpu::test::kAddCases) {
    stream.feed({c.x, c.y});
    stream.feed({c.y, c.x});
    EXPECT_EQ(tpu::num::add_fp32(c.x, c.y), c.expected) << "reference disagrees: " << c.what;
  }
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
}

TEST(RtlSeqAdd, EverySpecialAndStructuredPair) {
  Stream stream(test_seed() + 1);
  const auto specials = special_values();
  for (fp32_t x : specials)
    for (fp32_t y : specials) stream.feed({x, y});
  const auto operands = oracle::structured_fp32_operands();
  for (fp32_t x : operands)
    for (fp32_t y : operands) stream.feed({x, y});
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
  report_cycles(stream);
}

TEST(RtlSeqAdd, ConstructedPairs) {
  Stream stream(test_seed() + 2);
  for (const auto& [x, y] : constructed_pairs()) stream.feed({x, y});
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
  report_cycles(stream);
}

// Random bit patterns and mixed special values (fp32_pair), and normal pairs with close
// exponents, cancellations and rounding ties (fp32_pair_finite_normal), half each.
TEST(RtlSeqAdd, RandomPairs) {
  const std::uint64_t seed = test_seed();
  oracle::OperandRng rng(seed + 3);
  Stream stream(seed + 4, 5);
  for (std::uint64_t i = 0; i < kRandomPairs; ++i) {
    const auto [x, y] = (i % 2) != 0 ? rng.fp32_pair() : rng.fp32_pair_finite_normal();
    stream.feed({x, y});
  }
  stream.drain();
  EXPECT_NO_MISMATCH(stream.mismatches());
  report_cycles(stream);
}

// A result stays in sum_o until taken; a pair offered meanwhile waits for that.
TEST(RtlSeqAdd, ResultHeldUntilTaken) {
  tpu::test::expect_result_held_until_taken<AddUnit>(
      {0x3F800001u, 0xBF800000u},   // cancellation: 2^-23
      {0x7F7FFFFFu, 0x73000000u});  // rounds up to +inf
}

// Reset in the middle of a sum leaves the unit idle, and the next sum is right.
TEST(RtlSeqAdd, ResetInTheMiddleOfASum) {
  SeqAddModel unit(8);
  for (unsigned after : {0u, 1u, 10u, 30u, 50u}) {
    unit->in_valid_i = 1;
    unit->x_i = 0x3F912345u;
    unit->y_i = 0xB3ABCDEFu;
    unit.clock();
    unit->in_valid_i = 0;
    for (unsigned cycle = 0; cycle < after; ++cycle) unit.clock();
    unit.reset();
    EXPECT_TRUE(unit->in_ready_o) << "reset after " << after;
    EXPECT_FALSE(unit->out_valid_o) << "reset after " << after;
    const std::pair<fp32_t, fp32_t> in{0xC0400000u, 0x40000000u};  // -3 + 2 = -1
    unit->in_valid_i = 1;
    unit->x_i = in.first;
    unit->y_i = in.second;
    unit.clock();
    unit->in_valid_i = 0;
    wait_for_result(unit, kMaxSumCycles);
    EXPECT_EQ(unit->sum_o, tpu::num::add_fp32(in.first, in.second)) << "reset after " << after;
    unit->out_ready_i = 1;
    unit.clock();
  }
}

}  // namespace
