// Independent weight tiles with random data and explicit seeds, each with the
// result the reference model expects, for tests of streaming and timing.
#pragma once

#include "harness/mxu_stream.hpp"
#include "oracle/operand_sets.hpp"

namespace tpu::harness {

struct ReferencedTiles {
  std::vector<TileJob> jobs;
  std::vector<std::vector<fp32_t>> expected;  // per job, m x cols
};

ReferencedTiles random_independent_tiles(oracle::OperandRng& rng, const ArrayConfig& config,
                                         const std::vector<std::size_t>& rows_per_tile);

}  // namespace tpu::harness
