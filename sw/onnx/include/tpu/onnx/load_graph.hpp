// ONNX models as the graph IR (tpu/graph/graph.hpp): any DAG of the operators the executor
// takes (tpu/graph/executor.hpp), any number of inputs and outputs of any rank, weights inline
// or in external data files beside the model, read with ONNX's own protobuf classes (Debian's
// libonnx-dev). Constant subgraphs (the exporters' shape arithmetic) are folded as it loads.
#pragma once

#include <string>

#include "tpu/graph/graph.hpp"

namespace tpu::onnx_front {

// The opsets of the default domain that load_graph takes: 9 to the newest that the pinned onnx
// release (tests/onnx/requirements.txt) defines.
constexpr int kGraphOpsetOldest = 9;
constexpr int kGraphOpsetNewest = 28;

// Reads the model at `path`. Throws std::runtime_error with one line, "<path>: <what>", naming
// the node where one is to blame: a file that is not an ONNX model, an opset outside the range
// above, an operator of another domain or one the executor does not take, a subgraph
// attribute, a tensor the IR cannot hold or whose data is missing or short, nodes out of order.
graph::Graph load_graph(const std::string& path);

}  // namespace tpu::onnx_front
