// The weights of a graph's matrix products in an accelerator's host memory (internal to the
// graph library): each laid out for the core once, the first time its product runs, and kept
// there for the session's later runs; the products' other operands go above them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include "ops.hpp"
#include "tpu/backend.hpp"
#include "tpu/compiler.hpp"
#include "tpu/graph/graph.hpp"
#include "tpu/numerics/gemm.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu::graph::ops {

class ResidentWeights {
 public:
  // The address of the B that `node` derives from `weight`, writing `b` there the first time;
  // `written` receives the bytes written now.
  std::uint32_t place(Backend& backend, const Node& node, const WeightOf& weight,
                      const num::MatrixBf16& b, std::uint64_t& written);
  // The same for the int8 B of an int8 product.
  std::uint32_t place(Backend& backend, const Node& node, const WeightOf& weight,
                      const num::MatrixI8& b, std::uint64_t& written);
  // Where the B of `rows` rows that `node` derives from `weight` lies, if it was placed: a
  // product whose B is resident need not make it again.
  std::optional<std::uint32_t> find(const Node& node, const WeightOf& weight,
                                    std::size_t rows) const;
  // The first byte above the weights: where a product's other operands go.
  std::uint64_t top() const { return top_; }

 private:
  template <typename T>
  std::uint32_t place_matrix(Backend& backend, const Node& node, const WeightOf& weight,
                             const num::Matrix<T>& b, InType in, std::uint64_t& written);

  std::map<std::tuple<const Node*, const Tensor*, std::size_t, std::size_t, std::size_t>,
           std::uint32_t>
      placed_;
  std::uint64_t top_ = 0;
};

}  // namespace tpu::graph::ops
