// First checks of tpu_top: registers, one small GEMM of each kind of
// instruction against the reference GEMM and the functional model, and ELTWISE
// (the vector unit) against the host's float arithmetic.
#include <gtest/gtest.h>

#include <tuple>

#include "common/eltwise_oracle.hpp"
#include "core_harness.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/cycle_model.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu::testing {
namespace {

class CoreBasic : public ::testing::TestWithParam<std::string> {};

TEST_P(CoreBasic, RegistersDescribeTheBuild) {
  const HardwareConfig config = config_named(GetParam());
  sim::RtlBackend rtl(config);
  EXPECT_EQ(rtl.read_register(regs::kId), regs::kIdReset);
  EXPECT_EQ(rtl.read_register(regs::kVersion), regs::kVersionReset);
  const std::uint32_t array = rtl.read_register(regs::kHwArray);
  EXPECT_EQ(array & 0xFFFF, config.dim);
  const std::uint32_t memory = rtl.read_register(regs::kHwMemory);
  EXPECT_EQ(1u << (memory & 0xFF), config.ub_depth);
  EXPECT_EQ(1u << ((memory >> 8) & 0xFF), config.acc_depth);
  EXPECT_EQ(1u << ((memory >> 16) & 0xFF), config.bus_bytes);
  EXPECT_EQ(memory >> 24, config.weight_tiles);
  const std::uint32_t core = rtl.read_register(regs::kHwCore);
  EXPECT_EQ(core & regs::kHwCoreSequentialMask, config.sequential ? 1u : 0u);
  EXPECT_EQ((core & regs::kHwCoreVectorLanesMask) >> regs::kHwCoreVectorLanesLsb,
            config.vector_lanes);
  unsigned resp = 0;
  rtl.read_register(0xFFC, &resp);
  EXPECT_EQ(resp, 2u) << "unmapped offsets answer SLVERR";
  rtl.write_register(regs::kId, 0, &resp);
  EXPECT_EQ(resp, 2u) << "read-only registers answer SLVERR to writes";
  rtl.write_register(regs::kProgAddr, 0x12345660);
  EXPECT_EQ(rtl.read_register(regs::kProgAddr), 0x12345660u);
}

TEST_P(CoreBasic, OneTileGemmMatchesReference) {
  const HardwareConfig config = config_named(GetParam());
  CoreHarness h(config);
  const unsigned d = config.dim;
  const std::size_t m = 2 * d + 3;
  oracle::OperandRng rng(7);
  const num::MatrixBf16 a = oracle::random_bf16_matrix(rng, m, d, 10);
  const num::MatrixBf16 w = oracle::random_bf16_matrix(rng, d, d, 10);
  const std::uint32_t a_addr = 0x1000, w_addr = 0x4000, out_addr = 0x8000;
  h.write_array(a_addr, a.data);
  h.write_array(w_addr, w.data);

  isa::ProgramBuilder p(config);
  isa::ReadHostArgs load;
  load.rows = static_cast<std::uint32_t>(m);
  load.host_addr = a_addr;
  load.host_stride = 2 * d;
  p.read_host(load);
  isa::MatmulArgs mm;
  mm.fetch = true;
  mm.rows = static_cast<std::uint32_t>(m);
  mm.host_addr = w_addr;
  mm.host_stride = 2 * d;
  p.matmul(mm);
  isa::WriteHostArgs store;
  store.acc = true;
  store.rows = static_cast<std::uint32_t>(m);
  store.host_addr = out_addr;
  store.host_stride = 4 * d;
  p.write_host(store).halt();

  const BothResults r = h.run(p.instructions());
  EXPECT_TRUE(r.rtl.ok());
  const num::MatrixFp32 expected = num::gemm(a, w);
  EXPECT_EQ(h.rtl().memory().read_array<num::fp32_t>(out_addr, m * d), expected.data);
}

// Runs every vector operation, fp32 and int32, per row and with a broadcast row (A from the
// unified buffer: per row only), lane by lane and along the row, on rows of random and special
// values, and checks the RTL against the functional model (the harness compares all of host
// memory), the host FPU and the cycle model. A core without a vector unit must stop at ELTWISE
// with ILLEGAL_OPCODE, as the model does.
void check_every_vector_operation(const std::string& core, bool a_in_ub) {
  const HardwareConfig config = config_named(core);
  CoreHarness h(config);
  const unsigned d = config.dim;
  constexpr std::uint32_t kRows = 5;
  oracle::OperandRng rng(a_in_ub ? 12 : 11);
  // A as the lanes read it (a unified-buffer row's bf16 or int8 values widened) and as stored.
  std::vector<num::fp32_t> a(kRows * d), b(kRows * d), a_int(kRows * d);
  std::vector<num::bf16_t> a_ub(kRows * d);
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::tie(a[i], b[i]) = rng.fp32_pair();
    a_ub[i] = rng.bf16();
    if (a_in_ub) {
      a[i] = num::bf16_to_fp32(a_ub[i]);
      a_int[i] = static_cast<num::fp32_t>(static_cast<std::int16_t>(a_ub[i]));
    } else {
      a_int[i] = a[i];
    }
  }
  const std::uint32_t a_addr = 0x1000, b_addr = 0x4000, out_addr = 0x8000;
  if (a_in_ub) {
    h.write_array(a_addr, a_ub);
  } else {
    h.write_array(a_addr, a);
  }
  h.write_array(b_addr, b);

  isa::ProgramBuilder p(config);
  isa::ReadHostArgs load;
  load.acc = !a_in_ub;
  load.rows = kRows;
  load.host_addr = a_addr;
  load.host_stride = (a_in_ub ? 2 : 4) * d;
  p.read_host(load);
  load.acc = true;
  load.addr_b = kRows;
  load.host_addr = b_addr;
  load.host_stride = 4 * d;
  p.read_host(load);
  if (config.vector_lanes == 0) {
    // The builder refuses what the core cannot run; the core must refuse it too.
    std::vector<isa::Instruction> program = p.instructions();
    program.push_back(isa::Instruction(isa::Opcode::Eltwise).set_count(1).set_rows(1));
    program.push_back(isa::Instruction(isa::Opcode::Halt));
    const BothResults r = h.run(program);
    EXPECT_EQ(r.rtl.error, regs::Error::IllegalOpcode);
    EXPECT_EQ(r.rtl.error_pc, 2u);
    return;
  }
  const std::uint32_t first_out = 2 * kRows;
  std::uint32_t out_row = first_out;
  struct Done {
    isa::VectorOp op;
    bool row, int32, lanes;
  };
  std::vector<Done> done;
  double expected_busy = 0;
  for (unsigned op = 0; op < isa::kVectorOpCount; ++op) {
    for (const bool row : {false, true}) {
      for (const bool int32 : {false, true}) {
        for (const bool lanes : {false, true}) {
          if (a_in_ub && row) continue;
          isa::EltwiseArgs e;
          e.op = static_cast<isa::VectorOp>(op);
          e.row = row;
          e.int32 = int32;
          e.lanes = lanes;
          e.ub = a_in_ub;
          e.rows = kRows;
          e.addr_b = out_row;
          e.bias_addr = kRows;
          p.eltwise(e);
          expected_busy += eltwise_cycles(config, p.instructions().back());
          done.push_back({e.op, row, int32, lanes});
          out_row += kRows;
        }
      }
    }
  }
  isa::WriteHostArgs store;
  store.acc = true;
  store.rows = out_row - first_out;
  store.addr_a = first_out;
  store.host_addr = out_addr;
  store.host_stride = 4 * d;
  p.write_host(store).halt();
  const BothResults r = h.run(p.instructions());
  ASSERT_TRUE(r.rtl.ok());
  // Nothing else touches the memories while the ELTWISEs run: the cycle model is exact.
  ASSERT_TRUE(r.rtl.counters.has_value());
  EXPECT_EQ(double((*r.rtl.counters)[regs::kCntVectorBusyIndex]), expected_busy);

  const std::vector<num::fp32_t> out =
      h.rtl().memory().read_array<num::fp32_t>(out_addr, std::size_t{out_row - first_out} * d);
  for (std::size_t k = 0; k < done.size(); ++k) {
    const Done& e = done[k];
    // One lane of the operation by the host: the oracle's fp32, or plain int32 arithmetic.
    const auto lane = [&](num::fp32_t x, num::fp32_t y) {
      return test::eltwise_lane(e.op, e.int32, x, y);
    };
    const std::vector<num::fp32_t>& a_lanes = e.int32 ? a_int : a;
    for (std::uint32_t row = 0; row < kRows; ++row) {
      const std::uint32_t b_row = e.row ? 0 : row;
      num::fp32_t fold = b[b_row * d];
      for (unsigned j = 0; j < d; ++j) fold = lane(fold, a_lanes[row * d + j]);
      for (unsigned j = 0; j < d; ++j) {
        const num::fp32_t expected = e.lanes ? fold : lane(a_lanes[row * d + j], b[b_row * d + j]);
        ASSERT_EQ(out[(k * kRows + row) * d + j], expected)
            << "operation " << k << " row " << row << " lane " << j;
      }
    }
  }
}

TEST_P(CoreBasic, EltwiseMatchesTheHostFloat) {
  check_every_vector_operation(GetParam(), false);
}

TEST_P(CoreBasic, EltwiseFromTheUnifiedBufferMatchesTheHostFloat) {
  check_every_vector_operation(GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Tops, CoreBasic,
                         ::testing::Values("4x4_m1a1", "8x8_bus4", "16x16", "4x4_seq", "1x1_seq",
                                           "8x8_seq"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace tpu::testing
