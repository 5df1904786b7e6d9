#include "harness/array_config.hpp"

#include <algorithm>

namespace tpu::harness {

std::string ArrayConfig::name() const {
  return std::to_string(rows) + "x" + std::to_string(cols) + "_m" + std::to_string(mul_stages) +
         "a" + std::to_string(add_stages);
}

std::uint64_t expected_stream_cycles(const ArrayConfig& config,
                                     const std::vector<std::size_t>& rows_per_tile) {
  if (rows_per_tile.empty()) return 0;
  // The first tile's weights take `rows` cycles; its first activation enters
  // the cycle after the last weight beat. Each later tile starts when the
  // previous one has streamed all its rows, or when its own weights are in.
  std::uint64_t first_activation = config.rows;
  for (std::size_t t = 0; t + 1 < rows_per_tile.size(); ++t) {
    first_activation += std::max<std::uint64_t>(rows_per_tile[t], config.min_tile_period());
  }
  const std::uint64_t last_activation = first_activation + rows_per_tile.back() - 1;
  // Counted inclusively: the cycle of the first weight beat is cycle 0.
  return last_activation + config.latency() + 1;
}

}  // namespace tpu::harness
