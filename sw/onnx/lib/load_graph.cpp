#include "tpu/onnx/load_graph.hpp"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <stdexcept>

#include "onnx_read.hpp"
#include "tpu/graph/executor.hpp"

namespace tpu::onnx_front {
namespace {

class Loader {
 public:
  explicit Loader(std::string path) : path_(std::move(path)) {
    dir_ = std::filesystem::path(path_).parent_path();
  }

  graph::Graph run() {
    read_model();
    const onnx::GraphProto& proto = model_.graph();
    graph_.name = proto.name();
    for (const onnx::TensorProto& tensor : proto.initializer()) {
      graph_.constants[tensor.name()] = guarded(
          [&] { return read_tensor(tensor, dir_, "initializer \"" + tensor.name() + "\""); });
    }
    if (proto.sparse_initializer_size() > 0) fail("sparse initializers not supported");
    for (const onnx::ValueInfoProto& input : proto.input()) {
      if (!graph_.constants.count(input.name()))
        graph_.inputs.push_back(value_info(input, "input"));
    }
    for (const onnx::ValueInfoProto& output : proto.output()) {
      graph_.outputs.push_back(value_info(output, "output"));
    }
    for (int i = 0; i < proto.node_size(); ++i) read_node(proto.node(i), i);
    if (graph_.outputs.empty()) fail("the graph has no outputs");
    const std::string order = graph::check_order(graph_);
    if (!order.empty()) fail(order);
    const std::string unsupported = graph::check_supported(graph_);
    if (!unsupported.empty()) fail(unsupported);
    guarded([&] { return graph::fuse_quantized_products(graph_); });
    guarded([&] { return graph::fold_constants(graph_); });
    guarded([&] { return graph::fuse_gelu(graph_); });
    guarded([&] { return graph::fuse_epilogues(graph_); });
    guarded([&] { return graph::fuse_patch_embeddings(graph_); });
    guarded([&] { return graph::round_results(graph_); });
    return std::move(graph_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what);
  }

  // Runs `step`, prefixing the path to what it throws.
  template <typename Step>
  auto guarded(Step step) -> decltype(step()) {
    try {
      return step();
    } catch (const std::runtime_error& error) {
      fail(error.what());
    }
  }

  void read_model() {
    guarded([&] {
      model_ = onnx_front::read_model(path_);
      graph_.opset = default_opset(model_, kGraphOpsetOldest, kGraphOpsetNewest);
      return 0;
    });
  }

  graph::ValueInfo value_info(const onnx::ValueInfoProto& proto, const std::string& kind) const {
    const std::string where = kind + " \"" + proto.name() + "\": ";
    if (!proto.type().has_tensor_type()) fail(where + "not a tensor");
    const onnx::TypeProto::Tensor& type = proto.type().tensor_type();
    const std::optional<graph::DType> dtype = dtype_of(type.elem_type());
    if (!dtype) fail(where + "element type " + std::to_string(type.elem_type()) + " not supported");
    graph::ValueInfo info{proto.name(), *dtype, {}, type.has_shape()};
    for (const onnx::TensorShapeProto::Dimension& dim : type.shape().dim()) {
      info.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    }
    return info;
  }

  graph::Attribute attribute(const onnx::AttributeProto& proto, const std::string& where) {
    graph::Attribute a;
    using Kind = graph::Attribute::Kind;
    switch (proto.type()) {
      case onnx::AttributeProto::INT:
        a.kind = Kind::Int;
        a.i = proto.i();
        break;
      case onnx::AttributeProto::FLOAT:
        a.kind = Kind::Float;
        a.f = proto.f();
        break;
      case onnx::AttributeProto::STRING:
        a.kind = Kind::String;
        a.s = proto.s();
        break;
      case onnx::AttributeProto::INTS:
        a.kind = Kind::Ints;
        a.ints.assign(proto.ints().begin(), proto.ints().end());
        break;
      case onnx::AttributeProto::FLOATS:
        a.kind = Kind::Floats;
        a.floats.assign(proto.floats().begin(), proto.floats().end());
        break;
      case onnx::AttributeProto::STRINGS:
        a.kind = Kind::Strings;
        a.strings.assign(proto.strings().begin(), proto.strings().end());
        break;
      case onnx::AttributeProto::TENSOR:
        a.kind = Kind::Tensor;
        a.tensor = guarded([&] { return read_tensor(proto.t(), dir_, where); });
        break;
      default:
        fail(where + ": attributes of type " + std::to_string(proto.type()) +
             " (subgraphs, sparse tensors, types) not supported");
    }
    return a;
  }

  void read_node(const onnx::NodeProto& proto, int index) {
    graph::Node node;
    node.op = proto.op_type();
    node.name = proto.name().empty() ? proto.op_type() + " " + std::to_string(index) : proto.name();
    if (!proto.domain().empty() && proto.domain() != "ai.onnx") {
      fail(node.label() + ": domain \"" + proto.domain() + "\" not supported (the default only)");
    }
    node.inputs.assign(proto.input().begin(), proto.input().end());
    node.outputs.assign(proto.output().begin(), proto.output().end());
    for (const onnx::AttributeProto& a : proto.attribute()) {
      if (!a.ref_attr_name().empty()) fail(node.label() + ": attribute references not supported");
      node.attributes[a.name()] = attribute(a, node.label() + ": attribute " + a.name());
    }
    if (node.op == "Constant") {
      constant_node(node);
      return;
    }
    graph_.nodes.push_back(std::move(node));
  }

  // A Constant node becomes a constant of the graph, whichever of its forms it takes.
  void constant_node(const graph::Node& node) {
    if (node.attributes.size() != 1 || node.outputs.size() != 1) {
      fail(node.label() + ": not exactly one value and one output");
    }
    const auto& [name, a] = *node.attributes.begin();
    graph::Tensor value;
    if (name == "value" && a.tensor) {
      value = *a.tensor;
    } else if (name == "value_float") {
      value = graph::Tensor::of_floats({}, {a.f});
    } else if (name == "value_floats") {
      value = graph::Tensor::of_floats({static_cast<std::int64_t>(a.floats.size())}, a.floats);
    } else if (name == "value_int") {
      value = graph::Tensor::of_ints({}, {a.i});
    } else if (name == "value_ints") {
      value = graph::Tensor::of_ints({static_cast<std::int64_t>(a.ints.size())}, a.ints);
    } else {
      fail(node.label() + ": a value as " + name + " not supported");
    }
    if (!graph_.constants.emplace(node.outputs[0], std::move(value)).second) {
      fail(node.label() + ": output \"" + node.outputs[0] + "\" is written twice");
    }
  }

  std::string path_;
  std::filesystem::path dir_;
  onnx::ModelProto model_;
  graph::Graph graph_;
};

}  // namespace

graph::Graph load_graph(const std::string& path) {
  return Loader(path).run();
}

}  // namespace tpu::onnx_front
