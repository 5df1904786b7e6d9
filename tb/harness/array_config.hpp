// Parameters of one compiled MXU configuration and the timing they imply.
// The formulas restate docs/architecture.md; tests use them as the expected
// cycle counts, so they are written from the document, not from the RTL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::harness {

struct ArrayConfig {
  unsigned rows = 16;
  unsigned cols = 16;
  unsigned mul_stages = 0;
  unsigned add_stages = 0;

  std::string name() const;
  bool operator==(const ArrayConfig& other) const {
    return rows == other.rows && cols == other.cols && mul_stages == other.mul_stages &&
           add_stages == other.add_stages;
  }
  // Cycles a partial sum takes to pass one row of cells.
  unsigned psum_step() const { return add_stages + 1; }
  // Cycles from an activation row entering to its result row leaving.
  unsigned latency() const { return cols + mul_stages + rows * psum_step(); }
  // Cycles after a tile's first activation before the next tile's weights may enter.
  unsigned free_delay() const { return psum_step() > 2 ? (rows - 1) * (psum_step() - 2) : 0; }
  // Shortest distance between the first activations of consecutive tiles.
  unsigned min_tile_period() const { return rows + 1 + free_delay(); }
};

// Expected cycles from the first weight beat entering to the last result
// leaving, for tiles of the given row counts streamed with no stalls.
std::uint64_t expected_stream_cycles(const ArrayConfig& config,
                                     const std::vector<std::size_t>& rows_per_tile);

}  // namespace tpu::harness
