#include "tpu/graph/executor.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "ops.hpp"
#include "resident_weights.hpp"
#include "tpu/nn.hpp"

namespace tpu::graph {

std::string check_supported(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    // QGemm, QLinearAdd, QLinearReduceMean, QLinearGlobalAveragePool and NhwcConv are
    // onnxruntime's (com.microsoft), which only fuse_quantized_products and
    // fuse_patch_embeddings make here; so is a channels_last attribute (as onnxruntime's
    // QLinearConv has one), which they and the project's networks (network_graph) give
    // convolutions and pools.
    if (!ops::table().count(node.op) || node.op == "QGemm" || node.op == "QLinearAdd" ||
        node.op == "QLinearReduceMean" || node.op == "QLinearGlobalAveragePool" ||
        node.op == "NhwcConv") {
      return node.label() + ": operator not supported";
    }
    if (node.has("channels_last")) {
      return node.label() +
             ": attribute channels_last not supported (the executor's own, for NHWC images)";
    }
    // A third input, the bias, only fuse_epilogues gives a MatMul.
    if (node.op == "MatMul" && node.inputs.size() != 2) {
      return node.label() + ": " + std::to_string(node.inputs.size()) + " inputs, not 2";
    }
  }
  return {};
}

namespace {

std::vector<Tensor> evaluate(const Node& node, const ops::Inputs& inputs, ops::Context& context) {
  std::vector<Tensor> outputs = ops::table().at(node.op)(context, node, inputs);
  for (std::size_t i = outputs.size(); i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty()) {
      ops::fail(node, "output " + std::to_string(i) + " not supported");
    }
  }
  return outputs;
}

}  // namespace

std::size_t fold_constants(Graph& graph) {
  ops::Context context{graph.opset, nullptr, nullptr};
  std::vector<Node> kept;
  std::size_t folded = 0;
  for (Node& node : graph.nodes) {
    ops::Inputs inputs;
    bool constant = !node.inputs.empty();
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      const auto it = graph.constants.find(name);
      constant = constant && it != graph.constants.end();
      inputs.push_back(it != graph.constants.end() ? &it->second : nullptr);
    }
    if (!constant || !ops::table().count(node.op)) {
      kept.push_back(std::move(node));
      continue;
    }
    std::vector<Tensor> outputs = evaluate(node, inputs, context);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].empty()) graph.constants[node.outputs[i]] = std::move(outputs[i]);
    }
    ++folded;
  }
  graph.nodes = std::move(kept);
  return folded;
}

std::vector<NodeWork> node_work(const Graph& graph) {
  static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                              "Identity"};
  std::set<std::string> shape_values;
  std::vector<NodeWork> work;
  work.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) {
    bool from_shapes = node.op == "Shape" || node.op == "Size";
    if (!from_shapes) {
      bool reads = false, only_shapes = true;
      for (const std::string& name : node.inputs) {
        if (name.empty()) continue;
        reads = true;
        only_shapes = only_shapes && (graph.constants.count(name) || shape_values.count(name));
      }
      from_shapes = reads && only_shapes;
    }
    if (from_shapes) {
      for (const std::string& name : node.outputs) shape_values.insert(name);
      work.push_back(NodeWork::ShapeArithmetic);
    } else {
      work.push_back(views.count(node.op) ? NodeWork::View : NodeWork::Values);
    }
  }
  return work;
}

namespace {

// A Transpose of the last two axes alone, by its explicit perm.
bool swaps_last_two_axes(const Node& node) {
  if (node.op != "Transpose") return false;
  const std::vector<std::int64_t> perm = node.ints_attr("perm");
  const std::size_t rank = perm.size();
  if (rank < 2) return false;
  for (std::size_t d = 0; d + 2 < rank; ++d) {
    if (perm[d] != static_cast<std::int64_t>(d)) return false;
  }
  return perm[rank - 2] == static_cast<std::int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<std::int64_t>(rank - 2);
}

// A constant of one element.
bool one_value(const Graph& graph, const std::string& name) {
  const auto it = graph.constants.find(name);
  return it != graph.constants.end() && it->second.size() == 1;
}

// A product whose input `input` is its B: MatMul's 1, QLinearMatMul's 3.
bool is_b_of_product(const Node& node, std::size_t input) {
  return (node.op == "MatMul" && input == 1) || (node.op == "QLinearMatMul" && input == 3);
}

// The values a Mul or Div may scale a tensor stored transposed by: the constants of one element
// and what the shape arithmetic computes (a scale from a head's size, as PyTorch's opset-17
// export has it), whose size the executor checks as it runs.
std::set<std::string> scale_values(const Graph& graph) {
  std::set<std::string> scales;
  for (const auto& [name, tensor] : graph.constants) {
    if (tensor.size() == 1) scales.insert(name);
  }
  const std::vector<NodeWork> work = node_work(graph);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (work[n] != NodeWork::ShapeArithmetic) continue;
    for (const std::string& name : graph.nodes[n].outputs) scales.insert(name);
  }
  return scales;
}

// The input of a Mul or Div that scales the other (its input `input`), or none.
std::optional<std::size_t> scale_of(const Node& node, std::size_t input) {
  if (node.inputs.size() != 2) return std::nullopt;
  if (node.op == "Mul") return 1 - input;
  if (node.op == "Div" && input == 0) return 1;
  return std::nullopt;
}

// Whether `node` takes its input `input` stored transposed (Tensor::stored_transposed) as it
// lies: a MatMul or QLinearMatMul as its B; a Reshape as its data, a Mul or Div (what is
// divided) by one of `scales`, and a QuantizeLinear or DequantizeLinear per tensor, which then
// give their results stored so.
bool takes_stored_transposed(const Graph& graph, const Node& node, std::size_t input,
                             const std::set<std::string>& scales) {
  if (node.op == "MatMul" || node.op == "QLinearMatMul") return is_b_of_product(node, input);
  if (node.op == "Reshape") return input == 0;
  if (node.op == "QuantizeLinear" || node.op == "DequantizeLinear") {
    return input == 0 && one_value(graph, node.input(1)) &&
           (node.input(2).empty() || one_value(graph, node.input(2)));
  }
  const std::optional<std::size_t> scale = scale_of(node, input);
  return scale && scales.count(node.inputs[*scale]);
}

}  // namespace

std::vector<bool> transposed_operands(const Graph& graph) {
  // Each tensor's readers (node, input) and the graph's outputs.
  std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> readers;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const std::vector<std::string>& inputs = graph.nodes[n].inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].empty()) readers[inputs[i]].emplace_back(n, i);
    }
  }
  std::set<std::string> graph_outputs;
  for (const ValueInfo& output : graph.outputs) graph_outputs.insert(output.name);
  const std::set<std::string> scales = scale_values(graph);
  std::vector<bool> found(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!swaps_last_two_axes(graph.nodes[n]) || graph.nodes[n].outputs.size() != 1) continue;
    std::string value = graph.nodes[n].outputs[0];
    while (true) {
      const auto it = readers.find(value);
      if (it == readers.end() || it->second.size() != 1 || graph_outputs.count(value)) break;
      const auto [reader, input] = it->second[0];
      const Node& next = graph.nodes[reader];
      if (!takes_stored_transposed(graph, next, input, scales) || next.outputs.empty()) break;
      if (is_b_of_product(next, input)) {
        found[n] = true;
        break;
      }
      value = next.outputs[0];
    }
  }
  return found;
}

namespace {

// Values stored as each matrix's transpose (cols x rows), laid out rows x cols.
template <typename T>
void lay_out(const std::vector<T>& stored, std::vector<T>& values, std::size_t rows,
             std::size_t cols) {
  const std::size_t matrix = rows * cols;
  for (std::size_t at = 0; matrix > 0 && at < stored.size(); at += matrix) {
    const std::vector<T> laid = nn::transpose(stored.data() + at, cols, rows);
    std::copy(laid.begin(), laid.end(), values.begin() + static_cast<std::ptrdiff_t>(at));
  }
}

// A tensor stored transposed (Tensor::stored_transposed) laid out as its shape says.
Tensor laid_out(const Tensor& x) {
  Tensor y = x;
  y.stored_transposed = false;
  const auto rows = static_cast<std::size_t>(x.shape[x.rank() - 2]);
  const auto cols = static_cast<std::size_t>(x.shape[x.rank() - 1]);
  if (x.is_float()) {
    lay_out(x.floats, y.floats, rows, cols);
  } else {
    lay_out(x.ints, y.ints, rows, cols);
  }
  return y;
}

// The activation `node` computes when it is one a product's epilogue can take: Relu and Clip to
// [0, 6] exactly; Sigmoid, Tanh and Gelu (its erf form) as the core's approximations of them.
Epilogue epilogue_of(const Graph& graph, const Node& node) {
  if (node.op == "Relu") return Epilogue::Relu;
  if (node.op == "Sigmoid") return Epilogue::Sigmoid;
  if (node.op == "Tanh") return Epilogue::Tanh;
  if (node.op == "Gelu") {
    return node.string_attr("approximate", "none") == "none" ? Epilogue::Gelu : Epilogue::None;
  }
  if (node.op != "Clip") return Epilogue::None;
  float low = -1, high = -1;
  if (graph.opset < 11) {
    if (!node.has("min") || !node.has("max")) return Epilogue::None;
    low = node.float_attr("min", low);
    high = node.float_attr("max", high);
  } else {
    const auto bound = [&](std::size_t i) {
      const auto it = graph.constants.find(node.input(i));
      return it != graph.constants.end() && it->second.size() == 1 && it->second.is_float()
                 ? it->second.floats[0]
                 : -1.0f;
    };
    low = bound(1);
    high = bound(2);
  }
  return low == 0.0f && high == 6.0f ? Epilogue::Relu6 : Epilogue::None;
}

// Whether `node` can take an epilogue: Conv and MatMul always, Gemm where alpha is 1 and C, if
// any, is a bias (its B a constant, so that its columns are known); the vector unit's operations
// of two tensors (Add, Sub, Mul, Max, Min), whose ELTWISE the activation follows.
bool takes_epilogue(const Graph& graph, const Node& node) {
  if (node.op == "Conv" || node.op == "NhwcConv" || node.op == "MatMul") return true;
  static const std::set<std::string> vector_ops{"Add", "Sub", "Mul", "Max", "Min"};
  if (vector_ops.count(node.op) != 0) return node.inputs.size() == 2;
  if (node.op != "Gemm" || node.float_attr("alpha", 1.0f) != 1.0f) return false;
  if (node.input(2).empty()) return true;
  const auto b = graph.constants.find(node.input(1));
  const auto c = graph.constants.find(node.input(2));
  if (b == graph.constants.end() || c == graph.constants.end() || b->second.rank() != 2) {
    return false;
  }
  const auto n = static_cast<std::size_t>(
      b->second.shape[node.int_attr("transB", 0) != 0 ? 0 : 1]);
  return !ops::gemm_bias(node, &c->second, n).empty();
}

// How many times each tensor is read (a graph output counts as a read), by which node when a
// node reads it, and which node computes it.
struct Uses {
  std::map<std::string, std::size_t> readers;
  std::map<std::string, std::size_t> reader;  // a node that reads it (the last)
  std::map<std::string, std::size_t> producer;

  explicit Uses(const Graph& graph) {
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      for (const std::string& name : graph.nodes[n].inputs) {
        ++readers[name];
        reader[name] = n;
      }
      for (const std::string& name : graph.nodes[n].outputs) producer[name] = n;
    }
    for (const ValueInfo& output : graph.outputs) ++readers[output.name];
  }
  std::size_t count(const std::string& name) const {
    const auto it = readers.find(name);
    return it == readers.end() ? 0 : it->second;
  }
  // The node that reads `name` where it is the tensor's only reader (once, and no graph output).
  std::optional<std::size_t> only_reader(const std::string& name) const {
    const auto it = reader.find(name);
    if (count(name) != 1 || it == reader.end()) return std::nullopt;
    return it->second;
  }
};

// The graph without the nodes marked `removed`.
void remove_nodes(Graph& graph, const std::vector<bool>& removed) {
  std::vector<Node> kept;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!removed[n]) kept.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(kept);
}

// The bias a MatMul's only reader adds, as PyTorch exports a Linear layer on more than two
// dimensions (MatMul, then Add of a 1-D constant of B's columns): its name, or empty.
std::string matmul_bias(const Graph& graph, const Uses& uses, const Node& matmul, const Node& add) {
  if (add.op != "Add" || add.inputs.size() != 2 || matmul.inputs.size() != 2) return {};
  const auto b = graph.constants.find(matmul.inputs[1]);
  if (b == graph.constants.end() || !b->second.is_float() || b->second.rank() < 2) return {};
  const std::string& other = add.inputs[add.inputs[0] == matmul.outputs[0] ? 1 : 0];
  const auto bias = graph.constants.find(other);
  if (other == matmul.outputs[0] || bias == graph.constants.end() || !bias->second.is_float() ||
      bias->second.rank() != 1 || bias->second.shape[0] != b->second.shape.back() ||
      uses.count(add.outputs[0]) == 0) {
    return {};
  }
  return other;
}

// Moves each such Add into its MatMul, as the MatMul's third input, which adds it in the
// epilogue; returns how many it moved.
std::size_t fuse_matmul_biases(Graph& graph) {
  const Uses uses(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  std::size_t fused = 0;
  for (Node& matmul : graph.nodes) {
    if (matmul.op != "MatMul" || matmul.outputs.size() != 1) continue;
    const std::optional<std::size_t> reader = uses.only_reader(matmul.outputs[0]);
    if (!reader) continue;
    Node& add = graph.nodes[*reader];
    const std::string bias = matmul_bias(graph, uses, matmul, add);
    if (bias.empty()) continue;
    matmul.inputs.push_back(bias);
    matmul.outputs[0] = add.outputs[0];
    removed[*reader] = true;
    ++fused;
  }
  remove_nodes(graph, removed);
  return fused;
}

}  // namespace

namespace {

// The value of a one-element float constant, or nothing.
std::optional<float> scalar_constant(const Graph& graph, const std::string& name) {
  const auto it = graph.constants.find(name);
  if (it == graph.constants.end() || !it->second.is_float() || it->second.size() != 1) {
    return std::nullopt;
  }
  return it->second.floats[0];
}

bool near(std::optional<float> value, double want) {
  return value && std::fabs(*value - want) <= 1e-6 * std::fabs(want);
}

// The input of the binary `node` (op `op`) that is not `other`, where the other is; "" elsewhere.
std::string other_input(const Node& node, const char* op, const std::string& other) {
  if (node.op != op || node.inputs.size() != 2) return {};
  if (node.inputs[0] == other) return node.inputs[1];
  if (node.inputs[1] == other) return node.inputs[0];
  return {};
}

}  // namespace

std::size_t fuse_gelu(Graph& graph) {
  const Uses uses(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  std::size_t fused = 0;
  const auto only_reader = [&](const std::string& name) -> Node* {
    const std::optional<std::size_t> n = uses.only_reader(name);
    return n ? &graph.nodes[*n] : nullptr;
  };
  for (std::size_t e = 0; e < graph.nodes.size(); ++e) {
    const Node& erf = graph.nodes[e];
    if (erf.op != "Erf" || erf.inputs.size() != 1 || erf.outputs.size() != 1) continue;
    // x / sqrt(2), or x times 1 / sqrt(2), read by the Erf alone.
    const auto scaled = uses.producer.find(erf.inputs[0]);
    if (scaled == uses.producer.end() || uses.count(erf.inputs[0]) != 1) continue;
    const Node& scale = graph.nodes[scaled->second];
    std::string x;
    if (scale.op == "Div" && scale.inputs.size() == 2 &&
        near(scalar_constant(graph, scale.inputs[1]), std::sqrt(2.0))) {
      x = scale.inputs[0];
    } else if (scale.op == "Mul" && scale.inputs.size() == 2) {
      for (int i : {0, 1}) {
        if (near(scalar_constant(graph, scale.inputs[i]), std::sqrt(0.5))) x = scale.inputs[1 - i];
      }
    }
    Node* plus_one = only_reader(erf.outputs[0]);
    if (x.empty() || !plus_one || plus_one->outputs.size() != 1 ||
        !near(scalar_constant(graph, other_input(*plus_one, "Add", erf.outputs[0])), 1.0)) {
      continue;
    }
    // Then times x and times 0.5, in either order.
    Node* first = only_reader(plus_one->outputs[0]);
    if (!first || first->outputs.size() != 1) continue;
    const std::string factor = other_input(*first, "Mul", plus_one->outputs[0]);
    Node* last = nullptr;
    Node* half = nullptr;  // x times 0.5, where it comes first
    if (factor == x) {
      last = only_reader(first->outputs[0]);
      if (!last ||
          !near(scalar_constant(graph, other_input(*last, "Mul", first->outputs[0])), 0.5)) {
        continue;
      }
    } else {
      const auto made = uses.producer.find(factor);
      if (factor.empty() || made == uses.producer.end() || uses.count(factor) != 1) continue;
      half = &graph.nodes[made->second];
      if (!near(scalar_constant(graph, other_input(*half, "Mul", x)), 0.5)) continue;
      last = first;
    }
    for (const Node* node : {&scale, &erf, static_cast<const Node*>(plus_one),
                             static_cast<const Node*>(last == first ? half : first)}) {
      removed[static_cast<std::size_t>(node - graph.nodes.data())] = true;
    }
    Node gelu;
    gelu.op = "Gelu";
    gelu.name = last->name;
    gelu.inputs = {x};
    gelu.outputs = last->outputs;
    *last = std::move(gelu);
    ++fused;
  }
  remove_nodes(graph, removed);
  return fused;
}

std::size_t fuse_epilogues(Graph& graph) {
  std::size_t fused = fuse_matmul_biases(graph);
  const Uses uses(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  for (Node& activation : graph.nodes) {
    const Epilogue act = epilogue_of(graph, activation);
    if (act == Epilogue::None || activation.inputs.empty()) continue;
    const std::string& sums = activation.inputs[0];
    const auto it = uses.producer.find(sums);
    if (it == uses.producer.end() || uses.count(sums) != 1) continue;
    Node& node = graph.nodes[it->second];
    if (node.epilogue != Epilogue::None || node.outputs.size() != 1 ||
        !takes_epilogue(graph, node)) {
      continue;
    }
    node.epilogue = act;
    node.outputs[0] = activation.outputs[0];
    removed[static_cast<std::size_t>(&activation - graph.nodes.data())] = true;
    ++fused;
  }
  remove_nodes(graph, removed);
  return fused;
}

namespace {

// Operators whose result is N-OUT's rounding of their input's, whether they take it rounded or
// not: they move values, or pick one of them (max and relu are monotonic, and the rounding keeps
// the order), and never compute a new one.
bool commutes_with_rounding(const Node& node) {
  static const std::set<std::string> ops{"MaxPool", "Relu",      "Flatten",   "Reshape",
                                         "Squeeze", "Unsqueeze", "Transpose", "Identity"};
  return ops.count(node.op) != 0 &&
         !(node.op == "MaxPool" && node.outputs.size() > 1 && !node.outputs[1].empty());
}

bool float_product(const Node& node) {
  return node.op == "Conv" || node.op == "NhwcConv" || node.op == "Gemm" || node.op == "MatMul";
}

}  // namespace

std::size_t round_results(Graph& graph) {
  std::map<std::string, std::vector<std::pair<const Node*, std::size_t>>> readers;
  for (const Node& node : graph.nodes) {
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      readers[node.inputs[i]].emplace_back(&node, i);
    }
  }
  std::set<std::string> outputs;
  for (const ValueInfo& output : graph.outputs) outputs.insert(output.name);
  // Whether every value of `name` ends, through operators that commute with the rounding, as
  // an operand A or B of a float product (which rounds it to bf16 on the core anyway).
  std::map<std::string, bool> known;
  std::function<bool(const std::string&)> only_rounded = [&](const std::string& name) {
    if (const auto it = known.find(name); it != known.end()) return it->second;
    bool rounded = outputs.count(name) == 0 && readers.count(name) != 0;
    for (const auto& [reader, input] :
         rounded ? readers.at(name) : std::vector<std::pair<const Node*, std::size_t>>{}) {
      if (float_product(*reader) && input < 2) continue;
      rounded = rounded && input == 0 && commutes_with_rounding(*reader) &&
                reader->outputs.size() >= 1 && only_rounded(reader->outputs[0]);
    }
    known[name] = rounded;
    return rounded;
  };
  std::size_t marked = 0;
  for (Node& node : graph.nodes) {
    if (!float_product(node) || node.outputs.size() != 1 || node.bf16_result ||
        (node.op == "Gemm" && !takes_epilogue(graph, node)) || !only_rounded(node.outputs[0])) {
      continue;
    }
    node.bf16_result = true;
    ++marked;
  }
  return marked;
}

namespace {

// A DequantizeLinear or QuantizeLinear whose scale and zero point are constants: its
// parameters, with the axis its scales run along (none for one scale).
struct QuantNode {
  const Node* node = nullptr;
  const Tensor* scale = nullptr;
  const Tensor* zero_point = nullptr;  // null where the node leaves it out
  std::optional<std::int64_t> axis;    // per-axis scales: the axis, in [0, rank)
};

const Tensor* constant(const Graph& graph, const std::string& name) {
  const auto it = graph.constants.find(name);
  return it == graph.constants.end() ? nullptr : &it->second;
}

std::optional<QuantNode> quant_node(const Graph& graph, const Uses& uses, const std::string& name,
                                    const char* op, std::size_t rank) {
  const auto it = uses.producer.find(name);
  if (it == uses.producer.end()) return std::nullopt;
  const Node& node = graph.nodes[it->second];
  if (node.op != op || node.int_attr("block_size", 0) != 0) return std::nullopt;
  QuantNode q{&node, constant(graph, node.input(1)), nullptr, std::nullopt};
  if (!q.scale || !q.scale->is_float() || q.scale->rank() > 1) return std::nullopt;
  if (!node.input(2).empty()) {
    q.zero_point = constant(graph, node.input(2));
    if (!q.zero_point || q.zero_point->size() != q.scale->size()) return std::nullopt;
  }
  if (q.scale->size() != 1) {
    std::int64_t axis = node.int_attr("axis", 1);
    if (axis < 0) axis += static_cast<std::int64_t>(rank);
    q.axis = axis;
  }
  return q;
}

bool zero_points_zero(const QuantNode& q) {
  if (!q.zero_point) return true;
  for (const std::int64_t z : q.zero_point->ints) {
    if (z != 0) return false;
  }
  return true;
}

// Weights the int8 products take: one zero point for the whole tensor (the host takes it off
// where it is not 0), or per channel symmetric int8 (zero points 0) or uint8 centred on 128.
bool takes_weights(const QuantNode& w) {
  if (!w.zero_point || w.zero_point->size() == 1) return true;
  if (w.zero_point->dtype == DType::Int8) return zero_points_zero(w);
  if (w.zero_point->dtype != DType::UInt8) return false;
  for (const std::int64_t z : w.zero_point->ints) {
    if (z != 128) return false;
  }
  return true;
}

// The quantised product a Conv, MatMul or Gemm becomes, or nothing where it stays as it is.
class QuantFusion {
 public:
  QuantFusion(Graph& graph, const Uses& uses) : graph_(graph), uses_(uses) {}

  // The fused node in place of `node`, and the nodes it replaces after it (the activation, the
  // QuantizeLinear), or nothing.
  std::optional<std::pair<Node, std::vector<std::size_t>>> fuse(const Node& node) {
    if (node.op != "Conv" && node.op != "MatMul" && node.op != "Gemm") return std::nullopt;
    if (node.outputs.size() != 1 || node.epilogue != Epilogue::None) return std::nullopt;
    const Tensor* w_values = constant(graph_, producer_input(node.input(1), 0));
    const std::size_t w_rank = w_values ? w_values->rank() : 2;
    const auto x = quant_node(graph_, uses_, node.input(0), "DequantizeLinear", 0);
    const auto w = quant_node(graph_, uses_, node.input(1), "DequantizeLinear", w_rank);
    if (!x || !w || x->scale->size() != 1 || !x->zero_point || !integer8(*x->zero_point)) {
      return std::nullopt;
    }
    if (!takes_weights(*w)) return std::nullopt;
    const bool trans_b = node.int_attr("transB", 0) != 0;
    if (w->axis) {
      // Weights per output channel: Conv's filters, the columns of MatMul's and Gemm's B.
      if (!w_values) return std::nullopt;
      const std::int64_t out_axis = node.op == "Conv"   ? 0
                                    : node.op == "Gemm" ? (trans_b ? 0 : 1)
                                                        : static_cast<std::int64_t>(w_rank) - 1;
      if (*w->axis != out_axis) return std::nullopt;
    }
    if (node.op == "Gemm" &&
        (node.int_attr("transA", 0) != 0 || node.float_attr("alpha", 1.0f) != 1.0f ||
         (!node.input(2).empty() && node.float_attr("beta", 1.0f) != 1.0f))) {
      return std::nullopt;
    }
    std::optional<Quantised> reader = quantised_reader(node, true);
    if (!reader) return std::nullopt;
    const Node& q_node = *reader->y.node;
    const QuantNode& y = reader->y;

    Node fused;
    fused.name = node.name;
    fused.attributes = node.attributes;
    fused.epilogue = reader->act;
    fused.outputs = {q_node.outputs[0]};
    std::string bias;
    if (node.op != "MatMul" && !node.input(2).empty()) {
      const std::optional<std::string> b = quantised_bias(node, *x, *w);
      if (!b) return std::nullopt;
      bias = *b;
    }
    const std::string w_zero_point = w->zero_point
                                         ? w->node->input(2)
                                         : zeros_like(node, "w_zero_point", *w->scale, DType::Int8);
    const std::string y_zero_point = output_zero_point(node, y);
    fused.inputs = {x->node->input(0), x->node->input(1), x->node->input(2),
                    w->node->input(0), w->node->input(1), w_zero_point};
    if (node.op == "Conv") {
      fused.op = "QLinearConv";
      fused.inputs.insert(fused.inputs.end(), {q_node.input(1), y_zero_point});
      if (!bias.empty()) fused.inputs.push_back(bias);
    } else if (node.op == "MatMul") {
      fused.op = "QLinearMatMul";
      fused.inputs.insert(fused.inputs.end(), {q_node.input(1), y_zero_point});
    } else {
      fused.op = "QGemm";
      fused.attributes.erase("beta");
      fused.inputs.insert(fused.inputs.end(), {bias, q_node.input(1), y_zero_point});
    }
    return std::make_pair(std::move(fused), std::move(reader->replaced));
  }

  // Operators whose outputs are values of their inputs, moved or picked: between a
  // DequantizeLinear and a QuantizeLinear of the same scale and zero point they give the same
  // int8 values as the float path (each value dequantised and quantised again exactly).
  static bool moves_values(const std::string& op) {
    static const std::set<std::string> ops = {"MaxPool",   "Reshape",   "Flatten", "Squeeze",
                                              "Unsqueeze", "Transpose", "Gather",  "Slice",
                                              "Identity",  "Concat",    "Expand",  "Pad"};
    return ops.count(op) != 0;
  }

  // A Pad between a DequantizeLinear and a QuantizeLinear pads the int8 values with the zero
  // point, the quantised 0.0, where it pads with 0.0 (its constant mode; the other modes only
  // move values): its constant value becomes the zero point (`zero_point`, the input's). False
  // where it pads with another value, or takes it as an attribute (before opset 11).
  bool pads_with_zero_point(Node& pad, const std::string& zero_point) const {
    if (pad.string_attr("mode", "constant") != "constant") return true;
    if (graph_.opset < 11) return false;
    if (!pad.input(2).empty()) {
      const Tensor* value = constant(graph_, pad.input(2));
      if (!value || value->size() != 1 || value->value(0) != 0.0) return false;
    }
    pad.inputs.resize(std::max<std::size_t>(pad.inputs.size(), 3));
    pad.inputs[2] = zero_point;
    return true;
  }

  // An Add of two DequantizeLinear outputs (per tensor) whose only reader is a QuantizeLinear
  // (per tensor), directly or through a Relu or Clip to [0, 6]: TensorFlow Lite's int8 ADD, as
  // QLinearAdd (onnxruntime's operator's inputs; Q-ADD's bits, docs/numerics.md). A ReduceMean
  // (its axes known) or GlobalAveragePool of a DequantizeLinear's output whose only reader is a
  // QuantizeLinear, directly or through a Reshape, Flatten, Squeeze or Unsqueeze (which then
  // reshapes the int8 mean): QLinearReduceMean or QLinearGlobalAveragePool (Q-MEAN). A MaxPool of
  // a DequantizeLinear's output whose only reader quantises it again with the same scale, zero
  // point and type: the same MaxPool of the int8 values (each maximum exact either way); so with
  // the operators that only move values (moves_values), whose every value input is such a
  // DequantizeLinear.
  std::optional<std::pair<Node, std::vector<std::size_t>>> fuse_elementwise(const Node& node) {
    const bool add = node.op == "Add",
               mean = node.op == "ReduceMean" || node.op == "GlobalAveragePool",
               moves = moves_values(node.op);
    if ((!add && !mean && !moves) || node.outputs.size() != 1 || node.epilogue != Epilogue::None) {
      return std::nullopt;
    }
    // A ReduceMean's axes: its attribute, or from opset 18 its constant second input.
    std::vector<std::int64_t> axes = node.ints_attr("axes");
    if (node.op == "ReduceMean" && !node.input(1).empty()) {
      const Tensor* given = constant(graph_, node.input(1));
      if (!given || given->is_float()) return std::nullopt;
      axes = given->ints;
    }
    if (node.op == "ReduceMean" && axes.empty()) return std::nullopt;
    // The inputs that are values (all of Concat's; a Reshape's shape, a Gather's indices, a
    // ReduceMean's axes and the like pass as they are).
    const std::size_t data_inputs = add ? 2 : node.op == "Concat" ? node.inputs.size() : 1;
    if (node.inputs.size() < data_inputs || (add && node.inputs.size() != 2)) return std::nullopt;
    std::vector<QuantNode> x;
    for (std::size_t i = 0; i < data_inputs; ++i) {
      const std::string& input = node.inputs[i];
      const auto q = quant_node(graph_, uses_, input, "DequantizeLinear", 0);
      if (!q || q->scale->size() != 1 || !q->zero_point || !integer8(*q->zero_point)) {
        return std::nullopt;
      }
      x.push_back(*q);
    }
    std::optional<Quantised> reader = quantised_reader(node, add, mean);
    if (!reader) return std::nullopt;
    const Node& q_node = *reader->y.node;
    Node fused;
    fused.name = node.name;
    fused.attributes = node.attributes;
    fused.epilogue = reader->act;
    fused.outputs = {q_node.outputs[0]};
    if (mean) {
      // The mean's own output, int8 now, and a Reshape, Flatten, Squeeze or Unsqueeze after it
      // that writes the QuantizeLinear's output.
      if (reader->view) {
        fused.outputs = node.outputs;
        graph_.nodes[*reader->view].outputs = {q_node.outputs[0]};
      }
      fused.op = node.op == "ReduceMean" ? "QLinearReduceMean" : "QLinearGlobalAveragePool";
      if (node.op == "ReduceMean") {
        fused.attributes.erase("noop_with_empty_axes");
        fused.attributes["axes"] = Attribute::of_ints(axes);
      }
      fused.inputs = {x[0].node->input(0), x[0].node->input(1), x[0].node->input(2),
                      q_node.input(1), output_zero_point(node, reader->y)};
    } else if (add) {
      fused.op = "QLinearAdd";
      fused.inputs = {x[0].node->input(0), x[0].node->input(1),
                      x[0].node->input(2), x[1].node->input(0),
                      x[1].node->input(1), x[1].node->input(2),
                      q_node.input(1),     output_zero_point(node, reader->y)};
    } else {
      const QuantNode& y = reader->y;
      fused.op = node.op;
      fused.inputs = node.inputs;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const bool same = y.zero_point && y.zero_point->dtype == x[i].zero_point->dtype &&
                          y.zero_point->ints == x[i].zero_point->ints &&
                          y.scale->floats == x[i].scale->floats;
        if (!same) return std::nullopt;
        fused.inputs[i] = x[i].node->input(0);
      }
      if (node.op == "Pad" && !pads_with_zero_point(fused, x[0].node->input(2))) {
        return std::nullopt;
      }
    }
    return std::make_pair(std::move(fused), std::move(reader->replaced));
  }

 private:
  // The QuantizeLinear (per tensor, into int8 or uint8) that reads a node's only output, directly
  // or, where `activation`, through a Relu or Clip to [0, 6] (which the requantisation's clamp
  // takes), or where `view`, through a node that only reshapes it (which then stays, `view`); the
  // nodes a fusion replaces after the node (the activation, the QuantizeLinear).
  struct Quantised {
    QuantNode y;
    Epilogue act = Epilogue::None;
    std::vector<std::size_t> replaced;
    std::optional<std::size_t> view;
  };

  std::optional<Quantised> quantised_reader(const Node& node, bool activation, bool view = false) {
    Quantised q;
    std::string quantised = node.outputs[0];
    const std::optional<std::size_t> reader = uses_.only_reader(quantised);
    if (!reader) return std::nullopt;
    const Node& next = graph_.nodes[*reader];
    if (const Epilogue e = epilogue_of(graph_, next);
        activation && (e == Epilogue::Relu || e == Epilogue::Relu6)) {
      q.act = e;
      q.replaced.push_back(*reader);
      quantised = next.outputs[0];
    } else if (view && next.input(0) == quantised && next.outputs.size() == 1 &&
               (next.op == "Reshape" || next.op == "Flatten" || next.op == "Squeeze" ||
                next.op == "Unsqueeze")) {
      q.view = *reader;
      quantised = next.outputs[0];
    }
    const std::optional<std::size_t> q_index = uses_.only_reader(quantised);
    if (!q_index || graph_.nodes[*q_index].op != "QuantizeLinear") return std::nullopt;
    const Node& q_node = graph_.nodes[*q_index];
    const auto y = quant_node(graph_, uses_, q_node.outputs[0], "QuantizeLinear", 0);
    if (!y || y->scale->size() != 1 || (y->zero_point && !integer8(*y->zero_point)) ||
        (!y->zero_point && q_node.has("output_dtype"))) {
      return std::nullopt;
    }
    q.y = *y;
    q.replaced.push_back(*q_index);
    return q;
  }

  // The fused node's output zero point: the QuantizeLinear's, or uint8 zeros where it has none.
  std::string output_zero_point(const Node& node, const QuantNode& y) {
    return y.zero_point ? y.node->input(2)
                        : zeros_like(node, "y_zero_point", *y.scale, DType::UInt8);
  }

  static bool integer8(const Tensor& t) {
    return t.dtype == DType::Int8 || t.dtype == DType::UInt8;
  }

  // The input `i` of the node that computes `name`, or "" where a graph input or constant is.
  std::string producer_input(const std::string& name, std::size_t i) const {
    const auto it = uses_.producer.find(name);
    return it == uses_.producer.end() ? std::string() : graph_.nodes[it->second].input(i);
  }

  // A constant of zeros of `type` in the shape of `like`, named after the node.
  std::string zeros_like(const Node& node, const std::string& what, const Tensor& like,
                         DType type) {
    const std::string name = node.name + "::" + what;
    graph_.constants[name] = Tensor(type, like.shape);
    return name;
  }

  // The bias of a fused Conv or Gemm as int32 at the scale of the products' sums (input scale
  // times weight scale): a DequantizeLinear of int32 values at that scale, as quantize_static
  // writes it, or nothing.
  std::optional<std::string> quantised_bias(const Node& node, const QuantNode& x,
                                            const QuantNode& w) {
    const auto sums_scale = [&](std::size_t j) {
      return static_cast<double>(x.scale->floats[0]) *
             w.scale->floats[w.scale->size() == 1 ? 0 : j];
    };
    const auto b = quant_node(graph_, uses_, node.input(2), "DequantizeLinear", 1);
    const Tensor* values = b ? constant(graph_, b->node->input(0)) : nullptr;
    if (b && zero_points_zero(*b) && values && values->dtype == DType::Int32 &&
        (b->scale->size() == 1 || b->scale->size() == values->size()) &&
        (w.scale->size() == 1 || w.scale->size() == values->size())) {
      bool same_scale = true;
      for (std::size_t j = 0; j < values->size(); ++j) {
        const double have = b->scale->floats[b->scale->size() == 1 ? 0 : j];
        same_scale = same_scale && std::fabs(have - sums_scale(j)) <= 1e-6 * sums_scale(j);
      }
      if (same_scale) return b->node->input(0);
    }
    // Otherwise a bias the constants alone give (float, or dequantised at another scale, as an
    // exporter that shares one bias between layers writes it): rounded to the sums' scale.
    const std::optional<Tensor> real = constant_value(node.input(2));
    if (!real || !real->is_float() || real->rank() > 2 ||
        (real->rank() == 2 && real->shape[0] != 1)) {
      return std::nullopt;
    }
    const std::size_t n = real->size();
    if (w.scale->size() != 1 && w.scale->size() != n) return std::nullopt;
    Tensor q(DType::Int32, {static_cast<std::int64_t>(n)});
    for (std::size_t j = 0; j < n; ++j) {
      const double v = std::round(real->floats[j] / sums_scale(j));  // half away from zero
      if (!(std::fabs(v) <= 2147483647.0)) return std::nullopt;
      q.ints[j] = static_cast<std::int64_t>(v);
    }
    const std::string name = node.name + "::bias_int32";
    graph_.constants[name] = std::move(q);
    return name;
  }

  // The value of a tensor that the graph's constants alone determine (through nodes that read
  // nothing else), or nothing.
  std::optional<Tensor> constant_value(const std::string& name, int depth = 0) {
    if (const Tensor* t = constant(graph_, name)) return *t;
    const auto it = uses_.producer.find(name);
    if (depth > 8 || it == uses_.producer.end()) return std::nullopt;
    const Node& node = graph_.nodes[it->second];
    if (!ops::table().count(node.op)) return std::nullopt;
    std::vector<Tensor> values;
    values.reserve(node.inputs.size());
    for (const std::string& input : node.inputs) {
      if (input.empty()) {
        values.emplace_back();
        continue;
      }
      std::optional<Tensor> value = constant_value(input, depth + 1);
      if (!value) return std::nullopt;
      values.push_back(std::move(*value));
    }
    ops::Inputs inputs;
    for (std::size_t i = 0; i < values.size(); ++i) {
      inputs.push_back(node.inputs[i].empty() ? nullptr : &values[i]);
    }
    ops::Context context{graph_.opset, nullptr, nullptr};
    std::vector<Tensor> outputs = evaluate(node, inputs, context);
    for (std::size_t i = 0; i < node.outputs.size() && i < outputs.size(); ++i) {
      if (node.outputs[i] == name) return std::move(outputs[i]);
    }
    return std::nullopt;
  }

  Graph& graph_;
  const Uses& uses_;
};

// Removes the DequantizeLinear nodes whose outputs nothing reads any more.
void remove_unread_dequantize(Graph& graph) {
  for (bool again = true; again;) {
    again = false;
    const Uses uses(graph);
    std::vector<bool> removed(graph.nodes.size(), false);
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = graph.nodes[n];
      bool read = false;
      for (const std::string& name : node.outputs) read = read || uses.count(name) > 0;
      removed[n] = !read && node.op == "DequantizeLinear";
      again = again || removed[n];
    }
    remove_nodes(graph, removed);
  }
}

}  // namespace

std::size_t fuse_quantized_products(Graph& graph) {
  std::size_t fused = 0;
  std::vector<bool> removed(graph.nodes.size(), false);
  {
    const Uses uses(graph);
    QuantFusion fusion(graph, uses);
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      auto result = fusion.fuse(graph.nodes[n]);
      if (!result) result = fusion.fuse_elementwise(graph.nodes[n]);
      if (!result) continue;
      graph.nodes[n] = std::move(result->first);
      for (const std::size_t r : result->second) removed[r] = true;
      ++fused;
    }
  }
  remove_nodes(graph, removed);
  remove_unread_dequantize(graph);
  return fused;
}

namespace {

// A tensor's shape where the graph fixes it before any run, with a batch of `batch`: a graph
// input of fixed dimensions after the first, or a QuantizeLinear (per tensor) of one.
std::optional<Shape> shape_before_run(const Graph& graph, const Uses& uses, const std::string& name,
                                      std::int64_t batch) {
  if (const auto p = uses.producer.find(name); p != uses.producer.end()) {
    const Node& node = graph.nodes[p->second];
    const Tensor* scale = constant(graph, node.input(1));
    if (node.op != "QuantizeLinear" || !scale || scale->size() != 1) return std::nullopt;
    return shape_before_run(graph, uses, node.input(0), batch);
  }
  for (const ValueInfo& input : graph.inputs) {
    if (input.name != name) continue;
    if (!input.ranked || input.shape.empty()) return std::nullopt;
    Shape shape = input.shape;
    shape[0] = batch;
    for (const std::int64_t d : shape) {
      if (d <= 0) return std::nullopt;
    }
    return shape;
  }
  return std::nullopt;
}

// A patch embedding as vision transformers write it without a convolution: the images (N, 1, H,
// W), padded by a Pad (or not), cut by Reshapes and a Transpose into patches of ph x pw pixels,
// a row of A each (its pixels row by row), times B, whose row ky * pw + kx multiplies pixel
// (ky, kx). That is a convolution of kernel and stride ph x pw, the Pad's padding its own
// (ONNX's Pad of 0.0, or of the zero point in int8), whose filters are B's columns and whose
// pixels' results are A's rows, in the same order: onnxruntime's NHWC convolution (NhwcConv, or
// QLinearConv with channels_last) of the images as NHWC (their bytes: one channel) gives the
// product's result, a Reshape on. Its sums run over (ky, kx) as the product's over k: the same
// bits. On the core it reads the images as they are (plan_conv) where the patches' Transpose
// moved runs of pw values, shorter than an array row.
class PatchFusion {
 public:
  PatchFusion(Graph& graph, const Uses& uses) : graph_(graph), uses_(uses) {}

  // The nodes in place of `product` (the images to NHWC, the convolution, its result to the
  // product's shape) and the nodes they replace before it, or nothing.
  std::optional<std::pair<std::vector<Node>, std::vector<std::size_t>>> fuse(const Node& product) {
    const bool int8 = product.op == "QLinearMatMul";
    if (product.op != "MatMul" && !int8) return std::nullopt;
    const Tensor* b = constant(graph_, product.input(int8 ? 3 : 1));
    if (!b || b->rank() != 2) return std::nullopt;
    // The nodes back from A through Reshapes and a Transpose, each its reader's only input, to a
    // Pad (or not) and the images.
    std::vector<std::size_t> chain;
    std::string name = product.input(0);
    std::optional<std::size_t> pad;
    for (;;) {
      const auto p = uses_.producer.find(name);
      if (p == uses_.producer.end() || uses_.count(name) != 1) break;
      const Node& node = graph_.nodes[p->second];
      if (node.op != "Reshape" && node.op != "Transpose" && node.op != "Pad") break;
      if (node.op == "Pad") {
        const Tensor* zero = int8 ? constant(graph_, product.input(2)) : nullptr;
        const Tensor* value = node.input(2).empty() ? nullptr : constant(graph_, node.input(2));
        const bool zeros =
            value ? value->size() == 1 && value->value(0) == (zero ? zero->value(0) : 0.0)
                  : !int8 || (zero && zero->value(0) == 0);
        if (graph_.opset < 11 || node.string_attr("mode", "constant") != "constant" || !zeros) {
          return std::nullopt;
        }
        pad = p->second;
        name = node.input(0);
        break;
      }
      chain.push_back(p->second);
      name = node.input(0);
    }
    if (chain.empty()) return std::nullopt;
    std::reverse(chain.begin(), chain.end());
    // The element of the images each value of A is (its offset + 1), 0 for the padding: the
    // chain's own kernels on the offsets, with two images; with three, A's first axis must take
    // the batch alone (the result's Reshape leaves it to -1).
    std::optional<Shape> images;
    Tensor padded, a;
    ops::Context context{graph_.opset, nullptr, nullptr};
    const auto apply = [&](const Node& node, bool pads) {
      ops::Inputs in{&a};
      for (std::size_t i = 1; i < node.inputs.size(); ++i) {
        const bool value = pads && i == 2;  // the padding as 0: no pixel's
        in.push_back(value ? nullptr : constant(graph_, node.inputs[i]));
        if (!in.back() && !value && !node.inputs[i].empty()) return false;
      }
      a = evaluate(node, in, context)[0];
      return true;
    };
    const auto offsets_through_chain = [&](std::int64_t batch) {
      images = shape_before_run(graph_, uses_, name, batch);
      if (!images || images->size() != 4 || (*images)[1] != 1) return false;
      std::vector<std::int64_t> offsets(element_count(*images));
      for (std::size_t e = 0; e < offsets.size(); ++e)
        offsets[e] = static_cast<std::int64_t>(e + 1);
      a = Tensor::of_ints(*images, std::move(offsets));
      if (pad && !apply(graph_.nodes[*pad], true)) return false;
      padded = a;
      for (const std::size_t n : chain) {
        if (!apply(graph_.nodes[n], false)) return false;
      }
      return true;
    };
    try {
      if (!offsets_through_chain(3)) return std::nullopt;
      Shape three = a.shape;
      if (three[0] % 3 != 0) return std::nullopt;
      three[0] = three[0] / 3 * 2;
      if (!offsets_through_chain(2) || a.shape != three) return std::nullopt;
      const std::optional<Patches> patches = patches_of(*images, padded, a);
      if (!patches || b->shape[0] != a.shape.back()) return std::nullopt;
      std::vector<std::size_t> replaced = chain;
      if (pad) replaced.push_back(*pad);
      return std::make_pair(replace(product, name, *images, *patches, a.shape, *b),
                            std::move(replaced));
    } catch (const std::runtime_error&) {
      return std::nullopt;  // a chain that does not take these shapes
    }
  }

 private:
  // A patch's pixels and the padding around the images.
  struct Patches {
    std::int64_t ph = 0, pw = 0, top = 0, left = 0, bottom = 0, right = 0;
  };

  // The patches whose pixels, row by row, are the rows of A (`a`: the images' offsets + 1, 0 in
  // the padding), the images (`images`) padded as `padded` (their offsets + 1 likewise); none
  // where A is no such patches.
  static std::optional<Patches> patches_of(const Shape& images, const Tensor& padded,
                                           const Tensor& a) {
    const Shape& ps = padded.shape;
    if (ps.size() != 4 || ps[0] != images[0] || ps[1] != 1 || a.rank() < 2) return std::nullopt;
    const std::int64_t n = images[0], h = images[2], w = images[3], hp = ps[2], wp = ps[3];
    const std::int64_t k = a.shape.back();
    // The padding before the first row and column: where the first pixel lies.
    const auto first = std::find(padded.ints.begin(), padded.ints.end(), 1);
    if (first == padded.ints.end()) return std::nullopt;
    const auto at = static_cast<std::int64_t>(first - padded.ints.begin());
    Patches p;
    p.top = at / wp % hp;
    p.left = at % wp;
    p.bottom = hp - h - p.top;
    p.right = wp - w - p.left;
    if (p.bottom < 0 || p.right < 0) return std::nullopt;
    for (p.ph = 1; p.ph <= k; ++p.ph) {
      if (k % p.ph != 0 || hp % p.ph != 0 || wp % (k / p.ph) != 0) continue;
      p.pw = k / p.ph;
      const std::int64_t rows = hp / p.ph, cols = wp / p.pw;
      if (n * rows * cols * k != static_cast<std::int64_t>(a.size())) continue;
      bool same = true;
      std::size_t e = 0;
      for (std::int64_t i = 0; i < n && same; ++i) {
        for (std::int64_t py = 0; py < rows && same; ++py) {
          for (std::int64_t px = 0; px < cols && same; ++px) {
            for (std::int64_t ky = 0; ky < p.ph && same; ++ky) {
              for (std::int64_t kx = 0; kx < p.pw && same; ++kx, ++e) {
                const std::int64_t y = py * p.ph + ky - p.top, x = px * p.pw + kx - p.left;
                const bool inside = y >= 0 && y < h && x >= 0 && x < w;
                same = a.ints[e] == (inside ? (i * h + y) * w + x + 1 : 0);
              }
            }
          }
        }
      }
      if (same) return p;
    }
    return std::nullopt;
  }

  // The convolution's nodes in place of `product` (its A `a_shape` with the batch two): the
  // images `images` (`shape`, one channel) to NHWC, the convolution of B's columns, its result to
  // the product's shape.
  std::vector<Node> replace(const Node& product, const std::string& images, const Shape& shape,
                            const Patches& p, Shape a_shape, const Tensor& b) {
    const bool int8 = product.op == "QLinearMatMul";
    const std::string base = product.name + "/patches";
    const auto shape_constant = [&](const std::string& suffix, const Shape& dims) {
      const std::string name = base + suffix;
      graph_.constants[name] = Tensor::of_ints({static_cast<std::int64_t>(dims.size())}, dims);
      return name;
    };
    Node nhwc;
    nhwc.op = "Reshape";
    nhwc.name = base + "/nhwc";
    nhwc.inputs = {images, shape_constant("/nhwc_shape", {-1, shape[2], shape[3], 1})};
    nhwc.outputs = {base + "/images"};
    // The filters: B's columns, filter f's pixel (ky, kx) at row ky * pw + kx.
    const std::int64_t k = b.shape[0], filters = b.shape[1];
    Tensor weights(b.dtype, {filters, 1, p.ph, p.pw});
    for (std::int64_t r = 0; r < k; ++r) {
      for (std::int64_t f = 0; f < filters; ++f) {
        const auto from = static_cast<std::size_t>(r * filters + f),
                   to = static_cast<std::size_t>(f * k + r);
        if (b.is_float()) {
          weights.floats[to] = b.floats[from];
        } else {
          weights.ints[to] = b.ints[from];
        }
      }
    }
    const std::string filters_name = base + "/filters";
    graph_.constants[filters_name] = std::move(weights);
    Node conv;
    conv.name = product.name;
    conv.op = int8 ? "QLinearConv" : "NhwcConv";
    conv.inputs = product.inputs;
    conv.inputs[0] = nhwc.outputs[0];
    conv.inputs[int8 ? 3 : 1] = filters_name;
    conv.attributes["kernel_shape"] = Attribute::of_ints({p.ph, p.pw});
    conv.attributes["strides"] = Attribute::of_ints({p.ph, p.pw});
    conv.attributes["pads"] = Attribute::of_ints({p.top, p.left, p.bottom, p.right});
    if (int8) conv.attributes["channels_last"] = Attribute::of_int(1);
    conv.epilogue = product.epilogue;
    conv.bf16_result = product.bf16_result;
    conv.outputs = {base + "/pixels"};
    Node result;
    result.op = "Reshape";
    result.name = base + "/result";
    a_shape.back() = filters;
    a_shape[0] = -1;  // the batch's alone (fuse)
    result.inputs = {conv.outputs[0], shape_constant("/result_shape", a_shape)};
    result.outputs = product.outputs;
    return {std::move(nhwc), std::move(conv), std::move(result)};
  }

  Graph& graph_;
  const Uses& uses_;
};

}  // namespace

std::size_t fuse_patch_embeddings(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  std::vector<std::pair<std::size_t, std::vector<Node>>> replacements;
  {
    const Uses uses(graph);
    PatchFusion fusion(graph, uses);
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      auto result = fusion.fuse(graph.nodes[n]);
      if (!result) continue;
      for (const std::size_t r : result->second) removed[r] = true;
      replacements.emplace_back(n, std::move(result->first));
    }
  }
  // Each product's nodes where it was: after the images, before the product's readers.
  std::vector<Node> nodes;
  auto next = replacements.begin();
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (next != replacements.end() && next->first == n) {
      for (Node& node : next->second) nodes.push_back(std::move(node));
      ++next;
    } else if (!removed[n]) {
      nodes.push_back(std::move(graph.nodes[n]));
    }
  }
  graph.nodes = std::move(nodes);
  return replacements.size();
}

struct Session::State {
  std::set<const Tensor*> constants;
  ops::ResidentWeights weights;
  const CompiledModel* compiled = nullptr;
  bool image_written = false;
  ops::GemmSchedule schedule;
  std::vector<NodeWork> work;
  std::vector<bool> transposed_operands;
  std::set<std::string> scales;                           // scale_values()
  std::map<std::string, Tensor>* shape_values = nullptr;  // compile()'s trace takes them
  std::map<std::string, Shape>* view_shapes = nullptr;    // and these
};

Session::Session(const Graph& graph, Backend* accelerator)
    : graph_(graph), accelerator_(accelerator), state_(std::make_unique<State>()) {
  for (const auto& [name, tensor] : graph.constants) state_->constants.insert(&tensor);
  state_->work = node_work(graph);
  state_->transposed_operands = transposed_operands(graph);
  state_->scales = scale_values(graph);
}

Session::Session(const CompiledModel& model, Backend& accelerator)
    : Session(model.graph, &accelerator) {
  if (accelerator.config() != model.config) {
    throw std::invalid_argument("compiled for the " + model.config.name() + " core, not the " +
                                accelerator.config().name() + " core");
  }
  state_->compiled = &model;
  state_->schedule.compiled = &model.gemms;
  state_->schedule.compiled_top = model.image.size() + model.scratch_bytes;
}

Session::~Session() = default;

void Session::record(std::vector<ops::TracedGemm>& gemms, std::vector<std::string>& vector_nodes,
                     std::map<std::string, Tensor>& shape_values,
                     std::map<std::string, Shape>& view_shapes) {
  state_->schedule.recording = &gemms;
  state_->schedule.vector_nodes = &vector_nodes;
  state_->shape_values = &shape_values;
  state_->view_shapes = &view_shapes;
}

std::uint64_t Session::resident_bytes() const {
  return state_->compiled ? state_->compiled->image.size() : state_->weights.top();
}

std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs, Backend* accelerator,
                        std::vector<OpRun>* runs) {
  return Session(graph, accelerator).run(inputs, runs);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs, std::vector<OpRun>* runs) {
  const Graph& graph = graph_;
  if (inputs.size() != graph.inputs.size()) {
    throw std::invalid_argument(std::to_string(inputs.size()) + " inputs for a graph of " +
                                std::to_string(graph.inputs.size()));
  }
  std::map<std::string, const Tensor*> values;
  for (const auto& [name, tensor] : graph.constants) values[name] = &tensor;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string mismatch = input_mismatch(graph.inputs[i], inputs[i]);
    if (!mismatch.empty()) throw std::invalid_argument(mismatch);
    values[graph.inputs[i].name] = &inputs[i];
  }
  // The index of the last node that reads each computed tensor: it is freed after that node.
  std::map<std::string, std::size_t> last_use;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const std::string& name : graph.nodes[n].inputs) last_use[name] = n;
  }
  for (const ValueInfo& output : graph.outputs) last_use[output.name] = graph.nodes.size();
  std::map<std::string, Tensor> computed;
  ops::Context context{graph.opset, accelerator_, nullptr};
  context.constants = &state_->constants;
  context.weights = &state_->weights;
  ops::GemmSchedule& schedule = state_->schedule;
  if (schedule.recording || schedule.compiled) context.schedule = &schedule;
  schedule.next = 0;
  schedule.first_run = false;
  if (const CompiledModel* model = state_->compiled; model && !state_->image_written) {
    HostMemory& memory = accelerator_->memory();
    if (memory.size() < model->image.size()) memory.resize(model->image.size());
    memory.write_array(0, model->image);
    state_->image_written = schedule.first_run = true;
  }
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    ops::Inputs node_inputs;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        node_inputs.push_back(nullptr);
        continue;
      }
      const auto it = values.find(name);
      if (it == values.end()) ops::fail(node, "input \"" + name + "\" not computed");
      node_inputs.push_back(it->second);
    }
    // Values stored transposed go as they lie only to the nodes that take them so; any other
    // reader gets them laid out by the host.
    std::vector<Tensor> laid_out_inputs;
    laid_out_inputs.reserve(node_inputs.size() + 1);  // pointers into it stay valid
    std::optional<std::size_t> passed_on;  // the input a Reshape, Mul or Div takes stored so
    for (std::size_t i = 0; i < node_inputs.size(); ++i) {
      if (!node_inputs[i] || !node_inputs[i]->stored_transposed) continue;
      const std::optional<std::size_t> scale = scale_of(node, i);
      if (takes_stored_transposed(graph, node, i, state_->scales) &&
          (!scale || (node_inputs[*scale] && node_inputs[*scale]->size() == 1))) {
        if (!is_b_of_product(node, i)) passed_on = i;
        continue;
      }
      node_inputs[i] = &laid_out_inputs.emplace_back(laid_out(*node_inputs[i]));
    }
    OpRun figures;
    figures.node = node.label();
    figures.op = node.op;
    figures.work = state_->work[n];
    context.run = &figures;
    context.estimates = runs != nullptr;
    context.node = &node;
    // Shape arithmetic computes on shapes and constants: on the host, whatever its values' type
    // (a compiled model has it as constants).
    context.accelerator = figures.work == NodeWork::ShapeArithmetic ? nullptr : accelerator_;
    context.operand_transpose =
        state_->transposed_operands[n] && accelerator_ && accelerator_->config().vector_lanes > 0;
    std::vector<Tensor> outputs = evaluate(node, node_inputs, context);
    if (passed_on && !outputs.empty()) {
      // A Reshape keeps the values' layout where it keeps the last two axes; one that does not
      // reads them laid out by the host (a host step).
      const Shape& in = node_inputs[*passed_on]->shape;
      const Shape& out = outputs[0].shape;
      if (node.op == "Reshape" &&
          (out.size() < 2 || out[out.size() - 2] != in[in.size() - 2] || out.back() != in.back())) {
        node_inputs[*passed_on] = &laid_out_inputs.emplace_back(laid_out(*node_inputs[*passed_on]));
        outputs = evaluate(node, node_inputs, context);
        outputs[0].stored_transposed = false;
        figures.work = NodeWork::Values;
      } else {
        outputs[0].stored_transposed = true;
      }
    }
    if (runs) runs->push_back(figures);
    if (state_->view_shapes && figures.work == NodeWork::View &&
        state_->work[n] != NodeWork::View && !outputs.empty() && !outputs[0].stored_transposed) {
      (*state_->view_shapes)[node.name] = outputs[0].shape;
    }
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& name = node.outputs[i];
      if (state_->shape_values && figures.work == NodeWork::ShapeArithmetic && !name.empty()) {
        (*state_->shape_values)[name] = outputs[i];
      }
      if (name.empty() || !last_use.count(name)) continue;  // not wanted, or read by nothing
      Tensor& stored = computed[name] = std::move(outputs[i]);
      values[name] = &stored;
    }
    for (const std::string& name : node.inputs) {
      const auto it = last_use.find(name);
      if (it != last_use.end() && it->second == n && computed.count(name)) {
        values.erase(name);
        computed.erase(name);
      }
    }
  }
  if (schedule.compiled && schedule.next != schedule.compiled->size()) {
    throw std::runtime_error("the compiled model has " + std::to_string(schedule.compiled->size()) +
                             " GEMMs, the run took " + std::to_string(schedule.next));
  }
  std::vector<Tensor> results;
  for (const ValueInfo& output : graph.outputs) results.push_back(*values.at(output.name));
  return results;
}

}  // namespace tpu::graph
