// The functional model's int8 mode (docs/isa.md, "int8 mode") against the numerics library's
// reference functions: Q-MAC (num::gemm_int8) through READ_HOST I8, READ_WEIGHTS I8, MATMUL I8
// with FETCH, ACC0 and ACCN, sums that wrap, -128 everywhere; Q-REQ (num::requantize) through
// ACTIVATE REQ at both ends of the multiplier's range, shifts of both signs, ties, y + zo beyond
// int32 and every clamp, plus what the hardware does outside requantize()'s domain; WRITE_HOST
// I8; the int8 compiled GEMMs (tpu::reference_gemm); and the ILLEGAL_FIELD rules of the int8
// flags on cores without the int8 datapath, the sequential core and an int8-only core.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/test_seed.hpp"
#include "tpu/assembler.hpp"
#include "tpu/compiler.hpp"
#include "tpu/model.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu {
namespace {

using isa::assemble;
using num::MatrixI32;
using num::MatrixI8;
using regs::Error;

constexpr unsigned kDim = 4;
constexpr std::size_t kHostBytes = 1 << 16;
constexpr std::uint32_t kProgAddr = 0x8000;
constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();

HardwareConfig int8_config() {
  HardwareConfig config;
  config.dim = kDim;
  config.ub_depth = 64;
  config.acc_depth = 64;
  config.bus_bytes = 16;
  config.weight_tiles = 2;
  config.int8 = true;
  return config;
}

class ModelInt8Test : public ::testing::Test {
 protected:
  explicit ModelInt8Test(HardwareConfig config = int8_config()) : model_(config, kHostBytes) {}

  RunResult run(const std::string& text) {
    const std::vector<isa::Instruction> program = assemble(text);
    model_.memory().write_array(kProgAddr, isa::encode_program(program));
    return model_.run(kProgAddr, static_cast<std::uint32_t>(program.size()));
  }

  void expect_ok(const RunResult& result) {
    EXPECT_TRUE(result.ok()) << regs::error_name(result.error) << " at " << result.error_pc << ": "
                             << model_.error_detail();
  }

  // m's rows at addr, stride apart, each zero-padded to at least kDim values.
  template <typename T>
  void put_rows(std::uint32_t addr, const num::Matrix<T>& m, std::uint32_t stride) {
    for (std::size_t r = 0; r < m.rows; ++r) {
      std::vector<T> row(std::max<std::size_t>(kDim, m.cols), 0);
      for (std::size_t c = 0; c < m.cols; ++c) row[c] = m.at(r, c);
      model_.memory().write_array(addr + r * stride, row);
    }
  }

  template <typename T>
  num::Matrix<T> get_rows(std::uint32_t addr, std::size_t rows, std::size_t cols,
                          std::uint32_t stride) {
    num::Matrix<T> m(rows, cols);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::vector<T> row = model_.memory().read_array<T>(addr + r * stride, cols);
      for (std::size_t c = 0; c < cols; ++c) m.at(r, c) = row[c];
    }
    return m;
  }

  FunctionalModel model_;
};

MatrixI8 random_i8(std::mt19937_64& rng, std::size_t rows, std::size_t cols) {
  MatrixI8 m(rows, cols);
  std::uniform_int_distribution<int> value(-128, 127);
  for (auto& v : m.data) v = static_cast<std::int8_t>(value(rng));
  return m;
}

// Columns first .. first+cols-1 of m.
template <typename T>
num::Matrix<T> columns(const num::Matrix<T>& m, std::size_t first, std::size_t cols) {
  num::Matrix<T> out(m.rows, cols);
  for (std::size_t r = 0; r < m.rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) out.at(r, c) = m.at(r, first + c);
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Q-MAC
// ------------------------------------------------------------------------------------------

TEST_F(ModelInt8Test, ReadHostSignExtendsAndWriteHostKeepsTheLowByte) {
  const std::vector<std::int8_t> row{-128, -1, 0, 127};
  model_.memory().write_array(0x100, row);
  expect_ok(
      run("read_host i8 rows=1 addr_b=3 host_addr=0x100\n"
          "write_host i8 rows=1 addr_a=3 host_addr=0x200\nhalt"));
  EXPECT_EQ(model_.ub_row(3), (std::vector<num::bf16_t>{0xFF80, 0xFFFF, 0x0000, 0x007F}));
  EXPECT_EQ(model_.memory().read_array<std::int8_t>(0x200, kDim), row);
  // One byte a lane: the bytes after the row are untouched.
  EXPECT_EQ(model_.memory().read_array<std::uint8_t>(0x204, 4), std::vector<std::uint8_t>(4, 0));
}

TEST_F(ModelInt8Test, KLoopWithFetchAccumulatesLikeGemmInt8) {
  // A 6 x 8, B 8 x 4: two K tiles, the second accumulating (ACCN), seeded by C (ACC0).
  std::mt19937_64 rng(test::test_seed());
  for (int trial = 0; trial < 20; ++trial) {
    const MatrixI8 a = random_i8(rng, 6, 8);
    const MatrixI8 b = random_i8(rng, 8, 4);
    MatrixI32 c(6, 4);
    std::uniform_int_distribution<std::int32_t> any(kMin, kMax);
    for (auto& v : c.data) v = trial % 2 ? any(rng) : kMax - (any(rng) & 0xFFFF);  // wrap
    put_rows(0x1000, a, 8);  // rows of 8 int8: both K tiles side by side
    put_rows(0x2000, b, kDim);
    put_rows(0x3000, c, 4 * kDim);
    expect_ok(
        run("read_host i8 count=2 rows=6 step_b=8 host_addr=0x1000 host_stride=8 host_step=4\n"
            "read_host acc rows=6 addr_b=16 host_addr=0x3000 host_stride=16\n"
            "matmul fetch i8 acc0 accn count=2 rows=6 step_a=8 addr_b=16 host_addr=0x2000 "
            "host_stride=4 host_step=16 k_valid=4 n_valid=4\n"
            "write_host acc rows=6 addr_a=16 host_addr=0x4000 host_stride=16\nhalt"));
    EXPECT_EQ(get_rows<std::int32_t>(0x4000, 6, kDim, 16).data, num::gemm_int8(a, b, &c).data)
        << trial;
  }
}

TEST_F(ModelInt8Test, MinusOneTwentyEightEverywhereWrapsPastBothEnds) {
  // Each product is +16384; four of them onto INT32_MAX wrap to INT32_MIN + 65535. Without a seed
  // the sum is exact; a seed of INT32_MIN minus products of -16384 (b = 127) wraps the other way.
  MatrixI8 a(2, kDim, -128), b(kDim, kDim, -128);
  for (std::size_t k = 0; k < kDim; ++k) b.at(k, 3) = 127;
  MatrixI32 c(2, kDim, kMax);
  c.at(1, 3) = kMin;
  put_rows(0x1000, a, kDim);
  put_rows(0x2000, b, kDim);
  put_rows(0x3000, c, 4 * kDim);
  expect_ok(
      run("read_host i8 rows=2 host_addr=0x1000 host_stride=4\n"
          "read_weights i8 rows=4 host_addr=0x2000 host_stride=4\n"
          "read_host acc rows=2 addr_b=8 host_addr=0x3000 host_stride=16\n"
          "matmul i8 acc0 rows=2 addr_b=8 k_valid=4 n_valid=4\n"
          "matmul fetch i8 rows=2 addr_b=12 host_addr=0x2000 host_stride=4 k_valid=4 "
          "n_valid=4\n"
          "write_host acc rows=6 addr_a=8 host_addr=0x4000 host_stride=16\nhalt"));
  const MatrixI32 got = get_rows<std::int32_t>(0x4000, 6, kDim, 16);
  const MatrixI32 seeded = num::gemm_int8(a, b, &c);
  const MatrixI32 plain = num::gemm_int8(a, b);
  EXPECT_EQ(seeded.at(0, 0), kMin + 65535);
  EXPECT_EQ(seeded.at(1, 3), kMax - 65023);  // INT32_MIN - 4 * 16256, wrapped
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t j = 0; j < kDim; ++j) {
      EXPECT_EQ(got.at(r, j), seeded.at(r, j)) << r << "," << j;
      EXPECT_EQ(got.at(4 + r, j), plain.at(r, j)) << r << "," << j;
    }
  }
}

TEST_F(ModelInt8Test, LanesPastKValidAddNothing) {
  // UB lanes 2 and 3 hold values, but k_valid = 2: only A's first two columns count, whatever
  // the tile's rows 2 and 3 hold (READ_WEIGHTS loads all four).
  std::mt19937_64 rng(test::test_seed());
  const MatrixI8 a = random_i8(rng, 3, kDim), b = random_i8(rng, kDim, kDim);
  put_rows(0x1000, a, kDim);
  put_rows(0x2000, b, kDim);
  expect_ok(
      run("read_host i8 rows=3 host_addr=0x1000 host_stride=4\n"
          "read_weights i8 rows=4 host_addr=0x2000 host_stride=4\n"
          "matmul i8 rows=3 k_valid=2 n_valid=4\n"
          "write_host acc rows=3 host_addr=0x4000 host_stride=16\nhalt"));
  const MatrixI8 a2 = columns(a, 0, 2);
  MatrixI8 b2(2, kDim);
  for (std::size_t k = 0; k < 2; ++k) {
    for (std::size_t j = 0; j < kDim; ++j) b2.at(k, j) = b.at(k, j);
  }
  EXPECT_EQ(get_rows<std::int32_t>(0x4000, 3, kDim, 16).data, num::gemm_int8(a2, b2).data);
}

// ------------------------------------------------------------------------------------------
// Q-REQ
// ------------------------------------------------------------------------------------------

// One lane of ACTIVATE REQ: the sum and its column's parameters.
struct Lane {
  std::int32_t sum, bias, multiplier, shift;
};

class RequantTest : public ModelInt8Test {
 protected:
  // Requantises rows of kDim lanes with one parameter block (lane j's bias, M and s in column
  // j); returns the int8 results that WRITE_HOST I8 wrote, after checking the UB holds them
  // sign-extended.
  std::vector<std::int8_t> requantize(const std::vector<Lane>& lanes, int zo, int lo, int hi) {
    const std::size_t rows = (lanes.size() + kDim - 1) / kDim;
    // Row block of three at ACC rows 60..62 per group of kDim lanes: one group per iteration.
    std::vector<std::int8_t> out;
    for (std::size_t r = 0; r < rows; ++r) {
      MatrixI32 sums(1, kDim), block(3, kDim);
      for (std::size_t j = 0; j < kDim && r * kDim + j < lanes.size(); ++j) {
        const Lane& l = lanes[r * kDim + j];
        sums.at(0, j) = l.sum;
        block.at(0, j) = l.bias;
        block.at(1, j) = l.multiplier;
        block.at(2, j) = l.shift;
      }
      put_rows(0x1000, sums, 16);
      put_rows(0x2000, block, 16);
      const std::string text =
          "read_host acc rows=1 addr_b=5 host_addr=0x1000\n"
          "read_host acc rows=3 addr_b=60 host_addr=0x2000 host_stride=16\n" +
          std::string("activate bias req rows=1 addr_a=5 addr_b=7 bias_addr=60 zero_point=") +
          std::to_string(zo) + " clamp_lo=" + std::to_string(lo) +
          " clamp_hi=" + std::to_string(hi) +
          "\nwrite_host i8 rows=1 addr_a=7 host_addr=0x3000\nhalt";
      expect_ok(run(text));
      const auto got = model_.memory().read_array<std::int8_t>(0x3000, kDim);
      const std::vector<num::bf16_t> ub = model_.ub_row(7);
      for (std::size_t j = 0; j < kDim; ++j) {
        EXPECT_EQ(ub[j], static_cast<num::bf16_t>(static_cast<std::uint16_t>(got[j])));
        if (r * kDim + j < lanes.size()) out.push_back(got[j]);
      }
    }
    return out;
  }

  static std::int8_t reference(const Lane& l, int zo, int lo, int hi) {
    num::RequantParams p;
    p.bias = l.bias;
    p.m = {l.multiplier, static_cast<int>(l.shift)};
    p.zero_point = zo;
    p.lo = lo;
    p.hi = hi;
    return num::requantize(l.sum, p);
  }

  void expect_reference(const std::vector<Lane>& lanes, int zo, int lo, int hi) {
    const std::vector<std::int8_t> got = requantize(lanes, zo, lo, hi);
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      EXPECT_EQ(int{got[i]}, int{reference(lanes[i], zo, lo, hi)})
          << "sum " << lanes[i].sum << " bias " << lanes[i].bias << " M " << lanes[i].multiplier
          << " s " << lanes[i].shift << " zo " << zo << " [" << lo << ", " << hi << "]";
    }
  }
};

TEST_F(RequantTest, EveryShiftAndBothEndsOfTheMultiplier) {
  std::vector<Lane> lanes;
  for (std::int32_t s = -31; s <= 30; ++s) {
    for (std::int32_t m : {0, 1 << 30, (1 << 30) + 1, kMax - 1, kMax}) {
      for (std::int32_t sum : {0, 1, -1, 1000, -1000, kMax, kMin, 123456789, -987654321}) {
        lanes.push_back({sum, 0, m, s});
      }
    }
  }
  expect_reference(lanes, 0, -128, 127);
  expect_reference(lanes, -7, -128, 127);
}

TEST_F(RequantTest, TiesRoundAsTfLiteDoes) {
  // M = 2^30 halves (SRDHM ties toward +infinity), then s < 0 divides (RDBP ties away from zero):
  // every odd sum and every sum at a half of 2^e is a tie somewhere.
  std::vector<Lane> lanes;
  for (std::int32_t s : {0, -1, -2, -3, -31}) {
    for (std::int32_t sum = -40; sum <= 40; ++sum) lanes.push_back({sum, 0, 1 << 30, s});
    for (std::int32_t sum : {3 << 29, -(3 << 29), kMax, kMin, kMin + 1}) {
      lanes.push_back({sum, 0, 1 << 30, s});
    }
  }
  expect_reference(lanes, 0, -128, 127);
}

TEST_F(RequantTest, YPlusZeroPointBeyondInt32Clamps) {
  // SRDHM(INT32_MAX, INT32_MAX) = INT32_MAX - 1: + 127 is past int32 (a wrap would give a
  // negative number and -128); SRDHM(INT32_MIN, INT32_MAX) = INT32_MIN + 1: - 128 is below it.
  // The bias wraps the sum first; a positive shift wraps x.
  const std::vector<Lane> lanes{
      {kMax, 0, kMax, 0}, {kMin, 0, kMax, 0}, {kMax - 5, 5, kMax, 0}, {kMax, 1, kMax, 0},
      {1, 0, kMax, 30},   {3, 0, kMax, 30},   {kMin, -1, kMax, 0},    {kMax, kMax, 1 << 30, 0}};
  for (int zo : {127, -128, 0}) {
    expect_reference(lanes, zo, -128, 127);
  }
  const std::vector<std::int8_t> got = requantize(lanes, 127, -128, 127);
  EXPECT_EQ(got[0], 127);
  EXPECT_EQ(requantize(lanes, -128, -128, 127)[1], -128);
}

TEST_F(RequantTest, ClampsForReluAndRelu6AndRandomParameters) {
  std::mt19937_64 rng(test::test_seed());
  std::uniform_int_distribution<std::int32_t> any(kMin, kMax);
  std::uniform_int_distribution<std::int32_t> multiplier(1 << 30, kMax);
  std::uniform_int_distribution<std::int32_t> shift(-31, 30);
  std::uniform_int_distribution<int> int8(-128, 127);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<Lane> lanes;
    for (int i = 0; i < 16; ++i) {
      const std::int32_t small = any(rng) >> (any(rng) & 31);
      lanes.push_back({small, any(rng) >> 8, i == 0 ? 0 : multiplier(rng), shift(rng)});
    }
    const int zo = int8(rng);
    // none, relu (lo = zo), relu6 (hi = zo + q6), and an arbitrary legal clamp.
    const int q6 = int8(rng) & 127;
    const int lo = std::min(int8(rng), 127), hi = std::max(lo, int8(rng));
    for (const auto& [l, h] : std::vector<std::pair<int, int>>{
             {-128, 127}, {zo, 127}, {zo, std::min(127, zo + q6)}, {lo, hi}}) {
      expect_reference(lanes, zo, l, h);
    }
  }
}

TEST_F(RequantTest, OutsideRequantizesDomainAsTheHardwareDoes) {
  // The multiplier is used as it is, the shift saturates into [-31, 30], and hi wins when
  // lo > hi: checked against requantize() with the parameters the hardware really applies.
  const Lane wide_shift{1 << 20, 0, 1 << 30, 100}, low_shift{kMax, 0, kMax, -100};
  EXPECT_EQ(requantize({wide_shift}, 0, -128, 127)[0],
            reference({1 << 20, 0, 1 << 30, 30}, 0, -128, 127));
  EXPECT_EQ(requantize({low_shift}, 0, -128, 127)[0],
            reference({kMax, 0, kMax, -31}, 0, -128, 127));
  // M outside [2^30, 2^31 - 1]: SRDHM and RDBP applied all the same.
  for (std::int32_t m : {1, 5, -1, kMin, -(1 << 30), (1 << 30) - 1}) {
    for (std::int32_t sum : {0, 1, -1, kMax, kMin, 1 << 29, -(1 << 29)}) {
      for (std::int32_t s : {-3, 0, 2}) {
        const std::int32_t x =
            isa::int32_value(static_cast<std::uint32_t>(sum) << std::max<std::int32_t>(s, 0));
        const std::int32_t y = num::rounding_divide_by_pot(
            num::saturating_rounding_doubling_high_mul(x, m), std::max<std::int32_t>(-s, 0));
        const std::int64_t want = std::min<std::int64_t>(std::max<std::int64_t>(y + 3LL, -100), 50);
        EXPECT_EQ(int{requantize({{sum, 0, m, s}}, 3, -100, 50)[0]}, want)
            << "M " << m << " sum " << sum << " s " << s;
      }
    }
  }
  // lo > hi: the result is hi.
  EXPECT_EQ(requantize({{kMax, 0, kMax, 0}, {kMin, 0, kMax, 0}}, 0, 20, -20),
            (std::vector<std::int8_t>{-20, -20}));
}

TEST_F(ModelInt8Test, RequantizeStepsThroughBiasBlocks) {
  // count = 2, bias_step = 3: iteration i reads the block at 40 + 3i.
  MatrixI32 sums(2, kDim, 1000), blocks(6, kDim);
  for (std::size_t j = 0; j < kDim; ++j) {
    blocks.at(1, j) = 1 << 30;  // x / 2
    blocks.at(3, j) = 10;       // (x + 10) / 8
    blocks.at(4, j) = 1 << 30;
    blocks.at(5, j) = -2;
  }
  put_rows(0x1000, sums, 16);
  put_rows(0x2000, blocks, 16);
  expect_ok(
      run("read_host acc rows=2 host_addr=0x1000 host_stride=16\n"
          "read_host acc rows=6 addr_b=40 host_addr=0x2000 host_stride=16\n"
          "activate bias req count=2 rows=1 step_a=1 addr_b=9 step_b=1 bias_addr=40 "
          "bias_step=3 clamp_lo=-128 clamp_hi=127\n"
          "write_host i8 rows=2 addr_a=9 host_addr=0x3000 host_stride=4\nhalt"));
  const auto got = model_.memory().read_array<std::int8_t>(0x3000, 2 * kDim);
  for (std::size_t j = 0; j < kDim; ++j) {
    EXPECT_EQ(got[j], 127);         // 500 clamps
    EXPECT_EQ(got[kDim + j], 126);  // 1010 / 8 = 126.25
  }
  EXPECT_EQ(model_.uninitialized_reads(), 0u);
}

TEST_F(RequantTest, WithF32TheRescaledValuesGoToTheAccumulatorsInPlace) {
  // ACTIVATE REQ F32: y of Q-REQ (multiply_by_quantized_multiplier of the biased sum), int32 in
  // the accumulators, the rows rewritten in place; shifts at both ends and around 0, both ends of
  // the multiplier, a sum whose bias wraps it and left shifts that wrap.
  std::vector<Lane> lanes;
  for (std::int32_t s : {-31, -20, -1, 0, 1, 30}) {
    for (std::int32_t m : {1 << 30, kMax}) {
      for (std::int32_t sum : {7, kMin, 255 << 20, -(255 << 20)}) {
        lanes.push_back({sum, s % 2 == 0 ? 0 : -(3 << 20), m, s});
      }
    }
  }
  lanes.push_back({kMax, 1, 1 << 30, 0});  // the bias wraps the sum to INT32_MIN
  const std::size_t rows = (lanes.size() + kDim - 1) / kDim;
  MatrixI32 sums(rows, kDim), block(3 * rows, kDim);
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const std::size_t r = i / kDim, j = i % kDim;
    sums.at(r, j) = lanes[i].sum;
    block.at(3 * r, j) = lanes[i].bias;
    block.at(3 * r + 1, j) = lanes[i].multiplier;
    block.at(3 * r + 2, j) = lanes[i].shift;
  }
  put_rows(0x1000, sums, 16);
  put_rows(0x2000, block, 16);
  const std::string n = std::to_string(rows);
  expect_ok(run("read_host acc rows=" + n + " host_addr=0x1000 host_stride=16\n" +
                "read_host acc rows=" + std::to_string(3 * rows) + " addr_b=" + n +
                " host_addr=0x2000 host_stride=16\n" + "activate bias req f32 count=" + n +
                " rows=1 step_a=1 step_b=1 bias_addr=" + n + " bias_step=3\nwrite_host acc rows=" +
                n + " host_addr=0x3000 host_stride=16\nhalt"));
  const MatrixI32 got = get_rows<std::int32_t>(0x3000, rows, kDim, 16);
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const Lane& l = lanes[i];
    const std::int32_t x =
        isa::int32_value(static_cast<std::uint32_t>(l.sum) + static_cast<std::uint32_t>(l.bias));
    EXPECT_EQ(got.at(i / kDim, i % kDim),
              num::multiply_by_quantized_multiplier(x, {l.multiplier, static_cast<int>(l.shift)}))
        << "sum " << l.sum << " bias " << l.bias << " M " << l.multiplier << " s " << l.shift;
  }
  EXPECT_EQ(model_.uninitialized_reads(), 0u);
}

// ------------------------------------------------------------------------------------------
// Compiled int8 GEMMs
// ------------------------------------------------------------------------------------------

TEST(CompilerInt8, RawAndRequantisedMatchTheReference) {
  HardwareConfig config = int8_config();
  config.ub_depth = 256;
  std::mt19937_64 rng(test::test_seed());
  std::uniform_int_distribution<std::uint32_t> size(1, 30);
  std::uniform_int_distribution<std::int32_t> any(kMin, kMax);
  std::uniform_int_distribution<std::int32_t> multiplier(1 << 30, kMax);
  std::uniform_int_distribution<std::int32_t> shift(-31, 30);
  std::uniform_int_distribution<int> int8(-128, 127);
  for (int trial = 0; trial < 60; ++trial) {
    GemmSpec s;
    s.in = InType::Int8;
    s.m = size(rng) + 10;
    s.k = size(rng);
    s.n = size(rng);
    s.out = trial % 2 ? OutType::Int8 : OutType::Int32;
    s.has_c = trial % 3 == 0;
    s.input_zero_point = trial % 4 ? int8(rng) : 0;
    RequantColumns requant;
    if (s.out == OutType::Int8) {
      s.output_zero_point = int8(rng);
      s.clamp_lo = trial % 5 ? -128 : s.output_zero_point;
      for (std::uint32_t j = 0; j < s.n; ++j) {
        requant.bias.push_back(any(rng) >> 12);
        requant.multiplier.push_back(j == 0 ? 0 : multiplier(rng));
        requant.shift.push_back(shift(rng));
      }
    }
    SCOPED_TRACE(testing::Message()
                 << s.m << "x" << s.k << "x" << s.n << " c=" << s.has_c
                 << " za=" << s.input_zero_point << " int8 out=" << (s.out == OutType::Int8));
    const MatrixI8 a = random_i8(rng, s.m, s.k), b = random_i8(rng, s.k, s.n);
    MatrixI32 c(s.m, s.n);
    for (auto& v : c.data) v = any(rng);
    const MatrixI32* c_ptr = s.has_c ? &c : nullptr;
    const RequantColumns* r_ptr = s.out == OutType::Int8 ? &requant : nullptr;
    const GemmPlan plan = plan_gemm(config, s);
    FunctionalModel model(config, plan.memory_bytes);
    const GemmRunInt run = execute_gemm(plan, model, a, b, c_ptr, r_ptr);
    ASSERT_TRUE(run.result.ok()) << regs::error_name(run.result.error) << ": "
                                 << model.error_detail();
    EXPECT_EQ(run.out.data, reference_gemm(s, a, b, c_ptr, r_ptr).data);
    EXPECT_EQ(model.uninitialized_reads(), 0u);
  }
}

TEST(CompilerInt8, SpecsTheCoreCannotRunAreRefused) {
  GemmSpec s;
  s.in = InType::Int8;
  s.out = OutType::Int32;
  HardwareConfig no_int8 = int8_config();
  no_int8.int8 = false;
  EXPECT_THROW(plan_gemm(no_int8, s), std::invalid_argument);
  GemmSpec bad = s;
  bad.out = OutType::Fp32;
  EXPECT_THROW(plan_gemm(int8_config(), bad), std::invalid_argument);
  bad = s;
  bad.act = isa::Func::Relu;
  EXPECT_THROW(plan_gemm(int8_config(), bad), std::invalid_argument);
  bad = s;
  bad.input_zero_point = 128;
  EXPECT_THROW(plan_gemm(int8_config(), bad), std::invalid_argument);
  GemmSpec bf16;
  bf16.input_zero_point = 1;
  EXPECT_THROW(plan_gemm(int8_config(), bf16), std::invalid_argument);
  HardwareConfig only = int8_config();
  only.float_datapath = false;
  EXPECT_THROW(plan_gemm(only, GemmSpec{}), std::invalid_argument);
  EXPECT_NO_THROW(plan_gemm(only, s));
}

// ------------------------------------------------------------------------------------------
// ILLEGAL_FIELD and the other checks of the int8 flags
// ------------------------------------------------------------------------------------------

isa::CheckResult diagnose_text(const std::string& text, const HardwareConfig& config) {
  return isa::diagnose(assemble(text).at(0), config);
}

TEST(Int8Checks, Int8FlagsNeedTheInt8Datapath) {
  HardwareConfig no_int8 = int8_config();
  no_int8.int8 = false;
  HardwareConfig sequential = no_int8;
  sequential.sequential = true;
  sequential.bus_bytes = 4;
  const char* const int8_lines[] = {
      "read_host i8 rows=1",
      "read_weights i8 rows=1",
      "matmul i8 rows=1 k_valid=4 n_valid=4",
      "activate bias req rows=1 bias_addr=8",
      "write_host i8 rows=1",
  };
  for (const char* line : int8_lines) {
    EXPECT_TRUE(diagnose_text(line, int8_config()).ok()) << line;
    for (const HardwareConfig& config : {no_int8, sequential}) {
      const isa::CheckResult result = diagnose_text(line, config);
      EXPECT_EQ(result.error, Error::IllegalField) << line;
      EXPECT_NE(result.reason.find("int8 datapath"), std::string::npos) << result.reason;
    }
  }
  // On the model: the core stops there.
  FunctionalModel model(sequential, kHostBytes);
  const auto program = assemble("read_host rows=1\nmatmul i8 rows=1 k_valid=4 n_valid=4\nhalt");
  model.memory().write_array(kProgAddr, isa::encode_program(program));
  const RunResult result = model.run(kProgAddr, 3);
  EXPECT_EQ(result.error, Error::IllegalField);
  EXPECT_EQ(result.error_pc, 1u);
}

TEST(Int8Checks, RequiresAndExcludes) {
  const std::pair<const char*, const char*> bad[] = {
      {"read_host i8 acc rows=1", "I8 and ACC exclude each other"},
      {"write_host i8 acc rows=1", "I8 and ACC exclude each other"},
      {"activate req rows=1", "REQ needs BIAS"},
      {"activate bias req f32 rows=1 bias_addr=8 zero_point=1", "zero_point must be 0 with F32"},
      {"activate bias req f32 rows=1 bias_addr=8 clamp_lo=-128", "clamp_lo must be 0 with F32"},
      {"activate bias req f32 rows=1 bias_addr=8 clamp_hi=127", "clamp_hi must be 0 with F32"},
      {"activate bias req func=relu rows=1 bias_addr=8", "func must be 0 with REQ"},
      {"activate bias rows=1 bias_addr=8 zero_point=1", "must be 0 without REQ"},
      {"activate bias rows=1 bias_addr=8 clamp_hi=-1", "must be 0 without REQ"},
  };
  for (const auto& [line, reason] : bad) {
    const isa::CheckResult result = diagnose_text(line, int8_config());
    EXPECT_EQ(result.error, Error::IllegalField) << line;
    EXPECT_NE(result.reason.find(reason), std::string::npos) << line << ": " << result.reason;
  }
}

TEST(Int8Checks, Int8OnlyCoreNeedsI8AndReq) {
  HardwareConfig only = int8_config();
  only.float_datapath = false;
  EXPECT_EQ(diagnose_text("matmul rows=1 k_valid=4 n_valid=4", only).error, Error::IllegalField);
  EXPECT_EQ(diagnose_text("activate rows=1", only).error, Error::IllegalField);
  EXPECT_TRUE(diagnose_text("matmul i8 rows=1 k_valid=4 n_valid=4", only).ok());
  EXPECT_TRUE(diagnose_text("activate bias req rows=1 bias_addr=8", only).ok());
  // Data movement needs no datapath.
  EXPECT_TRUE(diagnose_text("read_host rows=1", only).ok());
  EXPECT_TRUE(diagnose_text("read_weights rows=1", only).ok());
  HardwareConfig links = only;
  links.link_lanes = 4;
  EXPECT_THROW(isa::validate_config(links), std::invalid_argument);
  HardwareConfig no_int8 = only;
  no_int8.int8 = false;
  EXPECT_THROW(isa::validate_config(no_int8), std::invalid_argument);
  HardwareConfig sequential = int8_config();
  sequential.sequential = true;
  sequential.bus_bytes = 4;
  EXPECT_THROW(isa::validate_config(sequential), std::invalid_argument);
}

TEST(Int8Checks, FootprintOfInt8RowsAndBiasBlocks) {
  const isa::Footprint read = isa::footprint(
      assemble("read_host i8 count=2 rows=3 host_addr=0x100 host_stride=8 host_step=64")[0], kDim);
  EXPECT_EQ(read.host_row_bytes, kDim);
  EXPECT_EQ(read.host_end, 0x100u + 64 + 2 * 8 + kDim);
  const isa::Footprint fetch = isa::footprint(
      assemble("matmul fetch i8 rows=1 host_addr=0x40 host_stride=4 k_valid=3 n_valid=4")[0], kDim);
  EXPECT_EQ(fetch.host_end, 0x40u + 2 * 4 + kDim);
  const isa::Footprint req = isa::footprint(
      assemble("activate bias req count=2 rows=1 bias_addr=10 bias_step=5")[0], kDim);
  EXPECT_EQ(req.bias.first, 10u);
  EXPECT_EQ(req.bias.end, 18u);  // 10 + 5 + 3
  // The block's third row past the end of the accumulators: ACC_RANGE.
  EXPECT_EQ(diagnose_text("activate bias req rows=1 bias_addr=62", int8_config()).error,
            Error::AccRange);
  EXPECT_TRUE(diagnose_text("activate bias req rows=1 bias_addr=61", int8_config()).ok());
  // HOST_ALIGN: int8 rows of 4 bytes have 4-byte beats.
  EXPECT_TRUE(diagnose_text("read_host i8 rows=1 host_addr=4", int8_config()).ok());
  EXPECT_EQ(diagnose_text("read_host i8 rows=1 host_addr=2", int8_config()).error,
            Error::HostAlign);
}

TEST(Int8Checks, AssemblerRoundTripsTheInt8Syntax) {
  const std::string text =
      "read_host i8 count=1 rows=3 host_addr=0x100 host_stride=4\n"
      "read_weights i8 count=1 rows=4 host_addr=0x200 host_stride=4\n"
      "matmul acc0 fetch i8 count=1 rows=3 host_addr=0x200 host_stride=4 k_valid=4 n_valid=4\n"
      "activate bias req count=1 rows=3 addr_b=8 bias_addr=60 zero_point=-5 clamp_lo=-5 "
      "clamp_hi=127\n"
      "write_host i8 count=1 rows=3 addr_a=8 host_addr=0x300 host_stride=4\n";
  const std::vector<isa::Instruction> program = assemble(text);
  EXPECT_EQ(isa::disassemble(program), text);
  EXPECT_EQ(program[3].zero_point(), -5);
  EXPECT_EQ(program[3].words[5], 0x007FFBFBu);
  // Bits as unsigned numbers mean the same.
  EXPECT_EQ(
      assemble("activate bias req rows=1 zero_point=251 clamp_lo=0xfb clamp_hi=127")[0].words[5],
      0x007FFBFBu);
  EXPECT_THROW(assemble("activate bias req rows=1 zero_point=-129"), std::invalid_argument);
  EXPECT_THROW(assemble("activate bias req rows=1 zero_point=256"), std::invalid_argument);
}

}  // namespace
}  // namespace tpu
