// The ring all-reduce (N-REDUCE, docs/numerics.md) on the host FPU, written from the contract's
// words and sharing no code with the reference model; and the chips' tensors the pod tests and
// the pod regression sum: random values, and values that make sums go wrong in every way the
// contract defines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "oracle/host_float.hpp"

namespace tpu::oracle {

using Tensors = std::vector<std::vector<fp32_t>>;

// Chunk c is [floor(c n / N), floor((c + 1) n / N)), folded from chip c around the ring.
std::vector<fp32_t> ring_allreduce(const Tensors& g);

// The parameter-server baseline (ALLREDUCE's PS): G_0 + G_(N-1) + ... + G_1, folded left.
std::vector<fp32_t> ps_allreduce(const Tensors& g);

// Mixed random patterns (OperandRng::fp32), one tensor of n values per chip.
Tensors random_tensors(unsigned chips, std::size_t n, std::uint64_t seed);

// By position: mixed specials, values that cancel across chips, infinities of both signs that
// meet, subnormals, the largest finite value (overflow), signed zeros, and normals.
Tensors adversarial_tensors(unsigned chips, std::size_t n, std::uint64_t seed);

}  // namespace tpu::oracle
