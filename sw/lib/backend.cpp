#include "tpu/backend.hpp"

namespace tpu {

std::string HardwareConfig::name() const {
  const HardwareConfig defaults;
  std::string s = std::to_string(dim) + "x" + std::to_string(dim);
  if (sequential) return s + "_seq";
  if (mul_stages || add_stages) {
    s += "_m" + std::to_string(mul_stages) + "a" + std::to_string(add_stages);
  }
  if (bus_bytes != defaults.bus_bytes) s += "_bus" + std::to_string(bus_bytes);
  if (!float_datapath) s += "_int8";
  return s;
}

const HardwareConfig* find_core_config(const std::string& name) {
  for (const HardwareConfig& config : model_configs()) {
    if (config.name() == name) return &config;
  }
  return nullptr;
}

bool HardwareConfig::operator==(const HardwareConfig& o) const {
  return dim == o.dim && mul_stages == o.mul_stages && add_stages == o.add_stages &&
         act_lanes == o.act_lanes && ub_depth == o.ub_depth && acc_depth == o.acc_depth &&
         bus_bytes == o.bus_bytes && weight_tiles == o.weight_tiles && sequential == o.sequential &&
         link_lanes == o.link_lanes && int8 == o.int8 && float_datapath == o.float_datapath &&
         vector_lanes == o.vector_lanes;
}

}  // namespace tpu
