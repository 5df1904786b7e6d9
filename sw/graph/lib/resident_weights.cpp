#include "resident_weights.hpp"

#include <stdexcept>
#include <string>

#include "tpu/compiler.hpp"

namespace tpu::graph::ops {

template <typename T>
std::uint32_t ResidentWeights::place_matrix(Backend& backend, const Node& node,
                                            const WeightOf& weight, const num::Matrix<T>& b,
                                            InType in, std::uint64_t& written) {
  written = 0;
  // B's rows tell apart the layouts one weight may take: a convolution's from its images has
  // each tap's channels padded to whole tiles (conv_weights), its im2col product's not.
  const auto key = std::make_tuple(&node, weight.source, weight.part, weight.first_row, b.rows);
  if (const auto it = placed_.find(key); it != placed_.end()) return it->second;
  GemmSpec spec;
  spec.k = static_cast<std::uint32_t>(b.rows);
  spec.n = static_cast<std::uint32_t>(b.cols);
  spec.in = in;
  const std::uint64_t bytes = weights_bytes(backend.config(), spec);
  if (top_ + bytes > (std::uint64_t{1} << 32)) {
    throw std::runtime_error(node.label() + ": the weights do not fit in 32-bit host memory");
  }
  const auto addr = static_cast<std::uint32_t>(top_);
  write_weights(backend.config(), backend.memory(), addr, b);
  top_ = (top_ + bytes + kOperandAlign - 1) / kOperandAlign * kOperandAlign;
  placed_.emplace(key, addr);
  written = bytes;
  return addr;
}

std::optional<std::uint32_t> ResidentWeights::find(const Node& node, const WeightOf& weight,
                                                   std::size_t rows) const {
  const auto it =
      placed_.find(std::make_tuple(&node, weight.source, weight.part, weight.first_row, rows));
  if (it == placed_.end()) return std::nullopt;
  return it->second;
}

std::uint32_t ResidentWeights::place(Backend& backend, const Node& node, const WeightOf& weight,
                                     const num::MatrixBf16& b, std::uint64_t& written) {
  return place_matrix(backend, node, weight, b, InType::Bf16, written);
}

std::uint32_t ResidentWeights::place(Backend& backend, const Node& node, const WeightOf& weight,
                                     const num::MatrixI8& b, std::uint64_t& written) {
  return place_matrix(backend, node, weight, b, InType::Int8, written);
}

}  // namespace tpu::graph::ops
