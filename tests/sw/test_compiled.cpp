// Compiled models (tpu/graph/compiled.hpp): a graph compiled for one core and batch size runs
// the bits of a session of the graph itself, its image written once and its programs never
// again; the file keeps every part of it and refuses to be read truncated or corrupt.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tpu/compiler.hpp"
#include "tpu/graph/compiled.hpp"
#include "tpu/graph/executor.hpp"
#include "tpu/model.hpp"

namespace tpu::graph {
namespace {

Node node(std::string name, std::string op, std::vector<std::string> inputs,
          std::vector<std::string> outputs) {
  Node n;
  n.op = std::move(op);
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// The 4x4 core with the int8 datapath of this build's named cores.
const HardwareConfig& int8_core() {
  return *find_core_config("4x4_m1a1");
}

// Values in [-1, 1] and int8 values from a fixed sequence.
class Values {
 public:
  float real() { return static_cast<float>(next() % 2001) / 1000.0f - 1.0f; }
  // A float tensor of such values.
  Tensor tensor(const Shape& shape) {
    std::vector<float> v(static_cast<std::size_t>(element_count(shape)));
    for (float& e : v) e = real();
    return Tensor::of_floats(shape, v);
  }
  std::int64_t int8() { return static_cast<std::int64_t>(next() % 256) - 128; }

 private:
  std::uint32_t next() {
    state_ = state_ * 1664525u + 1013904223u;
    return state_ >> 8;
  }
  std::uint32_t state_ = 2024;
};

// Every kind of product the core runs, batch first: a Gemm with a bias and a fused Relu whose K
// is split into several GEMMs; an int8 QLinearMatMul; a product of two activations (its B
// written each run); a host step between them.
Graph mixed_graph(std::int64_t k) {
  Values values;
  Graph g;
  g.name = "mixed";
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, k}}, {"xq", DType::Int8, {-1, 8}}};
  g.outputs = {{"y", DType::Float32, {}}, {"yq", DType::Int8, {}}, {"square", DType::Float32, {}}};
  std::vector<float> w(static_cast<std::size_t>(k) * 6), bias(6);
  for (float& v : w) v = values.real();
  for (float& v : bias) v = values.real();
  std::vector<std::int64_t> wq(8 * 5);
  for (std::int64_t& v : wq) v = values.int8();
  g.constants["w"] = Tensor::of_floats({k, 6}, w);
  g.constants["b"] = Tensor::of_floats({6}, bias);
  g.constants["wq"] = Tensor::of_ints({8, 5}, wq, DType::Int8);
  g.constants["s"] = Tensor::of_floats({}, {0.02f});
  g.constants["ys"] = Tensor::of_floats({}, {0.25f});
  g.constants["xz"] = Tensor::of_ints({}, {3}, DType::Int8);
  g.constants["z"] = Tensor::of_ints({}, {0}, DType::Int8);
  g.constants["yz"] = Tensor::of_ints({}, {-4}, DType::Int8);
  Node gemm = node("gemm", "Gemm", {"x", "w", "b"}, {"y"});
  gemm.epilogue = Epilogue::Relu;
  Node transpose = node("transpose", "Transpose", {"y"}, {"yt"});
  transpose.attributes["perm"].kind = Attribute::Kind::Ints;
  transpose.attributes["perm"].ints = {1, 0};
  g.nodes = {
      gemm, node("qmatmul", "QLinearMatMul", {"xq", "s", "xz", "wq", "s", "z", "ys", "yz"}, {"yq"}),
      transpose, node("square", "MatMul", {"y", "yt"}, {"square"})};
  return g;
}

std::vector<Tensor> mixed_inputs(std::int64_t batch, std::int64_t k, int seed) {
  Values values;
  for (int i = 0; i < seed; ++i) values.real();
  std::vector<float> x(static_cast<std::size_t>(batch * k));
  for (float& v : x) v = values.real();
  std::vector<std::int64_t> xq(static_cast<std::size_t>(batch * 8));
  for (std::int64_t& v : xq) v = values.int8();
  return {Tensor::of_floats({batch, k}, x), Tensor::of_ints({batch, 8}, xq, DType::Int8)};
}

// A temporary file, removed with it.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               (name + "." + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                "." + std::to_string(reinterpret_cast<std::uintptr_t>(this))))
                  .string()) {}
  ~TemporaryFile() { std::remove(path_.c_str()); }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::string& path() const { return path_; }
  void write(const std::string& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::string path_;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.ints == b.ints &&
         a.floats.size() == b.floats.size() &&
         std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * sizeof(float)) == 0;
}

// Read back from its file, the compiled model runs run after run the bits a session of the graph
// itself gives; its image (weights, programs) is written on the first run alone, and its
// programs, resident, never cross the bus again.
TEST(CompiledModel, RunsTheGraphsBitsWithWeightsAndProgramsResident) {
  GemmSpec spec;
  spec.m = 2;
  spec.n = 6;
  const auto k = static_cast<std::int64_t>(max_gemm_k(int8_core(), spec) * 5 / 2);
  const Graph graph = mixed_graph(k);
  TemporaryFile file("mixed.tpu");
  file.write(compiled_file(compile(graph, int8_core(), 2)));
  ASSERT_TRUE(is_compiled_model(file.path()));
  const CompiledModel model = read_compiled(file.path());
  EXPECT_EQ(model.batch, 2u);
  EXPECT_EQ(model.graph.inputs[0].shape, (Shape{2, k}));
  EXPECT_EQ(model.batched, (std::vector<bool>{true, true}));
  // The Gemm's K in 3 GEMMs, the int8 product, and the square (2 rows of 2 columns) in one.
  ASSERT_EQ(model.gemms.size(), 5u);
  for (const CompiledGemm& gemm : model.gemms) {
    EXPECT_TRUE(gemm.plan.program_resident);
    EXPECT_EQ(gemm.plan.weights_resident, gemm.node != "square") << gemm.node;
    EXPECT_LT(gemm.plan.prog_addr, model.image.size());
  }

  FunctionalModel compiled_core(int8_core(), 0), graph_core(int8_core(), 0);
  Session compiled(model, compiled_core);
  Session session(graph, &graph_core);
  for (int run_index = 0; run_index < 3; ++run_index) {
    const std::vector<Tensor> inputs = mixed_inputs(2, k, run_index);
    std::vector<OpRun> compiled_runs, runs;
    const std::vector<Tensor> y = compiled.run(inputs, &compiled_runs);
    const std::vector<Tensor> expected = session.run(inputs, &runs);
    ASSERT_EQ(y.size(), 3u);
    for (std::size_t o = 0; o < y.size(); ++o) {
      EXPECT_TRUE(same_bits(y[o], expected[o])) << "output " << o << ", run " << run_index;
    }
    ASSERT_EQ(compiled_runs.size(), runs.size());
    for (std::size_t n = 0; n < runs.size(); ++n) {
      EXPECT_EQ(compiled_runs[n].products, runs[n].products) << runs[n].node;
      EXPECT_EQ(compiled_runs[n].weight_bytes, runs[n].weight_bytes) << runs[n].node;
      // Later runs write no program: what is left is the operands and the results.
      std::uint64_t programs = 0;
      for (const CompiledGemm& gemm : model.gemms) {
        if (gemm.node == graph.nodes[n].name)
          programs += gemm.plan.program.size() * isa::kInstrBytes;
      }
      EXPECT_EQ(compiled_runs[n].host_bytes + (run_index == 0 ? 0 : programs), runs[n].host_bytes)
          << runs[n].node;
    }
    // The Gemm's three GEMMs: each its A and result, the second and third the sums before them
    // (C), the last the bias; the programs with the image, on the first run.
    std::uint64_t gemm_bytes = 0;
    for (std::size_t g = 0; g < 3; ++g) {
      const GemmPlan& plan = model.gemms[g].plan;
      EXPECT_EQ(plan.spec.has_c, g > 0);
      gemm_bytes += 2 * plan.k_pad * 2 + (g > 0 ? 2 * plan.n_pad * 4 : 0) +
                    (g == 2 ? plan.n_pad * 4 : 0) + 2 * plan.n_pad * 4 +
                    (run_index == 0 ? plan.program.size() * isa::kInstrBytes : 0);
    }
    EXPECT_EQ(compiled_runs[0].host_bytes, gemm_bytes) << "run " << run_index;
  }
  EXPECT_EQ(compiled.resident_bytes(), model.image.size());
}

// Three products, each the only reader of the one before (MatMul with a bias and Sigmoid, Gemm
// with a bias and Relu, MatMul): a chain; where `h_is_output`, the first result is also an
// output of the graph, which breaks the chain after it.
Graph chain_graph(bool h_is_output) {
  Values values;
  Graph g;
  g.name = "chain";
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 20}}};
  g.outputs = {{"y", DType::Float32, {}}};
  if (h_is_output) g.outputs.push_back({"h", DType::Float32, {}});
  g.constants["w1"] = values.tensor({20, 24});
  g.constants["b1"] = values.tensor({24});
  g.constants["w2"] = values.tensor({24, 9});
  g.constants["b2"] = values.tensor({9});
  g.constants["w3"] = values.tensor({9, 5});
  Node first = node("first", "MatMul", {"x", "w1", "b1"}, {"h"});
  first.epilogue = Epilogue::Sigmoid;
  Node second = node("second", "Gemm", {"h", "w2", "b2"}, {"g"});
  second.epilogue = Epilogue::Relu;
  g.nodes = {first, second, node("third", "MatMul", {"g", "w3"}, {"y"})};
  return g;
}

// A product whose result only the next product reads keeps it in the core's memory: the chain's
// GEMMs run as one program, the first ones writing bf16 (what the next product rounds its A to),
// and the run gives the graph's own bits with less written and read by the host.
TEST(CompiledModel, ChainedProductsRunAsOneProgram) {
  const Graph graph = chain_graph(false);
  TemporaryFile file("chain.tpu");
  file.write(compiled_file(compile(graph, int8_core(), 3)));
  const CompiledModel model = read_compiled(file.path());
  ASSERT_EQ(model.gemms.size(), 3u);
  EXPECT_TRUE(model.gemms[0].runs_with_next);
  EXPECT_TRUE(model.gemms[1].runs_with_next);
  EXPECT_FALSE(model.gemms[2].runs_with_next);
  EXPECT_FALSE(model.gemms[0].plan.input_resident);
  EXPECT_TRUE(model.gemms[1].plan.input_resident);
  EXPECT_TRUE(model.gemms[2].plan.input_resident);
  EXPECT_EQ(model.gemms[1].plan.a_addr, model.gemms[0].plan.out_addr);
  EXPECT_EQ(model.gemms[2].plan.a_addr, model.gemms[1].plan.out_addr);
  EXPECT_EQ(model.gemms[0].plan.spec.out, OutType::Bf16);
  EXPECT_EQ(model.gemms[2].plan.spec.out, OutType::Fp32);
  EXPECT_TRUE(model.gemms[0].plan.program.empty());
  // The whole chain's program: each GEMM's (its length does not depend on where its operands
  // lie), without the HALTs between.
  std::size_t instructions = 0;
  for (const CompiledGemm& gemm : model.gemms) {
    instructions += plan_gemm(int8_core(), gemm.plan.spec).program.size();
  }
  EXPECT_EQ(model.gemms[2].plan.program.size(), instructions - 2);

  FunctionalModel compiled_core(int8_core(), 0), graph_core(int8_core(), 0);
  Session compiled(model, compiled_core);
  Session session(graph, &graph_core);
  for (int run_index = 0; run_index < 2; ++run_index) {
    Values values;
    for (int i = 0; i < run_index; ++i) values.real();
    std::vector<float> x(3 * 20);
    for (float& v : x) v = values.real();
    const std::vector<Tensor> inputs = {Tensor::of_floats({3, 20}, x)};
    std::vector<OpRun> compiled_runs, runs;
    const std::vector<Tensor> y = compiled.run(inputs, &compiled_runs);
    const std::vector<Tensor> expected = session.run(inputs, &runs);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_TRUE(same_bits(y[0], expected[0])) << "run " << run_index;
    // What crosses the bus: the first product's A and bias, the second's bias, the third's
    // result; the chain's program with the image, on the first run alone. Neither the first
    // two results nor the last two A.
    const GemmPlan& p0 = model.gemms[0].plan;
    const GemmPlan& p2 = model.gemms[2].plan;
    const std::uint64_t expected_bytes =
        3 * p0.k_pad * 2 + p0.n_pad * 4 + model.gemms[1].plan.n_pad * 4 + 3 * p2.n_pad * 4 +
        (run_index == 0 ? p2.program.size() * isa::kInstrBytes : 0);
    std::uint64_t compiled_bytes = 0;
    for (const OpRun& r : compiled_runs) compiled_bytes += r.host_bytes;
    EXPECT_EQ(compiled_bytes, expected_bytes) << "run " << run_index;
  }

  // The first result also an output: only the second and third products chain.
  const CompiledModel broken = compile(chain_graph(true), int8_core(), 3);
  ASSERT_EQ(broken.gemms.size(), 3u);
  EXPECT_FALSE(broken.gemms[0].runs_with_next);
  EXPECT_TRUE(broken.gemms[1].runs_with_next);
  EXPECT_EQ(broken.gemms[0].plan.spec.out, OutType::Fp32);
}

// int8 products chain too: a QLinearMatMul's int8 result, the next one's A, stays in the core's
// memory as the values the host would have written, its zero point the one the next takes off.
TEST(CompiledModel, QuantisedProductsChain) {
  Values values;
  Graph g;
  g.name = "int8 chain";
  g.opset = 17;
  g.inputs = {{"xq", DType::Int8, {-1, 8}}};
  g.outputs = {{"y2", DType::Int8, {}}};
  std::vector<std::int64_t> w1(8 * 12), w2(12 * 5);
  for (std::int64_t& v : w1) v = values.int8();
  for (std::int64_t& v : w2) v = values.int8();
  g.constants["w1"] = Tensor::of_ints({8, 12}, w1, DType::Int8);
  g.constants["w2"] = Tensor::of_ints({12, 5}, w2, DType::Int8);
  g.constants["s"] = Tensor::of_floats({}, {0.02f});
  g.constants["ys"] = Tensor::of_floats({}, {0.25f});
  g.constants["xz"] = Tensor::of_ints({}, {3}, DType::Int8);
  g.constants["z"] = Tensor::of_ints({}, {0}, DType::Int8);
  g.constants["yz"] = Tensor::of_ints({}, {-4}, DType::Int8);
  g.nodes = {
      node("first", "QLinearMatMul", {"xq", "s", "xz", "w1", "s", "z", "ys", "yz"}, {"y1"}),
      node("second", "QLinearMatMul", {"y1", "ys", "yz", "w2", "s", "z", "ys", "z"}, {"y2"})};
  const CompiledModel model = compile(g, int8_core(), 2);
  ASSERT_EQ(model.gemms.size(), 2u);
  EXPECT_TRUE(model.gemms[0].runs_with_next);
  EXPECT_TRUE(model.gemms[1].plan.input_resident);
  EXPECT_EQ(model.gemms[0].plan.spec.out, OutType::Int8);
  FunctionalModel compiled_core(int8_core(), 0), graph_core(int8_core(), 0);
  Session compiled(model, compiled_core);
  Session session(g, &graph_core);
  for (int seed = 0; seed < 2; ++seed) {
    const std::vector<Tensor> inputs = {mixed_inputs(2, 4, seed)[1]};
    const std::vector<Tensor> y = compiled.run(inputs);
    EXPECT_TRUE(same_bits(y[0], session.run(inputs)[0])) << "run " << seed;
  }
}

// The independent products of one node, a batched MatMul's matrices and a grouped
// convolution's groups, run as one program each: every GEMM's operands written first, every
// result read after it; the graph's own bits.
TEST(CompiledModel, AGroupOfProductsRunsAsOneProgram) {
  Values values;
  Graph g;
  g.name = "groups";
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 3, 4, 6}}, {"image", DType::Float32, {-1, 4, 5, 5}}};
  g.outputs = {{"y", DType::Float32, {}}, {"z", DType::Float32, {}}};
  g.constants["w"] = values.tensor({3, 6, 5});
  g.constants["filters"] = values.tensor({4, 2, 3, 3});
  g.constants["bias"] = values.tensor({4});
  // Two channels a group (a depthwise convolution, one a group, runs on the vector unit).
  Node grouped = node("grouped", "Conv", {"image", "filters", "bias"}, {"z"});
  grouped.attributes["group"].kind = Attribute::Kind::Int;
  grouped.attributes["group"].i = 2;
  grouped.attributes["pads"].kind = Attribute::Kind::Ints;
  grouped.attributes["pads"].ints = {1, 1, 1, 1};
  grouped.epilogue = Epilogue::Relu;
  g.nodes = {node("batched", "MatMul", {"x", "w"}, {"y"}), grouped};
  const CompiledModel model = compile(g, int8_core(), 2);
  // 2 x 3 matrices, then 2 groups: two programs.
  ASSERT_EQ(model.gemms.size(), 8u);
  for (std::size_t i = 0; i < model.gemms.size(); ++i) {
    EXPECT_EQ(model.gemms[i].runs_with_next, i != 5 && i != 7) << i;
    EXPECT_FALSE(model.gemms[i].result_kept) << i;
    EXPECT_FALSE(model.gemms[i].plan.input_resident) << i;
  }
  // Each GEMM's operands above those of the one before it in the program.
  EXPECT_GE(model.gemms[1].plan.a_addr, model.gemms[0].plan.memory_bytes);
  FunctionalModel compiled_core(int8_core(), 0), graph_core(int8_core(), 0);
  Session compiled(model, compiled_core);
  Session session(g, &graph_core);
  for (int seed = 0; seed < 2; ++seed) {
    const std::vector<Tensor> inputs = {values.tensor({2, 3, 4, 6}), values.tensor({2, 4, 5, 5})};
    std::vector<OpRun> compiled_runs, runs;
    const std::vector<Tensor> y = compiled.run(inputs, &compiled_runs);
    const std::vector<Tensor> expected = session.run(inputs, &runs);
    for (std::size_t o = 0; o < y.size(); ++o) {
      EXPECT_TRUE(same_bits(y[o], expected[o])) << "output " << o << ", run " << seed;
    }
    ASSERT_EQ(compiled_runs.size(), 2u);
    EXPECT_EQ(compiled_runs[0].products, 6u);
    EXPECT_EQ(compiled_runs[0].programs, 1u);
    EXPECT_EQ(compiled_runs[1].products, 2u);
    EXPECT_EQ(compiled_runs[1].programs, 1u);
    EXPECT_EQ(runs[1].programs, 2u);
  }
}

// The batch is the compiled one: inputs of another are refused as the session starts, as is a
// core other than the model's; only the batch may be left open by the graph.
TEST(CompiledModel, ItsBatchAndCoreAreFixed) {
  const Graph graph = mixed_graph(8);
  const CompiledModel model = compile(graph, int8_core(), 3);
  FunctionalModel core(int8_core(), 0);
  Session session(model, core);
  EXPECT_THROW(session.run(mixed_inputs(2, 8, 0)), std::invalid_argument);
  EXPECT_EQ(session.run(mixed_inputs(3, 8, 0)).size(), 3u);
  FunctionalModel other(*find_core_config("16x16"), 0);
  try {
    Session wrong(model, other);
    ADD_FAILURE() << "a session on another core";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "compiled for the 4x4_m1a1 core, not the 16x16 core");
  }
  Graph open = graph;
  open.inputs[1].shape = {-1, -1};
  try {
    compile(open, int8_core(), 3);
    ADD_FAILURE() << "an open dimension other than the batch";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(),
                 "input \"xq\" leaves dimension 1 open: only the batch (the first) may be");
  }
}

// The shape arithmetic that the compiled batch fixes is folded into constants: the compiled
// graph keeps the Reshape, which reads them, and the work; a Transpose that the batch's shapes
// make a view (it moves an axis of one element) becomes a Reshape.
TEST(CompiledModel, ShapeArithmeticFolds) {
  Graph graph;
  graph.opset = 17;
  graph.inputs = {{"x", DType::Float32, {-1, 2, 3}}};
  graph.outputs = {{"y", DType::Float32, {}}};
  graph.constants["zero"] = Tensor::of_ints({1}, {0});
  graph.constants["rest"] = Tensor::of_ints({1}, {-1});
  graph.constants["w"] = Values().tensor({6, 4});
  Node gather = node("gather", "Gather", {"shape", "zero"}, {"batch"});
  gather.attributes["axis"] = Attribute::of_int(0);
  Node concat = node("concat", "Concat", {"batch", "rest"}, {"flat_shape"});
  concat.attributes["axis"] = Attribute::of_int(0);
  Node unit = node("unit", "Transpose", {"x1"}, {"rows"});
  unit.attributes["perm"] = Attribute::of_ints({0, 2, 1});  // [3, 1, 6] to [3, 6, 1]
  graph.constants["one"] = Tensor::of_ints({3}, {-1, 1, 6});
  graph.nodes = {node("shape", "Shape", {"x"}, {"shape"}),
                 gather,
                 concat,
                 node("flatten", "Reshape", {"x", "flat_shape"}, {"flat"}),
                 node("product", "MatMul", {"flat", "w"}, {"y"}),
                 node("as_row", "Reshape", {"x", "one"}, {"x1"}),
                 unit};
  graph.outputs.push_back({"rows", DType::Float32, {}});
  const CompiledModel model = compile(graph, int8_core(), 3);
  ASSERT_EQ(model.graph.nodes.size(), 4u);
  EXPECT_EQ(model.graph.nodes[0].op, "Reshape");
  EXPECT_EQ(model.graph.constants.at("flat_shape").ints, (std::vector<std::int64_t>{3, -1}));
  EXPECT_EQ(model.graph.nodes[3].op, "Reshape");  // the Transpose of an axis of one element
  EXPECT_EQ(model.graph.constants.at("unit::shape").ints, (std::vector<std::int64_t>{3, 6, 1}));
  const Tensor x = Values().tensor({3, 2, 3});
  FunctionalModel core(int8_core(), 0);
  Session session(model, core);
  FunctionalModel uncompiled_core(int8_core(), 0);
  const std::vector<Tensor> compiled_y = session.run({x}), y = run(graph, {x}, &uncompiled_core);
  EXPECT_TRUE(same_bits(compiled_y[0], y[0]));
  EXPECT_EQ(compiled_y[1].shape, (Shape{3, 6, 1}));
  EXPECT_TRUE(same_bits(compiled_y[1], y[1]));
}

// The file gives back the graph as it was (attributes of every kind, constants of every type,
// the fused epilogue) and each GEMM's plan.
TEST(CompiledModel, TheFileKeepsEveryPart) {
  Graph graph = mixed_graph(8);
  Node& t = graph.nodes[2];
  t.attributes["f"].kind = Attribute::Kind::Float;
  t.attributes["f"].f = -0.1f;
  t.attributes["s"].kind = Attribute::Kind::String;
  t.attributes["s"].s = "text";
  t.attributes["fs"].kind = Attribute::Kind::Floats;
  t.attributes["fs"].floats = {1.5f, 3e-39f};
  t.attributes["ss"].kind = Attribute::Kind::Strings;
  t.attributes["ss"].strings = {"a", ""};
  t.attributes["t"].kind = Attribute::Kind::Tensor;
  t.attributes["t"].tensor = Tensor::of_ints({2}, {-7, 1ll << 40});
  graph.constants["u8"] = Tensor::of_ints({3}, {0, 128, 255}, DType::UInt8);
  graph.constants["i32"] = Tensor::of_ints({2}, {-5, 1 << 30}, DType::Int32);
  graph.constants["flags"] = Tensor::of_ints({2}, {1, 0}, DType::Bool);
  graph.constants["scalar"] = Tensor::of_floats({}, {-0.0f});
  const CompiledModel model = compile(graph, int8_core(), 2);
  TemporaryFile file("parts.tpu");
  file.write(compiled_file(model));
  const CompiledModel back = read_compiled(file.path());
  EXPECT_EQ(back.graph.name, "mixed");
  EXPECT_EQ(back.graph.opset, 17);
  ASSERT_EQ(back.graph.constants.size(), graph.constants.size());
  for (const auto& [name, tensor] : graph.constants) {
    const Tensor& read = back.graph.constants.at(name);
    // The product's weights lie in the image alone: their type and shape, no values.
    if (model.graph.constants.at(name).values_on_core) {
      EXPECT_TRUE(read.values_on_core) << name;
      EXPECT_EQ(read.dtype, tensor.dtype) << name;
      EXPECT_EQ(read.shape, tensor.shape) << name;
      EXPECT_TRUE(read.floats.empty()) << name;
      continue;
    }
    EXPECT_TRUE(same_bits(read, tensor)) << name;
  }
  EXPECT_TRUE(back.graph.constants.at("w").values_on_core);
  ASSERT_EQ(back.graph.nodes.size(), graph.nodes.size());
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& a = graph.nodes[n];
    const Node& b = back.graph.nodes[n];
    EXPECT_EQ(b.op, a.op);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.inputs, a.inputs);
    EXPECT_EQ(b.outputs, a.outputs);
    EXPECT_EQ(b.epilogue, a.epilogue);
    ASSERT_EQ(b.attributes.size(), a.attributes.size());
  }
  const Node& tb = back.graph.nodes[2];
  EXPECT_EQ(tb.attributes.at("perm").ints, (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(tb.float_attr("f", 0), -0.1f);
  EXPECT_EQ(tb.string_attr("s", ""), "text");
  EXPECT_EQ(tb.floats_attr("fs"), (std::vector<float>{1.5f, 3e-39f}));
  EXPECT_EQ(tb.strings_attr("ss"), (std::vector<std::string>{"a", ""}));
  EXPECT_TRUE(same_bits(*tb.attributes.at("t").tensor, *t.attributes.at("t").tensor));
  EXPECT_EQ(back.image, model.image);
  EXPECT_EQ(back.scratch_bytes, model.scratch_bytes);
  ASSERT_EQ(back.gemms.size(), model.gemms.size());
  for (std::size_t g = 0; g < model.gemms.size(); ++g) {
    const GemmPlan& a = model.gemms[g].plan;
    const GemmPlan& b = back.gemms[g].plan;
    EXPECT_EQ(back.gemms[g].node, model.gemms[g].node);
    EXPECT_EQ(back.gemms[g].weight_bytes, model.gemms[g].weight_bytes);
    EXPECT_EQ(b.spec, a.spec);
    EXPECT_EQ(b.program, a.program);
    EXPECT_EQ(b.block_first, a.block_first);
    EXPECT_EQ(std::tie(b.k_pad, b.n_pad, b.block_rows, b.prog_addr, b.a_addr, b.b_addr, b.c_addr,
                       b.bias_addr, b.out_addr, b.memory_bytes, b.weights_resident),
              std::tie(a.k_pad, a.n_pad, a.block_rows, a.prog_addr, a.a_addr, a.b_addr, a.c_addr,
                       a.bias_addr, a.out_addr, a.memory_bytes, a.weights_resident));
  }
}

// A Softmax between two products runs on the vector unit (softmax_on_core), planned as the
// compiled model runs above its image and operands: the graph's bits, run after run, and the
// file names the node.
TEST(CompiledModel, ASoftmaxRunsOnTheVectorUnit) {
  Values values;
  Graph g;
  g.name = "attention-like";
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 12}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.constants["w1"] = values.tensor({12, 9});
  g.constants["w2"] = values.tensor({9, 4});
  Node softmax = node("softmax", "Softmax", {"h"}, {"p"});
  softmax.attributes["axis"].kind = Attribute::Kind::Int;
  softmax.attributes["axis"].i = -1;
  g.nodes = {node("first", "MatMul", {"x", "w1"}, {"h"}), softmax,
             node("second", "MatMul", {"p", "w2"}, {"y"})};
  ASSERT_GT(int8_core().vector_lanes, 0u);
  TemporaryFile file("softmax.tpu");
  file.write(compiled_file(compile(g, int8_core(), 3)));
  const CompiledModel model = read_compiled(file.path());
  EXPECT_EQ(model.vector_nodes, (std::vector<std::string>{"softmax"}));
  FunctionalModel compiled_core(int8_core(), 0), graph_core(int8_core(), 0);
  Session compiled(model, compiled_core);
  Session session(g, &graph_core);
  for (int run_index = 0; run_index < 2; ++run_index) {
    const std::vector<Tensor> inputs = {values.tensor({3, 12})};
    std::vector<OpRun> compiled_runs, runs;
    const std::vector<Tensor> y = compiled.run(inputs, &compiled_runs);
    const std::vector<Tensor> expected = session.run(inputs, &runs);
    EXPECT_TRUE(same_bits(y[0], expected[0])) << "run " << run_index;
    ASSERT_EQ(compiled_runs.size(), 3u);
    EXPECT_TRUE(compiled_runs[1].on_accelerator);
    EXPECT_EQ(compiled_runs[1].programs, 1u);
    EXPECT_EQ(compiled_runs[1].host_bytes, runs[1].host_bytes);
  }
}

// Convolutions the core runs from their images (plan_conv): compiled as such, kept by the file,
// and the graph's bits on the compiled model's runs.
TEST(CompiledModel, ConvolutionsFromTheirImages) {
  Values values;
  Graph graph;
  graph.name = "convolutions";
  graph.opset = 17;
  graph.inputs = {{"x", DType::Float32, {-1, 16, 14, 14}}};
  graph.outputs = {{"y", DType::Float32, {}}};
  graph.constants["w1"] = values.tensor({32, 16, 3, 3});
  graph.constants["b1"] = values.tensor({32});
  graph.constants["w2"] = values.tensor({8, 32, 3, 3});
  Node first = node("conv1", "Conv", {"x", "w1", "b1"}, {"h"});
  first.attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
  first.epilogue = Epilogue::Relu;
  Node second = node("conv2", "Conv", {"h", "w2"}, {"y"});
  second.attributes["strides"] = Attribute::of_ints({2, 2});
  graph.nodes = {first, second};
  // The CNN's second convolution's shape, which the 16x16 core runs faster from its images
  // (docs/perf/bench.md), then a strided one.
  const HardwareConfig& core = *find_core_config("16x16");
  const CompiledModel model = compile(graph, core, 2);
  std::size_t from_images = 0;
  for (const CompiledGemm& gemm : model.gemms) from_images += gemm.plan.conv.empty() ? 0 : 1;
  EXPECT_GT(from_images, 0u) << "the test wants a convolution from its images";

  TemporaryFile file("convolutions.tpu");
  file.write(compiled_file(model));
  const CompiledModel back = read_compiled(file.path());
  ASSERT_EQ(back.gemms.size(), model.gemms.size());
  for (std::size_t g = 0; g < model.gemms.size(); ++g) {
    const ConvGeometry& a = model.gemms[g].plan.conv;
    const ConvGeometry& b = back.gemms[g].plan.conv;
    EXPECT_EQ(std::tie(b.batch, b.channels, b.height, b.width, b.kernel_h, b.kernel_w, b.stride_h,
                       b.stride_w, b.dilation_h, b.dilation_w, b.pad_top, b.pad_left, b.pad_bottom,
                       b.pad_right, back.gemms[g].plan.a_span),
              std::tie(a.batch, a.channels, a.height, a.width, a.kernel_h, a.kernel_w, a.stride_h,
                       a.stride_w, a.dilation_h, a.dilation_w, a.pad_top, a.pad_left, a.pad_bottom,
                       a.pad_right, model.gemms[g].plan.a_span));
  }

  FunctionalModel compiled_core(core, 0), graph_core(core, 0);
  Session compiled(back, compiled_core);
  Session session(graph, &graph_core);
  for (int run_index = 0; run_index < 2; ++run_index) {
    const std::vector<Tensor> inputs = {values.tensor({2, 16, 14, 14})};
    std::vector<OpRun> compiled_runs, runs;
    const std::vector<Tensor> y = compiled.run(inputs, &compiled_runs);
    const std::vector<Tensor> expected = session.run(inputs, &runs);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_TRUE(same_bits(y[0], expected[0])) << "run " << run_index;
    // --stats counts them, in the compiled model's runs as in the graph's.
    std::size_t counted = 0, counted_compiled = 0;
    for (const OpRun& r : runs) counted += r.from_images;
    for (const OpRun& r : compiled_runs) counted_compiled += r.from_images;
    EXPECT_EQ(counted, from_images);
    EXPECT_EQ(counted_compiled, from_images);
  }
}

// A file cut short, one with a byte changed, and one that is no compiled model: each refused
// with one line naming the file.
TEST(CompiledModel, DamagedFilesAreRefused) {
  const std::string bytes = compiled_file(compile(mixed_graph(8), int8_core(), 2));
  TemporaryFile file("damaged.tpu");
  const auto refusal = [&file](const std::string& contents) {
    file.write(contents);
    try {
      read_compiled(file.path());
    } catch (const std::runtime_error& error) {
      const std::string what = error.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind(file.path() + ": ", 0), 0u) << what;
      return what.substr(file.path().size() + 2);
    }
    return std::string("read");
  };
  EXPECT_EQ(refusal(bytes.substr(0, bytes.size() - 1)).rfind("truncated or extended", 0), 0u);
  EXPECT_EQ(refusal(bytes.substr(0, 20)), "not a compiled model (tpu compile writes them)");
  std::string changed = bytes;
  changed[changed.size() / 2] = static_cast<char>(changed[changed.size() / 2] ^ 0x10);
  EXPECT_EQ(refusal(changed), "corrupt (its CRC-32 differs)");
  EXPECT_EQ(refusal("ir_version: 8"), "not a compiled model (tpu compile writes them)");
  EXPECT_FALSE(is_compiled_model(file.path()));
  EXPECT_EQ(refusal(bytes), "read");
}

}  // namespace
}  // namespace tpu::graph
