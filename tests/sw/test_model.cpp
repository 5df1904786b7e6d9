// The functional model against independent expectations: num::gemm for MATMUL (tiles, K loops,
// seeds, k_valid masking, FETCH), num::act_func and fp32_to_bf16 for ACTIVATE, hand-computed
// layouts for the data movement; then the weight-tile accounting, program-level errors, bus
// errors, and what memory holds after each.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/test_seed.hpp"
#include "oracle/eltwise.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/assembler.hpp"
#include "tpu/model.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu {
namespace {

using isa::assemble;
using isa::Instruction;
using num::bf16_t;
using num::fp32_t;
using num::MatrixBf16;
using num::MatrixFp32;
using regs::Error;

constexpr unsigned kDim = 4;
constexpr std::size_t kHostBytes = 1 << 16;
constexpr std::uint32_t kProgAddr = 0x8000;  // programs here, data below
constexpr std::uint32_t kBf16Row = 2 * kDim;
constexpr std::uint32_t kFp32Row = 4 * kDim;
constexpr int kRandomTrials = 20;

HardwareConfig model_config() {
  HardwareConfig config;
  config.dim = kDim;
  config.ub_depth = 64;
  config.acc_depth = 64;
  config.bus_bytes = 16;
  config.weight_tiles = 2;  // U may reach 3
  config.vector_lanes = 2;
  return config;
}

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", value);
  return text;
}

// Rows first .. first+rows-1 of m, columns first_col .. first_col+cols-1.
template <typename T>
num::Matrix<T> block(const num::Matrix<T>& m, std::size_t first_row, std::size_t rows,
                     std::size_t first_col, std::size_t cols) {
  num::Matrix<T> out(rows, cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) out.at(r, c) = m.at(first_row + r, first_col + c);
  }
  return out;
}

class ModelTest : public ::testing::Test {
 protected:
  RunResult run(const std::string& text) { return run_program(assemble(text)); }

  RunResult run_program(const std::vector<Instruction>& program) {
    model_.memory().write_array(kProgAddr, isa::encode_program(program));
    return model_.run(kProgAddr, static_cast<std::uint32_t>(program.size()));
  }

  void expect_ok(const RunResult& result) {
    EXPECT_TRUE(result.ok()) << regs::error_name(result.error) << " at " << result.error_pc << ": "
                             << model_.error_detail();
  }

  void expect_error(const RunResult& result, Error error, std::uint32_t pc) {
    EXPECT_FALSE(result.done);
    EXPECT_EQ(regs::error_name(result.error), std::string(regs::error_name(error)))
        << model_.error_detail();
    EXPECT_EQ(result.error_pc, pc);
    EXPECT_EQ(result.instructions, pc);
    EXPECT_FALSE(model_.error_detail().empty());
  }

  // Matrix rows at addr, addr + stride, ...; each row kDim wide, zero-padded.
  template <typename T>
  void put_rows(std::uint32_t addr, const num::Matrix<T>& m, std::uint32_t stride) {
    for (std::size_t r = 0; r < m.rows; ++r) {
      std::vector<T> row(kDim, 0);
      for (std::size_t c = 0; c < m.cols; ++c) row[c] = m.at(r, c);
      model_.memory().write_array(addr + r * stride, row);
    }
  }

  template <typename T>
  num::Matrix<T> get_rows(std::uint32_t addr, std::size_t rows, std::uint32_t stride) {
    num::Matrix<T> m(rows, kDim);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::vector<T> row = model_.memory().read_array<T>(addr + r * stride, kDim);
      for (std::size_t c = 0; c < kDim; ++c) m.at(r, c) = row[c];
    }
    return m;
  }

  MatrixFp32 acc_rows(std::uint32_t first, std::size_t rows) {
    MatrixFp32 m(rows, kDim);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::vector<fp32_t> row = model_.acc_row(static_cast<std::uint32_t>(first + r));
      for (std::size_t c = 0; c < kDim; ++c) m.at(r, c) = row[c];
    }
    return m;
  }

  FunctionalModel model_{model_config(), kHostBytes};
};

// ------------------------------------------------------------------------------------------
// Data movement
// ------------------------------------------------------------------------------------------

TEST_F(ModelTest, ReadHostCopiesBf16RowsWithStrideAndStep) {
  // Bits are copied as they are: a subnormal and a signalling NaN stay.
  const std::vector<std::vector<bf16_t>> rows = {{0x0001, 0x7F81, 0x8000, 0x3F80},
                                                 {1, 2, 3, 4},
                                                 {5, 6, 7, 8},
                                                 {0xFFFF, 0xFF80, 0x7F80, 0x0080}};
  // h(i, r) = 0x100 + i * 0x100 + r * 0x40; b(i, r) = 1 + i * 5 + r.
  const std::uint32_t host[] = {0x100, 0x140, 0x200, 0x240};
  for (int n = 0; n < 4; ++n) model_.memory().write_array(host[n], rows[n]);
  expect_ok(
      run("read_host count=2 rows=2 addr_b=1 step_b=5 host_addr=0x100 host_stride=0x40 "
          "host_step=0x100\nhalt"));
  const std::uint32_t ub[] = {1, 2, 6, 7};
  for (int n = 0; n < 4; ++n) EXPECT_EQ(model_.ub_row(ub[n]), rows[n]) << n;
  EXPECT_EQ(model_.ub_row(3), std::vector<bf16_t>(kDim, 0));
}

TEST_F(ModelTest, ReadHostAccCopiesFp32Rows) {
  const std::vector<fp32_t> row0 = {0x00000001, 0x7F800001, 0x80000000, 0x3F800000};
  const std::vector<fp32_t> row1 = {0xDEADBEEF, 1, 2, 3};
  model_.memory().write_array(0x400, row0);
  model_.memory().write_array(0x430, row1);
  expect_ok(
      run("read_host acc count=2 rows=1 addr_b=60 step_b=3 host_addr=0x400 "
          "host_step=0x30\nhalt"));
  EXPECT_EQ(model_.acc_row(60), row0);
  EXPECT_EQ(model_.acc_row(63), row1);
}

TEST_F(ModelTest, WriteHostCopiesRowsAndLeavesGapsAlone) {
  const std::vector<bf16_t> ub0 = {0x1111, 0x2222, 0x3333, 0x4444};
  const std::vector<bf16_t> ub1 = {0x5555, 0x6666, 0x7777, 0x8888};
  const std::vector<fp32_t> acc0 = {0x01020304, 0x05060708, 0x090A0B0C, 0x0D0E0F10};
  model_.memory().write_array(0x0, ub0);
  model_.memory().write_array(0x8, ub1);
  model_.memory().write_array(0x10, acc0);
  const std::vector<std::uint8_t> sentinel(0x100, 0xA5);
  model_.memory().write_array(0x1000, sentinel);
  expect_ok(
      run("read_host rows=2 addr_b=10 host_addr=0 host_stride=8\n"
          "read_host rows=1 acc addr_b=20 host_addr=0x10\n"
          "write_host rows=2 addr_a=10 host_addr=0x1000 host_stride=0x18\n"
          "write_host rows=1 acc count=2 addr_a=20 host_addr=0x1040 host_step=0x20\n"
          "halt"));
  EXPECT_EQ(model_.memory().read_array<bf16_t>(0x1000, kDim), ub0);
  EXPECT_EQ(model_.memory().read_array<bf16_t>(0x1018, kDim), ub1);
  EXPECT_EQ(model_.memory().read_array<fp32_t>(0x1040, kDim), acc0);
  EXPECT_EQ(model_.memory().read_array<fp32_t>(0x1060, kDim), acc0);
  // The bytes between the rows keep their contents.
  EXPECT_EQ(model_.memory().read_array<std::uint8_t>(0x1008, 0x10),
            std::vector<std::uint8_t>(0x10, 0xA5));
  EXPECT_EQ(model_.memory().read_array<std::uint8_t>(0x1050, 0x10),
            std::vector<std::uint8_t>(0x10, 0xA5));
  EXPECT_EQ(model_.memory().read_array<std::uint8_t>(0x1070, 0x90),
            std::vector<std::uint8_t>(0x90, 0xA5));
}

// ------------------------------------------------------------------------------------------
// MATMUL against num::gemm
// ------------------------------------------------------------------------------------------

TEST_F(ModelTest, MatmulTilesMatchReferenceGemm) {
  oracle::OperandRng rng(test::test_seed());
  for (int trial = 0; trial < kRandomTrials; ++trial) {
    const std::size_t m = rng.uniform(1, 12);
    const MatrixBf16 a0 = oracle::random_bf16_matrix(rng, m, kDim, 10);
    const MatrixBf16 a1 = oracle::random_bf16_matrix(rng, m, kDim, 10);
    const MatrixBf16 w0 = oracle::random_bf16_matrix(rng, kDim, kDim, 10);
    const MatrixBf16 w1 = oracle::random_bf16_matrix(rng, kDim, kDim, 10);
    put_rows(0x0, a0, kBf16Row);
    put_rows(0x200, a1, kBf16Row);
    put_rows(0x1000, w0, kBf16Row);
    put_rows(0x1020, w1, kBf16Row);
    // Iteration i: UB rows 30*i.., ACC rows 2 + 20*i.., tile i.
    const std::string mm = "matmul count=2 rows=" + std::to_string(m) +
                           " addr_a=0 step_a=30 addr_b=2 step_b=20 k_valid=4 n_valid=4\n";
    expect_ok(run("read_host rows=" + std::to_string(m) + " host_addr=0 host_stride=8\n" +
                  "read_host rows=" + std::to_string(m) +
                  " addr_b=30 host_addr=0x200 host_stride=8\n" +
                  "read_weights count=2 rows=4 host_addr=0x1000 host_stride=8 host_step=32\n" + mm +
                  "write_host acc rows=" + std::to_string(m) +
                  " addr_a=2 host_addr=0x2000 host_stride=16\nhalt"));
    EXPECT_EQ(get_rows<fp32_t>(0x2000, m, kFp32Row).data, num::gemm(a0, w0).data);
    EXPECT_EQ(acc_rows(22, m).data, num::gemm(a1, w1).data);
  }
}

TEST_F(ModelTest, MatmulKLoopEqualsOneLongGemm) {
  oracle::OperandRng rng(test::test_seed());
  constexpr std::size_t kTiles = 3;
  for (int trial = 0; trial < kRandomTrials; ++trial) {
    const std::size_t m = rng.uniform(1, 8);
    const MatrixBf16 a = oracle::random_bf16_matrix(rng, m, kTiles * kDim, 5);
    const MatrixBf16 w = oracle::random_bf16_matrix(rng, kTiles * kDim, kDim, 5);
    const MatrixFp32 seed = oracle::random_seed_matrix(rng, m, kDim);
    for (std::size_t t = 0; t < kTiles; ++t) {
      put_rows(static_cast<std::uint32_t>(t * m * kBf16Row), block(a, 0, m, t * kDim, kDim),
               kBf16Row);
      put_rows(static_cast<std::uint32_t>(0x1000 + t * 32), block(w, t * kDim, kDim, 0, kDim),
               kBf16Row);
    }
    put_rows(0x3000, seed, kFp32Row);
    const std::string rows = std::to_string(m);
    const std::string load = "read_host rows=" + std::to_string(kTiles * m) +
                             " host_addr=0 host_stride=8\n"
                             "read_weights count=3 rows=4 host_addr=0x1000 host_stride=8 "
                             "host_step=32\n";
    // Without ACC0 the K loop starts from +0; with it, from the seed in the ACC rows.
    expect_ok(run(load + "matmul accn count=3 rows=" + rows + " step_a=" + rows +
                  " addr_b=5 k_valid=4 n_valid=4\nhalt"));
    EXPECT_EQ(acc_rows(5, m).data, num::gemm(a, w).data);
    expect_ok(run(load + "read_host acc rows=" + rows + " addr_b=5 host_addr=0x3000 " +
                  "host_stride=16\nmatmul acc0 accn count=3 rows=" + rows + " step_a=" + rows +
                  " addr_b=5 k_valid=4 n_valid=4\nhalt"));
    EXPECT_EQ(acc_rows(5, m).data, num::gemm(a, w, &seed).data);
  }
}

TEST_F(ModelTest, MatmulWithoutAccumulateOverwrites) {
  const MatrixBf16 a(2, kDim, 0x3F80);     // 1.0
  const MatrixBf16 w(kDim, kDim, 0x4000);  // 2.0
  const MatrixFp32 junk(2, kDim, 0x7FC00000);
  put_rows(0x0, a, kBf16Row);
  put_rows(0x100, w, kBf16Row);
  put_rows(0x200, junk, kFp32Row);
  // Two iterations into the same rows: ACCN off, so iteration 1 overwrites iteration 0.
  expect_ok(
      run("read_host rows=2 host_addr=0 host_stride=8\n"
          "read_host acc rows=2 addr_b=8 host_addr=0x200 host_stride=16\n"
          "read_weights count=2 rows=4 host_addr=0x100 host_stride=8\n"
          "matmul count=2 rows=2 addr_b=8 k_valid=4 n_valid=4\nhalt"));
  EXPECT_EQ(acc_rows(8, 2).data, std::vector<fp32_t>(2 * kDim, 0x41000000));  // 8.0
  // ACCN alone: iteration 0 from +0, iteration 1 on top of it.
  expect_ok(
      run("read_host acc rows=2 addr_b=8 host_addr=0x200 host_stride=16\n"
          "read_weights count=2 rows=4 host_addr=0x100 host_stride=8\n"
          "matmul accn count=2 rows=2 addr_b=8 k_valid=4 n_valid=4\nhalt"));
  EXPECT_EQ(acc_rows(8, 2).data, std::vector<fp32_t>(2 * kDim, 0x41800000));  // 16.0
}

TEST_F(ModelTest, KValidMasksLanesWithNegativeZero) {
  oracle::OperandRng rng(test::test_seed());
  for (std::uint32_t k_valid = 1; k_valid <= kDim; ++k_valid) {
    for (int trial = 0; trial < kRandomTrials; ++trial) {
      const std::size_t m = rng.uniform(1, 6);
      MatrixBf16 a = oracle::random_bf16_matrix(rng, m, kDim, 20);
      const MatrixBf16 w = oracle::random_bf16_matrix(rng, kDim, kDim, 20);
      const MatrixFp32 seed = oracle::random_seed_matrix(rng, m, kDim, 30);
      put_rows(0x0, a, kBf16Row);  // the lanes past k_valid hold whatever a holds there
      put_rows(0x100, w, kBf16Row);
      put_rows(0x200, seed, kFp32Row);
      expect_ok(
          run("read_host rows=" + std::to_string(m) + " host_addr=0 host_stride=8\n" +
              "read_host acc rows=" + std::to_string(m) + " host_addr=0x200 host_stride=16\n" +
              "read_weights rows=4 host_addr=0x100 host_stride=8\n" + "matmul acc0 rows=" +
              std::to_string(m) + " k_valid=" + std::to_string(k_valid) + " n_valid=1\nhalt"));
      for (std::size_t r = 0; r < m; ++r) {
        for (std::size_t k = k_valid; k < kDim; ++k) a.at(r, k) = 0x8000;
      }
      ASSERT_EQ(acc_rows(0, m).data, num::gemm(a, w, &seed).data) << "k_valid " << k_valid;
    }
  }
}

TEST_F(ModelTest, PaddingLanesAddMinusZeroTimesTheTileWeights) {
  // Lanes past k_valid contribute mac(S, -0, W[k][j]) whatever W holds (docs/isa.md, matmul).
  // Seed -0 and lane 0 = -0 x 1.0, so every column starts at -0; then, in masked rows:
  // column 0, 1: -0 x 1.0 = -0, the identity: the sum stays -0;
  // column 2: -0 x +inf = NaN;
  // column 3: -0 x -1.0 = +0, and add(-0, +0) = +0: the sum's sign changes.
  MatrixBf16 act(1, kDim, 0x3F80);  // lanes 1..3 hold 1.0 but are masked
  act.at(0, 0) = 0x8000;
  MatrixBf16 w(kDim, kDim, 0x3F80);
  w.at(3, 2) = 0x7F80;
  w.at(1, 3) = 0xBF80;
  put_rows(0x0, act, kBf16Row);
  put_rows(0x100, w, kBf16Row);
  put_rows(0x200, MatrixFp32(1, kDim, 0x80000000), kFp32Row);
  expect_ok(
      run("read_host rows=1 host_addr=0\n"
          "read_host rows=1 acc host_addr=0x200\n"
          "read_weights rows=4 host_addr=0x100 host_stride=8\n"
          "matmul rows=1 acc0 k_valid=1 n_valid=4\nhalt"));
  EXPECT_EQ(model_.acc_row(0),
            (std::vector<fp32_t>{0x80000000, 0x80000000, 0x7FC00000, 0x00000000}));
}

TEST_F(ModelTest, ReadWeightsRowsPastRowsAreZero) {
  oracle::OperandRng rng(test::test_seed());
  const MatrixBf16 a = oracle::random_bf16_matrix(rng, 3, kDim, 0);
  MatrixBf16 w = oracle::random_bf16_matrix(rng, kDim, kDim, 0);
  put_rows(0x0, a, kBf16Row);
  put_rows(0x100, w, kBf16Row);  // host rows 2 and 3 hold nonzero weights that are not loaded
  expect_ok(
      run("read_host rows=3 host_addr=0 host_stride=8\n"
          "read_weights rows=2 host_addr=0x100 host_stride=8\n"
          "matmul rows=3 k_valid=4 n_valid=4\nhalt"));
  for (std::size_t k = 2; k < kDim; ++k) {
    for (std::size_t j = 0; j < kDim; ++j) w.at(k, j) = 0;
  }
  EXPECT_EQ(acc_rows(0, 3).data, num::gemm(a, w).data);
}

TEST_F(ModelTest, FetchLoadsOneTileOfKValidRowsPerIteration) {
  oracle::OperandRng rng(test::test_seed());
  for (int trial = 0; trial < kRandomTrials; ++trial) {
    const std::size_t m = rng.uniform(1, 6);
    const std::uint32_t k_valid = static_cast<std::uint32_t>(rng.uniform(1, kDim));
    MatrixBf16 a = oracle::random_bf16_matrix(rng, 2 * m, kDim, 10);
    MatrixBf16 w0 = oracle::random_bf16_matrix(rng, kDim, kDim, 10);
    MatrixBf16 w1 = oracle::random_bf16_matrix(rng, kDim, kDim, 10);
    put_rows(0x0, a, kBf16Row);
    // Tiles 0x40 apart, rows 0x10 apart.
    put_rows(0x1000, w0, 0x10);
    put_rows(0x1040, w1, 0x10);
    // Host rows past k_valid hold +inf: loading one would turn its column into NaN.
    for (std::uint32_t k = k_valid; k < kDim; ++k) {
      for (std::uint32_t tile : {0x1000u, 0x1040u}) {
        model_.memory().write_array(tile + k * 0x10, std::vector<bf16_t>(kDim, 0x7F80));
      }
    }
    expect_ok(run("read_host rows=" + std::to_string(2 * m) + " host_addr=0 host_stride=8\n" +
                  "matmul fetch count=2 rows=" + std::to_string(m) +
                  " step_a=" + std::to_string(m) + " addr_b=0 step_b=" + std::to_string(m) +
                  " host_addr=0x1000 host_stride=0x10 host_step=0x40 k_valid=" +
                  std::to_string(k_valid) + " n_valid=4\nhalt"));
    for (std::size_t r = 0; r < 2 * m; ++r) {
      for (std::size_t k = k_valid; k < kDim; ++k) a.at(r, k) = 0x8000;
    }
    for (MatrixBf16* w : {&w0, &w1}) {
      for (std::size_t k = k_valid; k < kDim; ++k) {
        for (std::size_t j = 0; j < kDim; ++j) w->at(k, j) = 0;
      }
    }
    EXPECT_EQ(acc_rows(0, m).data, num::gemm(block(a, 0, m, 0, kDim), w0).data);
    EXPECT_EQ(acc_rows(static_cast<std::uint32_t>(m), m).data,
              num::gemm(block(a, m, m, 0, kDim), w1).data);
  }
}

// ------------------------------------------------------------------------------------------
// ACTIVATE against num::act_func
// ------------------------------------------------------------------------------------------

TEST_F(ModelTest, ActivateEveryFunctionWithAndWithoutBias) {
  oracle::OperandRng rng(test::test_seed());
  constexpr std::size_t kRows = 6;
  for (unsigned func = 0; func < isa::kFuncCount; ++func) {
    MatrixFp32 x(kRows, kDim);
    for (fp32_t& v : x.data) v = rng.fp32();
    MatrixFp32 bias(1, kDim);
    for (fp32_t& v : bias.data) v = rng.fp32();
    const bf16_t alpha = func == static_cast<unsigned>(isa::Func::Leaky) ? rng.bf16() : 0;
    put_rows(0x0, x, kFp32Row);
    put_rows(0x100, bias, kFp32Row);
    const std::string name = isa::find_func(func)->mnemonic;
    const std::string alpha_field = alpha ? " alpha=" + hex(alpha) : "";
    expect_ok(
        run("read_host acc rows=6 host_addr=0 host_stride=16\n"
            "read_host rows=1 acc addr_b=40 host_addr=0x100\n"
            "activate bias func=" +
            name + alpha_field +
            " rows=6 addr_b=7 bias_addr=40\n"
            "activate func=" +
            name + alpha_field +
            " rows=6 addr_b=20\n"
            "activate f32 bias func=" +
            name + alpha_field +
            " rows=6 addr_b=10 bias_addr=40\n"
            "halt"));
    for (std::size_t r = 0; r < kRows; ++r) {
      const std::vector<bf16_t> with_bias = model_.ub_row(static_cast<std::uint32_t>(7 + r));
      const std::vector<bf16_t> without = model_.ub_row(static_cast<std::uint32_t>(20 + r));
      const std::vector<fp32_t> wide = model_.acc_row(static_cast<std::uint32_t>(10 + r));
      for (std::size_t j = 0; j < kDim; ++j) {
        const fp32_t sum = num::add_fp32(x.at(r, j), bias.at(0, j));
        const fp32_t y = num::act_func(func, sum, alpha);
        ASSERT_EQ(with_bias[j], num::fp32_to_bf16(y)) << name << " row " << r << " lane " << j;
        ASSERT_EQ(wide[j], y) << name << " row " << r << " lane " << j;
        ASSERT_EQ(without[j], num::fp32_to_bf16(num::act_func(func, x.at(r, j), alpha)))
            << name << " row " << r << " lane " << j;
      }
    }
  }
}

TEST_F(ModelTest, ActivateStepsAndBiasStep) {
  // ACC rows 0..7 hold r + 1 in every lane; bias rows 50, 52 hold 100 and 200.
  for (std::uint32_t r = 0; r < 8; ++r) {
    model_.memory().write_array(r * kFp32Row,
                                std::vector<fp32_t>(kDim, num::float_to_fp32(float(r + 1))));
  }
  model_.memory().write_array(0x200, std::vector<fp32_t>(kDim, num::float_to_fp32(100.0f)));
  model_.memory().write_array(0x220, std::vector<fp32_t>(kDim, num::float_to_fp32(200.0f)));
  // a(i, r) = 1 + 3i + r, b(i, r) = 5i + r, bias row 50 + 2i.
  expect_ok(
      run("read_host acc rows=8 host_addr=0 host_stride=16\n"
          "read_host rows=1 acc count=2 addr_b=50 step_b=2 host_addr=0x200 host_step=0x20\n"
          "activate bias count=2 rows=2 addr_a=1 step_a=3 step_b=5 bias_addr=50 "
          "bias_step=2\nhalt"));
  const auto bf16 = [](float v) {
    return std::vector<bf16_t>(kDim, num::fp32_to_bf16(num::float_to_fp32(v)));
  };
  EXPECT_EQ(model_.ub_row(0), bf16(102));  // ACC row 1 + 100
  EXPECT_EQ(model_.ub_row(1), bf16(103));  // ACC row 2 + 100
  EXPECT_EQ(model_.ub_row(5), bf16(205));  // ACC row 4 + 200
  EXPECT_EQ(model_.ub_row(6), bf16(206));  // ACC row 5 + 200
  EXPECT_EQ(model_.ub_row(2), std::vector<bf16_t>(kDim, 0));
}

TEST_F(ModelTest, ActivateF32InPlaceSeesEarlierIterations) {
  for (std::uint32_t r = 0; r < 3; ++r) {
    model_.memory().write_array(r * kFp32Row,
                                std::vector<fp32_t>(kDim, num::float_to_fp32(float(r + 1))));
  }
  model_.memory().write_array(0x100, std::vector<fp32_t>(kDim, num::float_to_fp32(10.0f)));
  model_.memory().write_array(0x110, std::vector<fp32_t>(kDim, num::float_to_fp32(100.0f)));
  // Iteration 0 adds 10 to rows 0, 1; iteration 1 adds 100 to rows 1, 2, row 1 as rewritten.
  expect_ok(
      run("read_host acc rows=3 host_addr=0 host_stride=16\n"
          "read_host acc rows=2 addr_b=20 host_addr=0x100 host_stride=16\n"
          "activate f32 bias count=2 rows=2 step_a=1 step_b=1 bias_addr=20 bias_step=1\n"
          "halt"));
  const auto fp32 = [](float v) { return std::vector<fp32_t>(kDim, num::float_to_fp32(v)); };
  EXPECT_EQ(model_.acc_row(0), fp32(11));
  EXPECT_EQ(model_.acc_row(1), fp32(112));
  EXPECT_EQ(model_.acc_row(2), fp32(103));
}

// ------------------------------------------------------------------------------------------
// ELTWISE (N-VEC), against the host's float arithmetic
// ------------------------------------------------------------------------------------------

TEST_F(ModelTest, EltwiseEveryOperationMatchesTheHostFloat) {
  oracle::OperandRng rng(test::test_seed());
  constexpr std::uint32_t kRows = 6;
  std::vector<fp32_t> a(kRows * kDim), b(kRows * kDim);
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::tie(a[i], b[i]) = rng.fp32_pair();
  }
  model_.memory().write_array(0, a);
  model_.memory().write_array(0x200, b);
  const char* names[] = {"add", "sub", "mul", "max", "min"};
  for (unsigned op = 0; op < 5; ++op) {
    expect_ok(
        run(fmt::format("read_host acc rows={0} host_addr=0 host_stride=16\n"
                        "read_host acc rows={0} addr_b=8 host_addr=0x200 host_stride=16\n"
                        "eltwise vop={1} rows={0} addr_b=16 bias_addr=8\nhalt",
                        kRows, names[op])));
    for (std::uint32_t r = 0; r < kRows; ++r) {
      const std::vector<fp32_t> out = model_.acc_row(16 + r);
      for (unsigned j = 0; j < kDim; ++j) {
        const fp32_t x = a[r * kDim + j], y = b[r * kDim + j];
        const fp32_t expected = oracle::eltwise_lane(static_cast<isa::VectorOp>(op), false, x, y);
        EXPECT_EQ(out[j], expected) << names[op] << " " << hex(x) << " " << hex(y);
      }
    }
  }
}

// In place, the destination A's rows or B's, on products near the flush (a product of two
// normal values that rounds up to 2^-126 where the host's flush-to-zero would give +0) and
// random pairs.
TEST_F(ModelTest, EltwiseInPlaceMatchesTheHostFloat) {
  oracle::OperandRng rng(test::test_seed() + 1);
  constexpr std::uint32_t kRows = 6;
  std::vector<fp32_t> a(kRows * kDim), b(kRows * kDim);
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::tie(a[i], b[i]) = rng.fp32_pair();
    if (i % 2 == 0) {
      a[i] = 0x3F7FFFFFu | (i % 4 == 0 ? 0x80000000u : 0u);  // -+(1 - 2^-24)
      b[i] = 0x00800000u;                                    // 2^-126
    }
  }
  const char* names[] = {"add", "sub", "mul", "max", "min"};
  for (unsigned op = 0; op < 5; ++op) {
    for (const std::uint32_t dst : {0u, 8u}) {  // A's rows, B's
      model_.memory().write_array(0, a);
      model_.memory().write_array(0x200, b);
      expect_ok(
          run(fmt::format("read_host acc rows={0} host_addr=0 host_stride=16\n"
                          "read_host acc rows={0} addr_b=8 host_addr=0x200 host_stride=16\n"
                          "eltwise vop={1} rows={0} addr_b={2} bias_addr=8\nhalt",
                          kRows, names[op], dst)));
      for (std::uint32_t r = 0; r < kRows; ++r) {
        const std::vector<fp32_t> out = model_.acc_row(dst + r);
        for (unsigned j = 0; j < kDim; ++j) {
          const fp32_t x = a[r * kDim + j], y = b[r * kDim + j];
          EXPECT_EQ(out[j], oracle::eltwise_lane(static_cast<isa::VectorOp>(op), false, x, y))
              << names[op] << " into row " << dst << ": " << hex(x) << " " << hex(y);
        }
      }
    }
  }
}

TEST_F(ModelTest, EltwiseRowOperandIsOneRowAnIteration) {
  const auto fp32 = [](float v) { return num::float_to_fp32(v); };
  for (std::uint32_t r = 0; r < 4; ++r) {
    model_.memory().write_array(r * kFp32Row, std::vector<fp32_t>(kDim, fp32(float(r + 1))));
  }
  model_.memory().write_array(0x100, std::vector<fp32_t>{fp32(10), fp32(20), fp32(30), fp32(40)});
  model_.memory().write_array(0x110, std::vector<fp32_t>(kDim, fp32(-2)));
  // Two iterations of two rows: rows 0, 1 times the row at 20, rows 2, 3 times the one at 22.
  expect_ok(
      run("read_host acc rows=4 host_addr=0 host_stride=16\n"
          "read_host acc count=2 rows=1 addr_b=20 step_b=2 host_addr=0x100 host_step=16\n"
          "eltwise row vop=mul count=2 rows=2 addr_b=30 step_a=2 step_b=2 bias_addr=20 "
          "bias_step=2\nhalt"));
  EXPECT_EQ(model_.acc_row(30), (std::vector<fp32_t>{fp32(10), fp32(20), fp32(30), fp32(40)}));
  EXPECT_EQ(model_.acc_row(31), (std::vector<fp32_t>{fp32(20), fp32(40), fp32(60), fp32(80)}));
  EXPECT_EQ(model_.acc_row(32), std::vector<fp32_t>(kDim, fp32(-6)));
  EXPECT_EQ(model_.acc_row(33), std::vector<fp32_t>(kDim, fp32(-8)));
}

TEST_F(ModelTest, EltwiseRowsSeeEarlierRowsWritten) {
  // Row r + 1 = row r (as just written) + row r + 1: prefix sums, in place.
  const auto fp32 = [](float v) { return num::float_to_fp32(v); };
  for (std::uint32_t r = 0; r < 4; ++r) {
    model_.memory().write_array(r * kFp32Row, std::vector<fp32_t>(kDim, fp32(float(r + 1))));
  }
  expect_ok(
      run("read_host acc rows=4 host_addr=0 host_stride=16\n"
          "eltwise vop=add rows=3 addr_b=1 bias_addr=1\nhalt"));
  for (std::uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(model_.acc_row(r), std::vector<fp32_t>(kDim, fp32(float((r + 1) * (r + 2) / 2))));
  }
}

TEST_F(ModelTest, EltwiseLanesFoldsAlongTheRowInOrder) {
  const auto fp32 = [](float v) { return num::float_to_fp32(v); };
  // A left fold: ((((-0 + 1e8) + 1) - 1e8) + 1) = 1 in fp32, where pairs would give 0 or 2.
  model_.memory().write_array(0, std::vector<fp32_t>{fp32(1e8f), fp32(1), fp32(-1e8f), fp32(1)});
  model_.memory().write_array(16, std::vector<fp32_t>{0x80000000u, 0, 0, 0});
  model_.memory().write_array(32, std::vector<fp32_t>{0xFF800000u, 0, 0, 0});  // -inf
  expect_ok(
      run("read_host acc rows=3 host_addr=0 host_stride=16\n"
          "eltwise lanes row vop=add rows=1 addr_b=3 bias_addr=1\n"
          "eltwise lanes row vop=max rows=1 addr_b=4 bias_addr=2\n"
          "eltwise lanes row vop=min rows=1 addr_b=5 bias_addr=2\nhalt"));
  EXPECT_EQ(model_.acc_row(3), std::vector<fp32_t>(kDim, fp32(1)));
  EXPECT_EQ(model_.acc_row(4), std::vector<fp32_t>(kDim, fp32(1e8f)));
  EXPECT_EQ(model_.acc_row(5), std::vector<fp32_t>(kDim, 0xFF800000u));  // the seed is smallest
}

TEST_F(ModelTest, EltwiseReadsUnifiedBufferRowsWidened) {
  // bf16 lanes widen exactly (a subnormal one is then read as its zero, N-IN); with I32, 16-bit
  // lanes (here the int8 values -5, 7, -128, 127 as I8 rows leave them) sign-extend.
  model_.memory().write_array(0, std::vector<bf16_t>{0x3F80, 0xC000, 0x0001, 0x7F80});
  model_.memory().write_array(8, std::vector<bf16_t>{0xFFFB, 7, 0xFF80, 127});
  model_.memory().write_array(16, std::vector<fp32_t>(kDim, 0));  // +0
  expect_ok(
      run("read_host rows=1 host_addr=0\n"
          "read_host rows=1 addr_b=1 host_addr=8\n"
          "read_host acc rows=1 addr_b=9 host_addr=16\n"
          "eltwise ub row vop=max rows=1 addr_b=10 bias_addr=9\n"
          "eltwise ub i32 row vop=add rows=1 addr_a=1 addr_b=11 bias_addr=9\nhalt"));
  EXPECT_EQ(model_.acc_row(10), (std::vector<fp32_t>{0x3F800000u, 0, 0, 0x7F800000u}));
  EXPECT_EQ(model_.acc_row(11), (std::vector<fp32_t>{0xFFFFFFFBu, 7, 0xFFFFFF80u, 127}));
}

TEST_F(ModelTest, EltwiseInt32Wraps) {
  model_.memory().write_array(0,
                              std::vector<std::uint32_t>{0x7FFFFFFFu, 0xFFFFFFFEu, 5, 0x80000000u});
  model_.memory().write_array(16, std::vector<std::uint32_t>{1, 3, 0xFFFFFFFDu, 0x80000000u});
  const std::pair<const char*, std::vector<std::uint32_t>> cases[] = {
      {"add", {0x80000000u, 1, 2, 0}},
      {"sub", {0x7FFFFFFEu, 0xFFFFFFFBu, 8, 0}},
      {"mul", {0x7FFFFFFFu, 0xFFFFFFFAu, 0xFFFFFFF1u, 0}},
      {"max", {0x7FFFFFFFu, 3, 5, 0x80000000u}},
      {"min", {1, 0xFFFFFFFEu, 0xFFFFFFFDu, 0x80000000u}},
  };
  for (const auto& [name, expected] : cases) {
    expect_ok(
        run(fmt::format("read_host acc rows=2 host_addr=0 host_stride=16\n"
                        "eltwise i32 vop={} rows=1 addr_b=2 bias_addr=1\nhalt",
                        name)));
    EXPECT_EQ(model_.acc_row(2), expected) << name;
  }
}

TEST_F(ModelTest, EltwiseChecks) {
  // The second operand's rows are checked like any other: `rows` of them without ROW.
  expect_error(run("eltwise vop=add rows=2 bias_addr=63\nhalt"), Error::AccRange, 0);
  expect_ok(
      run("read_host acc rows=2 host_addr=0 host_stride=16\n"
          "read_host acc rows=1 addr_b=63 host_addr=0\n"
          "eltwise row vop=add rows=2 bias_addr=63\nhalt"));
  // vop 7 is no operation.
  expect_error(run(".word 0x00070009 0x00010001 0 0 0 0 0 0\nhalt"), Error::IllegalField, 0);
  HardwareConfig without = model_config();
  without.vector_lanes = 0;
  FunctionalModel model(without, kHostBytes);
  model.memory().write_array(kProgAddr,
                             isa::encode_program(assemble("eltwise vop=max rows=1\nhalt")));
  const RunResult result = model.run(kProgAddr, 2);
  EXPECT_EQ(result.error, Error::IllegalOpcode);
  EXPECT_NE(model.error_detail().find("vector unit"), std::string::npos) << model.error_detail();
}

// ------------------------------------------------------------------------------------------
// Weight tiles
// ------------------------------------------------------------------------------------------

TEST_F(ModelTest, WeightFifoHoldsWeightTilesPlusOne) {
  expect_ok(run("read_weights count=3 rows=4\nmatmul rows=1 count=3 k_valid=4 n_valid=4\nhalt"));
  expect_ok(
      run("read_weights count=2 rows=4\nmatmul rows=1 k_valid=4 n_valid=4\n"
          "read_weights count=2 rows=4\nmatmul rows=1 count=3 k_valid=4 n_valid=4\nhalt"));
  expect_error(run("read_weights count=4 rows=4\nhalt"), Error::WeightOverflow, 0);
  expect_error(run("read_weights count=2 rows=4\nread_weights count=2 rows=4\nhalt"),
               Error::WeightOverflow, 1);
}

TEST_F(ModelTest, MatmulNeedsLoadedTiles) {
  expect_error(run("matmul rows=1 k_valid=4 n_valid=4\nhalt"), Error::WeightUnderflow, 0);
  expect_error(run("read_weights rows=4\nmatmul rows=1 count=2 k_valid=4 n_valid=4\nhalt"),
               Error::WeightUnderflow, 1);
}

TEST_F(ModelTest, LeftoverTilesAtHaltOrFetch) {
  expect_error(run("read_weights count=2 rows=4\nmatmul rows=1 k_valid=4 n_valid=4\nhalt"),
               Error::WeightLeftover, 2);
  expect_error(run("read_weights rows=4\nmatmul rows=1 fetch k_valid=4 n_valid=4\nhalt"),
               Error::WeightLeftover, 1);
  // FETCH tiles never count: any count, and HALT finds U = 0.
  expect_ok(run("matmul rows=1 fetch count=9 k_valid=4 n_valid=4\nhalt"));
}

TEST_F(ModelTest, EachRunStartsWithAnEmptyWeightFifo) {
  // The first run stops with two tiles loaded; the second cannot use them.
  expect_error(run("read_weights count=2 rows=4\n.word 0 0 0 0 0 0 0 0"), Error::IllegalOpcode, 1);
  expect_error(run("matmul rows=1 k_valid=4 n_valid=4\nhalt"), Error::WeightUnderflow, 0);
}

TEST_F(ModelTest, IssueChecksComeBeforeWeightAccounting) {
  // Both an underflow and a range error: the range error is step 3, the underflow step 7.
  expect_error(run("matmul rows=1 addr_a=64 k_valid=4 n_valid=4\nhalt"), Error::UbRange, 0);
  // HALT with stray bits and leftover tiles: the field error comes first.
  expect_error(run("read_weights rows=4\n.word 7 1 0 0 0 0 0 0"), Error::IllegalField, 1);
}

// ------------------------------------------------------------------------------------------
// Program-level errors, bus errors, memory after an error
// ------------------------------------------------------------------------------------------

TEST_F(ModelTest, ProgramEndAndProgAlign) {
  const RunResult empty = model_.run(kProgAddr, 0);
  EXPECT_EQ(empty.error, Error::ProgramEnd);
  EXPECT_EQ(empty.error_pc, 0u);
  expect_error(run("sync\nsync\nsync"), Error::ProgramEnd, 3);
  const RunResult misaligned = model_.run(kProgAddr + 16, 1);
  EXPECT_EQ(misaligned.error, Error::ProgAlign);
  EXPECT_EQ(misaligned.error_pc, 0u);
  EXPECT_EQ(model_.run(kProgAddr + 16, 0).error, Error::ProgAlign);  // alignment first
}

TEST_F(ModelTest, InstructionsCountsEverythingButHalt) {
  const RunResult result = run("sync\nread_host rows=1\nsync\nhalt\nsync");
  expect_ok(result);
  EXPECT_EQ(result.instructions, 3u);
  EXPECT_EQ(result.error_pc, 0u);
  EXPECT_FALSE(result.counters.has_value());
  EXPECT_TRUE(model_.error_detail().empty());
}

TEST_F(ModelTest, InstructionFetchOutsideMemoryIsBusRead) {
  const std::uint32_t last = kHostBytes - isa::kInstrBytes;
  model_.memory().write_array(last, isa::encode_program(assemble("sync")));
  expect_error(model_.run(last, 2), Error::BusRead, 1);
  // Only the instructions the program reaches are fetched.
  model_.memory().write_array(last, isa::encode_program(assemble("halt")));
  expect_ok(model_.run(last, 100));
}

TEST_F(ModelTest, BusReadLeavesTheInstructionWithoutEffect) {
  model_.memory().write_array(0x0, std::vector<bf16_t>{1, 2, 3, 4});
  // Rows 0 and 1 are inside memory, row 2 is not: nothing is written.
  expect_error(run("read_host rows=1 addr_b=9 host_addr=0\n"
                   "read_host rows=3 addr_b=10 host_addr=0x7000 host_stride=0x5000\nhalt"),
               Error::BusRead, 1);
  EXPECT_EQ(model_.ub_row(9), (std::vector<bf16_t>{1, 2, 3, 4}));
  EXPECT_EQ(model_.ub_row(10), std::vector<bf16_t>(kDim, 0));
  expect_error(run("read_weights rows=1 host_addr=0x10000\nhalt"), Error::BusRead, 0);
  expect_error(run("matmul rows=1 fetch k_valid=2 n_valid=4 host_addr=0xfff8 host_stride=8\nhalt"),
               Error::BusRead, 0);
  EXPECT_EQ(model_.acc_row(0), std::vector<fp32_t>(kDim, 0));
}

TEST_F(ModelTest, BusWriteLeavesHostMemoryAlone) {
  const std::vector<std::uint8_t> before = model_.memory().read_array<std::uint8_t>(0xFF00, 0x100);
  expect_error(run("write_host rows=1 count=2 host_addr=0xfff8 host_step=8\nhalt"), Error::BusWrite,
               0);
  EXPECT_EQ(model_.memory().read_array<std::uint8_t>(0xFF00, 0x100), before);
}

TEST_F(ModelTest, EarlierEffectsStayAfterAnError) {
  model_.memory().write_array(0x0, std::vector<bf16_t>{9, 8, 7, 6});
  model_.memory().write_array(0x100, std::vector<std::uint8_t>(0x20, 0xEE));
  // The third instruction fails (host_addr not a multiple of the 8-byte beat); the first two
  // have happened, the third and the fourth have not.
  expect_error(run("read_host rows=1 addr_b=3 host_addr=0\n"
                   "write_host rows=1 addr_a=3 host_addr=0x100\n"
                   "write_host rows=1 addr_a=3 host_addr=0x114\n"
                   "read_host rows=1 addr_b=4 host_addr=0\nhalt"),
               Error::HostAlign, 2);
  EXPECT_EQ(model_.ub_row(3), (std::vector<bf16_t>{9, 8, 7, 6}));
  EXPECT_EQ(model_.ub_row(4), std::vector<bf16_t>(kDim, 0));
  EXPECT_EQ(model_.memory().read_array<bf16_t>(0x100, kDim), (std::vector<bf16_t>{9, 8, 7, 6}));
  EXPECT_EQ(model_.memory().read_array<std::uint8_t>(0x108, 0x18),
            std::vector<std::uint8_t>(0x18, 0xEE));
}

TEST_F(ModelTest, EveryIssueCheckStopsTheModel) {
  expect_error(run("sync\n.word 0x08 0 0 0 0 0 0 0"), Error::IllegalOpcode, 1);
  expect_error(run("read_host rows=1 count=0\nhalt"), Error::IllegalField, 0);
  expect_error(run("activate rows=1 addr_a=64\nhalt"), Error::AccRange, 0);
  expect_error(run("read_host rows=2 host_addr=0xfffffff8 host_stride=8\nhalt"), Error::HostRange,
               0);
  expect_error(run("activate f32 rows=2 addr_b=1\nhalt"), Error::AccOverlap, 0);
}

TEST_F(ModelTest, MemoriesPersistAcrossRuns) {
  model_.memory().write_array(0x0, std::vector<bf16_t>{1, 2, 3, 4});
  expect_ok(run("read_host rows=1 addr_b=7 host_addr=0\nhalt"));
  expect_ok(run("write_host rows=1 addr_a=7 host_addr=0x40\nhalt"));
  EXPECT_EQ(model_.memory().read_array<bf16_t>(0x40, kDim), (std::vector<bf16_t>{1, 2, 3, 4}));
}

TEST_F(ModelTest, CountsReadsOfRowsNeverWritten) {
  EXPECT_EQ(model_.uninitialized_reads(), 0u);
  expect_ok(run("read_host rows=2 addr_b=0 host_addr=0\nhalt"));
  expect_ok(run("write_host rows=3 addr_a=0 host_addr=0x100\nhalt"));  // row 2 unwritten
  EXPECT_EQ(model_.uninitialized_reads(), 1u);
  // MATMUL: 2 UB rows (one unwritten) and, with ACC0, 2 unwritten seed rows.
  expect_ok(
      run("read_weights rows=4\nmatmul acc0 rows=2 addr_a=1 addr_b=30 k_valid=4 "
          "n_valid=4\nhalt"));
  EXPECT_EQ(model_.uninitialized_reads(), 4u);
  // Now ACC rows 30, 31 are written: ACTIVATE reads them and an unwritten bias row.
  expect_ok(run("activate bias rows=2 addr_a=30 bias_addr=40\nhalt"));
  EXPECT_EQ(model_.uninitialized_reads(), 5u);
  expect_ok(run("write_host acc rows=2 addr_a=30 host_addr=0x200\nhalt"));
  EXPECT_EQ(model_.uninitialized_reads(), 5u);
}

TEST_F(ModelTest, RowInspectionChecksTheRow) {
  EXPECT_NO_THROW(model_.ub_row(63));
  EXPECT_NO_THROW(model_.acc_row(63));
  try {
    model_.ub_row(64);
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "unified-buffer row 64 is outside its 64 rows");
  }
  EXPECT_THROW(model_.acc_row(64), std::out_of_range);
}

TEST(Model, RefusesAnImpossibleConfiguration) {
  HardwareConfig config;
  config.dim = 3;
  EXPECT_THROW(FunctionalModel(config, 1024), std::invalid_argument);
  EXPECT_EQ(FunctionalModel(HardwareConfig{}, 0).name(), "model");
}

}  // namespace
}  // namespace tpu
