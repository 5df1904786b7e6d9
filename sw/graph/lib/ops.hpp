// The executor's operators (internal to the graph library): one kernel per ONNX operator, each
// as the ONNX operator of the graph's opset defines it, grouped by kind in ops_*.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/graph/executor.hpp"
#include "tpu/graph/graph.hpp"

namespace tpu::graph::ops {

class ResidentWeights;  // resident_weights.hpp

struct Context {
  int opset = 0;
  Backend* accelerator = nullptr;  // null: products in host fp32
  OpRun* run = nullptr;            // the running node's figures
  const Node* node = nullptr;      // the running node
  // The graph's constants, and the session's weights on the accelerator (with one).
  const std::set<const Tensor*>* constants = nullptr;
  ResidentWeights* weights = nullptr;
};

// A node's inputs: null for an optional input left out.
using Inputs = std::vector<const Tensor*>;
using Kernel = std::function<std::vector<Tensor>(Context&, const Node&, const Inputs&)>;
using Table = std::map<std::string, Kernel>;

void add_elementwise(Table& table);  // ops_elementwise.cpp
void add_shape(Table& table);        // ops_shape.cpp
void add_nn(Table& table);           // ops_nn.cpp
void add_recurrent(Table& table);    // ops_recurrent.cpp
const Table& table();

[[noreturn]] void fail(const Node& node, const std::string& what);
// Input i, which the node must have.
const Tensor& need(const Node& node, const Inputs& inputs, std::size_t i);
const Tensor& need_float(const Node& node, const Inputs& inputs, std::size_t i);
// An axis in [-rank, rank) as an index in [0, rank).
std::size_t axis_index(const Node& node, std::int64_t axis, std::size_t rank);
// An integer tensor's values (shapes, axes, pads).
std::vector<std::int64_t> int_values(const Tensor& t);

// Row-major strides of a shape.
std::vector<std::size_t> strides_of(const Shape& shape);
// NumPy broadcasting of the shapes (ONNX's multidirectional broadcasting).
Shape broadcast_shapes(const Node& node, const std::vector<Shape>& shapes);
// For each input shape, the offset of every element of `out` (broadcast shape) in it.
std::vector<std::size_t> broadcast_offsets(const Shape& in, const Shape& out);

// What B of a product comes from: when `source` is one of the graph's constants (weights, and B
// derived from them alone), the product's B stays on the accelerator for the session's later
// runs; `part` tells apart the products a node derives from one source (groups, directions,
// batches).
struct WeightOf {
  const Tensor* source = nullptr;
  std::size_t part = 0;
};

// What a product does to its sums before they leave it: a bias per column (n values; none where
// null), then an activation.
struct ProductEpilogue {
  const float* bias = nullptr;
  Epilogue act = Epilogue::None;
};

// C = act(A (m x k) B (k x n) + bias), row-major fp32: on the accelerator (bf16 operands, fp32
// sums, the epilogue in the core's accumulators and activation unit) or in host fp32; counts
// the MACs, and on the accelerator what the host wrote and read, in the context's figures.
std::vector<float> product(Context& context, const float* a, const float* b, std::size_t m,
                           std::size_t k, std::size_t n, WeightOf weight = {},
                           ProductEpilogue epilogue = {});

// Gemm's C as a bias of its product's n columns (a scalar, or a row of 1 or n values, added
// with beta = alpha = 1), or empty where it is not one; fuse_epilogues fuses a Gemm only then.
std::vector<float> gemm_bias(const Node& node, const Tensor* c, std::size_t n);

}  // namespace tpu::graph::ops
