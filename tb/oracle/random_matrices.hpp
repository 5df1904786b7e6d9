// Random test matrices shared by the RTL tests and the regression.
#pragma once

#include "oracle/operand_sets.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu::oracle {

// bf16 values with biased exponents in [min_exp, max_exp] (where sums round and
// cancel), and special values (zeros, subnormals, inf, NaN, extremes) mixed in
// at `special_percent`.
num::MatrixBf16 random_bf16_matrix(OperandRng& rng, std::size_t rows, std::size_t cols,
                                   unsigned special_percent, unsigned min_exp = 115,
                                   unsigned max_exp = 135);

// fp32 partial-sum seeds: normal values of magnitude near 1, and values from
// the full mixed distribution (specials included) at `special_percent`.
num::MatrixFp32 random_seed_matrix(OperandRng& rng, std::size_t rows, std::size_t cols,
                                   unsigned special_percent = 20);

}  // namespace tpu::oracle
