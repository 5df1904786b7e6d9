#include "tpu/graph/executor.hpp"

#include <map>
#include <set>
#include <stdexcept>

#include "ops.hpp"
#include "resident_weights.hpp"

namespace tpu::graph {

std::string check_supported(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    if (!ops::table().count(node.op)) return node.label() + ": operator not supported";
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

namespace {

// The activation `node` computes when it is one a product's epilogue can take.
Epilogue epilogue_of(const Graph& graph, const Node& node) {
  if (node.op == "Relu") return Epilogue::Relu;
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

// Whether `node`'s products can take an epilogue: Conv and MatMul always, Gemm where alpha is 1
// and C, if any, is a bias (its B a constant, so that its columns are known).
bool takes_epilogue(const Graph& graph, const Node& node) {
  if (node.op == "Conv" || node.op == "MatMul") return true;
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

}  // namespace

std::size_t fuse_epilogues(Graph& graph) {
  std::map<std::string, std::size_t> readers;
  for (const Node& node : graph.nodes) {
    for (const std::string& name : node.inputs) ++readers[name];
  }
  for (const ValueInfo& output : graph.outputs) ++readers[output.name];
  std::map<std::string, std::size_t> producer;  // the node that computes each tensor
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const std::string& name : graph.nodes[n].outputs) producer[name] = n;
  }
  std::vector<bool> removed(graph.nodes.size(), false);
  std::size_t fused = 0;
  for (Node& activation : graph.nodes) {
    const Epilogue act = epilogue_of(graph, activation);
    if (act == Epilogue::None || activation.inputs.empty()) continue;
    const std::string& sums = activation.inputs[0];
    const auto it = producer.find(sums);
    if (it == producer.end() || readers[sums] != 1) continue;
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
  std::vector<Node> kept;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!removed[n]) kept.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(kept);
  return fused;
}

struct Session::State {
  std::set<const Tensor*> constants;
  ops::ResidentWeights weights;
};

Session::Session(const Graph& graph, Backend* accelerator)
    : graph_(graph), accelerator_(accelerator), state_(std::make_unique<State>()) {
  for (const auto& [name, tensor] : graph.constants) state_->constants.insert(&tensor);
}

Session::~Session() = default;

std::uint64_t Session::resident_bytes() const { return state_->weights.top(); }

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
    OpRun figures;
    figures.node = node.label();
    figures.op = node.op;
    context.run = &figures;
    context.node = &node;
    std::vector<Tensor> outputs = evaluate(node, node_inputs, context);
    if (runs) runs->push_back(figures);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& name = node.outputs[i];
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
  std::vector<Tensor> results;
  for (const ValueInfo& output : graph.outputs) results.push_back(*values.at(output.name));
  return results;
}

}  // namespace tpu::graph
