#include "tpu/graph/compiled.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ops.hpp"
#include "tpu/graph/executor.hpp"
#include "tpu/isa.hpp"
#include "tpu/model.hpp"

namespace tpu::graph {

namespace {

std::uint64_t align_up(std::uint64_t value) {
  return (value + kOperandAlign - 1) / kOperandAlign * kOperandAlign;
}

// The graph with every input's open first dimension fixed to `batch` (0 where none is open);
// `batched` receives which inputs had it open.
Graph with_batch(const Graph& graph, std::size_t& batch, std::vector<bool>& batched) {
  Graph fixed = graph;
  bool open = false;
  batched.assign(fixed.inputs.size(), false);
  for (std::size_t i = 0; i < fixed.inputs.size(); ++i) {
    ValueInfo& input = fixed.inputs[i];
    if (!input.ranked) {
      throw std::runtime_error("input \"" + input.name + "\" has no shape: it cannot be compiled");
    }
    for (std::size_t d = 0; d < input.shape.size(); ++d) {
      if (input.shape[d] >= 0) continue;
      if (d != 0) {
        throw std::runtime_error("input \"" + input.name + "\" leaves dimension " +
                                 std::to_string(d) + " open: only the batch (the first) may be");
      }
      input.shape[0] = static_cast<std::int64_t>(batch);
      batched[i] = open = true;
    }
  }
  if (!open) batch = 0;
  return fixed;
}

// A traced GEMM planned again for `config` and `placement`: a convolution's (plan_conv) or a
// product's (plan_gemm).
GemmPlan replan(const HardwareConfig& config, const GemmPlan& traced, const GemmSpec& spec,
                const GemmPlacement& placement = {}) {
  return traced.conv.empty() ? plan_gemm(config, spec, placement)
                             : plan_conv(config, spec, traced.conv, placement);
}

// Whether GEMM g's result goes into GEMM g + 1 as its A, untouched and read by nothing else: a
// link of a chain, for each GEMM but the last. Both are their nodes' only GEMM, of one whole K
// (no C) and of the same M, the first's N the second's K; the second node's A is the first's
// output, which nothing else reads (no other node, not the graph's outputs). And either both
// are bf16 products, the first's result fp32 or bf16 (the chain makes it bf16: the rounding the
// second product gives its A anyway), and the trace saw that result's buffer go in as the second
// product's A; or both are int8 products of QLinearMatMul, QGemm or MatMulInteger, whose
// kernels pass A's values as they are, the first requantised to int8 with the zero point the
// second takes off.
std::vector<bool> chain_links(const Graph& graph, const std::vector<ops::TracedGemm>& traced) {
  std::map<std::string, const Node*> nodes;
  for (const Node& node : graph.nodes) nodes[node.name] = &node;
  std::map<std::string, std::size_t> gemms_of, readers;
  for (const ops::TracedGemm& t : traced) ++gemms_of[t.gemm.node];
  for (const Node& node : graph.nodes) {
    for (const std::string& input : node.inputs) ++readers[input];
  }
  for (const ValueInfo& output : graph.outputs) ++readers[output.name];
  const auto passes_a_as_it_is = [](const Node& node) {
    return node.op == "QLinearMatMul" || node.op == "QGemm" || node.op == "MatMulInteger";
  };
  std::vector<bool> links(traced.size(), false);
  for (std::size_t g = 0; g + 1 < traced.size(); ++g) {
    const CompiledGemm& first = traced[g].gemm;
    const CompiledGemm& next = traced[g + 1].gemm;
    const GemmSpec& s = first.plan.spec;
    const GemmSpec& t = next.plan.spec;
    // A convolution's result rows are its wide rows, and its A the images: neither chains.
    if (first.node == next.node || gemms_of[first.node] != 1 || gemms_of[next.node] != 1 ||
        !first.plan.conv.empty() || !next.plan.conv.empty() || s.has_c || t.has_c || s.m != t.m ||
        s.n != t.k || s.int8() != t.int8()) {
      continue;
    }
    const Node& producer = *nodes.at(first.node);
    const Node& consumer = *nodes.at(next.node);
    const bool untouched = s.int8() ? s.out == OutType::Int8 &&
                                          t.input_zero_point == s.output_zero_point &&
                                          passes_a_as_it_is(producer) && passes_a_as_it_is(consumer)
                                    : (s.out == OutType::Fp32 || s.out == OutType::Bf16) &&
                                          traced[g].out != 0 && traced[g].out == traced[g + 1].a;
    links[g] = untouched && producer.outputs.size() == 1 && !consumer.inputs.empty() &&
               consumer.inputs[0] == producer.outputs[0] && readers[producer.outputs[0]] == 1;
  }
  return links;
}

// The most host memory one program's GEMMs of a group take with their operands: a group
// beyond it runs as several programs.
constexpr std::uint64_t kGroupBytes = std::uint64_t{64} << 20;

// Whether GEMM g and GEMM g + 1 are independent products of one products() call (a batched
// MatMul's matrices, a grouped convolution's groups), each of them the only GEMM of its product,
// that run in one program: a link of a group. A group's GEMMs together take at most kGroupBytes.
std::vector<bool> group_links(const HardwareConfig& config,
                              const std::vector<ops::TracedGemm>& traced) {
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> gemms_of_call;
  for (const ops::TracedGemm& t : traced) {
    if (t.group != 0) ++gemms_of_call[{t.group, t.call}];
  }
  std::vector<bool> links(traced.size(), false);
  std::uint64_t bytes = 0;  // the group's so far
  for (std::size_t g = 0; g < traced.size(); ++g) {
    const ops::TracedGemm& t = traced[g];
    bytes += replan(config, t.gemm.plan, t.gemm.plan.spec).memory_bytes;
    if (g + 1 == traced.size()) break;
    const ops::TracedGemm& next = traced[g + 1];
    links[g] =
        t.group != 0 && next.group == t.group && gemms_of_call[{t.group, t.call}] == 1 &&
        gemms_of_call[{next.group, next.call}] == 1 &&
        bytes + replan(config, next.gemm.plan, next.gemm.plan.spec).memory_bytes <= kGroupBytes;
    if (!links[g]) bytes = 0;
  }
  return links;
}

}  // namespace

// The float weights of products (Conv, NhwcConv, Gemm, MatMul: their input 1, one matrix or a
// convolution's filters) that every GEMM of their node finds resident in the image, and that
// nothing else reads: their values go (Tensor::values_on_core), which the host's kernels never
// read where the weights are resident, and the file holds no fp32 copy of them.
void keep_weights_on_core(CompiledModel& model) {
  std::map<std::string, bool> resident;  // a node's GEMMs: every one's B resident
  for (const CompiledGemm& gemm : model.gemms) {
    const auto [it, fresh] = resident.emplace(gemm.node, true);
    it->second = it->second && gemm.plan.weights_resident;
  }
  std::map<std::string, bool> weights;  // each product's weight: whether every reader is so
  for (const Node& node : model.graph.nodes) {
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      const auto constant = model.graph.constants.find(name);
      if (constant == model.graph.constants.end()) continue;
      const Tensor& w = constant->second;
      const auto it = resident.find(node.name);
      const bool conv = node.op == "Conv" || node.op == "NhwcConv";
      // MatMul's and Gemm's B one matrix: its parts' offsets are all 0.
      const bool weight = i == 1 && it != resident.end() && it->second && w.is_float() &&
                          !w.stored_transposed &&
                          (conv || ((node.op == "MatMul" || node.op == "Gemm") && w.rank() == 2));
      const auto [entry, fresh] = weights.emplace(name, weight);
      entry->second = entry->second && weight;
    }
  }
  for (const ValueInfo& output : model.graph.outputs) weights[output.name] = false;
  for (const auto& [name, only_weight] : weights) {
    if (!only_weight) continue;
    Tensor& w = model.graph.constants.at(name);
    w.floats = {};
    w.values_on_core = true;
  }
}

CompiledModel compile(const Graph& graph, const HardwareConfig& config, std::size_t batch) {
  if (batch == 0) throw std::runtime_error("a batch of 0 inputs");
  CompiledModel model;
  model.config = config;
  model.batch = batch;
  model.graph = with_batch(graph, model.batch, model.batched);
  // The trace: the graph on zeros, its products planned over the weights as they are placed.
  FunctionalModel trace_core(config, 0);
  std::vector<ops::TracedGemm> traced;
  std::map<std::string, Tensor> shape_values;
  std::map<std::string, Shape> view_shapes;
  {
    Session trace(model.graph, &trace_core);
    trace.record(traced, model.vector_nodes, shape_values, view_shapes);
    std::vector<Tensor> zeros;
    for (const ValueInfo& input : model.graph.inputs) zeros.emplace_back(input.dtype, input.shape);
    std::vector<OpRun> runs;
    trace.run(zeros, &runs);
    for (std::size_t n = 0; n < runs.size(); ++n) {  // a run a node, in the graph's order
      if (runs[n].host_arithmetic) model.host_arithmetic_nodes.push_back(model.graph.nodes[n].name);
    }
  }
  // The shape arithmetic, fixed by the batch, becomes the constants it computed.
  const std::vector<NodeWork> work = node_work(model.graph);
  std::vector<Node> kept;
  for (std::size_t n = 0; n < model.graph.nodes.size(); ++n) {
    if (work[n] != NodeWork::ShapeArithmetic) {
      kept.push_back(std::move(model.graph.nodes[n]));
      continue;
    }
    for (const std::string& name : model.graph.nodes[n].outputs) {
      const auto value = shape_values.find(name);
      if (value != shape_values.end()) model.graph.constants[name] = std::move(value->second);
    }
  }
  model.graph.nodes = std::move(kept);
  // The nodes the batch's shapes make views become Reshapes to their shapes (allowzero: a
  // dimension of 0 is one), as of opset 14, which has allowzero.
  for (Node& node : model.graph.nodes) {
    const auto view = view_shapes.find(node.name);
    if (view == view_shapes.end() || model.graph.opset < 14) continue;
    const std::string shape = node.name + "::shape";
    model.graph.constants[shape] =
        Tensor::of_ints({static_cast<std::int64_t>(view->second.size())},
                        std::vector<std::int64_t>(view->second.begin(), view->second.end()));
    node.op = "Reshape";
    node.inputs = {node.inputs[0], shape};
    node.attributes = {{"allowzero", Attribute::of_int(1)}};
  }
  const std::vector<bool> chained = chain_links(model.graph, traced);
  const std::vector<bool> grouped = group_links(config, traced);
  // Each GEMM runs in the next one's program where either links them.
  std::vector<bool> links(traced.size());
  for (std::size_t g = 0; g < traced.size(); ++g) links[g] = chained[g] || grouped[g];
  // Each GEMM planned over the final layout: its weights where the trace placed them, its
  // operands from `base` up (in a chain or group, above those of the GEMMs before it in the
  // program; a chained GEMM's A their last's result). A bf16 chain's GEMMs but its last write
  // bf16.
  HostMemory& memory = trace_core.memory();
  const auto plan_all = [&](std::uint64_t base) {
    std::vector<GemmPlan> plans;
    for (std::size_t g = 0; g < traced.size(); ++g) {
      const GemmPlan& traced_plan = traced[g].gemm.plan;
      GemmSpec spec = traced_plan.spec;
      if (chained[g] && !spec.int8()) spec.out = OutType::Bf16;
      GemmPlacement placement;
      placement.base = base;
      if (traced_plan.weights_resident) placement.weights_addr = traced_plan.b_addr;
      if (g > 0 && links[g - 1]) {
        // Above the program's operands so far: the host writes them all before it runs.
        placement.base = plans.back().prog_addr;
        if (chained[g - 1]) placement.input_addr = plans.back().out_addr;
      }
      plans.push_back(replan(config, traced_plan, spec, placement));
    }
    return plans;
  };
  // The programs' lengths do not depend on where the operands lie: planned once above the
  // weights for them, then again above the programs, where the operands go.
  std::vector<GemmPlan> plans = plan_all(align_up(memory.size()));
  // One program a chain or group (its GEMMs' programs one after the other, without the HALTs
  // between), at its last GEMM.
  std::uint64_t top = align_up(memory.size());
  std::vector<std::uint64_t> program_addr(plans.size(), 0);
  std::uint64_t chain_instructions = 0;
  for (std::size_t g = 0; g < plans.size(); ++g) {
    chain_instructions += plans[g].program.size() - (links[g] ? 1 : 0);
    if (links[g]) continue;
    program_addr[g] = top;
    top = align_up(top + chain_instructions * isa::kInstrBytes);
    chain_instructions = 0;
  }
  const std::uint64_t scratch = top;
  if (scratch > (std::uint64_t{1} << 32)) {
    throw std::runtime_error("the weights and programs do not fit in 32-bit host memory");
  }
  memory.resize(scratch);
  const std::vector<GemmPlan> sized = std::move(plans);
  plans = plan_all(scratch);
  std::vector<isa::Instruction> chain_program;
  for (std::size_t g = 0; g < plans.size(); ++g) {
    GemmPlan& plan = plans[g];
    if (plan.program.size() != sized[g].program.size()) {
      throw std::logic_error("a GEMM's program changed its length with its operands' addresses");
    }
    if (plan.program.empty() || plan.program.back().opcode() != isa::Opcode::Halt) {
      throw std::logic_error("a GEMM's program does not end in HALT");
    }
    // The operands end where the plan would have put its program.
    model.scratch_bytes = std::max<std::uint64_t>(model.scratch_bytes, plan.prog_addr - scratch);
    plan.memory_bytes = plan.prog_addr;
    plan.program_resident = true;
    chain_program.insert(chain_program.end(), plan.program.begin(),
                         plan.program.end() - (links[g] ? 1 : 0));
    if (links[g]) {
      plan.program.clear();
      plan.prog_addr = 0;
    } else {
      plan.program = std::move(chain_program);
      chain_program.clear();
      plan.prog_addr = static_cast<std::uint32_t>(program_addr[g]);
      memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
    }
    model.gemms.push_back(
        {traced[g].gemm.node, traced[g].gemm.weight_bytes, links[g], chained[g], std::move(plan)});
  }
  model.image.assign(memory.data(), memory.data() + scratch);
  keep_weights_on_core(model);
  return model;
}

// ---------------------------------------------------------------------------------------------
// The file.

namespace {

using Json = nlohmann::json;

constexpr char kMagic[8] = {'T', 'P', 'U', 'M', 'O', 'D', 'L', '1'};
constexpr std::size_t kPrefixBytes = sizeof(kMagic) + 2 * 8 + 4;

constexpr DType kDTypes[] = {DType::Float32, DType::Int64, DType::Int32,
                             DType::Int8,    DType::UInt8, DType::Bool};

DType dtype_named(const std::string& name) {
  for (const DType type : kDTypes) {
    if (name == dtype_name(type)) return type;
  }
  throw std::runtime_error("unknown element type \"" + name + "\"");
}

// Bytes of one element in the file: the type's width.
std::size_t element_bytes(DType type) {
  switch (type) {
    case DType::Float32:
    case DType::Int32:
      return 4;
    case DType::Int64:
      return 8;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      break;
  }
  return 1;
}

void put_le(std::vector<std::uint8_t>& out, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i)
    out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

std::uint64_t get_le(const std::uint8_t* in, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i) value |= std::uint64_t{in[i]} << (8 * i);
  return value;
}

// The data section as it is written: every tensor, program and the image, each at an offset
// the header gives.
class DataWriter {
 public:
  Json add(const std::vector<std::uint8_t>& bytes) {
    const Json where = {{"offset", data_.size()}, {"bytes", bytes.size()}};
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    return where;
  }
  Json tensor(const Tensor& t) {
    if (t.values_on_core) {
      return {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"values_on_core", true}};
    }
    std::vector<std::uint8_t> bytes;
    const std::size_t width = element_bytes(t.dtype);
    bytes.reserve(t.size() * width);
    for (std::size_t i = 0; i < t.size(); ++i) {
      std::uint64_t bits = 0;
      if (t.is_float()) {
        std::uint32_t word = 0;
        std::memcpy(&word, &t.floats[i], sizeof(word));
        bits = word;
      } else {
        bits = static_cast<std::uint64_t>(t.ints[i]);
      }
      put_le(bytes, bits, width);
    }
    Json json = add(bytes);
    json["dtype"] = dtype_name(t.dtype);
    json["shape"] = t.shape;
    return json;
  }
  const std::vector<std::uint8_t>& data() const { return data_; }

 private:
  std::vector<std::uint8_t> data_;
};

// The data section as it is read: each range checked against its size.
class DataReader {
 public:
  explicit DataReader(const std::vector<std::uint8_t>& data) : data_(data) {}

  const std::uint8_t* range(const Json& where, std::uint64_t& bytes) const {
    const auto offset = where.at("offset").get<std::uint64_t>();
    bytes = where.at("bytes").get<std::uint64_t>();
    if (offset > data_.size() || bytes > data_.size() - offset) {
      throw std::runtime_error("a range of " + std::to_string(bytes) + " bytes at " +
                               std::to_string(offset) + " outside the data");
    }
    return data_.data() + offset;
  }
  std::vector<std::uint8_t> bytes(const Json& where) const {
    std::uint64_t count = 0;
    const std::uint8_t* begin = range(where, count);
    return {begin, begin + count};
  }
  Tensor tensor(const Json& json) const {
    Shape shape = json.at("shape").get<Shape>();
    for (const std::int64_t d : shape) {
      if (d < 0) throw std::runtime_error("a tensor of shape " + shape_text(shape));
    }
    if (json.value("values_on_core", false)) {
      // A product's weights that lie in the image alone: the type and shape, no values.
      Tensor t;
      t.dtype = dtype_named(json.at("dtype").get<std::string>());
      if (!t.is_float()) throw std::runtime_error("weights on the core that are not float");
      t.shape = std::move(shape);
      t.values_on_core = true;
      return t;
    }
    Tensor t(dtype_named(json.at("dtype").get<std::string>()), std::move(shape));
    const std::size_t width = element_bytes(t.dtype);
    std::uint64_t count = 0;
    const std::uint8_t* in = range(json, count);
    if (count != t.size() * width) {
      throw std::runtime_error("a tensor of " + shape_text(t.shape) + " in " +
                               std::to_string(count) + " bytes");
    }
    for (std::size_t i = 0; i < t.size(); ++i, in += width) {
      const std::uint64_t bits = get_le(in, width);
      if (t.is_float()) {
        const auto word = static_cast<std::uint32_t>(bits);
        std::memcpy(&t.floats[i], &word, sizeof(word));
      } else if (t.dtype == DType::Int64) {
        t.ints[i] = static_cast<std::int64_t>(bits);
      } else if (t.dtype == DType::Int32) {
        t.ints[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
      } else if (t.dtype == DType::Int8) {
        t.ints[i] = static_cast<std::int8_t>(static_cast<std::uint8_t>(bits));
      } else {
        t.ints[i] = static_cast<std::int64_t>(bits);
      }
    }
    return t;
  }

 private:
  const std::vector<std::uint8_t>& data_;
};

constexpr const char* kAttributeKinds[] = {"int",    "float",   "string", "ints",
                                           "floats", "strings", "tensor"};
constexpr const char* kEpilogues[] = {"none", "relu", "relu6", "sigmoid", "tanh", "gelu"};

// An enum's value from its name in a table of names in the enum's order.
template <typename Enum, std::size_t N>
Enum enum_named(const char* const (&names)[N], const std::string& name, const char* what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<Enum>(i);
  }
  throw std::runtime_error(std::string("unknown ") + what + " \"" + name + "\"");
}

Json attribute_json(const Attribute& a, DataWriter& data) {
  Json json = {{"kind", kAttributeKinds[static_cast<std::size_t>(a.kind)]}};
  switch (a.kind) {
    case Attribute::Kind::Int:
      json["value"] = a.i;
      break;
    case Attribute::Kind::Float:
      json["value"] = a.f;
      break;
    case Attribute::Kind::String:
      json["value"] = a.s;
      break;
    case Attribute::Kind::Ints:
      json["value"] = a.ints;
      break;
    case Attribute::Kind::Floats:
      json["value"] = a.floats;
      break;
    case Attribute::Kind::Strings:
      json["value"] = a.strings;
      break;
    case Attribute::Kind::Tensor:
      json["value"] = data.tensor(*a.tensor);
      break;
  }
  return json;
}

Attribute attribute_from(const Json& json, const DataReader& data) {
  Attribute a;
  a.kind = enum_named<Attribute::Kind>(kAttributeKinds, json.at("kind").get<std::string>(),
                                       "attribute kind");
  const Json& value = json.at("value");
  switch (a.kind) {
    case Attribute::Kind::Int:
      a.i = value.get<std::int64_t>();
      break;
    case Attribute::Kind::Float:
      a.f = value.get<float>();
      break;
    case Attribute::Kind::String:
      a.s = value.get<std::string>();
      break;
    case Attribute::Kind::Ints:
      a.ints = value.get<std::vector<std::int64_t>>();
      break;
    case Attribute::Kind::Floats:
      a.floats = value.get<std::vector<float>>();
      break;
    case Attribute::Kind::Strings:
      a.strings = value.get<std::vector<std::string>>();
      break;
    case Attribute::Kind::Tensor:
      a.tensor = data.tensor(value);
      break;
  }
  return a;
}

Json value_info_json(const ValueInfo& info) {
  return {{"name", info.name},
          {"dtype", dtype_name(info.dtype)},
          {"shape", info.shape},
          {"ranked", info.ranked}};
}

ValueInfo value_info_from(const Json& json) {
  return {json.at("name").get<std::string>(), dtype_named(json.at("dtype").get<std::string>()),
          json.at("shape").get<Shape>(), json.at("ranked").get<bool>()};
}

Json graph_json(const Graph& graph, DataWriter& data) {
  Json json = {{"name", graph.name}, {"opset", graph.opset}};
  for (const ValueInfo& info : graph.inputs) json["inputs"].push_back(value_info_json(info));
  for (const ValueInfo& info : graph.outputs) json["outputs"].push_back(value_info_json(info));
  json["constants"] = Json::object();
  for (const auto& [name, tensor] : graph.constants) json["constants"][name] = data.tensor(tensor);
  json["nodes"] = Json::array();
  for (const Node& node : graph.nodes) {
    Json n = {{"op", node.op},
              {"name", node.name},
              {"inputs", node.inputs},
              {"outputs", node.outputs},
              {"epilogue", kEpilogues[static_cast<std::size_t>(node.epilogue)]},
              {"bf16_result", node.bf16_result}};
    n["attributes"] = Json::object();
    for (const auto& [name, attribute] : node.attributes) {
      n["attributes"][name] = attribute_json(attribute, data);
    }
    json["nodes"].push_back(std::move(n));
  }
  return json;
}

Graph graph_from(const Json& json, const DataReader& data) {
  Graph graph;
  graph.name = json.at("name").get<std::string>();
  graph.opset = json.at("opset").get<int>();
  for (const Json& info : json.value("inputs", Json::array())) {
    graph.inputs.push_back(value_info_from(info));
  }
  for (const Json& info : json.value("outputs", Json::array())) {
    graph.outputs.push_back(value_info_from(info));
  }
  for (const auto& [name, tensor] : json.at("constants").items()) {
    graph.constants[name] = data.tensor(tensor);
  }
  for (const Json& n : json.at("nodes")) {
    Node node;
    node.op = n.at("op").get<std::string>();
    node.name = n.at("name").get<std::string>();
    node.inputs = n.at("inputs").get<std::vector<std::string>>();
    node.outputs = n.at("outputs").get<std::vector<std::string>>();
    node.epilogue =
        enum_named<Epilogue>(kEpilogues, n.at("epilogue").get<std::string>(), "epilogue");
    node.bf16_result = n.at("bf16_result").get<bool>();
    for (const auto& [name, attribute] : n.at("attributes").items()) {
      node.attributes[name] = attribute_from(attribute, data);
    }
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

Json spec_json(const GemmSpec& s) {
  return {{"m", s.m},
          {"k", s.k},
          {"n", s.n},
          {"has_c", s.has_c},
          {"has_bias", s.has_bias},
          {"act", static_cast<unsigned>(s.act)},
          {"alpha", s.alpha},
          {"out", static_cast<unsigned>(s.out)},
          {"in", static_cast<unsigned>(s.in)},
          {"input_zero_point", s.input_zero_point},
          {"output_zero_point", s.output_zero_point},
          {"clamp_lo", s.clamp_lo},
          {"clamp_hi", s.clamp_hi},
          {"b_transposed", s.b_transposed}};
}

GemmSpec spec_from(const Json& json) {
  GemmSpec s;
  s.m = json.at("m").get<std::uint32_t>();
  s.k = json.at("k").get<std::uint32_t>();
  s.n = json.at("n").get<std::uint32_t>();
  s.has_c = json.at("has_c").get<bool>();
  s.has_bias = json.at("has_bias").get<bool>();
  s.act = static_cast<isa::Func>(json.at("act").get<std::uint8_t>());
  s.alpha = json.at("alpha").get<std::uint16_t>();
  const auto out = json.at("out").get<unsigned>();
  const auto in = json.at("in").get<unsigned>();
  if (out > static_cast<unsigned>(OutType::Int8) || in > static_cast<unsigned>(InType::Int8)) {
    throw std::runtime_error("a GEMM's types out of range");
  }
  s.out = static_cast<OutType>(out);
  s.in = static_cast<InType>(in);
  s.input_zero_point = json.at("input_zero_point").get<int>();
  s.output_zero_point = json.at("output_zero_point").get<int>();
  s.clamp_lo = json.at("clamp_lo").get<int>();
  s.clamp_hi = json.at("clamp_hi").get<int>();
  s.b_transposed = json.value("b_transposed", false);
  return s;
}

// A convolution's geometry (null for a GEMM).
Json conv_json(const ConvGeometry& g) {
  if (g.empty()) return nullptr;
  return {{"batch", g.batch},
          {"channels", g.channels},
          {"height", g.height},
          {"width", g.width},
          {"kernel", {g.kernel_h, g.kernel_w}},
          {"strides", {g.stride_h, g.stride_w}},
          {"dilations", {g.dilation_h, g.dilation_w}},
          {"pads", {g.pad_top, g.pad_left, g.pad_bottom, g.pad_right}}};
}

ConvGeometry conv_from(const Json& json) {
  ConvGeometry g;
  if (json.is_null()) return g;
  const auto pair = [&](const char* key, std::uint32_t& first, std::uint32_t& second) {
    const auto values = json.at(key).get<std::vector<std::uint32_t>>();
    if (values.size() != 2) throw std::runtime_error(std::string("a convolution's ") + key);
    first = values[0];
    second = values[1];
  };
  g.batch = json.at("batch").get<std::uint32_t>();
  g.channels = json.at("channels").get<std::uint32_t>();
  g.height = json.at("height").get<std::uint32_t>();
  g.width = json.at("width").get<std::uint32_t>();
  pair("kernel", g.kernel_h, g.kernel_w);
  pair("strides", g.stride_h, g.stride_w);
  pair("dilations", g.dilation_h, g.dilation_w);
  const auto pads = json.at("pads").get<std::vector<std::uint32_t>>();
  if (pads.size() != 4) throw std::runtime_error("a convolution's pads");
  g.pad_top = pads[0];
  g.pad_left = pads[1];
  g.pad_bottom = pads[2];
  g.pad_right = pads[3];
  return g;
}

Json gemm_json(const CompiledGemm& gemm, DataWriter& data) {
  const GemmPlan& p = gemm.plan;
  return {{"node", gemm.node},
          {"weight_bytes", gemm.weight_bytes},
          {"spec", spec_json(p.spec)},
          {"k_pad", p.k_pad},
          {"n_pad", p.n_pad},
          {"block_rows", p.block_rows},
          {"block_first", p.block_first},
          {"prog_addr", p.prog_addr},
          {"a_addr", p.a_addr},
          {"b_addr", p.b_addr},
          {"c_addr", p.c_addr},
          {"bias_addr", p.bias_addr},
          {"out_addr", p.out_addr},
          {"memory_bytes", p.memory_bytes},
          {"weights_resident", p.weights_resident},
          {"input_resident", p.input_resident},
          {"runs_with_next", gemm.runs_with_next},
          {"result_kept", gemm.result_kept},
          {"conv", conv_json(p.conv)},
          {"a_span", p.a_span},
          {"program", data.add(isa::encode_program(p.program))}};
}

CompiledGemm gemm_from(const Json& json, const DataReader& data, const HardwareConfig& config) {
  CompiledGemm gemm;
  gemm.node = json.at("node").get<std::string>();
  gemm.weight_bytes = json.at("weight_bytes").get<std::uint64_t>();
  GemmPlan& p = gemm.plan;
  p.spec = spec_from(json.at("spec"));
  p.config = config;
  p.k_pad = json.at("k_pad").get<std::uint32_t>();
  p.n_pad = json.at("n_pad").get<std::uint32_t>();
  p.block_rows = json.at("block_rows").get<std::uint32_t>();
  p.block_first = json.at("block_first").get<std::vector<std::uint32_t>>();
  p.prog_addr = json.at("prog_addr").get<std::uint32_t>();
  p.a_addr = json.at("a_addr").get<std::uint32_t>();
  p.b_addr = json.at("b_addr").get<std::uint32_t>();
  p.c_addr = json.at("c_addr").get<std::uint32_t>();
  p.bias_addr = json.at("bias_addr").get<std::uint32_t>();
  p.out_addr = json.at("out_addr").get<std::uint32_t>();
  p.memory_bytes = json.at("memory_bytes").get<std::size_t>();
  p.weights_resident = json.at("weights_resident").get<bool>();
  p.input_resident = json.at("input_resident").get<bool>();
  gemm.runs_with_next = json.at("runs_with_next").get<bool>();
  gemm.result_kept = json.at("result_kept").get<bool>();
  p.conv = conv_from(json.at("conv"));
  p.a_span = json.at("a_span").get<std::uint32_t>();
  p.program_resident = true;
  try {
    p.program = isa::decode_program(data.bytes(json.at("program")));
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(std::string("a GEMM's program: ") + error.what());
  }
  return gemm;
}

std::uint32_t crc_of(const std::string& header, const std::vector<std::uint8_t>& data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(header.data()), static_cast<uInt>(header.size()));
  // zlib takes at most 4 GiB a call.
  for (std::size_t done = 0; done < data.size();) {
    const std::size_t part = std::min<std::size_t>(data.size() - done, 1u << 30);
    crc = crc32(crc, data.data() + done, static_cast<uInt>(part));
    done += part;
  }
  return static_cast<std::uint32_t>(crc);
}

}  // namespace

std::string compiled_file(const CompiledModel& model) {
  DataWriter data;
  Json header = {{"format", "opentpu compiled model"},
                 {"core", model.config.name()},
                 {"batch", model.batch},
                 {"batched_inputs", model.batched},
                 {"scratch_bytes", model.scratch_bytes},
                 {"vector_nodes", model.vector_nodes},
                 {"host_arithmetic_nodes", model.host_arithmetic_nodes}};
  header["graph"] = graph_json(model.graph, data);
  header["image"] = data.add(model.image);
  header["gemms"] = Json::array();
  for (const CompiledGemm& gemm : model.gemms) header["gemms"].push_back(gemm_json(gemm, data));
  const std::string text = header.dump();
  std::vector<std::uint8_t> prefix(kMagic, kMagic + sizeof(kMagic));
  put_le(prefix, text.size(), 8);
  put_le(prefix, data.data().size(), 8);
  put_le(prefix, crc_of(text, data.data()), 4);
  std::string file(prefix.begin(), prefix.end());
  file += text;
  file.append(data.data().begin(), data.data().end());
  return file;
}

bool is_compiled_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kMagic)] = {};
  in.read(magic, sizeof(magic));
  return in && std::memcmp(magic, kMagic, sizeof(kMagic)) == 0;
}

CompiledModel read_compiled(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  const std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
  if (file.size() < kPrefixBytes || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) {
    throw std::runtime_error(path + ": not a compiled model (tpu compile writes them)");
  }
  const std::uint8_t* prefix = file.data() + sizeof(kMagic);
  const std::uint64_t header_bytes = get_le(prefix, 8);
  const std::uint64_t data_bytes = get_le(prefix + 8, 8);
  const auto crc = static_cast<std::uint32_t>(get_le(prefix + 16, 4));
  const std::uint64_t body = file.size() - kPrefixBytes;
  if (header_bytes > body || data_bytes != body - header_bytes) {
    throw std::runtime_error(path + ": truncated or extended (" + std::to_string(file.size()) +
                             " bytes, the prefix says " +
                             std::to_string(kPrefixBytes + header_bytes + data_bytes) + ")");
  }
  const auto header_begin = file.begin() + static_cast<std::ptrdiff_t>(kPrefixBytes);
  const auto data_begin = header_begin + static_cast<std::ptrdiff_t>(header_bytes);
  const std::string text(header_begin, data_begin);
  const std::vector<std::uint8_t> data(data_begin, file.end());
  if (crc_of(text, data) != crc) throw std::runtime_error(path + ": corrupt (its CRC-32 differs)");
  try {
    const Json header = Json::parse(text);
    CompiledModel model;
    const std::string core = header.at("core").get<std::string>();
    const HardwareConfig* config = find_core_config(core);
    if (!config) throw std::runtime_error("compiled for the " + core + " core, unknown here");
    model.config = *config;
    model.batch = header.at("batch").get<std::size_t>();
    model.scratch_bytes = header.at("scratch_bytes").get<std::uint64_t>();
    model.vector_nodes = header.at("vector_nodes").get<std::vector<std::string>>();
    model.host_arithmetic_nodes =
        header.at("host_arithmetic_nodes").get<std::vector<std::string>>();
    const DataReader reader(data);
    model.graph = graph_from(header.at("graph"), reader);
    model.batched = header.at("batched_inputs").get<std::vector<bool>>();
    if (model.batched.size() != model.graph.inputs.size()) {
      throw std::runtime_error("batched_inputs has " + std::to_string(model.batched.size()) +
                               " entries for " + std::to_string(model.graph.inputs.size()) +
                               " inputs");
    }
    model.image = reader.bytes(header.at("image"));
    for (const Json& gemm : header.at("gemms")) {
      model.gemms.push_back(gemm_from(gemm, reader, model.config));
    }
    if (const std::string order = check_order(model.graph); !order.empty()) {
      throw std::runtime_error(order);
    }
    for (const Node& node : model.graph.nodes) {
      if (!ops::table().count(node.op))
        throw std::runtime_error(node.label() + ": unknown operator");
    }
    return model;
  } catch (const Json::exception& error) {
    throw std::runtime_error(path + ": malformed header: " + error.what());
  } catch (const std::runtime_error& error) {
    throw std::runtime_error(path + ": " + error.what());
  }
}

}  // namespace tpu::graph
