// A network file's chain of layers (tpu/nn.hpp, docs/networks.md) as the graph IR, so that
// network files run on the graph's one executor, float and int8 alike, and compile as ONNX
// models do (docs/graph.md).
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/graph/executor.hpp"
#include "tpu/graph/graph.hpp"
#include "tpu/idx.hpp"
#include "tpu/nn.hpp"

namespace tpu::graph {

// The graph of `net` (checked: nn::layer_shapes), its input "input" as the network's files give
// it (batch first: [N, H, W, C], [N, C, H, W] or [N, features]) and its output "output",
// [N, classes], ONNX's operators as of opset 17:
// - images go to NCHW for the convolutions and pools (a Transpose after an NHWC input) and back
//   to NHWC before a flatten, which keeps the file's dense weights' row order;
// - float: conv2d is a Conv (the file's (ky, kx, c) rows as OIHW weights), dense a Gemm, each
//   with its bias and its function after it (Relu, Clip to [0, 6], Sigmoid, Tanh, Gelu,
//   LeakyRelu), fused into the product's epilogue where the core takes it (fuse_epilogues), a
//   product's results bf16 where only products read them (round_results);
//   maxpool and avgpool are MaxPool and AveragePool; a softmax output a Softmax, then, where
//   the file quantises it, QuantizeLinear and DequantizeLinear;
// - int8 (a quantised network): the input quantised by a QuantizeLinear with the first layer's
//   input scale and zero point; each layer with an int8 output a QLinearConv or QGemm (its
//   function the clamp of its requantisation); max-pooling of the int8 values; a last layer
//   without one a ConvInteger or MatMulInteger, its int32 bias added and the sums dequantised
//   per column by input scale times weight scale; one with one, a DequantizeLinear after it.
// Scales are float32, as in ONNX: a file's scale is rounded to float32 and the requantisation
// multipliers follow from those (Q-SCALE), which are the file's own multipliers where its
// scales are float32 values (as tpu quantize and tpu import write them).
Graph network_graph(const nn::Network& net);

// One batch through `session`, a session of network_graph(net): `input` in the network's file
// shape ([n, ...] of nn::input_file_shape), the scores [n, classes]. `runs`, when given,
// receives every node's figures. Throws std::invalid_argument for an input of another shape.
nn::Tensor infer(Session& session, const nn::Network& net, const nn::Tensor& input,
                 std::vector<OpRun>* runs = nullptr);

// The classes a network's graph gives the examples [first, first + count) of a data set (images
// as pixel / 255, nn::images_to_tensor; the argmax of each output row, the first of equals), in
// runs of `batch` in `session`, a session of network_graph(net). `runs`, when given, receives
// every node's figures of every run.
std::vector<std::uint32_t> classify(Session& session, const nn::Network& net,
                                    const idx::Dataset& data, std::uint32_t first,
                                    std::uint32_t count, std::uint32_t batch,
                                    std::vector<OpRun>* runs = nullptr);

// The share of the first `count` examples (all when 0) the network classifies right, on an
// accelerator (on the host when null: fp32, or the int8 reference of a quantised network), in
// runs of `batch`; the predictions go to `predictions` when given.
double accuracy(Backend* accelerator, const nn::Network& net, const idx::Dataset& data,
                std::uint32_t count, std::uint32_t batch,
                std::vector<std::uint32_t>* predictions = nullptr);

}  // namespace tpu::graph
