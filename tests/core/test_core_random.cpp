// Random programs on the RTL against the functional model: the hazard logic,
// the DMA engines, the units and the memories must together behave exactly as
// sequential execution of the program (docs/isa.md, "Execution"), whatever
// the host memory's latency and back-pressure.
#include <gtest/gtest.h>

#include <iostream>

#include "common/test_seed.hpp"
#include "core_harness.hpp"
#include "random_program.hpp"
#include "tpu/assembler.hpp"

namespace tpu::testing {
namespace {

struct RandomCase {
  std::string config;
  unsigned programs;
  bool stalls;  // random back-pressure and gaps on every AXI channel
};

void PrintTo(const RandomCase& c, std::ostream* os) {
  *os << c.config << (c.stalls ? " with stalls" : "");
}

class CoreRandom : public ::testing::TestWithParam<RandomCase> {};

TEST_P(CoreRandom, ProgramsMatchTheModel) {
  const RandomCase& c = GetParam();
  const HardwareConfig config = config_named(c.config);
  const std::uint64_t seed = test::test_seed();
  for (unsigned p = 0; p < c.programs; ++p) {
    const std::uint64_t program_seed = seed * 1000 + p;
    SCOPED_TRACE("program seed " + std::to_string(program_seed));
    const RandomProgram rp = make_random_program(config, {}, program_seed);
    sim::RtlOptions options;
    options.random_init_seed = static_cast<std::uint32_t>(program_seed);
    options.timing.seed = program_seed;
    // The sequential core takes some sixty cycles per multiply-add, the array a fraction of one.
    options.max_cycles = config.sequential ? 50'000'000 : 2'000'000;
    if (c.stalls) {
      options.timing.read_latency = 3 + static_cast<unsigned>(program_seed % 20);
      options.timing.write_latency = 1 + static_cast<unsigned>(program_seed % 7);
      options.timing.beats_per_cycle = 0.5;
      options.timing.ar_stall = options.timing.aw_stall = options.timing.w_stall = 0.3;
      options.timing.r_gap = options.timing.b_gap = 0.3;
      options.timing.max_reads_in_flight = 1 + static_cast<unsigned>(program_seed % 4);
    }
    CoreHarness h(config, options, rp.memory_bytes);
    h.write(rp.data_addr, rp.host_data);
    BothResults r;
    try {
      r = h.run(rp.program);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    if (::testing::Test::HasFailure()) {
      std::cout << "The program:\n" << isa::disassemble(rp.program);
      return;
    }
    EXPECT_TRUE(r.rtl.ok()) << regs::error_name(r.rtl.error) << " at " << r.rtl.error_pc;
    EXPECT_EQ(h.model().uninitialized_reads(), 0u) << "the generator read rows it never wrote";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tops, CoreRandom,
    ::testing::Values(RandomCase{"4x4_m1a1", 24, false}, RandomCase{"4x4_m1a1", 12, true},
                      RandomCase{"8x8_bus4", 12, false}, RandomCase{"8x8_bus4", 6, true},
                      RandomCase{"16x16", 4, false}, RandomCase{"16x16", 2, true},
                      RandomCase{"4x4_seq", 12, false}, RandomCase{"4x4_seq", 6, true},
                      RandomCase{"1x1_seq", 12, false}, RandomCase{"8x8_seq", 6, true}),
    [](const ::testing::TestParamInfo<RandomCase>& p) {
      return p.param.config + (p.param.stalls ? "_stalls" : "");
    });

}  // namespace
}  // namespace tpu::testing
