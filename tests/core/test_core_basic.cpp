// First checks of tpu_top: registers, and one small GEMM of each kind of
// instruction against the reference GEMM and the functional model.
#include <gtest/gtest.h>

#include "core_harness.hpp"
#include "oracle/random_matrices.hpp"
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
  EXPECT_EQ(rtl.read_register(regs::kHwCore) & regs::kHwCoreSequentialMask,
            config.sequential ? 1u : 0u);
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

INSTANTIATE_TEST_SUITE_P(Tops, CoreBasic,
                         ::testing::Values("4x4_m1a1", "8x8_bus4", "16x16", "4x4_seq", "1x1_seq",
                                           "8x8_seq"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace tpu::testing
