// Every error code, on the RTL and the functional model: the core stops with
// the right code at the right instruction, the instructions before it have
// done their work and the ones after it nothing, and the core runs the next
// program as if nothing had happened.
#include <gtest/gtest.h>

#include "core_harness.hpp"
#include "tpu/assembler.hpp"

namespace tpu::testing {
namespace {

constexpr std::size_t kMemory = 1u << 20;

struct ErrorCase {
  std::string name;
  std::string program;  // assembly; instruction 2 is the failing one unless said otherwise
  regs::Error error;
  std::uint32_t pc = 2;
  std::uint32_t prog_addr = 0;
  bool bus = false;  // a bus error: memory may hold part of the instructions in flight
};

// Two instructions that work, so their effects can be seen after the stop.
const char* const kPrelude =
    "read_host rows=4 host_addr=0x8000 host_stride=8\n"
    "write_host rows=4 host_addr=0x9000 host_stride=8\n";
// Would overwrite the prelude's output if it ran.
const char* const kAfter =
    "write_host rows=4 addr_a=512 host_addr=0x9000 host_stride=8\n"
    "halt\n";

void PrintTo(const ErrorCase& c, std::ostream* os) {
  *os << c.name;
}

class CoreErrors : public ::testing::TestWithParam<ErrorCase> {};

// Both cores have 1024 unified-buffer rows, 256 accumulator rows and two weight tiles.
void stops_precisely_and_recovers(const std::string& config, const ErrorCase& c) {
  CoreHarness h(config_named(config), {}, kMemory);
  std::vector<std::uint8_t> data(0x2000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7 + 1);
  h.write(0x8000, data);
  // Only the instructions that fit in memory are placed (see BusReadFetch).
  std::vector<std::uint8_t> program = isa::encode_program(isa::assemble(c.program));
  const auto count = static_cast<std::uint32_t>(program.size() / isa::kInstrBytes);
  program.resize(std::min<std::size_t>(program.size(), kMemory - c.prog_addr));
  h.write(c.prog_addr, program);
  const BothResults r = h.run_in_place(c.prog_addr, count, !c.bus);
  EXPECT_FALSE(r.rtl.done);
  EXPECT_EQ(std::string(regs::error_name(r.rtl.error)), regs::error_name(c.error));
  EXPECT_EQ(r.rtl.error_pc, c.pc);

  // The same core runs a correct program next.
  const BothResults again = h.run(isa::assemble(std::string(kPrelude) + "halt\n"), 0x4000);
  EXPECT_TRUE(again.rtl.ok()) << regs::error_name(again.rtl.error);
  EXPECT_TRUE(again.model.ok()) << regs::error_name(again.model.error);
}

TEST_P(CoreErrors, StopsPreciselyAndRecovers) {
  stops_precisely_and_recovers("4x4_m1a1", GetParam());
}

TEST_P(CoreErrors, SequentialCoreStopsPreciselyAndRecovers) {
  stops_precisely_and_recovers("4x4_seq", GetParam());
}

std::string around(const std::string& failing) {
  return kPrelude + failing + "\n" + kAfter;
}

INSTANTIATE_TEST_SUITE_P(
    Codes, CoreErrors,
    ::testing::Values(
        ErrorCase{"IllegalOpcode", around(".word 0x0a 0 0 0 0 0 0 0"), regs::Error::IllegalOpcode},
        ErrorCase{"IllegalFieldZeroRows", around(".word 0x01 0x00000001 0 0 0x8000 8 0 0"),
                  regs::Error::IllegalField},
        ErrorCase{"IllegalFieldReservedBit", around(".word 0x80000001 0x00010001 0 0 0x8000 8 0 0"),
                  regs::Error::IllegalField},
        ErrorCase{"IllegalFieldKValid", around(".word 0x03 0x00010001 0 0 0 0 0 0x00040005"),
                  regs::Error::IllegalField},
        ErrorCase{"UbRange", around("read_host rows=2 addr_b=1023 host_addr=0x8000 host_stride=8"),
                  regs::Error::UbRange},
        ErrorCase{"AccRange", around("read_host acc rows=1 addr_b=256 host_addr=0x8000"),
                  regs::Error::AccRange},
        ErrorCase{
            "BiasRange",
            around("activate bias rows=1 addr_a=0 addr_b=0 count=2 bias_addr=250 bias_step=6"),
            regs::Error::AccRange},
        ErrorCase{"HostAlign", around("read_host rows=1 host_addr=0x8002"), regs::Error::HostAlign},
        ErrorCase{"HostRange", around("read_host rows=2 host_addr=0xfffffff8 host_stride=8"),
                  regs::Error::HostRange},
        ErrorCase{"AccOverlap", around("activate bias f32 rows=4 addr_a=0 addr_b=8 bias_addr=9"),
                  regs::Error::AccOverlap},
        ErrorCase{"WeightUnderflow", around("matmul rows=1 k_valid=4 n_valid=4"),
                  regs::Error::WeightUnderflow},
        ErrorCase{"WeightOverflow",
                  around("read_weights count=4 rows=4 host_addr=0x8000 host_stride=8 host_step=32"),
                  regs::Error::WeightOverflow},
        ErrorCase{
            "WeightLeftoverAtHalt",
            std::string(kPrelude) + "read_weights rows=4 host_addr=0x8000 host_stride=8\nhalt\n",
            regs::Error::WeightLeftover, 3},
        ErrorCase{"WeightLeftoverAtFetch",
                  around("read_weights rows=4 host_addr=0x8000 host_stride=8\n"
                         "matmul fetch rows=1 host_addr=0x8000 host_stride=8 k_valid=4 n_valid=4"),
                  regs::Error::WeightLeftover, 3},
        ErrorCase{"ProgramEnd", std::string(kPrelude), regs::Error::ProgramEnd},
        ErrorCase{"ProgAlign", around("halt"), regs::Error::ProgAlign, 0, 0x10},
        ErrorCase{"BusRead", around("read_host rows=4 host_addr=0x200000 host_stride=8"),
                  regs::Error::BusRead, 2, 0, true},
        ErrorCase{
            "BusReadWeights",
            around("matmul fetch rows=1 host_addr=0x200000 host_stride=8 k_valid=4 n_valid=4"),
            regs::Error::BusRead, 2, 0, true},
        ErrorCase{"BusWrite", around("write_host rows=4 host_addr=0x200000 host_stride=8"),
                  regs::Error::BusWrite, 2, 0, true},
        // The last two instructions lie past the end of memory and are never reached by a HALT.
        ErrorCase{"BusReadFetch", std::string(kPrelude) + "sync\nsync\n", regs::Error::BusRead, 2,
                  kMemory - 64, true}),
    [](const ::testing::TestParamInfo<ErrorCase>& p) { return p.param.name; });

// READ_WEIGHTS T (transposed tiles) needs the vector unit's core: the cores without one stop at
// it with ILLEGAL_FIELD, as the model does; the 4x4_m1a1 core, which has one, runs it.
TEST(CoreErrorsVector, TransposedWeightsNeedAVectorUnit) {
  const std::string transposed = "read_weights t rows=4 host_addr=0x8000 host_stride=8";
  for (const char* config : {"8x8_bus4", "4x4_seq"}) {
    SCOPED_TRACE(config);
    stops_precisely_and_recovers(
        config, ErrorCase{"TransposedWeights", around(transposed), regs::Error::IllegalField, 2});
  }
  CoreHarness h(config_named("4x4_m1a1"), {}, kMemory);
  const BothResults r = h.run(isa::assemble(std::string(kPrelude) + transposed +
                                            "\nmatmul rows=4 addr_b=8 k_valid=4 n_valid=4\nhalt\n"),
                              0x4000);
  EXPECT_TRUE(r.rtl.ok()) << regs::error_name(r.rtl.error);
}

// The fetch-ahead reads past HALT, but an error there is no error.
TEST(CoreErrorsFetch, ErrorsPastHaltAreIgnored) {
  for (const char* config : {"4x4_m1a1", "4x4_seq"}) {
    CoreHarness h(config_named(config), {}, kMemory);
    h.write(kMemory - 64, isa::encode_program(isa::assemble("sync\nhalt\n")));
    const BothResults r = h.run_in_place(kMemory - 64, 6);
    EXPECT_TRUE(r.rtl.ok()) << config << ": " << regs::error_name(r.rtl.error);
  }
}

// A bus error cuts a READ_HOST off in its first iterations; the ones it has
// left must not go out once the core has stopped (the abort holds until the
// next START or RESET).
TEST(CoreErrorsBus, NoTrafficAfterTheStop) {
  CoreHarness h(config_named("4x4_m1a1"), {}, kMemory);
  const std::string failing =
      "read_host count=16 rows=4 step_b=4 host_addr=0x100000 host_stride=8 host_step=32";
  const std::vector<std::uint8_t> program =
      isa::encode_program(isa::assemble(around(failing)));
  h.write(0, program);
  const BothResults r =
      h.run_in_place(0, static_cast<std::uint32_t>(program.size() / isa::kInstrBytes), false);
  ASSERT_EQ(std::string(regs::error_name(r.rtl.error)), regs::error_name(regs::Error::BusRead));

  const sim::AxiTraffic stopped = h.rtl().axi().traffic();
  // The stop came before the READ_HOST had asked for its 64 rows (512 bytes, at
  // least 32 beats of 16 bytes), fetch and prelude reads included.
  EXPECT_LT(stopped.read_beats, 32u);
  const std::uint64_t cycle = h.rtl().cycle();
  while (h.rtl().cycle() < cycle + 1000) h.rtl().read_register(regs::kStatus);
  const sim::AxiTraffic later = h.rtl().axi().traffic();
  EXPECT_EQ(later.read_bursts, stopped.read_bursts);
  EXPECT_EQ(later.read_beats, stopped.read_beats);
  EXPECT_EQ(later.write_bursts, stopped.write_bursts);
  EXPECT_EQ(later.write_beats, stopped.write_beats);
}

}  // namespace
}  // namespace tpu::testing
