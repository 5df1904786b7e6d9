#include "tpu/numerics/collective.hpp"

#include <algorithm>
#include <stdexcept>

namespace tpu::num {

std::uint64_t chunk_start(std::uint64_t n, unsigned chips, unsigned c) {
  // c * n fits in 64 bits for any n below 2^55 and chips up to 256: far past any tensor here.
  return static_cast<std::uint64_t>(c) * n / chips;
}

unsigned chunk_of(std::uint64_t n, unsigned chips, std::uint64_t index) {
  // floor(c * n / N) <= index < floor((c + 1) * n / N): start from the estimate and correct.
  unsigned c = n == 0 ? 0 : static_cast<unsigned>(index * chips / n);
  while (c > 0 && chunk_start(n, chips, c) > index) --c;
  while (c + 1 < chips && chunk_start(n, chips, c + 1) <= index) ++c;
  return c;
}

std::vector<fp32_t> ring_allreduce(const std::vector<std::vector<fp32_t>>& inputs) {
  return ring_allreduce(inputs, inputs.empty() ? 0 : inputs[0].size(), 0);
}

std::vector<fp32_t> ring_allreduce(const std::vector<std::vector<fp32_t>>& inputs,
                                   std::uint64_t total, std::uint64_t offset) {
  const std::size_t length = inputs.empty() ? 0 : inputs[0].size();
  if (offset > total || length > total - offset) {
    throw std::invalid_argument("ring_allreduce: the values reach past the tensor's end");
  }
  std::vector<std::uint64_t> flat(length);
  for (std::size_t v = 0; v < length; ++v) flat[v] = offset + v;
  return ring_allreduce(inputs, total, flat);
}

std::vector<fp32_t> ring_allreduce(const std::vector<std::vector<fp32_t>>& inputs,
                                   std::uint64_t total, const std::vector<std::uint64_t>& flat) {
  if (inputs.size() < 2) {
    throw std::invalid_argument("ring_allreduce needs at least two chips");
  }
  for (const auto& input : inputs) {
    if (input.size() != flat.size()) {
      throw std::invalid_argument("ring_allreduce: the chips' tensors differ in length");
    }
  }
  const auto chips = static_cast<unsigned>(inputs.size());
  std::vector<fp32_t> sum(flat.size());
  for (std::size_t v = 0; v < flat.size(); ++v) {
    if (flat[v] >= total) {
      throw std::invalid_argument("ring_allreduce: a value lies past the tensor's end");
    }
    // A value of chunk c starts on chip c as it is (N-IN comes with the first addition) and is
    // carried once around the ring.
    const unsigned c = chunk_of(total, chips, flat[v]);
    fp32_t s = inputs[c][v];
    for (unsigned hop = 1; hop < chips; ++hop) s = add_fp32(s, inputs[(c + hop) % chips][v]);
    sum[v] = s;
  }
  return sum;
}

std::vector<fp32_t> ps_allreduce(const std::vector<std::vector<fp32_t>>& inputs) {
  if (inputs.size() < 2) throw std::invalid_argument("ps_allreduce needs at least two chips");
  std::vector<fp32_t> sum = inputs[0];
  for (std::size_t c = inputs.size() - 1; c >= 1; --c) {
    if (inputs[c].size() != sum.size()) {
      throw std::invalid_argument("ps_allreduce: the chips' tensors differ in length");
    }
    for (std::size_t v = 0; v < sum.size(); ++v) sum[v] = add_fp32(sum[v], inputs[c][v]);
  }
  return sum;
}

}  // namespace tpu::num
