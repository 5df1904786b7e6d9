// Reference ring all-reduce (N-REDUCE of docs/numerics.md): what every chip of a pod holds after
// ALLREDUCE, computed in one place from every chip's values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tpu/numerics/float.hpp"

namespace tpu::num {

// The first flat index of chunk c when n values are cut into `chips` chunks:
// floor(c * n / chips), for c in 0 .. chips (chunk_start(n, chips, chips) = n).
std::uint64_t chunk_start(std::uint64_t n, unsigned chips, unsigned c);

// The chunk that holds flat index `index` (< n).
unsigned chunk_of(std::uint64_t n, unsigned chips, std::uint64_t index);

// N-REDUCE: inputs[i] is chip i's tensor, flattened; all have the same length n and there are at
// least two. Value v of chunk c is the left fold S = G_c[v], S = add_fp32(S, G_(c+1) mod N[v]),
// ..., S = add_fp32(S, G_(c+N-1) mod N[v]). Throws std::invalid_argument for fewer than two
// inputs or inputs of different lengths.
std::vector<fp32_t> ring_allreduce(const std::vector<std::vector<fp32_t>>& inputs);

// The same for part of a tensor of `total` values: inputs[i] holds chip i's values at flat
// indices offset .. offset + length - 1, which are summed as in the whole tensor (their chunks
// are those of `total`). Throws std::invalid_argument also when they reach past `total`.
std::vector<fp32_t> ring_allreduce(const std::vector<std::vector<fp32_t>>& inputs,
                                   std::uint64_t total, std::uint64_t offset);
// The same for values anywhere in the tensor: inputs[i][v] is chip i's value at flat index
// flat[v] (each below `total`).
std::vector<fp32_t> ring_allreduce(const std::vector<std::vector<fp32_t>>& inputs,
                                   std::uint64_t total, const std::vector<std::uint64_t>& flat);

// The parameter-server all-reduce ALLREDUCE runs with its flag PS, the baseline the ring is
// measured against (not N-REDUCE): every value is S = G_0, then S = add(S, G_(N-1)), ...,
// S = add(S, G_1), the order in which chip 0 receives the chips' tensors around the ring.
std::vector<fp32_t> ps_allreduce(const std::vector<std::vector<fp32_t>>& inputs);

}  // namespace tpu::num
