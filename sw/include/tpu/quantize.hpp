// Post-training quantisation of a float network to int8, TensorFlow Lite's scheme
// (docs/networks.md, "int8 networks"; the Q-rules of docs/numerics.md):
//
// - weights int8, symmetric per output channel: zero point 0, scale max|w(:, j)| / 127, each
//   weight round-half-away(w / scale) (so in [-127, 127]);
// - activations int8, asymmetric: the range [lo, hi] each layer's output took over the
//   calibration images (host fp32 inference of the float network), widened to include 0, gives
//   scale (hi - lo) / 255 (rounded to float32, as ONNX stores scales) and zero point
//   round-half-away(-128 - lo / scale); the network's
//   input likewise; max-pooling and flattening keep their input's scale and zero point;
// - bias int32, round-half-away(bias / (input scale x weight scale)), zero point 0;
// - each hidden column's real multiplier input scale x weight scale / output scale as Q-REQ's
//   M and s by Q-SCALE (num::quantize_multiplier); the function (none, relu, relu6) becomes the
//   clamp of Q-REQ;
// - the last layer keeps its int32 sums, which the host dequantises (the network's graph,
//   tpu/graph/network_graph.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tpu/idx.hpp"
#include "tpu/nn.hpp"

namespace tpu::nn {

// The values one tensor took.
struct Range {
  float lo = 0.0f, hi = 0.0f;
  bool empty = true;  // nothing seen yet
  void add(float x);
};

// What the calibration images showed.
struct Calibration {
  std::uint32_t images = 0;
  Range input;                // the network's input
  std::vector<Range> output;  // per layer: a dense or conv2d layer's output, after its function
};

// The parameters for a range: widened to include 0, scale (hi - lo) / 255 rounded to float32 (1
// when the range is {0}), zero point round-half-away(-128 - lo / scale) clamped to [-128, 127].
ActivationQuant activation_quant(const Range& range);

// Runs the float network in host fp32 over the images ([n, h, w, c]), widening the ranges of
// `calibration` (which starts empty, or from earlier batches). Throws std::invalid_argument for
// a quantised network or images of the wrong shape.
void calibrate(const Network& net, const Tensor& images, Calibration& calibration);
// The same over the first `count` images of a data set (pixel / 255), in batches.
Calibration calibrate(const Network& net, const idx::Dataset& data, std::uint32_t count,
                      std::uint32_t batch = 256);

// Per output channel symmetric int8 weights of a k x n matrix: scales[j] = max|w(:, j)| / 127
// in float (1 for a column of zeros), q = round-half-away(w / scale[j]).
void quantize_weights(const std::vector<float>& weights, std::uint32_t k, std::uint32_t n,
                      std::vector<std::int8_t>& q, std::vector<float>& scales);

// Throws std::invalid_argument with a one-line reason if quantize_network cannot quantise the
// network: already int8, a function other than none, relu and relu6, or not ending in a dense
// layer.
void check_quantizable(const Network& net);

// The quantised network ("dtype": "int8"). Throws std::invalid_argument with a one-line reason
// for a network it cannot quantise (check_quantizable), a calibration of another network, or a
// bias that does not fit int32 at its scale.
Network quantize_network(const Network& net, const Calibration& calibration);

// The int32 bias of a dense or conv2d layer whose input scale and weight scales are set:
// round-half-away(bias_j / (input_scale * weight_scales[j])). Throws std::invalid_argument
// ("<where>bias j does not fit int32 at its scale").
void quantize_bias(Layer& layer, const std::string& where);

// Completes a dense or conv2d layer whose int8 weights, weight scales, int32 bias, input and
// (hidden layers) output quantisation are set: Q-REQ's multiplier and shift of each column by
// Q-SCALE, and the float weights and bias as the int8 form gives them back. Throws
// std::invalid_argument ("<where>column j's real multiplier is too large for Q-SCALE").
void complete_quant_layer(Layer& layer, const std::string& where);

}  // namespace tpu::nn
