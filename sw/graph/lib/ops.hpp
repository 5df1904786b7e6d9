// The executor's operators (internal to the graph library): one kernel per ONNX operator, each
// as the ONNX operator of the graph's opset defines it, grouped by kind in ops_*.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/graph/executor.hpp"
#include "tpu/graph/graph.hpp"

namespace tpu::graph::ops {

struct Context {
  int opset = 0;
  Backend* accelerator = nullptr;  // null: products in host fp32
  OpRun* run = nullptr;            // the running node's figures
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

// C = A (m x k) B (k x n), row-major fp32: on the accelerator (bf16 operands, fp32 sums) or in
// host fp32; counts the MACs in the context's figures.
std::vector<float> product(Context& context, const float* a, const float* b, std::size_t m,
                           std::size_t k, std::size_t n);

}  // namespace tpu::graph::ops
