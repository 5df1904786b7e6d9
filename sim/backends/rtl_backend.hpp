// The `rtl` backend: a Verilator model of tpu_top, its AXI4 master connected
// to an AxiMemory over the backend's HostMemory, and its registers driven
// through AXI4-Lite transactions, cycle by cycle.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backends/axi_memory.hpp"
#include "backends/top_model.hpp"
#include "tpu/backend.hpp"

namespace tpu::sim {

struct RtlOptions {
  AxiTiming timing;                       // host memory behaviour
  std::size_t memory_bytes = 64u << 20;   // host memory size
  std::uint32_t random_init_seed = 1;     // initial register and RAM contents
  std::string trace_path;                 // FST waveform of every cycle, if set
  std::uint64_t max_cycles = 1ull << 32;  // a run longer than this is a hang
};

class RtlBackend final : public Backend {
 public:
  RtlBackend(const HardwareConfig& config, const RtlOptions& options = {});

  std::string name() const override { return "rtl"; }
  const HardwareConfig& config() const override { return config_; }
  HostMemory& memory() override { return memory_; }
  RunResult run(std::uint32_t prog_addr, std::uint32_t count) override;

  // Register access through AXI4-Lite; the response code (0 OKAY, 2 SLVERR)
  // is returned through `resp` when given, and must be OKAY otherwise.
  std::uint32_t read_register(std::uint32_t offset, unsigned* resp = nullptr);
  void write_register(std::uint32_t offset, std::uint32_t value, unsigned* resp = nullptr,
                      unsigned strobes = 0xF);
  // Clocks until irq_o (or max_cycles, then std::runtime_error).
  void wait_for_irq();

  // A run cycle by cycle, for a pod: start() writes PROG_ADDR, PROG_COUNT and START; tick()
  // clocks one cycle with the link inputs given, after which link_outputs() are the values the
  // chip drove in it and stopped() whether irq_o was up; finish() reads the outcome.
  void start(std::uint32_t prog_addr, std::uint32_t count);
  void tick(const LinkIn& link);
  const LinkOut& link_outputs() const { return link_out_; }
  bool stopped() const { return irq_; }
  RunResult finish();
  // The POD and LINK_TIMEOUT registers.
  void set_pod(unsigned id, unsigned size, std::uint32_t link_timeout);

  AxiMemory& axi() { return axi_; }
  std::uint64_t cycle() const { return cycle_; }

 private:
  void step();

  HardwareConfig config_;
  RtlOptions options_;
  HostMemory memory_;
  AxiMemory axi_;
  std::unique_ptr<TopModel> top_;
  LiteIn lite_in_;
  LiteOut lite_out_;
  AxiMasterSignals master_;
  LinkIn link_in_;
  LinkOut link_out_;
  bool irq_ = false;
  std::uint64_t cycle_ = 0;
};

}  // namespace tpu::sim
