// The graph IR and its executor (sw/graph): ordering checks, broadcasting, constant folding,
// input checks, and operators against values worked out by hand. Whole models are checked
// against onnxruntime in tests/onnx (graph_cases.py, zoo_cases.py).
#include <gtest/gtest.h>

#include <stdexcept>

#include "tpu/graph/executor.hpp"

namespace tpu::graph {
namespace {

Node node(std::string op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  Node n;
  n.op = std::move(op);
  n.name = n.op + "0";
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

Attribute ints(std::vector<std::int64_t> values) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(values);
  return a;
}

// x [N, 2] -> Relu -> MatMul with a 2x3 constant -> y.
Graph small_graph() {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 2}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.constants["w"] = Tensor::of_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  g.nodes = {node("Relu", {"x"}, {"r"}), node("MatMul", {"r", "w"}, {"y"})};
  return g;
}

TEST(Graph, OrderIsChecked) {
  Graph g = small_graph();
  EXPECT_EQ(check_order(g), "");
  std::swap(g.nodes[0], g.nodes[1]);
  EXPECT_EQ(check_order(g), "node \"MatMul0\" (MatMul): input \"r\" is not computed before it");
  g = small_graph();
  g.nodes[1].outputs = {"r"};
  EXPECT_EQ(check_order(g), "node \"MatMul0\" (MatMul): output \"r\" is written twice");
  g = small_graph();
  g.outputs[0].name = "z";
  EXPECT_EQ(check_order(g), "output \"z\" is not computed by any node");
}

TEST(Graph, RunsOnTheHostAndFreesNothingItReturns) {
  const Graph g = small_graph();
  std::vector<OpRun> runs;
  const std::vector<Tensor> y = run(g, {Tensor::of_floats({2, 2}, {1, -1, -2, 3})}, nullptr, &runs);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].shape, (Shape{2, 3}));
  // relu([1, -1]) = [1, 0]: row 0 of w; relu([-2, 3]) = [0, 3]: 3 x row 1.
  EXPECT_EQ(y[0].floats, (std::vector<float>{1, 2, 3, 12, 15, 18}));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].macs, 2u * 2u * 3u);
  EXPECT_FALSE(runs[1].on_accelerator);
}

TEST(Graph, InputsOfTheWrongShapeOrTypeAreRefused) {
  const Graph g = small_graph();
  EXPECT_THROW(run(g, {}, nullptr), std::invalid_argument);
  EXPECT_THROW(run(g, {Tensor::of_floats({2, 3}, std::vector<float>(6))}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(run(g, {Tensor::of_ints({1, 2}, {1, 2})}, nullptr), std::invalid_argument);
}

TEST(Graph, AnInputWithoutAShapeTakesAnyRank) {
  Graph g = small_graph();
  g.inputs[0] = {"x", DType::Float32, {}, false};
  g.nodes = {node("Relu", {"x"}, {"y"})};
  EXPECT_EQ(input_mismatch(g.inputs[0], Tensor::of_floats({2, 1, 3}, std::vector<float>(6))), "");
  EXPECT_EQ(input_mismatch(g.inputs[0], Tensor::of_ints({2}, {1, 2})),
            "int64 2 where input \"x\" takes float32 of any shape");
  EXPECT_EQ(run(g, {Tensor::of_floats({3}, {-1, 0, 2})}, nullptr)[0].floats,
            (std::vector<float>{0, 0, 2}));
}

TEST(Graph, ConstantSubgraphsFold) {
  Graph g = small_graph();
  // w2 = Transpose(Transpose(w)): folded to w's values; the graph then reads it.
  Node t1 = node("Transpose", {"w"}, {"wt"});
  Node t2 = node("Transpose", {"wt"}, {"w2"});
  g.nodes.insert(g.nodes.begin(), {t1, t2});
  g.nodes.back().inputs[1] = "w2";
  EXPECT_EQ(fold_constants(g), 2u);
  EXPECT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.constants.at("w2").floats, g.constants.at("w").floats);
  EXPECT_EQ(g.constants.at("wt").shape, (Shape{3, 2}));
}

TEST(Graph, BroadcastingFollowsNumPy) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"a", DType::Float32, {2, 1, 3}}, {"b", DType::Float32, {4, 1}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.nodes = {node("Sub", {"a", "b"}, {"y"})};
  const Tensor a = Tensor::of_floats({2, 1, 3}, {0, 1, 2, 3, 4, 5});
  const Tensor b = Tensor::of_floats({4, 1}, {0, 10, 20, 30});
  const Tensor y = run(g, {a, b}, nullptr)[0];
  ASSERT_EQ(y.shape, (Shape{2, 4, 3}));
  EXPECT_EQ(y.floats[0 * 12 + 2 * 3 + 1], 1.0f - 20.0f);
  EXPECT_EQ(y.floats[1 * 12 + 3 * 3 + 2], 5.0f - 30.0f);
  g.inputs[1].shape = {2};
  EXPECT_THROW(run(g, {a, Tensor::of_floats({2}, {1, 2})}, nullptr), std::runtime_error);
}

TEST(Graph, TransposeAndSliceMoveElements) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {2, 3}}};
  g.outputs = {{"t", DType::Float32, {}}, {"s", DType::Float32, {}}};
  Node transpose = node("Transpose", {"x"}, {"t"});
  transpose.attributes["perm"] = ints({1, 0});
  g.constants["starts"] = Tensor::of_ints({1}, {-1});
  g.constants["ends"] = Tensor::of_ints({1}, {-100});
  g.constants["axes"] = Tensor::of_ints({1}, {1});
  g.constants["steps"] = Tensor::of_ints({1}, {-2});
  g.nodes = {transpose, node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"})};
  const std::vector<Tensor> y = run(g, {Tensor::of_floats({2, 3}, {0, 1, 2, 3, 4, 5})}, nullptr);
  EXPECT_EQ(y[0].floats, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(y[1].shape, (Shape{2, 2}));
  EXPECT_EQ(y[1].floats, (std::vector<float>{2, 0, 5, 3}));  // columns 2 and 0, backwards
}

TEST(Graph, UnknownOperatorsAreNamed) {
  Graph g = small_graph();
  g.nodes[0].op = "NonZero";
  EXPECT_EQ(check_supported(g), "node \"Relu0\" (NonZero): operator not supported");
}

}  // namespace
}  // namespace tpu::graph
