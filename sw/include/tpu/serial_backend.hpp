// The `serial` backend: a TPU core on an FPGA board (docs/fpga.md), driven over the UART host
// link. Its host memory is the board's memory; memory() is a copy on this side that run()
// brings up to date on the board (only what changed since the board last saw it) before the
// program starts, and refreshes afterwards from the host bytes the program's WRITE_HOST
// instructions cover. The core's configuration comes from its HW_ARRAY and HW_MEMORY registers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/link.hpp"

namespace tpu {

struct SerialRunOptions {
  // A program still running after this long is a hang: run() throws link::LinkError.
  double run_timeout_ms = 60'000;
};

class SerialBackend final : public Backend {
 public:
  // Talks to the board on `port`. Throws link::LinkError when there is no board, and
  // std::invalid_argument when its memory is smaller than `memory_bytes` or its core's registers
  // describe no core. memory() may grow later, up to the board's memory (run() checks).
  SerialBackend(std::unique_ptr<link::SerialPort> port, const link::LinkOptions& link_options,
                std::size_t memory_bytes, const SerialRunOptions& run_options = {});

  std::string name() const override { return "serial"; }
  const HardwareConfig& config() const override { return config_; }
  HostMemory& memory() override { return memory_; }
  RunResult run(std::uint32_t prog_addr, std::uint32_t count) override;

  const link::BoardInfo& board() const { return link_.info(); }
  link::LinkClient& link() { return link_; }
  link::SerialPort& port() { return *port_; }
  // Bytes sent to and read from board memory so far.
  std::uint64_t bytes_uploaded() const { return uploaded_; }
  std::uint64_t bytes_downloaded() const { return downloaded_; }

 private:
  RunResult run_on_board(std::uint32_t prog_addr, std::uint32_t count);
  void upload_changes();
  void download(std::uint64_t begin, std::uint64_t end);
  // The host bytes [begin, end) the program's WRITE_HOST instructions cover, merged.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> written_ranges(std::uint32_t prog_addr,
                                                                      std::uint32_t count) const;

  std::unique_ptr<link::SerialPort> port_;
  link::LinkClient link_;
  SerialRunOptions run_options_;
  HardwareConfig config_;
  HostMemory memory_;
  // What board memory holds, as far as this side knows: bytes [0, known_.size()) are known.
  std::vector<std::uint8_t> known_;
  std::uint64_t uploaded_ = 0, downloaded_ = 0;
};

// The configuration HW_ARRAY, HW_MEMORY and HW_CORE describe; std::invalid_argument when they
// describe none (isa::validate_config).
HardwareConfig config_from_registers(std::uint32_t hw_array, std::uint32_t hw_memory,
                                     std::uint32_t hw_core);

}  // namespace tpu
