#include "tpu/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "tpu/numerics/quant.hpp"

namespace tpu::nn {
namespace {

std::string layer_where(const Network& net, std::size_t l) {
  const Layer& layer = net.layers[l];
  return "layer " + std::to_string(l) + " (" +
         (layer.kind == LayerKind::Dense ? "dense" : "conv2d") + "): ";
}

}  // namespace

void Range::add(float x) {
  if (std::isnan(x)) return;
  if (empty) {
    lo = hi = x;
    empty = false;
    return;
  }
  lo = std::min(lo, x);
  hi = std::max(hi, x);
}

ActivationQuant activation_quant(const Range& range) {
  const double lo = std::min(0.0, range.empty ? 0.0 : static_cast<double>(range.lo));
  const double hi = std::max(0.0, range.empty ? 0.0 : static_cast<double>(range.hi));
  ActivationQuant q;
  // A float32 value, as ONNX stores scales: the network's graph (tpu/graph/network_graph.hpp)
  // then takes the file's scales, and so its multipliers, exactly.
  q.scale = hi > lo ? static_cast<float>((hi - lo) / 255.0) : 1.0;
  const double zero_point = std::round(-128.0 - lo / q.scale);
  q.zero_point = static_cast<std::int32_t>(std::clamp(zero_point, -128.0, 127.0));
  return q;
}

void calibrate(const Network& net, const Tensor& images, Calibration& calibration) {
  if (net.int8) throw std::invalid_argument("the network is already quantised (dtype int8)");
  calibration.output.resize(net.layers.size());
  for (float x : images.data) calibration.input.add(x);
  forward_host_fp32(net, images, [&](std::size_t l, const std::vector<float>& values) {
    for (float x : values) calibration.output[l].add(x);
  });
  calibration.images += static_cast<std::uint32_t>(images.batch());
}

Calibration calibrate(const Network& net, const idx::Dataset& data, std::uint32_t count,
                      std::uint32_t batch) {
  if (count == 0 || count > data.count || batch == 0) {
    throw std::invalid_argument("calibration on " + std::to_string(count) + " of " +
                                std::to_string(data.count) + " images");
  }
  Calibration calibration;
  for (std::uint32_t first = 0; first < count; first += batch) {
    const std::uint32_t n = std::min(batch, count - first);
    calibrate(net, images_to_tensor(data.images, first, n, data.rows, data.cols), calibration);
  }
  return calibration;
}

void quantize_weights(const std::vector<float>& weights, std::uint32_t k, std::uint32_t n,
                      std::vector<std::int8_t>& q, std::vector<float>& scales) {
  if (weights.size() != std::size_t{k} * n) {
    throw std::invalid_argument("quantize_weights: the weights are not k x n");
  }
  scales.assign(n, 0.0f);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    scales[i % n] = std::max(scales[i % n], std::fabs(weights[i]));
  }
  for (float& s : scales) s = s > 0.0f ? s / 127.0f : 1.0f;
  q.resize(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double v = std::round(static_cast<double>(weights[i]) / scales[i % n]);
    // max|w| / 127 rounded to float can make the largest weight land a hair beyond 127.
    q[i] = static_cast<std::int8_t>(std::clamp(v, -127.0, 127.0));
  }
}

void check_quantizable(const Network& net) {
  if (net.int8) throw std::invalid_argument("the network is already quantised (dtype int8)");
  std::size_t last_gemm = net.layers.size();
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const Layer& layer = net.layers[l];
    if (layer.kind == LayerKind::AvgPool) {
      throw std::invalid_argument(layer_where(net, l) + "average pooling has no int8 form here");
    }
    if (!gemm_layer(layer)) continue;
    last_gemm = l;
    if (layer.activation != isa::Func::None && layer.activation != isa::Func::Relu &&
        layer.activation != isa::Func::Relu6) {
      throw std::invalid_argument(
          layer_where(net, l) + "int8 layers take none, relu or relu6, not " +
          isa::kFuncTable[static_cast<unsigned>(layer.activation)].mnemonic);
    }
  }
  if (net.layers.empty() || last_gemm + 1 != net.layers.size() ||
      net.layers.back().kind != LayerKind::Dense) {
    throw std::invalid_argument("an int8 network must end in a dense layer");
  }
}

Network quantize_network(const Network& net, const Calibration& calibration) {
  check_quantizable(net);
  if (calibration.output.size() != net.layers.size() || calibration.images == 0) {
    throw std::invalid_argument("the calibration is not of this network");
  }
  std::size_t last_gemm = 0;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    if (gemm_layer(net.layers[l])) last_gemm = l;
  }

  Network out = net;
  out.int8 = true;
  ActivationQuant current = activation_quant(calibration.input);
  for (std::size_t l = 0; l < out.layers.size(); ++l) {
    Layer& layer = out.layers[l];
    if (!gemm_layer(layer)) continue;  // max-pooling and flattening keep the quantisation
    QuantLayer& q = layer.quant;
    const std::uint32_t n = layer.units;
    quantize_weights(layer.weights, layer.weight_rows, n, q.weights, q.weight_scales);
    q.input_scale = current.scale;
    q.input_zero_point = current.zero_point;
    quantize_bias(layer, layer_where(net, l));
    q.int8_output = l != last_gemm;
    if (q.int8_output) {
      const ActivationQuant output = activation_quant(calibration.output[l]);
      q.output_scale = output.scale;
      q.output_zero_point = output.zero_point;
      current = output;
    }
    complete_quant_layer(layer, layer_where(net, l));
  }
  return out;
}

void quantize_bias(Layer& layer, const std::string& where) {
  QuantLayer& q = layer.quant;
  q.bias.resize(layer.units);
  for (std::size_t j = 0; j < layer.units; ++j) {
    const double b = std::round(static_cast<double>(layer.bias[j]) /
                                (q.input_scale * static_cast<double>(q.weight_scales[j])));
    if (!(std::fabs(b) <= std::numeric_limits<std::int32_t>::max())) {
      throw std::invalid_argument(where + "bias " + std::to_string(j) +
                                  " does not fit int32 at its scale");
    }
    q.bias[j] = static_cast<std::int32_t>(b);
  }
}

void complete_quant_layer(Layer& layer, const std::string& where) {
  QuantLayer& q = layer.quant;
  const std::uint32_t n = layer.units;
  q.multiplier.clear();
  q.shift.clear();
  for (std::size_t j = 0; q.int8_output && j < n; ++j) {
    num::QuantizedMultiplier m;
    try {
      m = num::quantize_multiplier(q.real_multiplier(j));
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(where + "column " + std::to_string(j) +
                                  "'s real multiplier is too large for Q-SCALE");
    }
    q.multiplier.push_back(m.multiplier);
    q.shift.push_back(m.shift);
  }
  // The float weights and bias as the quantised network gives them back.
  layer.weights.resize(q.weights.size());
  for (std::size_t i = 0; i < layer.weights.size(); ++i) {
    layer.weights[i] = q.weight_scales[i % n] * static_cast<float>(q.weights[i]);
  }
  layer.bias.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    layer.bias[j] = static_cast<float>(q.bias[j] * q.input_scale * q.weight_scales[j]);
  }
}

}  // namespace tpu::nn
