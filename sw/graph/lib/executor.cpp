#include "tpu/graph/executor.hpp"

#include <map>
#include <stdexcept>

#include "ops.hpp"

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

std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs, Backend* accelerator,
                        std::vector<OpRun>* runs) {
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
  ops::Context context{graph.opset, accelerator, nullptr};
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
