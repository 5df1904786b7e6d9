// What every way of running a TPU program provides: the RTL (a Verilator model
// of tpu_top behind an AXI memory model), the functional model of the
// instruction set, and later a board. A backend owns the host memory the core
// sees; the runtime places programs and data there and calls run().
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tpu/host_memory.hpp"
#include "tpu/regs.hpp"

namespace tpu {

// Build parameters of a core (the HW_ARRAY and HW_MEMORY registers).
struct HardwareConfig {
  unsigned dim = 16;          // array rows = columns
  unsigned mul_stages = 0;    // multiplier pipeline registers
  unsigned add_stages = 0;    // adder pipeline registers
  unsigned act_lanes = 4;     // activation lanes per cycle
  unsigned ub_depth = 16384;  // unified-buffer rows
  unsigned acc_depth = 4096;  // accumulator rows
  unsigned bus_bytes = 16;    // AXI4 data bytes
  unsigned weight_tiles = 4;  // weight FIFO depth in tiles
  bool sequential = false;    // the sequential core (tpu_top's Sequential), not the array
  unsigned link_lanes = 0;    // fp32 lanes per inter-chip link beat; 0: no links (no ALLREDUCE)
  bool int8 = false;          // the int8 datapath (tpu_top's Int8): the I8 and REQ flags
  bool float_datapath = true;  // the bf16/fp32 datapath (tpu_top's Float); off: an int8-only core
  unsigned vector_lanes = 0;   // lanes the vector unit combines per cycle; 0: none (no ELTWISE)

  // "16x16", "4x4_m1a1", "8x8_bus4": the array, then what differs from the defaults; "4x4_seq":
  // the sequential core, whose bus is always 4 bytes and whose arithmetic has no stages.
  std::string name() const;
  bool operator==(const HardwareConfig& other) const;
  bool operator!=(const HardwareConfig& other) const { return !(*this == other); }
};

// The named core configurations of this build (the `core` rows of sim/models.cmake), in the
// table's order. With the RTL simulation each has a Verilator model.
const std::vector<HardwareConfig>& core_configs();
// Every core the functional model and the cycle model run: core_configs(), then those no
// Verilator model is built of (the `model_core` rows: TPU v2's 128x128 unless the build has its
// RTL). What `--array` chooses from.
const std::vector<HardwareConfig>& model_configs();
// The one of model_configs() with that name, or nullptr.
const HardwareConfig* find_core_config(const std::string& name);

// The performance counters, indexed like regs::kCounters.
using Counters = std::array<std::uint64_t, regs::kCounterCount>;

struct RunResult {
  bool done = false;  // reached HALT
  regs::Error error = regs::Error::None;
  std::uint32_t error_pc = 0;        // instruction index, when error != None
  std::uint64_t instructions = 0;    // instructions completed
  std::optional<Counters> counters;  // cycle-level figures, where the backend has them
  double host_seconds = 0;           // the host's wall-clock time for the run (the model's)

  bool ok() const { return done && error == regs::Error::None; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual const HardwareConfig& config() const = 0;
  virtual HostMemory& memory() = 0;
  // Runs the program of `count` instructions at `prog_addr` to HALT or an
  // error. Unified buffer and accumulators keep their contents between runs.
  virtual RunResult run(std::uint32_t prog_addr, std::uint32_t count) = 0;
};

}  // namespace tpu
