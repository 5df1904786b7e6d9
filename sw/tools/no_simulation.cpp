// The `tpu` tool built without the RTL simulation (TPU_RTL=OFF): it links no Verilator model, so
// --backend rtl and --port sim are refused with the option that builds them.
#include "tpu/simulation.hpp"

namespace tpu {

const Simulation* linked_simulation() {
  return nullptr;
}

}  // namespace tpu
