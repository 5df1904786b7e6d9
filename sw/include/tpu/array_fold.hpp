// The systolic array's arithmetic for the functional model, fast: one row of
// activations folded against one weight tile, column by column, in N-ORDER
// (S = mac(S, a_k, W[k][j]) for k = 0 .. D-1).
//
// It uses the host's binary32 multiply and add, which round to nearest even
// like N-ADD; a bf16 x bf16 product is exact in binary32 (N-MUL). What the
// contract adds is done explicitly: operands go through N-IN first (a
// subnormal becomes a signed zero), every product and sum below 2^-126 is
// flushed to a zero of its sign, and a NaN result becomes the canonical NaN
// (a NaN, once there, stays NaN to the end of the fold). That is the same
// arithmetic as the tests' host-float oracle (tb/oracle/host_float.hpp), which the
// exhaustive and random tests hold against the reference model; and the
// functional model's results are compared with the RTL's on every test.
#pragma once

#include <cstddef>
#include <vector>

#include "tpu/numerics/float.hpp"

namespace tpu::detail {

// A weight tile prepared for fold_row: D x D floats, weight (k, j) at
// [k * D + j], after N-IN.
std::vector<float> prepare_tile(const std::vector<num::bf16_t>& tile_by_column, std::size_t dim);

// `acts`: D bf16 lanes (lanes k >= k_valid already -0); `sums`: D fp32 bit
// patterns, the seeds (+0 for none) in, the results out.
void fold_row(const num::bf16_t* acts, const std::vector<float>& tile, num::fp32_t* sums,
              std::size_t dim);

}  // namespace tpu::detail
