#include "tpu/graph/graph.hpp"

#include <set>
#include <stdexcept>
#include <utility>

namespace tpu::graph {

const char* dtype_name(DType type) {
  switch (type) {
    case DType::Float32:
      return "float32";
    case DType::Int64:
      return "int64";
    case DType::Int32:
      return "int32";
    case DType::Int8:
      return "int8";
    case DType::UInt8:
      return "uint8";
    case DType::Bool:
      return "bool";
  }
  return "?";
}

std::size_t element_count(const Shape& shape) {
  std::size_t count = 1;
  for (const std::int64_t d : shape) count *= static_cast<std::size_t>(d);
  return count;
}

std::string shape_text(const Shape& shape) {
  if (shape.empty()) return "a scalar";
  std::string text;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? "x" : "") + (shape[i] < 0 ? std::string("N") : std::to_string(shape[i]));
  }
  return text;
}

Tensor::Tensor(DType type, Shape dims) : dtype(type), shape(std::move(dims)) {
  if (is_float()) {
    floats.assign(element_count(shape), 0.0f);
  } else {
    ints.assign(element_count(shape), 0);
  }
}

Tensor Tensor::of_floats(Shape dims, std::vector<float> values) {
  Tensor t;
  t.shape = std::move(dims);
  t.floats = std::move(values);
  return t;
}

Tensor Tensor::of_ints(Shape dims, std::vector<std::int64_t> values, DType type) {
  Tensor t;
  t.dtype = type;
  t.shape = std::move(dims);
  t.ints = std::move(values);
  return t;
}

Attribute Attribute::of_int(std::int64_t value) {
  Attribute a;
  a.kind = Kind::Int;
  a.i = value;
  return a;
}

Attribute Attribute::of_ints(std::vector<std::int64_t> values) {
  Attribute a;
  a.kind = Kind::Ints;
  a.ints = std::move(values);
  return a;
}

Attribute Attribute::of_float(float value) {
  Attribute a;
  a.kind = Kind::Float;
  a.f = value;
  return a;
}

std::string Node::label() const {
  return "node \"" + name + "\" (" + op + ")";
}

namespace {

const Attribute* find(const Node& node, const std::string& name, Attribute::Kind kind) {
  const auto it = node.attributes.find(name);
  if (it == node.attributes.end()) return nullptr;
  if (it->second.kind != kind) {
    throw std::runtime_error(node.label() + ": attribute " + name + " of an unexpected kind");
  }
  return &it->second;
}

}  // namespace

std::int64_t Node::int_attr(const std::string& attribute, std::int64_t fallback) const {
  const Attribute* a = find(*this, attribute, Attribute::Kind::Int);
  return a ? a->i : fallback;
}

float Node::float_attr(const std::string& attribute, float fallback) const {
  const Attribute* a = find(*this, attribute, Attribute::Kind::Float);
  return a ? a->f : fallback;
}

std::string Node::string_attr(const std::string& attribute, const std::string& fallback) const {
  const Attribute* a = find(*this, attribute, Attribute::Kind::String);
  return a ? a->s : fallback;
}

std::vector<std::int64_t> Node::ints_attr(const std::string& attribute,
                                          std::vector<std::int64_t> fallback) const {
  const Attribute* a = find(*this, attribute, Attribute::Kind::Ints);
  return a ? a->ints : fallback;
}

std::vector<float> Node::floats_attr(const std::string& attribute) const {
  const Attribute* a = find(*this, attribute, Attribute::Kind::Floats);
  return a ? a->floats : std::vector<float>{};
}

std::vector<std::string> Node::strings_attr(const std::string& attribute) const {
  const Attribute* a = find(*this, attribute, Attribute::Kind::Strings);
  return a ? a->strings : std::vector<std::string>{};
}

const std::string& Node::input(std::size_t i) const {
  static const std::string none;
  return i < inputs.size() ? inputs[i] : none;
}

std::string input_mismatch(const ValueInfo& info, const Tensor& given) {
  bool fits = given.dtype == info.dtype && (!info.ranked || given.rank() == info.shape.size());
  for (std::size_t d = 0; fits && info.ranked && d < info.shape.size(); ++d) {
    fits = info.shape[d] < 0 || info.shape[d] == given.shape[d];
  }
  if (fits) return {};
  return std::string(dtype_name(given.dtype)) + " " + shape_text(given.shape) + " where input \"" +
         info.name + "\" takes " + dtype_name(info.dtype) + " " +
         (info.ranked ? shape_text(info.shape) : std::string("of any shape"));
}

std::string check_order(const Graph& graph) {
  std::set<std::string> known;
  for (const ValueInfo& input : graph.inputs) known.insert(input.name);
  for (const auto& [name, tensor] : graph.constants) known.insert(name);
  for (const Node& node : graph.nodes) {
    for (const std::string& input : node.inputs) {
      if (!input.empty() && !known.count(input)) {
        return node.label() + ": input \"" + input + "\" is not computed before it";
      }
    }
    for (const std::string& output : node.outputs) {
      if (output.empty()) continue;
      if (!known.insert(output).second) {
        return node.label() + ": output \"" + output + "\" is written twice";
      }
    }
  }
  for (const ValueInfo& output : graph.outputs) {
    if (!known.count(output.name)) {
      return "output \"" + output.name + "\" is not computed by any node";
    }
  }
  return {};
}

}  // namespace tpu::graph
