#include "tpu/onnx/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "onnx_read.hpp"
#include "tpu/onnx/load_graph.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/quantize.hpp"

namespace tpu::nn {
namespace {

// A constant of the graph (an initializer or a Constant node): float32 values, or integers
// (int64 shapes, bool flags, int8 and int32 quantised weights and biases, their zero points).
using Constant = graph::Tensor;

// A quantised weight or bias (DequantizeLinear of a constant): its scales, one per tensor or
// one per index of `axis`.
struct ConstantQuant {
  std::vector<float> scales;
  std::int64_t axis = 0;
};

// The value flowing down the chain: an image (channels, height, width) or a flat vector.
struct Shape {
  bool image = false;
  std::uint32_t channels = 0, height = 0, width = 0;
  std::uint32_t features = 0;

  std::uint32_t size() const { return image ? channels * height * width : features; }
};

class Importer {
 public:
  explicit Importer(std::string path) : path_(std::move(path)) {}

  Network run() {
    read_model();
    read_constants();
    read_input();
    const onnx::GraphProto& graph = model_.graph();
    for (int i = 0; i < graph.node_size(); ++i) import_node(graph.node(i), i);
    finish();
    return std::move(net_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what);
  }

  void read_model() {
    try {
      model_ = onnx_front::read_model(path_);
    } catch (const std::runtime_error& error) {
      fail(error.what());
    }
    try {
      opset_ = onnx_front::default_opset(model_, kOnnxOpsetOldest, kOnnxOpsetNewest);
    } catch (const std::runtime_error& error) {
      fail(std::string(error.what()) + "; tpu infer --net MODEL.onnx runs opsets " +
           std::to_string(onnx_front::kGraphOpsetOldest) + " to " +
           std::to_string(onnx_front::kGraphOpsetNewest) + " as a graph");
    }
  }

  Constant read_tensor(const onnx::TensorProto& tensor, const std::string& what) const {
    try {
      return onnx_front::read_tensor(tensor, std::filesystem::path(path_).parent_path(), what);
    } catch (const std::runtime_error& error) {
      fail(error.what());
    }
  }

  void read_constants() {
    for (const onnx::TensorProto& tensor : model_.graph().initializer()) {
      constants_[tensor.name()] = read_tensor(tensor, "initializer \"" + tensor.name() + "\"");
    }
  }

  void read_input() {
    const onnx::GraphProto& graph = model_.graph();
    std::vector<const onnx::ValueInfoProto*> inputs;
    for (const onnx::ValueInfoProto& input : graph.input()) {
      if (!constants_.count(input.name())) inputs.push_back(&input);
    }
    if (inputs.size() != 1 || graph.output_size() != 1) {
      fail("the graph has " + std::to_string(inputs.size()) + " input(s) and " +
           std::to_string(graph.output_size()) + " output(s): one of each is supported");
    }
    const onnx::ValueInfoProto& input = *inputs[0];
    const std::string where = "input \"" + input.name() + "\": ";
    if (!input.type().has_tensor_type() ||
        input.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
      fail(where + "not a float32 tensor");
    }
    const onnx::TensorShapeProto& shape = input.type().tensor_type().shape();
    std::vector<std::uint32_t> dims;
    for (int d = 1; d < shape.dim_size(); ++d) {
      const onnx::TensorShapeProto::Dimension& dim = shape.dim(d);
      if (!dim.has_dim_value() || dim.dim_value() <= 0 || dim.dim_value() > (1 << 24)) {
        fail(where + "dimension " + std::to_string(d) +
             " is not a fixed size (only the batch, the first, may vary)");
      }
      dims.push_back(static_cast<std::uint32_t>(dim.dim_value()));
    }
    if (dims.size() == 1) {
      value_.features = dims[0];
      net_.layout = InputLayout::Flat;
      net_.height = net_.width = 1;
      net_.channels = dims[0];
    } else if (dims.size() == 3) {
      value_ = {true, dims[0], dims[1], dims[2], 0};
      net_.layout = InputLayout::Nchw;
      net_.channels = dims[0];
      net_.height = dims[1];
      net_.width = dims[2];
    } else {
      fail(where + "of rank " + std::to_string(shape.dim_size()) +
           ": [N, features] and [N, C, H, W] are supported");
    }
    current_ = input.name();
  }

  // --- one node -------------------------------------------------------------------------------

  [[noreturn]] void refuse(const onnx::NodeProto& node, const std::string& what) const {
    fail("node \"" + node_name_ + "\" (" + node.op_type() + "): " + what);
  }

  void import_node(const onnx::NodeProto& node, int index) {
    node_name_ = node.name().empty() ? "#" + std::to_string(index) : node.name();
    const std::string& op = node.op_type();
    if (op.rfind("QLinear", 0) == 0 || op == "QGemm" || op == "ConvInteger" ||
        op == "MatMulInteger") {
      refuse(node, "operator not supported (quantised models are taken in QDQ format)");
    }
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      refuse(node, "domain " + node.domain() + " not supported");
    }
    if (op == "Constant") {
      check_attributes(node, {"value"});
      if (node.output_size() != 1 || node.attribute_size() != 1 || !node.attribute(0).has_t()) {
        refuse(node, "only a tensor value is supported");
      }
      constants_[node.output(0)] =
          read_tensor(node.attribute(0).t(), "node \"" + node_name_ + "\"");
      return;
    }
    if (op == "DequantizeLinear" && node.input_size() > 0 && constants_.count(node.input(0))) {
      dequantize_constant(node);
      return;
    }
    if (node.input_size() == 0 || node.input(0) != current_) {
      refuse(node, "the graph is not a chain of layers: this node does not read \"" + current_ +
                       "\", the output of the node before");
    }
    for (int i = 1; i < node.input_size(); ++i) {
      if (!node.input(i).empty() && !constants_.count(node.input(i))) {
        refuse(node, "input \"" + node.input(i) + "\" is not a constant");
      }
    }
    if (node.output_size() < 1) refuse(node, "no output");
    for (int i = 1; i < node.output_size(); ++i) {
      if (!node.output(i).empty()) extra_outputs_.insert(node.output(i));
    }

    const bool passes = op == "Identity" || op == "Dropout" || op == "Cast";
    if (!passes && op != "QuantizeLinear" && op != "DequantizeLinear") before_softmax(node);
    if (op != "DequantizeLinear" && quantized_) {
      refuse(node, "QuantizeLinear must be followed by DequantizeLinear (QDQ format)");
    }
    if (op == "Gemm") {
      gemm(node);
    } else if (op == "MatMul") {
      matmul(node);
    } else if (op == "Add") {
      add(node);
    } else if (op == "Conv") {
      conv(node);
    } else if (op == "BatchNormalization") {
      batch_norm(node);
    } else if (op == "Relu" || op == "Sigmoid" || op == "Tanh") {
      check_attributes(node, {});
      activate(node, op == "Relu"      ? isa::Func::Relu
                     : op == "Sigmoid" ? isa::Func::Sigmoid
                                       : isa::Func::Tanh);
    } else if (op == "LeakyRelu") {
      check_attributes(node, {"alpha"});
      activate(node, isa::Func::Leaky, float_attribute(node, "alpha", 0.01f));
    } else if (op == "Clip") {
      clip(node);
    } else if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool") {
      pool(node);
    } else if (op == "Flatten" || op == "Reshape") {
      flatten(node);
    } else if (op == "Softmax") {
      softmax(node);
    } else if (passes) {
      pass_through(node);
    } else if (op == "QuantizeLinear") {
      quantize(node);
    } else if (op == "DequantizeLinear") {
      dequantize(node);
    } else {
      refuse(node, "operator not supported");
    }
    current_ = node.output(0);
  }

  // Nothing but a pass-through node may follow the softmax: it runs on the host at the end.
  void before_softmax(const onnx::NodeProto& node) const {
    if (net_.softmax_output) refuse(node, "only a final Softmax is supported");
  }

  // --- attributes ---

  void check_attributes(const onnx::NodeProto& node, std::set<std::string> known) const {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (!known.count(a.name())) refuse(node, "attribute " + a.name() + " not supported");
    }
  }

  const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const char* name) const {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }

  std::int64_t int_attribute(const onnx::NodeProto& node, const char* name,
                             std::int64_t fallback) const {
    const onnx::AttributeProto* a = attribute(node, name);
    return a ? a->i() : fallback;
  }

  float float_attribute(const onnx::NodeProto& node, const char* name, float fallback) const {
    const onnx::AttributeProto* a = attribute(node, name);
    return a ? a->f() : fallback;
  }

  std::vector<std::int64_t> ints_attribute(const onnx::NodeProto& node, const char* name,
                                           std::vector<std::int64_t> fallback) const {
    const onnx::AttributeProto* a = attribute(node, name);
    if (!a) return fallback;
    return {a->ints().begin(), a->ints().end()};
  }

  const Constant& constant(const onnx::NodeProto& node, int input) const {
    if (node.input_size() <= input || node.input(input).empty()) {
      refuse(node, "input " + std::to_string(input) + " missing");
    }
    const Constant& c = constants_.at(node.input(input));
    if (!c.is_float()) refuse(node, "input \"" + node.input(input) + "\" is not float32");
    return c;
  }

  // --- layers ---

  void need_flat(const onnx::NodeProto& node) const {
    if (value_.image) refuse(node, "needs a flat input (Flatten the image first)");
  }
  void need_image(const onnx::NodeProto& node) const {
    if (!value_.image) refuse(node, "needs an [N, C, H, W] input");
  }

  // The layer the bias, batch norm or function of `node` belongs to: the last one, a dense or
  // conv2d layer with nothing after it yet.
  Layer& open_layer(const onnx::NodeProto& node, const char* what) {
    if (!open_ || net_.layers.empty()) {
      refuse(node, std::string(what) + " must follow Conv, Gemm or MatMul");
    }
    if (quants_.count(net_.layers.size())) {
      refuse(node, std::string(what) +
                       " after the layer's output is quantised: not supported "
                       "(an int8 layer requantises once, after its function)");
    }
    return net_.layers.back();
  }

  // --- quantised models (QDQ) ---

  // The dequantised constant, kept as float32, with its scales for the int8 layer it feeds.
  void dequantize_constant(const onnx::NodeProto& node) {
    check_attributes(node, {"axis"});
    const Constant& x = constants_.at(node.input(0));
    if (x.dtype != graph::DType::Int8 && x.dtype != graph::DType::Int32) {
      refuse(node, "only int8 weights and int32 biases are supported");
    }
    const Constant& scale = constant(node, 1);
    std::vector<std::int64_t> zero(scale.size(), 0);
    if (node.input_size() > 2 && !node.input(2).empty()) {
      const Constant& z = constants_.at(node.input(2));
      if (z.size() != scale.size() || z.is_float()) refuse(node, "zero points of another shape");
      zero = z.ints;
    }
    if (std::any_of(zero.begin(), zero.end(), [](std::int64_t z) { return z != 0; })) {
      refuse(node, "weights with a zero point other than 0 (asymmetric) not supported");
    }
    std::int64_t axis = int_attribute(node, "axis", 1);
    if (axis < 0) axis += static_cast<std::int64_t>(x.shape.size());
    const bool per_tensor = scale.size() == 1;
    if (!per_tensor && (axis < 0 || axis >= static_cast<std::int64_t>(x.shape.size()) ||
                        x.shape[axis] != static_cast<std::int64_t>(scale.size()))) {
      refuse(node, "scales that do not match the axis");
    }
    std::size_t inner = 1;
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; !per_tensor && d < x.shape.size();
         ++d) {
      inner *= static_cast<std::size_t>(x.shape[d]);
    }
    Constant values;
    values.shape = x.shape;
    values.floats.resize(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float s = scale.floats[per_tensor ? 0 : (i / inner) % scale.size()];
      values.floats[i] = static_cast<float>(x.ints[i]) * s;
    }
    constants_[node.output(0)] = std::move(values);
    constant_quants_[node.output(0)] = {scale.floats, per_tensor ? -1 : axis};
  }

  ActivationQuant value_quant(const onnx::NodeProto& node) const {
    check_attributes(node, {"axis", "saturate"});
    if (node.input_size() < 3 || node.input(2).empty()) {
      refuse(node,
             "no zero point: uint8 activations are not supported (quantise with int8 "
             "activations)");
    }
    const Constant& scale = constant(node, 1);
    const Constant& zero = constants_.at(node.input(2));
    if (scale.size() != 1 || zero.size() != 1 || !(scale.floats[0] > 0)) {
      refuse(node, "only one positive scale and zero point per tensor are supported");
    }
    if (zero.dtype != graph::DType::Int8) {
      refuse(node, "only int8 activations are supported (quantise with int8 activations)");
    }
    return {scale.floats[0], static_cast<std::int32_t>(zero.ints[0])};
  }

  void quantize(const onnx::NodeProto& node) { quantized_ = value_quant(node); }

  // The end of a QuantizeLinear, DequantizeLinear pair: the quantisation of the value after the
  // layers so far.
  void dequantize(const onnx::NodeProto& node) {
    const ActivationQuant q = value_quant(node);
    if (!quantized_ || !(*quantized_ == q)) {
      refuse(node, "must dequantise with the parameters of the QuantizeLinear before it");
    }
    quantized_.reset();
    if (net_.softmax_output) {
      // The softmax's own quantisation, which the host applies after it (nn::finish_output).
      if (net_.softmax_quant) refuse(node, "a second quantisation of the softmax: not supported");
      net_.softmax_quant = q;
      return;
    }
    const std::size_t boundary = net_.layers.size();
    if (quants_.count(boundary) && !(quants_.at(boundary) == q)) {
      refuse(node, "a second quantisation of one value with other parameters: not supported");
    }
    quants_[boundary] = q;
  }

  // The output-channel scales of a layer's quantised weights, where they are quantised:
  // `axis` is their output-channel axis.
  void note_weight_scales(const onnx::NodeProto& node, const std::string& name, std::int64_t axis,
                          std::uint32_t units) {
    const auto it = constant_quants_.find(name);
    if (it == constant_quants_.end()) return;
    const ConstantQuant& q = it->second;
    if (q.axis != -1 && q.axis != axis) {
      refuse(node, "weight scales per input rather than per output channel not supported");
    }
    weight_scales_[net_.layers.size()] =
        q.axis == -1 ? std::vector<float>(units, q.scales[0]) : q.scales;
  }

  // A dense layer: weights K x N (row k, column n at k * N + n) and a bias.
  void dense(const onnx::NodeProto& node, std::vector<float> weights, std::uint32_t units,
             std::vector<float> bias) {
    need_flat(node);
    if (flattened_) {
      // ONNX flattens NCHW images channel by channel, the runtime pixel by pixel (NHWC).
      const auto [c, h, w] = *flattened_;
      std::vector<float> reordered(weights.size());
      for (std::uint32_t ch = 0; ch < c; ++ch) {
        for (std::uint32_t p = 0; p < h * w; ++p) {
          std::copy_n(&weights[(std::size_t{ch} * h * w + p) * units], units,
                      &reordered[(std::size_t{p} * c + ch) * units]);
        }
      }
      weights = std::move(reordered);
      flattened_.reset();
    }
    Layer layer;
    layer.kind = LayerKind::Dense;
    layer.units = units;
    layer.weight_rows = value_.features;
    layer.weights = std::move(weights);
    layer.bias = std::move(bias);
    net_.layers.push_back(std::move(layer));
    open_ = true;
    value_.features = units;
  }

  void gemm(const onnx::NodeProto& node) {
    check_attributes(node, {"alpha", "beta", "transA", "transB"});
    need_flat(node);
    if (int_attribute(node, "transA", 0) != 0) {
      refuse(node, "transA 1 not supported (the batch comes first)");
    }
    const bool trans_b = int_attribute(node, "transB", 0) != 0;
    const float alpha = float_attribute(node, "alpha", 1.0f);
    const float beta = float_attribute(node, "beta", 1.0f);
    const Constant& b = constant(node, 1);
    const std::int64_t k = value_.features;
    if (b.shape.size() != 2 || b.shape[trans_b ? 1 : 0] != k) {
      refuse(node, "B of shape " + graph::shape_text(b.shape) + " does not take " + std::to_string(k) +
                       " inputs" + (trans_b ? " (transB 1)" : ""));
    }
    const auto n = static_cast<std::uint32_t>(b.shape[trans_b ? 0 : 1]);
    note_weight_scales(node, node.input(1), trans_b ? 0 : 1, n);
    if (weight_scales_.count(net_.layers.size()) && (alpha != 1.0f || beta != 1.0f)) {
      refuse(node, "alpha and beta with quantised weights not supported");
    }
    std::vector<float> weights(static_cast<std::size_t>(k) * n);
    for (std::int64_t r = 0; r < k; ++r) {
      for (std::uint32_t j = 0; j < n; ++j) {
        const float v = trans_b ? b.floats[j * k + r] : b.floats[r * n + j];
        weights[r * n + j] = alpha * v;
      }
    }
    std::vector<float> bias(n, 0.0f);
    if (node.input_size() > 2 && !node.input(2).empty()) {
      const std::vector<float> c = bias_vector(node, constant(node, 2), n, false);
      for (std::uint32_t j = 0; j < n; ++j) bias[j] = beta * c[j];
    }
    dense(node, std::move(weights), n, std::move(bias));
  }

  void matmul(const onnx::NodeProto& node) {
    check_attributes(node, {});
    need_flat(node);
    const Constant& b = constant(node, 1);
    if (b.shape.size() != 2 || b.shape[0] != value_.features) {
      refuse(node, "B of shape " + graph::shape_text(b.shape) + " does not take " +
                       std::to_string(value_.features) + " inputs");
    }
    const auto n = static_cast<std::uint32_t>(b.shape[1]);
    note_weight_scales(node, node.input(1), 1, n);
    dense(node, b.floats, n, std::vector<float>(n, 0.0f));
  }

  // A bias of n values, as ONNX broadcasts it onto [N, n] (dense) or [N, n, H, W] (conv).
  std::vector<float> bias_vector(const onnx::NodeProto& node, const Constant& c, std::uint32_t n,
                                 bool per_channel) const {
    std::vector<std::int64_t> dims = c.shape;
    // Leading 1s broadcast; for a conv the channel axis is followed by H and W of 1.
    while (!dims.empty() && dims.front() == 1 && dims.size() > (per_channel ? 3u : 1u)) {
      dims.erase(dims.begin());
    }
    bool fits = c.size() == 1;
    if (!fits && per_channel)
      fits = dims.size() == 3 && dims[0] == n && dims[1] == 1 && dims[2] == 1;
    if (!fits && !per_channel) fits = dims.size() == 1 && dims[0] == n;
    if (!fits) {
      refuse(node, "constant of shape " + graph::shape_text(c.shape) + " is not a bias of " +
                       std::to_string(n) + (per_channel ? " channels" : " values"));
    }
    return c.size() == 1 ? std::vector<float>(n, c.floats[0]) : c.floats;
  }

  void add(const onnx::NodeProto& node) {
    check_attributes(node, {});
    Layer& layer = open_layer(node, "Add (a bias)");
    if (layer.activation != isa::Func::None) refuse(node, "a bias after the function");
    const std::vector<float> bias =
        bias_vector(node, constant(node, 1), layer.units, layer.kind == LayerKind::Conv2d);
    for (std::uint32_t j = 0; j < layer.units; ++j) layer.bias[j] += bias[j];
  }

  // Padding by auto_pad or pads: {top, left, bottom, right}.
  std::array<std::uint32_t, 4> padding(const onnx::NodeProto& node, const Window& win) const {
    const onnx::AttributeProto* auto_pad = attribute(node, "auto_pad");
    const std::string mode = auto_pad ? auto_pad->s() : "NOTSET";
    if (mode == "NOTSET") {
      const std::vector<std::int64_t> pads = ints_attribute(node, "pads", {0, 0, 0, 0});
      if (pads.size() != 4 ||
          std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p < 0 || p > 1024; })) {
        refuse(node, "pads must be 4 values in [0, 1024]");
      }
      return {static_cast<std::uint32_t>(pads[0]), static_cast<std::uint32_t>(pads[1]),
              static_cast<std::uint32_t>(pads[2]), static_cast<std::uint32_t>(pads[3])};
    }
    if (mode == "VALID") return {0, 0, 0, 0};
    if (mode != "SAME_UPPER" && mode != "SAME_LOWER") refuse(node, "auto_pad " + mode + " unknown");
    // The output is ceil(in / stride); the extra padding goes at the end (UPPER) or start.
    auto split = [&](std::uint32_t in, std::uint32_t k, std::uint32_t s) {
      const std::int64_t out = (in + s - 1) / s;
      const auto total = static_cast<std::uint32_t>(
          std::max<std::int64_t>(0, (out - 1) * s + k - static_cast<std::int64_t>(in)));
      const std::uint32_t small = total / 2, large = total - small;
      return mode == "SAME_UPPER" ? std::pair{small, large} : std::pair{large, small};
    };
    const auto [top, bottom] = split(value_.height, win.height, win.stride_y);
    const auto [left, right] = split(value_.width, win.width, win.stride_x);
    return {top, left, bottom, right};
  }

  // kernel_shape, strides and padding of a Conv or a pool.
  Window window(const onnx::NodeProto& node, std::int64_t kernel_h, std::int64_t kernel_w) const {
    const std::vector<std::int64_t> kernel =
        ints_attribute(node, "kernel_shape", {kernel_h, kernel_w});
    if (kernel.size() != 2 || kernel[0] != kernel_h || kernel[1] != kernel_w || kernel_h < 1 ||
        kernel_w < 1 || kernel_h > 1024 || kernel_w > 1024) {
      refuse(node, "kernel_shape must be 2 positive sizes matching the weights");
    }
    const std::vector<std::int64_t> strides = ints_attribute(node, "strides", {1, 1});
    if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1 || strides[0] > 1024 ||
        strides[1] > 1024) {
      refuse(node, "strides must be 2 values in [1, 1024]");
    }
    const std::vector<std::int64_t> dilations = ints_attribute(node, "dilations", {1, 1});
    if (dilations.size() != 2 || dilations[0] != 1 || dilations[1] != 1) {
      refuse(node, "dilations " + graph::shape_text(dilations) + " not supported");
    }
    Window win;
    win.height = static_cast<std::uint32_t>(kernel_h);
    win.width = static_cast<std::uint32_t>(kernel_w);
    win.stride_y = static_cast<std::uint32_t>(strides[0]);
    win.stride_x = static_cast<std::uint32_t>(strides[1]);
    const std::array<std::uint32_t, 4> pads = padding(node, win);
    win.pad_top = pads[0];
    win.pad_left = pads[1];
    win.pad_bottom = pads[2];
    win.pad_right = pads[3];
    if (win.out_height(value_.height) == 0 || win.out_width(value_.width) == 0) {
      refuse(node, "the window is larger than the padded " + std::to_string(value_.height) + "x" +
                       std::to_string(value_.width) + " image");
    }
    return win;
  }

  void conv(const onnx::NodeProto& node) {
    check_attributes(node, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    need_image(node);
    if (int_attribute(node, "group", 1) != 1) {
      refuse(node, "group " + std::to_string(int_attribute(node, "group", 1)) + " not supported");
    }
    const Constant& w = constant(node, 1);
    if (w.shape.size() != 4 || w.shape[1] != value_.channels || w.shape[0] < 1) {
      refuse(node, "weights of shape " + graph::shape_text(w.shape) + " do not take " +
                       std::to_string(value_.channels) + " channels (M x C x kH x kW)");
    }
    Layer layer;
    layer.kind = LayerKind::Conv2d;
    layer.window = window(node, w.shape[2], w.shape[3]);
    layer.units = static_cast<std::uint32_t>(w.shape[0]);
    note_weight_scales(node, node.input(1), 0, layer.units);
    const std::uint32_t c = value_.channels, kh = layer.window.height, kw = layer.window.width;
    layer.weight_rows = kh * kw * c;
    // OIHW to im2col's rows: (ky, kx, c), one column a filter.
    layer.weights.resize(std::size_t{layer.weight_rows} * layer.units);
    for (std::uint32_t m = 0; m < layer.units; ++m) {
      for (std::uint32_t ch = 0; ch < c; ++ch) {
        for (std::uint32_t ky = 0; ky < kh; ++ky) {
          for (std::uint32_t kx = 0; kx < kw; ++kx) {
            const std::size_t row = (std::size_t{ky} * kw + kx) * c + ch;
            layer.weights[row * layer.units + m] =
                w.floats[((std::size_t{m} * c + ch) * kh + ky) * kw + kx];
          }
        }
      }
    }
    layer.bias.assign(layer.units, 0.0f);
    if (node.input_size() > 2 && !node.input(2).empty()) {
      layer.bias = bias_vector(node, constant(node, 2), layer.units, false);
    }
    value_ = {true, layer.units, layer.window.out_height(value_.height),
              layer.window.out_width(value_.width), 0};
    net_.layers.push_back(std::move(layer));
    open_ = true;
  }

  void batch_norm(const onnx::NodeProto& node) {
    check_attributes(node, {"epsilon", "momentum", "spatial", "training_mode"});
    if (int_attribute(node, "training_mode", 0) != 0 || int_attribute(node, "spatial", 1) != 1) {
      refuse(node, "only inference with spatial statistics is supported");
    }
    Layer& layer = open_layer(node, "BatchNormalization");
    if (weight_scales_.count(net_.layers.size() - 1)) {
      refuse(node, "batch normalisation of quantised weights not supported");
    }
    if (layer.activation != isa::Func::None) refuse(node, "batch normalisation after the function");
    const double epsilon = float_attribute(node, "epsilon", 1e-5f);
    std::vector<std::vector<float>> params;  // scale, shift, mean, variance
    for (int i = 1; i <= 4; ++i) {
      params.push_back(bias_vector(node, constant(node, i), layer.units, false));
    }
    const std::vector<float>& scale = params[0];
    const std::vector<float>& shift = params[1];
    const std::vector<float>& mean = params[2];
    const std::vector<float>& variance = params[3];
    // y = (x - mean) / sqrt(var + eps) * scale + shift, folded into the weights and bias in
    // double, rounded once.
    for (std::uint32_t j = 0; j < layer.units; ++j) {
      const double factor = scale[j] / std::sqrt(static_cast<double>(variance[j]) + epsilon);
      for (std::uint32_t r = 0; r < layer.weight_rows; ++r) {
        float& w = layer.weights[std::size_t{r} * layer.units + j];
        w = static_cast<float>(w * factor);
      }
      layer.bias[j] = static_cast<float>((layer.bias[j] - mean[j]) * factor + shift[j]);
    }
  }

  void activate(const onnx::NodeProto& node, isa::Func func, float alpha = 0.0f) {
    Layer& layer = open_layer(node, "a function");
    if (layer.activation != isa::Func::None) refuse(node, "a second function on one layer");
    layer.activation = func;
    if (func == isa::Func::Leaky) {
      std::uint32_t bits;
      std::memcpy(&bits, &alpha, sizeof bits);
      layer.alpha = num::fp32_to_bf16(bits);
    }
  }

  void clip(const onnx::NodeProto& node) {
    std::optional<float> lo, hi;
    if (opset_ < 11) {
      check_attributes(node, {"min", "max"});
      if (attribute(node, "min")) lo = float_attribute(node, "min", 0.0f);
      if (attribute(node, "max")) hi = float_attribute(node, "max", 0.0f);
    } else {
      check_attributes(node, {});
      auto bound = [&](int i) -> std::optional<float> {
        if (node.input_size() <= i || node.input(i).empty()) return std::nullopt;
        const Constant& c = constant(node, i);
        if (c.size() != 1) refuse(node, "a bound that is not a scalar");
        return c.floats[0];
      };
      lo = bound(1);
      hi = bound(2);
    }
    if (lo == 0.0f && hi == 6.0f) {
      activate(node, isa::Func::Relu6);
    } else if (lo == 0.0f && !hi) {
      activate(node, isa::Func::Relu);
    } else {
      refuse(node, "only Clip(0, 6) (relu6) and Clip(0) (relu) are supported");
    }
  }

  void pool(const onnx::NodeProto& node) {
    const std::string& op = node.op_type();
    need_image(node);
    Layer layer;
    layer.kind = op == "MaxPool" ? LayerKind::MaxPool : LayerKind::AvgPool;
    if (op == "GlobalAveragePool") {
      check_attributes(node, {});
      layer.window = {value_.height, value_.width, 1, 1, 0, 0, 0, 0};
    } else {
      check_attributes(node, {"auto_pad", "ceil_mode", "count_include_pad", "dilations",
                              "kernel_shape", "pads", "storage_order", "strides"});
      const std::vector<std::int64_t> kernel = ints_attribute(node, "kernel_shape", {});
      if (kernel.size() != 2) refuse(node, "kernel_shape must be 2 sizes");
      layer.window = window(node, kernel[0], kernel[1]);
      const Window& win = layer.window;
      if (win.pad_top >= win.height || win.pad_bottom >= win.height || win.pad_left >= win.width ||
          win.pad_right >= win.width) {
        refuse(node, "padding as large as the window not supported");
      }
      if (int_attribute(node, "ceil_mode", 0) != 0 &&
          ((value_.height + win.pad_top + win.pad_bottom - win.height) % win.stride_y != 0 ||
           (value_.width + win.pad_left + win.pad_right - win.width) % win.stride_x != 0)) {
        refuse(node, "ceil_mode 1 not supported where it changes the output size");
      }
      if (int_attribute(node, "storage_order", 0) != 0)
        refuse(node, "storage_order 1 not supported");
      layer.count_padding = int_attribute(node, "count_include_pad", 0) != 0;
    }
    value_.height = layer.window.out_height(value_.height);
    value_.width = layer.window.out_width(value_.width);
    net_.layers.push_back(std::move(layer));
    open_ = false;
  }

  void flatten(const onnx::NodeProto& node) {
    if (node.op_type() == "Flatten") {
      check_attributes(node, {"axis"});
      if (int_attribute(node, "axis", 1) != 1) refuse(node, "only axis 1 is supported");
    } else {
      check_attributes(node, {"allowzero"});
      if (node.input_size() < 2 || !constants_.count(node.input(1)) ||
          constants_.at(node.input(1)).is_float()) {
        refuse(node, "the shape must be an int64 constant");
      }
      const std::vector<std::int64_t>& to = constants_.at(node.input(1)).ints;
      const bool batch_kept = to.size() == 2 && (to[0] == 0 || to[0] == -1);
      const bool flat = batch_kept && (to[1] == value_.size() || (to[1] == -1 && to[0] == 0));
      if (!flat || int_attribute(node, "allowzero", 0) != 0) {
        refuse(node, "only a reshape to [batch, " + std::to_string(value_.size()) +
                         "] (a flat vector per example) is supported");
      }
    }
    if (value_.image) {
      if (value_.channels > 1 && value_.height * value_.width > 1) {
        flattened_ = {value_.channels, value_.height, value_.width};
      }
      Layer layer;
      layer.kind = LayerKind::Flatten;
      net_.layers.push_back(std::move(layer));
      value_ = {false, 0, 0, 0, value_.size()};
    }
    open_ = false;
  }

  void softmax(const onnx::NodeProto& node) {
    check_attributes(node, {"axis"});
    need_flat(node);
    const std::int64_t axis = int_attribute(node, "axis", opset_ < 13 ? 1 : -1);
    if (axis != 1 && axis != -1) refuse(node, "only a softmax over the features is supported");
    net_.softmax_output = true;
    open_ = false;
  }

  void pass_through(const onnx::NodeProto& node) {
    if (node.op_type() == "Cast") {
      check_attributes(node, {"to", "saturate"});
      if (int_attribute(node, "to", 0) != onnx::TensorProto::FLOAT) {
        refuse(node, "only a cast to float32 (of float32: nothing to do) is supported");
      }
    } else if (node.op_type() == "Dropout") {
      check_attributes(node, {"ratio", "seed", "is_test"});
      if (node.input_size() > 2 && !node.input(2).empty()) {
        const Constant& mode = constants_.at(node.input(2));
        if (mode.size() != 1 || (mode.is_float() ? mode.floats[0] != 0 : mode.ints[0] != 0)) {
          refuse(node, "training_mode must be false");
        }
      }
    } else {
      check_attributes(node, {});
    }
  }

  // --- the end ---

  void finish() {
    const onnx::GraphProto& graph = model_.graph();
    if (graph.output(0).name() != current_) {
      fail("the graph's output \"" + graph.output(0).name() + "\" is not the end of the chain \"" +
           current_ + "\"");
    }
    for (const onnx::NodeProto& node : graph.node()) {
      for (const std::string& input : node.input()) {
        if (extra_outputs_.count(input)) {
          fail("\"" + input +
               "\", a second output of a node (indices, mask), is read: not "
               "supported");
        }
      }
    }
    if (value_.image) fail("the graph's output is an image: it must be a flat vector per example");
    if (flattened_) {
      fail("a flattened " + std::to_string((*flattened_)[0]) +
           "-channel image must go into Gemm "
           "or MatMul (the runtime flattens channels last)");
    }
    net_.name = std::filesystem::path(path_).stem().string();
    try {
      net_.classes = layer_shapes(net_).back()[0];
      if (!quants_.empty()) quantize_network();
    } catch (const std::invalid_argument& error) {
      fail(error.what());
    }
  }

  // A QDQ model as a quantised network (docs/networks.md): the model's int8 weights, their
  // scales, its int32 biases and its activations' scales and zero points; Q-REQ's multipliers
  // from Q-SCALE. The last layer is requantised too where the model quantises its output, and
  // the host dequantises it; otherwise its int32 sums become the float outputs on the host.
  void quantize_network() {
    if (!quants_.count(0)) fail("a quantised model whose input is not quantised (QuantizeLinear)");
    check_quantizable(net_);
    std::size_t last_gemm = 0;
    for (std::size_t l = 0; l < net_.layers.size(); ++l) {
      if (gemm_layer(net_.layers[l])) last_gemm = l;
    }
    ActivationQuant current = quants_.at(0);
    for (std::size_t l = 0; l < net_.layers.size(); ++l) {
      Layer& layer = net_.layers[l];
      const std::string where = "layer " + std::to_string(l) + ": ";
      const auto after = quants_.find(l + 1);
      if (!gemm_layer(layer)) {
        if (after != quants_.end() && !(after->second == current)) {
          fail(where + "pooling or flattening that changes the quantisation: not supported");
        }
        continue;
      }
      if (!weight_scales_.count(l)) fail(where + "float weights in a quantised model");
      const std::vector<float>& scales = weight_scales_.at(l);
      QuantLayer& q = layer.quant;
      const std::uint32_t n = layer.units;
      q.input_scale = current.scale;
      q.input_zero_point = current.zero_point;
      q.weight_scales = scales;
      q.weights.resize(layer.weights.size());
      for (std::size_t i = 0; i < layer.weights.size(); ++i) {
        const double w = std::round(layer.weights[i] / static_cast<double>(scales[i % n]));
        if (!(std::fabs(w) <= 127)) fail(where + "a weight of -128 or beyond: not supported");
        q.weights[i] = static_cast<std::int8_t>(w);
      }
      quantize_bias(layer, where);
      q.int8_output = l != last_gemm || after != quants_.end();
      if (q.int8_output) {
        if (after == quants_.end()) fail(where + "a hidden layer's output that is not quantised");
        q.output_scale = after->second.scale;
        q.output_zero_point = after->second.zero_point;
        current = after->second;
      }
      complete_quant_layer(layer, where);
    }
    net_.int8 = true;
  }

  std::string path_;
  onnx::ModelProto model_;
  std::int64_t opset_ = 0;
  std::map<std::string, Constant> constants_;
  std::set<std::string> extra_outputs_;
  std::string current_;  // the value the next node must read
  std::string node_name_;
  Shape value_;
  bool open_ = false;  // the last layer is dense or conv2d and can take a bias, BN, a function
  std::optional<std::array<std::uint32_t, 3>> flattened_;  // CHW of an image just flattened
  // Quantised models: the scales of dequantised constants; the quantisation of the value after
  // the first N layers (N = 0: the input); each dense or conv2d layer's output-channel weight
  // scales by its index; a QuantizeLinear waiting for its DequantizeLinear.
  std::map<std::string, ConstantQuant> constant_quants_;
  std::map<std::size_t, ActivationQuant> quants_;
  std::map<std::size_t, std::vector<float>> weight_scales_;
  std::optional<ActivationQuant> quantized_;
  Network net_;
};

}  // namespace

Network import_onnx(const std::string& path) {
  return Importer(path).run();
}

}  // namespace tpu::nn
