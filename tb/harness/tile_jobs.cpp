#include "harness/tile_jobs.hpp"

#include "oracle/random_matrices.hpp"

namespace tpu::harness {

ReferencedTiles random_independent_tiles(oracle::OperandRng& rng, const ArrayConfig& config,
                                         const std::vector<std::size_t>& rows_per_tile) {
  ReferencedTiles tiles;
  for (std::size_t m : rows_per_tile) {
    const auto a = oracle::random_bf16_matrix(rng, m, config.rows, 2);
    const auto w = oracle::random_bf16_matrix(rng, config.rows, config.cols, 2);
    const auto seed = oracle::random_seed_matrix(rng, m, config.cols);
    tiles.jobs.push_back({w.data, a.data, seed.data, std::nullopt, m});
    tiles.expected.push_back(num::gemm(a, w, &seed).data);
  }
  return tiles;
}

}  // namespace tpu::harness
