// ONNX models as the runtime's networks (docs/networks.md, "Importing ONNX"): a chain of
// Gemm/MatMul/Conv layers with their biases, batch normalisation and functions, the pools,
// Flatten/Reshape and a final Softmax, read with ONNX's own protobuf classes (Debian's
// libonnx-dev). NCHW tensors become the runtime's NHWC: conv weights are reordered to im2col's
// (ky, kx, c) rows, and a dense layer after a flattened image gets its rows in NHWC order. A
// model quantised in QDQ format (int8 weights and activations) becomes a quantised network.
#pragma once

#include <string>

#include "tpu/nn.hpp"

namespace tpu::nn {

// The opsets of the default ONNX domain that import_onnx takes.
constexpr int kOnnxOpsetOldest = 9;
constexpr int kOnnxOpsetNewest = 17;

// Reads the model at `path`. Throws std::runtime_error with one line, "<path>: <what>", naming
// the node ("node \"conv3\" (Conv): dilations 2x2 not supported") where one is to blame: a file
// that is not an ONNX model, an opset outside the range above, more than one input or output,
// an input other than float32 [N, features] or [N, C, H, W] with fixed sizes, an operator or
// attribute not supported, a graph that is not a chain of layers, weights that are not
// constants of the right shape, a quantisation the int8 path cannot follow.
Network import_onnx(const std::string& path);

}  // namespace tpu::nn
