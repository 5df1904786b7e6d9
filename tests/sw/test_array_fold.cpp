// The functional model's fast fold (host float with explicit N-IN, flush and
// NaN rules) against the reference model's soft-float mac, bit for bit: the
// structured operand set around every boundary, special values, and random
// rows with cancellation.
#include <gtest/gtest.h>

#include <functional>

#include "common/test_seed.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/array_fold.hpp"

namespace tpu {
namespace {

// The same fold with num::mac.
std::vector<num::fp32_t> reference_fold(const std::vector<num::bf16_t>& acts,
                                        const std::vector<num::bf16_t>& tile_by_column,
                                        std::vector<num::fp32_t> sums, std::size_t dim) {
  for (std::size_t j = 0; j < dim; ++j) {
    num::fp32_t s = num::canon_in_fp32(sums[j]);
    for (std::size_t k = 0; k < dim; ++k) s = num::mac(s, acts[k], tile_by_column[j * dim + k]);
    sums[j] = s;
  }
  return sums;
}

void check_rows(oracle::OperandRng& rng, std::size_t dim, int rows,
                const std::function<num::bf16_t()>& bf16,
                const std::function<num::fp32_t()>& seed) {
  for (int row = 0; row < rows; ++row) {
    std::vector<num::bf16_t> acts(dim), tile(dim * dim);
    std::vector<num::fp32_t> sums(dim);
    for (auto& a : acts) a = bf16();
    for (auto& w : tile) w = bf16();
    for (auto& s : sums) s = seed();
    if (row % 3 == 0) {
      // Pairs that cancel: lane k + 1 repeats lane k against the negated weight.
      for (std::size_t k = 0; k + 1 < dim; k += 2) {
        acts[k + 1] = acts[k];
        for (std::size_t j = 0; j < dim; ++j) {
          tile[j * dim + k + 1] = static_cast<num::bf16_t>(tile[j * dim + k] ^ 0x8000);
        }
      }
    }
    const auto want = reference_fold(acts, tile, sums, dim);
    detail::fold_row(acts.data(), detail::prepare_tile(tile, dim), sums.data(), dim);
    ASSERT_EQ(sums, want) << "row " << row;
  }
  (void)rng;
}

TEST(ArrayFold, MixedOperandsMatchReference) {
  oracle::OperandRng rng(test::test_seed());
  for (std::size_t dim : {1u, 4u, 16u, 32u}) {
    check_rows(
        rng, dim, 3000, [&] { return rng.bf16(); }, [&] { return rng.fp32(); });
  }
}

TEST(ArrayFold, FlushAndOverflowBoundariesMatchReference) {
  oracle::OperandRng rng(test::test_seed() + 1);
  // Exponents near the product's flush (sum 128) and overflow (sum 382) boundaries.
  for (auto [lo, hi] :
       {std::pair{1u, 70u}, std::pair{55u, 75u}, std::pair{185u, 200u}, std::pair{120u, 135u}}) {
    check_rows(
        rng, 16, 2000, [&] { return rng.bf16_with_exponent(lo, hi); }, [&] { return rng.fp32(); });
  }
}

}  // namespace
}  // namespace tpu
