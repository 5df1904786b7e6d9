#include "core_harness.hpp"

#include <cstdlib>
#include <stdexcept>

namespace tpu::testing {

HardwareConfig config_named(const std::string& name) {
  const HardwareConfig* config = find_core_config(name);
  if (config == nullptr) throw std::invalid_argument("no compiled tpu_top configuration " + name);
  return *config;
}

CoreHarness::CoreHarness(const HardwareConfig& config, const sim::RtlOptions& options,
                         std::size_t memory_bytes)
    : config_(config) {
  sim::RtlOptions rtl_options = options;
  rtl_options.memory_bytes = memory_bytes;
  // TPU_TEST_TRACE=<file.fst> dumps the RTL's waveform (of the last harness made).
  if (const char* trace = std::getenv("TPU_TEST_TRACE")) rtl_options.trace_path = trace;
  rtl_ = std::make_unique<sim::RtlBackend>(config, rtl_options);
  model_ = std::make_unique<FunctionalModel>(config, memory_bytes);
}

void CoreHarness::write(std::uint64_t addr, const std::vector<std::uint8_t>& bytes) {
  rtl_->memory().write_array(addr, bytes);
  model_->memory().write_array(addr, bytes);
}

BothResults CoreHarness::run(const std::vector<isa::Instruction>& program, std::uint32_t prog_addr,
                             bool precise) {
  write(prog_addr, isa::encode_program(program));
  return run_in_place(prog_addr, static_cast<std::uint32_t>(program.size()), precise);
}

BothResults CoreHarness::run_in_place(std::uint32_t prog_addr, std::uint32_t count, bool precise) {
  BothResults r{rtl_->run(prog_addr, count), model_->run(prog_addr, count)};
  EXPECT_EQ(r.rtl.done, r.model.done);
  EXPECT_EQ(std::string(regs::error_name(r.rtl.error)), regs::error_name(r.model.error))
      << "model: " << model_->error_detail();
  EXPECT_EQ(r.rtl.error_pc, r.model.error_pc);
  if (!precise) return r;
  EXPECT_EQ(r.rtl.instructions, r.model.instructions);
  const HostMemory& a = rtl_->memory();
  const HostMemory& b = model_->memory();
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a.data()[i] != b.data()[i] && ++mismatches <= 8) {
      ADD_FAILURE() << "host byte " << i << ": rtl " << int(a.data()[i]) << ", model "
                    << int(b.data()[i]);
    }
  }
  EXPECT_EQ(mismatches, 0u) << "host bytes that differ";
  return r;
}

}  // namespace tpu::testing
