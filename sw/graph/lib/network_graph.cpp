#include "tpu/graph/network_graph.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "tpu/graph/executor.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu::graph {
namespace {

// Where the running tensor's dimensions are: an image batch first, channels last or first, or
// flat rows of features.
enum class Layout : std::uint8_t { Nhwc, Nchw, Flat };

// The graph, written node by node: each node's output named after it.
class Builder {
 public:
  explicit Builder(Graph& graph) : graph_(graph) {}

  std::string constant(Tensor value, const std::string& stem) {
    const std::string name = stem + "_" + std::to_string(++count_);
    graph_.constants[name] = std::move(value);
    return name;
  }
  std::string floats(std::vector<float> values, const std::string& stem) {
    const auto n = static_cast<std::int64_t>(values.size());
    return constant(Tensor::of_floats({n}, std::move(values)), stem);
  }
  std::string scalar(float value, const std::string& stem) {
    return constant(Tensor::of_floats({}, {value}), stem);
  }
  std::string int8_zero_point(std::int32_t value) {
    return constant(Tensor::of_ints({}, {value}, DType::Int8), "zero_point");
  }

  std::string node(const std::string& op, std::vector<std::string> inputs,
                   std::map<std::string, Attribute> attributes = {},
                   Epilogue epilogue = Epilogue::None) {
    Node n;
    n.op = op;
    n.name = op + "_" + std::to_string(++count_);
    n.inputs = std::move(inputs);
    n.outputs = {n.name};
    n.attributes = std::move(attributes);
    n.epilogue = epilogue;
    graph_.nodes.push_back(std::move(n));
    return graph_.nodes.back().outputs[0];
  }

 private:
  Graph& graph_;
  std::size_t count_ = 0;
};

// The running tensor and where its dimensions are.
struct Running {
  std::string name;
  Layout layout = Layout::Nhwc;
};

// A flatten in the file's order, NHWC: the dense weights' rows follow it.
void to_flat(Builder& b, Running& x) {
  if (x.layout == Layout::Flat) return;
  if (x.layout == Layout::Nchw) {
    x.name = b.node("Transpose", {x.name}, {{"perm", Attribute::of_ints({0, 2, 3, 1})}});
  }
  x.name = b.node("Flatten", {x.name}, {{"axis", Attribute::of_int(1)}});
  x.layout = Layout::Flat;
}

// A window's attributes: kernel_shape, strides and pads (top, left, bottom, right).
std::map<std::string, Attribute> window_attributes(const nn::Window& w) {
  return {{"kernel_shape", Attribute::of_ints({w.height, w.width})},
          {"strides", Attribute::of_ints({w.stride_y, w.stride_x})},
          {"pads", Attribute::of_ints({w.pad_top, w.pad_left, w.pad_bottom, w.pad_right})}};
}

// A product layer's weights as ONNX has them: dense K x units as in the file; conv2d's rows in
// (ky, kx, c) order by filters as [filters, c, kh, kw].
Shape weight_shape(const nn::Layer& layer) {
  const auto units = static_cast<std::int64_t>(layer.units);
  const auto rows = static_cast<std::int64_t>(layer.weight_rows);
  if (layer.kind == nn::LayerKind::Dense) return {rows, units};
  const auto kh = static_cast<std::int64_t>(layer.window.height);
  const auto kw = static_cast<std::int64_t>(layer.window.width);
  return {units, rows / (kh * kw), kh, kw};
}

template <typename T>
std::vector<T> weight_values(const nn::Layer& layer, const std::vector<T>& rows) {
  if (layer.kind == nn::LayerKind::Dense) return rows;
  const std::size_t filters = layer.units, taps = layer.window.taps();
  const std::size_t channels = layer.weight_rows / taps;
  std::vector<T> w(rows.size());
  for (std::size_t tap = 0; tap < taps; ++tap) {
    for (std::size_t c = 0; c < channels; ++c) {
      for (std::size_t f = 0; f < filters; ++f) {
        w[(f * channels + c) * taps + tap] = rows[(tap * channels + c) * filters + f];
      }
    }
  }
  return w;
}

// A float layer's function after its product (the core's where fuse_epilogues fuses it).
void add_function(Builder& b, Running& x, const nn::Layer& layer) {
  switch (layer.activation) {
    case isa::Func::None:
      return;
    case isa::Func::Relu:
      x.name = b.node("Relu", {x.name});
      return;
    case isa::Func::Relu6:
      x.name = b.node("Clip", {x.name, b.scalar(0.0f, "min"), b.scalar(6.0f, "max")});
      return;
    case isa::Func::Leaky: {
      const float alpha = num::fp32_to_float(num::bf16_to_fp32(layer.alpha));
      x.name = b.node("LeakyRelu", {x.name}, {{"alpha", Attribute::of_float(alpha)}});
      return;
    }
    case isa::Func::Sigmoid:
      x.name = b.node("Sigmoid", {x.name});
      return;
    case isa::Func::Tanh:
      x.name = b.node("Tanh", {x.name});
      return;
    case isa::Func::Gelu:
      x.name = b.node("Gelu", {x.name});
      return;
    case isa::Func::Exp:
      x.name = b.node("Exp", {x.name});
      return;
    case isa::Func::Recip:
      x.name = b.node("Reciprocal", {x.name});
      return;
    case isa::Func::Rsqrt:
      x.name = b.node("Reciprocal", {b.node("Sqrt", {x.name})});
      return;
  }
  throw std::invalid_argument("a function the graph does not know");
}

// A convolution's or pool's attributes: its window's, and channels_last where the images are NHWC
// (the project's own networks: a product leaves its results so, and the dense layers read them
// so).
std::map<std::string, Attribute> image_attributes(const nn::Window& w, const Running& x) {
  std::map<std::string, Attribute> attributes = window_attributes(w);
  if (x.layout == Layout::Nhwc) attributes["channels_last"] = Attribute::of_int(1);
  return attributes;
}

void add_float_layer(Builder& b, Running& x, const nn::Layer& layer) {
  const std::string w = b.constant(
      Tensor::of_floats(weight_shape(layer), weight_values(layer, layer.weights)), "weights");
  const std::string bias = b.floats(layer.bias, "bias");
  if (layer.kind == nn::LayerKind::Conv2d) {
    // onnxruntime's NhwcConv on NHWC images: the same attributes, no channels_last.
    const bool nhwc = x.layout == Layout::Nhwc;
    x.name = b.node(nhwc ? "NhwcConv" : "Conv", {x.name, w, bias}, window_attributes(layer.window));
  } else {
    x.name = b.node("Gemm", {x.name, w, bias});
  }
  add_function(b, x, layer);
}

Epilogue quantised_function(const nn::Layer& layer) {
  return layer.activation == isa::Func::Relu    ? Epilogue::Relu
         : layer.activation == isa::Func::Relu6 ? Epilogue::Relu6
                                                : Epilogue::None;
}

void add_int8_layer(Builder& b, Running& x, const nn::Layer& layer) {
  const nn::QuantLayer& q = layer.quant;
  const bool conv = layer.kind == nn::LayerKind::Conv2d;
  const auto units = static_cast<std::int64_t>(layer.units);
  const std::vector<std::int8_t> values = weight_values(layer, q.weights);
  const std::string w = b.constant(
      Tensor::of_ints(weight_shape(layer), {values.begin(), values.end()}, DType::Int8), "weights");
  const std::string x_zero = b.int8_zero_point(q.input_zero_point);
  std::map<std::string, Attribute> attributes;
  if (conv) attributes = image_attributes(layer.window, x);
  const std::vector<std::int64_t> bias(q.bias.begin(), q.bias.end());
  if (!q.int8_output) {
    // int32 sums, the bias added (wrapping), dequantised per column: along the channels, the
    // last axis of NHWC images and of a dense layer's rows.
    const bool nchw = conv && x.layout == Layout::Nchw;
    x.name = b.node(conv ? "ConvInteger" : "MatMulInteger", {x.name, w, x_zero}, attributes);
    const Shape bias_shape = nchw ? Shape{1, units, 1, 1} : Shape{units};
    x.name = b.node("Add",
                    {x.name, b.constant(Tensor::of_ints(bias_shape, bias, DType::Int32), "bias")});
    std::vector<float> scales(layer.units);
    for (std::size_t j = 0; j < scales.size(); ++j) {
      scales[j] = static_cast<float>(q.input_scale * static_cast<double>(q.weight_scales[j]));
    }
    x.name = b.node("DequantizeLinear", {x.name, b.floats(scales, "scale")},
                    {{"axis", Attribute::of_int(nchw || !conv ? 1 : 3)}});
    return;
  }
  const std::vector<std::string> operands{
      x.name,
      b.scalar(static_cast<float>(q.input_scale), "scale"),
      x_zero,
      w,
      b.floats(q.weight_scales, "weight_scale"),
      b.constant(Tensor::of_ints({units}, std::vector<std::int64_t>(layer.units, 0), DType::Int8),
                 "weight_zero_point")};
  const std::string y_scale = b.scalar(static_cast<float>(q.output_scale), "scale");
  const std::string y_zero = b.int8_zero_point(q.output_zero_point);
  const std::string bias_name = b.constant(Tensor::of_ints({units}, bias, DType::Int32), "bias");
  std::vector<std::string> inputs = operands;
  if (conv) {
    inputs.insert(inputs.end(), {y_scale, y_zero, bias_name});
    x.name = b.node("QLinearConv", inputs, attributes, quantised_function(layer));
  } else {
    inputs.insert(inputs.end(), {bias_name, y_scale, y_zero});
    x.name = b.node("QGemm", inputs, {}, quantised_function(layer));
  }
}

}  // namespace

Graph network_graph(const nn::Network& net) {
  const std::vector<std::vector<std::uint32_t>> shapes = nn::layer_shapes(net);
  Graph graph;
  graph.name = net.name;
  graph.opset = 17;
  ValueInfo input{"input", DType::Float32, {-1}, true};
  for (const std::uint32_t d : nn::input_file_shape(net)) input.shape.push_back(d);
  graph.inputs.push_back(input);
  Builder b(graph);
  Running x{input.name, net.layout == nn::InputLayout::Flat   ? Layout::Flat
                        : net.layout == nn::InputLayout::Nchw ? Layout::Nchw
                                                              : Layout::Nhwc};
  const auto first = std::find_if(net.layers.begin(), net.layers.end(), nn::gemm_layer);
  if (net.int8) {
    if (first == net.layers.end()) throw std::invalid_argument("an int8 network needs a layer");
    x.name = b.node("QuantizeLinear",
                    {x.name, b.scalar(static_cast<float>(first->quant.input_scale), "scale"),
                     b.int8_zero_point(first->quant.input_zero_point)});
  }
  // An int8 network's values are floats again after its last product layer.
  const nn::Layer* last_product = nullptr;
  for (const nn::Layer& layer : net.layers) {
    if (nn::gemm_layer(layer)) last_product = &layer;
  }
  for (const nn::Layer& layer : net.layers) {
    switch (layer.kind) {
      case nn::LayerKind::Flatten:
        to_flat(b, x);
        break;
      case nn::LayerKind::MaxPool:
      case nn::LayerKind::AvgPool: {
        const bool max = layer.kind == nn::LayerKind::MaxPool;
        if (!max && net.int8) throw std::invalid_argument("an int8 network has no average pooling");
        std::map<std::string, Attribute> attributes = image_attributes(layer.window, x);
        if (!max) attributes["count_include_pad"] = Attribute::of_int(layer.count_padding ? 1 : 0);
        x.name = b.node(max ? "MaxPool" : "AveragePool", {x.name}, std::move(attributes));
        break;
      }
      case nn::LayerKind::Dense:
      case nn::LayerKind::Conv2d:
        if (layer.kind == nn::LayerKind::Dense) to_flat(b, x);
        if (!net.int8) {
          add_float_layer(b, x, layer);
          break;
        }
        add_int8_layer(b, x, layer);
        if (layer.quant.int8_output && &layer == last_product) {
          x.name = b.node("DequantizeLinear",
                          {x.name, b.scalar(static_cast<float>(layer.quant.output_scale), "scale"),
                           b.int8_zero_point(layer.quant.output_zero_point)});
        }
        break;
    }
  }
  to_flat(b, x);
  if (net.softmax_output) {
    x.name = b.node("Softmax", {x.name}, {{"axis", Attribute::of_int(1)}});
    if (net.softmax_quant) {
      const std::string scale = b.scalar(static_cast<float>(net.softmax_quant->scale), "scale");
      const std::string zero = b.int8_zero_point(net.softmax_quant->zero_point);
      x.name = b.node("DequantizeLinear",
                      {b.node("QuantizeLinear", {x.name, scale, zero}), scale, zero});
    }
  }
  if (graph.nodes.empty()) x.name = b.node("Identity", {x.name});
  graph.nodes.back().outputs[0] = "output";
  graph.outputs.push_back({"output", DType::Float32, {-1, shapes.back()[0]}, true});
  fuse_epilogues(graph);
  round_results(graph);
  return graph;
}

nn::Tensor infer(Session& session, const nn::Network& net, const nn::Tensor& input,
                 std::vector<OpRun>* runs) {
  const std::vector<std::uint32_t> example = nn::input_file_shape(net);
  if (input.shape.size() != example.size() + 1 ||
      !std::equal(example.begin(), example.end(), input.shape.begin() + 1)) {
    throw std::invalid_argument("an input of another shape than the network's");
  }
  const Shape shape(input.shape.begin(), input.shape.end());
  const std::vector<Tensor> out = session.run({Tensor::of_floats(shape, input.data)}, runs);
  nn::Tensor scores({input.shape[0], static_cast<std::uint32_t>(out.at(0).shape.at(1))});
  scores.data = out[0].floats;
  return scores;
}

std::vector<std::uint32_t> classify(Session& session, const nn::Network& net,
                                    const idx::Dataset& data, std::uint32_t first,
                                    std::uint32_t count, std::uint32_t batch,
                                    std::vector<OpRun>* runs) {
  if (batch == 0) throw std::invalid_argument("classifying needs a batch size");
  std::vector<std::uint32_t> classes;
  for (std::uint32_t done = 0; done < count; done += batch) {
    const std::uint32_t n = std::min(batch, count - done);
    // [n, h, w, 1]: the same values in the network's file shape, whatever its layout.
    nn::Tensor images = nn::images_to_tensor(data.images, first + done, n, data.rows, data.cols);
    images.shape = {n};
    for (const std::uint32_t d : nn::input_file_shape(net)) images.shape.push_back(d);
    if (images.per_example() != std::size_t{data.rows} * data.cols) {
      throw std::invalid_argument("the network does not take the data set's images");
    }
    const std::vector<std::uint32_t> best = nn::argmax_rows(infer(session, net, images, runs));
    classes.insert(classes.end(), best.begin(), best.end());
  }
  return classes;
}

double accuracy(Backend* accelerator, const nn::Network& net, const idx::Dataset& data,
                std::uint32_t count, std::uint32_t batch, std::vector<std::uint32_t>* predictions) {
  count = count ? std::min(count, data.count) : data.count;
  const Graph graph = network_graph(net);
  Session session(graph, accelerator);
  const std::vector<std::uint32_t> classes = classify(session, net, data, 0, count, batch);
  std::uint32_t correct = 0;
  for (std::uint32_t i = 0; i < count; ++i) correct += classes[i] == data.labels[i];
  if (predictions) *predictions = classes;
  return count ? static_cast<double>(correct) / count : 0.0;
}

}  // namespace tpu::graph
