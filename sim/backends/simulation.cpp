// The RTL simulation a program built with TPU_RTL links (tpu/simulation.hpp): the `rtl` backend,
// pods of it, and the simulated FPGA boards.
#include "tpu/simulation.hpp"

#include <stdexcept>

#include "backends/board_sim.hpp"
#include "backends/rtl_backend.hpp"
#include "backends/rtl_pod.hpp"
#ifdef TPU_HAVE_MPI
#include "backends/mpi_pod.hpp"
#endif

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

  std::unique_ptr<Pod> open_pod(const HardwareConfig& config, unsigned chips,
                                std::size_t memory_bytes,
                                const LinkTiming& timing) const override {
    sim::RtlPodOptions options;
    options.memory_bytes = memory_bytes;
    options.link = timing;
    return std::make_unique<sim::RtlPod>(config, chips, options);
  }

  std::unique_ptr<Pod> open_mpi_pod(const HardwareConfig& config, std::size_t memory_bytes,
                                    const LinkTiming& timing) const override {
#ifdef TPU_HAVE_MPI
    sim::RtlPodOptions options;
    options.memory_bytes = memory_bytes;
    options.link = timing;
    return std::make_unique<sim::MpiPod>(config, options);
#else
    (void)config, (void)memory_bytes, (void)timing;
    throw std::invalid_argument(
        "this tpu was built without MPI: install Open MPI (scripts/deps.sh) and rebuild");
#endif
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
