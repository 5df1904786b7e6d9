// The RTL simulation as the runtime sees it: Verilator models of tpu_top (the `rtl` backend) and
// of the FPGA boards, each behind a model of its UART line (for the `serial` backend's
// `--port sim`). They come with the build option TPU_RTL (sim/CMakeLists.txt); a program built
// without it links no simulation, and linked_simulation() tells it so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tpu/backend.hpp"
#include "tpu/link.hpp"
#include "tpu/pod.hpp"

namespace tpu {

// A simulated board's end of the line, and the bit rate its bitstream was built for.
struct SimulatedBoardPort {
  std::unique_ptr<link::SerialPort> port;
  std::uint32_t baud = 0;
};

class Simulation {
 public:
  virtual ~Simulation() = default;
  // The Verilator model of the core `config` (one of core_configs()) with `memory_bytes` of host
  // memory, cycle by cycle; an FST waveform of every cycle goes to `trace_path` unless it is
  // empty. Throws std::invalid_argument when a waveform is asked of a model built without
  // tracing (sim/models.cmake).
  virtual std::unique_ptr<Backend> open_core(const HardwareConfig& config, std::size_t memory_bytes,
                                             const std::string& trace_path) const = 0;
  // A pod of `chips` Verilator models of the core `config` (which must have links) in this
  // process, each with `memory_bytes` of host memory, joined by wires of the given timing.
  virtual std::unique_ptr<Pod> open_pod(const HardwareConfig& config, unsigned chips,
                                        std::size_t memory_bytes,
                                        const LinkTiming& timing) const = 0;
  // This process's chip of a pod whose chips are the ranks of MPI_COMM_WORLD (started with
  // mpirun -np N), linked by MPI messages: the same cycles and bits as open_pod. Throws
  // std::invalid_argument when this program was built without MPI.
  virtual std::unique_ptr<Pod> open_mpi_pod(const HardwareConfig& config, std::size_t memory_bytes,
                                            const LinkTiming& timing) const = 0;
  // The board `name` (a folder of fpga/; empty: the first simulated one). Throws
  // std::invalid_argument naming the simulated boards when there is no such one.
  virtual SimulatedBoardPort open_board(const std::string& name,
                                        const std::string& trace_path) const = 0;
};

// The simulation this program was linked with, or nullptr when it was built without the RTL
// (TPU_RTL=OFF).
const Simulation* linked_simulation();

}  // namespace tpu
