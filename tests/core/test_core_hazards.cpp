// One directed program per kind of dependency, on the RTL and the model, with
// slow host memory so that the instructions really overlap. The model runs
// them one after the other; any result that differs would be a hazard the
// issue stage or the matrix unit let through. And one check that independent
// instructions do overlap.
#include <gtest/gtest.h>

#include "core_harness.hpp"
#include "tpu/assembler.hpp"

namespace tpu::testing {
namespace {

// On 4x4_m1a1: UB rows 0..511 bank 0, 512..1023 bank 1; ACC 0..127, 128..255.
// Host: random data at 0x8000..0xFFFF, results from 0x10000.
struct HazardCase {
  std::string name;
  std::string program;
};

void PrintTo(const HazardCase& c, std::ostream* os) {
  *os << c.name;
}

sim::RtlOptions slow_memory() {
  sim::RtlOptions o;
  o.timing.read_latency = 30;
  o.timing.write_latency = 20;
  o.timing.beats_per_cycle = 0.5;
  return o;
}

std::vector<std::uint8_t> host_data() {
  std::vector<std::uint8_t> data(0x8000);
  std::uint32_t x = 12345;
  for (auto& byte : data) {
    x = x * 1103515245 + 12345;
    byte = static_cast<std::uint8_t>(x >> 16);
  }
  return data;
}

class CoreHazards : public ::testing::TestWithParam<HazardCase> {};

void results_as_if_sequential(const std::string& config, const HazardCase& c) {
  CoreHarness h(config_named(config), slow_memory(), 1u << 18);
  h.write(0x8000, host_data());
  const BothResults r = h.run(isa::assemble(c.program));
  EXPECT_TRUE(r.rtl.ok()) << regs::error_name(r.rtl.error);
  EXPECT_EQ(h.model().uninitialized_reads(), 0u);
}

TEST_P(CoreHazards, ResultsAsIfSequential) {
  results_as_if_sequential("4x4_m1a1", GetParam());
}

// The sequential core has no hazards to get wrong, but the same programs check its loops,
// addresses and weight slots against the model.
TEST_P(CoreHazards, SequentialCoreResults) {
  results_as_if_sequential("4x4_seq", GetParam());
}

// Every case starts by filling the rows it reads and ends by writing out the
// rows it changed.
const char* const kFill =
    "read_host rows=32 host_addr=0x8000 host_stride=8\n"
    "read_host rows=32 addr_b=512 host_addr=0x8100 host_stride=8\n"
    "read_host acc rows=32 host_addr=0x8200 host_stride=16\n"
    "read_host acc rows=32 addr_b=128 host_addr=0x8400 host_stride=16\n";
const char* const kDump =
    "write_host rows=32 host_addr=0x10000 host_stride=8\n"
    "write_host rows=32 addr_a=512 host_addr=0x10100 host_stride=8\n"
    "write_host acc rows=32 host_addr=0x10200 host_stride=16\n"
    "write_host acc rows=32 addr_a=128 host_addr=0x10400 host_stride=16\n"
    "halt\n";

std::string with_fill(const std::string& body) {
  return kFill + body + kDump;
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, CoreHazards,
    ::testing::Values(
        HazardCase{"RawUbLoadThenMatmul",
                   with_fill("read_host rows=16 addr_b=4 host_addr=0x9000 host_stride=8\n"
                             "matmul fetch rows=16 addr_a=4 host_addr=0xA000 host_stride=8 "
                             "k_valid=4 n_valid=4\n")},
        HazardCase{
            "RawAccMatmulThenActivate",
            with_fill("matmul fetch rows=12 host_addr=0xA000 host_stride=8 k_valid=4 n_valid=4\n"
                      "activate func=gelu rows=12 addr_b=520\n")},
        HazardCase{
            "RawAccActivateThenStore",
            with_fill("activate f32 func=sigmoid rows=12 addr_a=130 addr_b=130\n"
                      "write_host acc rows=12 addr_a=130 host_addr=0x11000 host_stride=16\n")},
        HazardCase{"WarUbMatmulThenLoad",
                   with_fill("matmul fetch count=4 rows=16 step_b=0 accn host_addr=0xA000 "
                             "host_stride=8 host_step=32 k_valid=4 n_valid=4\n"
                             "read_host rows=16 host_addr=0x9800 host_stride=8\n"
                             "matmul fetch rows=16 addr_b=16 host_addr=0xA100 host_stride=8 "
                             "k_valid=4 n_valid=4\n")},
        HazardCase{"WawAccMatmulThenLoad",
                   with_fill("matmul fetch count=3 rows=20 accn host_addr=0xA000 host_stride=8 "
                             "host_step=32 k_valid=4 n_valid=4\n"
                             "read_host acc rows=8 addr_b=4 host_addr=0xB000 host_stride=16\n")},
        HazardCase{"HostRawStoreThenLoad",
                   with_fill("write_host rows=16 host_addr=0x12000 host_stride=8\n"
                             "read_host rows=16 addr_b=540 host_addr=0x12000 host_stride=8\n")},
        HazardCase{"HostWarLoadThenStore",
                   with_fill("read_host rows=16 addr_b=540 host_addr=0xC000 host_stride=8\n"
                             "write_host rows=16 addr_a=512 host_addr=0xC000 host_stride=8\n")},
        HazardCase{"HostWarWeightsThenStore",
                   with_fill("matmul fetch count=2 rows=4 accn host_addr=0xC000 host_stride=8 "
                             "host_step=32 k_valid=4 n_valid=4\n"
                             "write_host rows=16 host_addr=0xC000 host_stride=8\n")},
        HazardCase{"MatmulSeedsWaitForResults",
                   with_fill("matmul fetch count=8 rows=1 acc0 accn host_addr=0xA000 "
                             "host_stride=8 host_step=32 k_valid=4 n_valid=4\n"
                             "matmul fetch count=8 rows=3 addr_b=140 acc0 accn host_addr=0xA400 "
                             "host_stride=8 host_step=32 k_valid=4 n_valid=4\n"
                             "matmul fetch count=5 rows=2 addr_b=141 step_b=1 acc0 accn "
                             "host_addr=0xA800 host_stride=8 host_step=32 k_valid=4 n_valid=4\n")},
        HazardCase{"ActivateIterationsSeeEarlierWrites",
                   with_fill("activate f32 func=tanh count=3 rows=4 addr_a=2 addr_b=2 step_a=2 "
                             "step_b=2\n")},
        HazardCase{"WeightTilesInOrder",
                   with_fill("read_weights count=2 rows=4 host_addr=0xA000 host_stride=8 "
                             "host_step=64\n"
                             "matmul rows=6 addr_b=20 k_valid=4 n_valid=4\n"
                             "matmul rows=6 addr_b=30 k_valid=4 n_valid=4\n")}),
    [](const ::testing::TestParamInfo<HazardCase>& p) { return p.param.name; });

// A READ_HOST into the other bank runs while the array works, and the MATMUL
// that needs it waits at issue for it (an input stall).
TEST(CoreOverlap, IndependentUnitsRunTogether) {
  const HardwareConfig config = config_named("4x4_m1a1");
  const std::string compute =
      "read_host rows=64 host_addr=0x8000 host_stride=8\n"
      "matmul fetch count=8 rows=64 accn host_addr=0xA000 host_stride=8 host_step=32 k_valid=4 "
      "n_valid=4\n";
  const std::string load = "read_host rows=256 addr_b=512 host_addr=0x9000 host_stride=8\n";
  auto cycles = [&](const std::string& body) {
    CoreHarness h(config, {}, 1u << 18);
    h.write(0x8000, host_data());
    const BothResults r = h.run(isa::assemble(body + "halt\n"));
    EXPECT_TRUE(r.rtl.ok());
    return r.rtl.counters.value()[0];
  };
  const std::uint64_t alone = cycles(compute) + cycles(load);
  const std::uint64_t together = cycles(compute + load);
  EXPECT_LT(together, alone * 3 / 4) << "compute and load should overlap";

  CoreHarness h(config, slow_memory(), 1u << 18);
  h.write(0x8000, host_data());
  const BothResults r = h.run(isa::assemble(compute + "halt\n"));
  const Counters& c = r.rtl.counters.value();
  EXPECT_GT(c[regs::kCntInputStallIndex], 0u);
  std::uint64_t categories = 0;
  for (std::size_t index :
       {regs::kCntArrayActiveIndex, regs::kCntWeightStallIndex, regs::kCntWeightShiftIndex,
        regs::kCntInputStallIndex, regs::kCntRawStallIndex, regs::kCntNonMatrixIndex}) {
    categories += c[index];
  }
  EXPECT_EQ(categories, c[0]) << "every cycle falls in exactly one category";
  EXPECT_EQ(c[regs::kCntUsefulMacsIndex], 8u * 64 * 4 * 4);
}

// The sequential core counts a completed MATMUL row as ARRAY_ACTIVE and every other cycle as
// NON_MATRIX; it never stalls on weights or inputs.
TEST(CoreCounters, SequentialCoreCategories) {
  CoreHarness h(config_named("4x4_seq"), slow_memory(), 1u << 18);
  h.write(0x8000, host_data());
  const BothResults r = h.run(isa::assemble(
      "read_host rows=16 host_addr=0x8000 host_stride=8\n"
      "matmul fetch count=2 rows=16 accn host_addr=0xA000 host_stride=8 host_step=32 k_valid=3 "
      "n_valid=2\n"
      "write_host acc rows=16 host_addr=0x10000 host_stride=16\nhalt\n"));
  ASSERT_TRUE(r.rtl.ok()) << regs::error_name(r.rtl.error);
  const Counters& c = r.rtl.counters.value();
  EXPECT_EQ(c[regs::kCntArrayActiveIndex], 2u * 16);
  EXPECT_EQ(c[regs::kCntUsefulMacsIndex], 2u * 16 * 3 * 2);
  EXPECT_EQ(c[regs::kCntArrayActiveIndex] + c[regs::kCntNonMatrixIndex], c[0]);
  for (std::size_t index : {regs::kCntWeightStallIndex, regs::kCntWeightShiftIndex,
                            regs::kCntInputStallIndex, regs::kCntRawStallIndex}) {
    EXPECT_EQ(c[index], 0u);
  }
  EXPECT_EQ(c[regs::kCntInstructionsIndex], 3u);
  // One beat per 4-byte word: 4 instructions of 8 words, 16 rows of 4 bf16 lanes (a lane a
  // beat), 2 tiles of 3 rows of 4 weights; 16 rows of 4 fp32 lanes out.
  EXPECT_EQ(c[regs::kCntDmaReadBeatsIndex], 4u * 8 + 16 * 4 + 2 * 3 * 4);
  EXPECT_EQ(c[regs::kCntDmaWriteBeatsIndex], 16u * 4);
}

}  // namespace
}  // namespace tpu::testing
