// The RTL simulation a program built with TPU_RTL links (tpu/simulation.hpp): the `rtl` backend
// and the simulated FPGA boards.
#include "tpu/simulation.hpp"

#include "backends/board_sim.hpp"
#include "backends/rtl_backend.hpp"

namespace tpu {
namespace {

class VerilatorSimulation final : public Simulation {
 public:
  std::unique_ptr<Backend> open_core(const HardwareConfig& config, std::size_t memory_bytes,
                                     const std::string& trace_path) const override {
    sim::RtlOptions options;
    options.memory_bytes = memory_bytes;
    options.trace_path = trace_path;
    return std::make_unique<sim::RtlBackend>(config, options);
  }

  SimulatedBoardPort open_board(const std::string& name,
                                const std::string& trace_path) const override {
    sim::SimBoardOptions options;
    options.board = name;
    options.trace_path = trace_path;
    auto board = std::make_unique<sim::SimulatedBoard>(options);
    const std::uint32_t baud = board->params().baud;
    return {std::move(board), baud};
  }
};

}  // namespace

const Simulation* linked_simulation() {
  static const VerilatorSimulation simulation;
  return &simulation;
}

}  // namespace tpu
