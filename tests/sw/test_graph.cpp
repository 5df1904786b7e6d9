// The graph IR and its executor (sw/graph): ordering checks, broadcasting, constant folding,
// input checks, and operators against values worked out by hand. Whole models are checked
// against onnxruntime in tests/onnx (graph_cases.py, zoo_cases.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "common/small_core.hpp"
#include "tpu/compiler.hpp"
#include "tpu/elementwise.hpp"
#include "tpu/graph/executor.hpp"
#include "tpu/layernorm.hpp"
#include "tpu/model.hpp"
#include "tpu/nn.hpp"
#include "tpu/numerics/quant.hpp"
#include "tpu/pool.hpp"
#include "tpu/softmax.hpp"

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

using test::small_core;

// The backends an operator of the int8 vector unit is checked on: the host (null), a core with
// the vector unit and the int8 datapath (`on_vector`), and `lacking`, a core without one of them.
struct Int8VectorBackends {
  explicit Int8VectorBackends(const HardwareConfig& lacking_config)
      : on_vector(test::small_int8_vector_core(), 0), lacking(lacking_config, 0) {}
  std::vector<Backend*> all() { return {nullptr, &on_vector, &lacking}; }
  FunctionalModel on_vector, lacking;
};

// A session writes a product's constant B into the core's memory on its first run only; a B
// computed from the inputs is written every time. Each run gives what a fresh run gives.
TEST(Graph, ASessionWritesWeightsOnce) {
  Graph g = small_graph();
  // y2 = r x r^T: a product of two activations.
  Node transpose = node("Transpose", {"r"}, {"rt"});
  transpose.name = "T";
  Node square = node("MatMul", {"r", "rt"}, {"y2"});
  square.name = "square";
  g.nodes.push_back(transpose);
  g.nodes.push_back(square);
  g.outputs.push_back({"y2", DType::Float32, {}});
  FunctionalModel backend(small_core(), 0);
  Session session(g, &backend);
  const std::vector<Tensor> inputs = {Tensor::of_floats({2, 2}, {1, -1, -2, 3}),
                                      Tensor::of_floats({2, 2}, {0.5f, 2, 4, -8})};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::vector<OpRun> runs;
    const std::vector<Tensor> y = session.run({inputs[i]}, &runs);
    FunctionalModel fresh(small_core(), 0);
    const std::vector<Tensor> expected = run(g, {inputs[i]}, &fresh);
    EXPECT_EQ(y[0].floats, expected[0].floats);
    EXPECT_EQ(y[1].floats, expected[1].floats);
    ASSERT_EQ(runs.size(), 4u);
    // w is 2 x 3: one 4 x 4 tile of bf16, 32 bytes, written on the first run alone.
    EXPECT_EQ(runs[1].weight_bytes, i == 0 ? 32u : 0u);
    EXPECT_GT(runs[1].host_bytes, 0u);
    EXPECT_EQ(runs[3].weight_bytes, 0u);  // r^T is no weight: written with the operands
    EXPECT_GT(runs[3].host_bytes, 0u);
  }
  EXPECT_EQ(session.resident_bytes(), 64u);  // 32 bytes, the next operand 64-byte aligned
  // relu([1, -1]) = [1, 0], relu([-2, 3]) = [0, 3], exact in bf16.
  const std::vector<Tensor> y = session.run({inputs[0]}, nullptr);
  EXPECT_EQ(y[0].floats, (std::vector<float>{1, 2, 3, 12, 15, 18}));
  EXPECT_EQ(y[1].floats, (std::vector<float>{1, 0, 0, 9}));
}

// Relu after a MatMul and Clip(0, 6) after a Gemm with a bias row fuse into the products; a Relu
// on a product another node also reads, and one after a Gemm whose alpha is not 1, do not. The
// results are ONNX's on the host and on the functional model alike.
TEST(Graph, ActivationsFuseIntoTheProducts) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 2}}};
  g.constants["w"] = Tensor::of_floats({2, 3}, {1, 2, 3, -4, -5, 6});
  g.constants["c"] = Tensor::of_floats({3}, {0.5f, 1, 20});
  g.constants["lo"] = Tensor::of_floats({}, {0});
  g.constants["hi"] = Tensor::of_floats({}, {6});
  Node scaled = node("Gemm", {"x", "w"}, {"s"});
  scaled.name = "scaled";
  scaled.attributes["alpha"].kind = Attribute::Kind::Float;
  scaled.attributes["alpha"].f = 2.0f;
  g.nodes = {node("MatMul", {"x", "w"}, {"p"}), node("Relu", {"p"}, {"y"}),
             node("Gemm", {"x", "w", "c"}, {"q"}), node("Clip", {"q", "lo", "hi"}, {"z"}),
             node("MatMul", {"x", "w"}, {"u"}), node("Relu", {"u"}, {"v"}),
             scaled, node("Relu", {"s"}, {"t"})};
  g.nodes[2].name = "gemm";
  g.nodes[4].name = "shared";
  g.nodes[5].name = "relu_shared";
  g.nodes[7].name = "relu_scaled";
  g.outputs = {{"y", DType::Float32, {}}, {"z", DType::Float32, {}},
               {"u", DType::Float32, {}}, {"v", DType::Float32, {}}, {"t", DType::Float32, {}}};
  EXPECT_EQ(fuse_epilogues(g), 2u);
  ASSERT_EQ(g.nodes.size(), 6u);
  EXPECT_EQ(g.nodes[0].epilogue, Epilogue::Relu);
  EXPECT_EQ(g.nodes[0].outputs[0], "y");
  EXPECT_EQ(g.nodes[1].epilogue, Epilogue::Relu6);
  EXPECT_EQ(g.nodes[1].outputs[0], "z");
  EXPECT_EQ(g.nodes[2].epilogue, Epilogue::None);  // "u" is an output too
  EXPECT_EQ(g.nodes[4].epilogue, Epilogue::None);  // alpha 2
  EXPECT_EQ(check_order(g), "");
  const Tensor x = Tensor::of_floats({2, 2}, {1, 1, 2, -1});
  // x w = [[-3, -3, 9], [6, 9, 0]].
  FunctionalModel backend(small_core(), 0);
  for (Backend* accelerator : {static_cast<Backend*>(nullptr), static_cast<Backend*>(&backend)}) {
    const std::vector<Tensor> out = run(g, {x}, accelerator);
    EXPECT_EQ(out[0].floats, (std::vector<float>{0, 0, 9, 6, 9, 0}));
    EXPECT_EQ(out[1].floats, (std::vector<float>{0, 0, 6, 6, 6, 6}));
    EXPECT_EQ(out[2].floats, (std::vector<float>{-3, -3, 9, 6, 9, 0}));
    EXPECT_EQ(out[4].floats, (std::vector<float>{0, 0, 18, 12, 18, 0}));
  }
}

// A Linear layer as PyTorch exports it on a rank-3 input (MatMul, Add of the bias) then Gelu,
// Sigmoid or Tanh: the Add becomes the MatMul's bias and the function its activation. On the host
// the results are the unfused graph's bits (ONNX's fp32 operators); on the core, the reference
// model's GEMM with the bias and the contract's approximation of the function (N-ACT). A bias
// that is not 1-D, and a Gelu of the tanh form, stay host steps; a MatMul of three inputs in a
// file is refused.
// The GELU PyTorch exports before opset 20, x * (1 + erf(x / sqrt(2))) * 0.5, or with x * 0.5
// first and x times 1 / sqrt(2), becomes one Gelu: the erf form's values on the host, within an
// ulp or two of the decomposed arithmetic; with another constant it stays as it is.
TEST(Graph, DecomposedGeluFuses) {
  for (const bool half_first : {false, true}) {
    SCOPED_TRACE(half_first ? "x * 0.5 first" : "times 0.5 last");
    Graph g;
    g.opset = 17;
    g.inputs = {{"x", DType::Float32, {2, 4}}};
    g.outputs = {{"y", DType::Float32, {}}};
    g.constants["root2"] = Tensor::of_floats({}, {1.41421354f});
    g.constants["inv_root2"] = Tensor::of_floats({}, {0.707106769f});
    g.constants["one"] = Tensor::of_floats({}, {1.0f});
    g.constants["half"] = Tensor::of_floats({}, {0.5f});
    g.nodes = {
        half_first ? node("Mul", {"inv_root2", "x"}, {"d"}) : node("Div", {"x", "root2"}, {"d"}),
        node("Erf", {"d"}, {"e"}), node("Add", {"e", "one"}, {"a"})};
    if (half_first) {
      g.nodes.push_back(node("Mul", {"x", "half"}, {"h"}));
      g.nodes.push_back(node("Mul", {"h", "a"}, {"y"}));
    } else {
      g.nodes.push_back(node("Mul", {"x", "a"}, {"m"}));
      g.nodes.push_back(node("Mul", {"m", "half"}, {"y"}));
    }
    for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
    const Graph decomposed = g;
    EXPECT_EQ(fuse_gelu(g), 1u);
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].op, "Gelu");
    EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x"}));
    EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"y"}));
    const Tensor x = Tensor::of_floats({2, 4}, {-3, -1, -0.5f, 0, 0.25f, 1, 2.5f, 4});
    const Tensor fused_y = run(g, {x}, nullptr)[0], decomposed_y = run(decomposed, {x}, nullptr)[0];
    for (std::size_t e = 0; e < 8; ++e) {
      EXPECT_NEAR(fused_y.floats[e], decomposed_y.floats[e], 4e-7 * (1 + std::fabs(x.floats[e])));
    }
    Graph other = decomposed;
    other.constants["half"] = Tensor::of_floats({}, {0.6f});
    EXPECT_EQ(fuse_gelu(other), 0u);
    EXPECT_EQ(other.nodes.size(), 5u);
  }
}

TEST(Graph, BiasesAndApproximatedFunctionsFuseIntoMatMuls) {
  Graph g;
  g.opset = 20;
  g.inputs = {{"x", DType::Float32, {-1, 2, 3}}};
  const std::vector<float> w = {0.5f, -1.25f, 2,     0.75f, -0.5f, 1.5f,
                                3,    -2,     0.25f, 1,     1.75f, -0.75f};
  const std::vector<float> bias = {0.125f, -0.5f, 1, -2};
  g.constants["w"] = Tensor::of_floats({3, 4}, w);
  g.constants["b"] = Tensor::of_floats({4}, bias);
  g.constants["b2"] = Tensor::of_floats({1, 4}, bias);
  Node tanh_gelu = node("Gelu", {"q3"}, {"y3"});
  tanh_gelu.attributes["approximate"].kind = Attribute::Kind::String;
  tanh_gelu.attributes["approximate"].s = "tanh";
  g.nodes = {node("MatMul", {"x", "w"}, {"p0"}),
             node("Add", {"p0", "b"}, {"q0"}),
             node("Gelu", {"q0"}, {"y0"}),
             node("MatMul", {"x", "w"}, {"p1"}),
             node("Add", {"b", "p1"}, {"q1"}),
             node("Sigmoid", {"q1"}, {"y1"}),
             node("MatMul", {"x", "w"}, {"p2"}),
             node("Tanh", {"p2"}, {"y2"}),
             node("MatMul", {"x", "w"}, {"p3"}),
             node("Add", {"p3", "b2"}, {"q3"}),
             tanh_gelu};
  for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
  g.outputs = {{"y0", DType::Float32, {}},
               {"y1", DType::Float32, {}},
               {"y2", DType::Float32, {}},
               {"y3", DType::Float32, {}}};
  const Graph unfused = g;
  EXPECT_EQ(fuse_epilogues(g), 5u);  // two biases, three functions
  ASSERT_EQ(g.nodes.size(), 6u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(g.nodes[0].epilogue, Epilogue::Gelu);
  EXPECT_EQ(g.nodes[1].inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(g.nodes[1].epilogue, Epilogue::Sigmoid);
  EXPECT_EQ(g.nodes[2].epilogue, Epilogue::Tanh);
  EXPECT_EQ(g.nodes[3].inputs.size(), 2u);  // b2 is 1x4
  EXPECT_EQ(g.nodes[3].epilogue, Epilogue::None);
  EXPECT_EQ(check_order(g), "");
  EXPECT_EQ(check_supported(g), "node \"n0\" (MatMul): 3 inputs, not 2");

  const Tensor x =
      Tensor::of_floats({2, 2, 3}, {1, -2, 0.5f, 3, 0.25f, -1, -0.5f, 2, 1.5f, 0, -3, 2.5f});
  const std::vector<Tensor> host = run(g, {x}, nullptr);
  const std::vector<Tensor> expected_host = run(unfused, {x}, nullptr);
  for (std::size_t o = 0; o < host.size(); ++o) {
    EXPECT_EQ(host[o].shape, (Shape{2, 2, 4}));
    EXPECT_EQ(0, std::memcmp(host[o].floats.data(), expected_host[o].floats.data(),
                             host[o].floats.size() * sizeof(float)))
        << "output " << o;
  }
  FunctionalModel backend(small_core(), 0);
  const std::vector<Tensor> core = run(g, {x}, &backend);
  std::vector<num::fp32_t> bias_bits(bias.size());
  std::memcpy(bias_bits.data(), bias.data(), bias.size() * sizeof(float));
  const num::MatrixBf16 a16 = nn::bf16_matrix(x.floats.data(), 4, 3);
  const num::MatrixBf16 b16 = nn::bf16_matrix(w.data(), 3, 4);
  const isa::Func functions[] = {isa::Func::Gelu, isa::Func::Sigmoid, isa::Func::Tanh};
  for (std::size_t o = 0; o < 3; ++o) {
    GemmSpec spec;
    spec.m = 4;
    spec.k = 3;
    spec.n = 4;
    spec.act = functions[o];
    spec.has_bias = o < 2;
    const num::MatrixFp32 expected =
        reference_gemm(spec, a16, b16, nullptr, o < 2 ? &bias_bits : nullptr);
    ASSERT_EQ(core[o].floats.size(), 16u);
    EXPECT_EQ(0, std::memcmp(core[o].floats.data(), expected.data.data(), 16 * sizeof(float)))
        << "output " << o;
  }
}

// x -> QuantizeLinear -> DequantizeLinear -> MatMul with DequantizeLinear(int8 w, per-column
// scales) -> Relu -> QuantizeLinear -> DequantizeLinear -> y: the QDQ form quantize_static
// writes. The MatMul, Relu and QuantizeLinear become one QLinearMatMul on the int8 datapath.
TEST(Graph, QuantisedProductsFuseAndRunOnTheInt8Datapath) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 2}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.constants["xs"] = Tensor::of_floats({}, {0.5f});
  g.constants["xz"] = Tensor::of_ints({}, {1}, DType::Int8);
  g.constants["w"] = Tensor::of_ints({2, 3}, {1, -2, 3, 4, 5, -6}, DType::Int8);
  g.constants["ws"] = Tensor::of_floats({3}, {0.25f, 0.5f, 1.0f});
  g.constants["wz"] = Tensor::of_ints({3}, {0, 0, 0}, DType::Int8);
  g.constants["ys"] = Tensor::of_floats({}, {0.2f});
  g.constants["yz"] = Tensor::of_ints({}, {-2}, DType::Int8);
  Node w = node("DequantizeLinear", {"w", "ws", "wz"}, {"wf"});
  w.name = "w_dq";
  w.attributes["axis"].kind = Attribute::Kind::Int;
  w.attributes["axis"].i = 1;
  g.nodes = {node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"}),
             node("DequantizeLinear", {"xq", "xs", "xz"}, {"xf"}),
             w,
             node("MatMul", {"xf", "wf"}, {"p"}),
             node("Relu", {"p"}, {"r"}),
             node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"}),
             node("DequantizeLinear", {"rq", "ys", "yz"}, {"y"})};
  EXPECT_EQ(fuse_quantized_products(g), 1u);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[1].op, "QLinearMatMul");
  EXPECT_EQ(g.nodes[1].epilogue, Epilogue::Relu);
  EXPECT_EQ(g.nodes[1].inputs,
            (std::vector<std::string>{"xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"}));
  EXPECT_EQ(check_order(g), "");
  // x quantises to [[3, 5], [-2, 3]] (0.75 / 0.5 = 1.5 rounds to even), minus the zero point
  // [[2, 4], [-3, 2]]; the sums with w are [[18, 16, -18], [5, 16, -21]], times 0.5 x the column
  // scales [[2.25, 4, -9], [0.625, 4, -10.5]], after relu / 0.2 and rounded, plus -2:
  // [[9, 18, -2], [1, 18, -2]]; dequantised, (q + 2) x 0.2.
  // On the host, on a core with the int8 datapath, and on one without it (the host's reference
  // model then runs the product).
  const Tensor x = Tensor::of_floats({2, 2}, {1, 2.2f, -1.3f, 0.75f});
  HardwareConfig int8_core = small_core();
  int8_core.int8 = true;
  FunctionalModel with_int8(int8_core, 0), without_int8(small_core(), 0);
  for (Backend* accelerator : {static_cast<Backend*>(nullptr), static_cast<Backend*>(&with_int8),
                               static_cast<Backend*>(&without_int8)}) {
    std::vector<OpRun> runs;
    const std::vector<Tensor> y = run(g, {x}, accelerator, &runs);
    EXPECT_EQ(y[0].floats, (std::vector<float>{11 * 0.2f, 20 * 0.2f, 0, 3 * 0.2f, 20 * 0.2f, 0}));
    EXPECT_EQ(runs[1].on_accelerator, accelerator == &with_int8);
    EXPECT_EQ(runs[1].macs, 12u);
  }
}

// DequantizeLinear -> MaxPool -> QuantizeLinear at the same scale and zero point becomes the
// MaxPool of the int8 values; DequantizeLinear pair -> Add -> Relu -> QuantizeLinear becomes a
// QLinearAdd with relu's clamp (Q-ADD, TensorFlow Lite's ADD), here of an int8 tensor and a
// uint8 one that broadcasts. Both run on the vector unit of a core with the int8 datapath, with
// Q-ADD's bits (num::add_int8 of the broadcast pairs) on every backend, within an output step of
// the unfused graph's fp32 arithmetic.
TEST(Graph, QuantisedAddsAndMaxPoolsFuseAndRunOnTheVectorUnit) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Int8, {1, 2, 4, 4}}, {"b", DType::UInt8, {1, 2, 1, 2}}};
  g.outputs = {{"y", DType::Int8, {}}};
  g.constants["xs"] = Tensor::of_floats({}, {0.05f});
  g.constants["xz"] = Tensor::of_ints({}, {-3}, DType::Int8);
  g.constants["bs"] = Tensor::of_floats({}, {0.02f});
  g.constants["bz"] = Tensor::of_ints({}, {140}, DType::UInt8);
  g.constants["ys"] = Tensor::of_floats({}, {0.06f});
  g.constants["yz"] = Tensor::of_ints({}, {-20}, DType::Int8);
  Node pool = node("MaxPool", {"xf"}, {"p"});
  pool.attributes["kernel_shape"] = Attribute::of_ints({2, 2});
  pool.attributes["strides"] = Attribute::of_ints({2, 2});
  g.nodes = {node("DequantizeLinear", {"x", "xs", "xz"}, {"xf"}),
             pool,
             node("QuantizeLinear", {"p", "xs", "xz"}, {"pq"}),
             node("DequantizeLinear", {"pq", "xs", "xz"}, {"pf"}),
             node("DequantizeLinear", {"b", "bs", "bz"}, {"bf"}),
             node("Add", {"pf", "bf"}, {"s"}),
             node("Relu", {"s"}, {"r"}),
             node("QuantizeLinear", {"r", "ys", "yz"}, {"y"})};
  for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
  const Graph unfused = g;
  EXPECT_EQ(fuse_quantized_products(g), 2u);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "MaxPool");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"pq"}));
  EXPECT_EQ(g.nodes[1].op, "QLinearAdd");
  EXPECT_EQ(g.nodes[1].epilogue, Epilogue::Relu);
  EXPECT_EQ(g.nodes[1].inputs,
            (std::vector<std::string>{"pq", "xs", "xz", "b", "bs", "bz", "ys", "yz"}));
  EXPECT_EQ(check_order(g), "");
  EXPECT_EQ(check_supported(g), "node \"n5\" (QLinearAdd): operator not supported");

  std::vector<std::int64_t> x(32), b(4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int64_t>(i * 37 % 256) - 128;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::int64_t>(i * 60 + 7);
  const std::vector<Tensor> inputs = {Tensor::of_ints({1, 2, 4, 4}, x, DType::Int8),
                                      Tensor::of_ints({1, 2, 1, 2}, b, DType::UInt8)};
  // Q-ADD of the 2x2 maxima and b broadcast along the rows, uint8 moved down by 128.
  const num::QuantAddParams params =
      num::quant_add_params(0.05f, -3, 0.02f, 140 - 128, 0.06f, -20, num::QuantActivation::kRelu);
  std::vector<std::int64_t> want;
  for (std::int64_t c = 0; c < 2; ++c) {
    for (std::int64_t oy = 0; oy < 2; ++oy) {
      for (std::int64_t ox = 0; ox < 2; ++ox) {
        std::int64_t best = -128;
        for (std::int64_t k = 0; k < 4; ++k) {
          best = std::max(best, x[std::size_t(c * 16 + (2 * oy + k / 2) * 4 + 2 * ox + k % 2)]);
        }
        want.push_back(num::add_int8(static_cast<std::int8_t>(best),
                                     static_cast<std::int8_t>(b[std::size_t(c * 2 + ox)] - 128),
                                     params));
      }
    }
  }
  const std::vector<Tensor> reference = run(unfused, inputs, nullptr);
  std::size_t inside = 0;
  for (std::size_t e = 0; e < want.size(); ++e) {
    EXPECT_LE(std::abs(want[e] - reference[0].ints[e]), 1) << "output " << e;
    inside += want[e] > -20;
  }
  EXPECT_GT(inside, want.size() / 4);  // not all clamped by the relu
  Int8VectorBackends backends(small_core());
  for (Backend* accelerator : backends.all()) {
    std::vector<OpRun> runs;
    const std::vector<Tensor> y = run(g, inputs, accelerator, &runs);
    EXPECT_EQ(y[0].dtype, DType::Int8);
    EXPECT_EQ(y[0].shape, (Shape{1, 2, 2, 2}));
    EXPECT_EQ(y[0].ints, want);
    EXPECT_EQ(runs[0].on_accelerator, accelerator == &backends.on_vector);
    EXPECT_EQ(runs[1].on_accelerator, accelerator == &backends.on_vector);
  }
}

// Operators that only move values (Transpose, Concat, Gather, Reshape, ...) between a
// DequantizeLinear and a QuantizeLinear of the same scale and zero point run on the int8 values,
// the pairs gone, with the unfused graph's values exactly; a QuantizeLinear of another scale keeps
// its pair.
TEST(Graph, QuantisedMovesOfValuesDropTheirPairs) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Int8, {2, 3}}, {"w", DType::Int8, {3, 2}}};
  g.outputs = {{"y", DType::Int8, {}}, {"z", DType::Int8, {}}};
  g.constants["s"] = Tensor::of_floats({}, {0.1f});
  g.constants["z0"] = Tensor::of_ints({}, {4}, DType::Int8);
  g.constants["s2"] = Tensor::of_floats({}, {0.2f});
  g.constants["idx"] = Tensor::of_ints({2}, {2, 0});
  Node transpose = node("Transpose", {"xf"}, {"t"});
  transpose.attributes["perm"] = Attribute::of_ints({1, 0});
  Node concat = node("Concat", {"tf", "wf"}, {"c"});
  concat.attributes["axis"] = Attribute::of_int(1);
  Node gather = node("Gather", {"xf", "idx"}, {"gth"});
  gather.attributes["axis"] = Attribute::of_int(1);
  g.nodes = {node("DequantizeLinear", {"x", "s", "z0"}, {"xf"}),
             node("DequantizeLinear", {"w", "s", "z0"}, {"wf"}),
             transpose,
             node("QuantizeLinear", {"t", "s", "z0"}, {"tq"}),
             node("DequantizeLinear", {"tq", "s", "z0"}, {"tf"}),
             concat,
             node("QuantizeLinear", {"c", "s", "z0"}, {"y"}),
             gather,
             node("QuantizeLinear", {"gth", "s2", "z0"}, {"z"})};
  for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
  const Graph unfused = g;
  // The Transpose and the Concat; the Gather's QuantizeLinear has another scale, so x's
  // DequantizeLinear stays for it.
  EXPECT_EQ(fuse_quantized_products(g), 2u);
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"DequantizeLinear", "Transpose", "Concat", "Gather",
                                           "QuantizeLinear"}));
  EXPECT_EQ(g.nodes[1].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(g.nodes[2].inputs, (std::vector<std::string>{"tq", "w"}));
  EXPECT_EQ(check_order(g), "");
  const std::vector<Tensor> inputs = {
      Tensor::of_ints({2, 3}, {-128, -5, 0, 7, 100, 127}, DType::Int8),
      Tensor::of_ints({3, 2}, {1, 2, 3, 4, 5, 6}, DType::Int8)};
  const std::vector<Tensor> fused = run(g, inputs, nullptr),
                            reference = run(unfused, inputs, nullptr);
  EXPECT_EQ(fused[0].dtype, DType::Int8);
  EXPECT_EQ(fused[0].shape, (Shape{3, 4}));
  EXPECT_EQ(fused[0].ints, reference[0].ints);
  EXPECT_EQ(fused[0].ints, (std::vector<std::int64_t>{-128, 7, 1, 2, -5, 100, 3, 4, 0, 127, 5, 6}));
  EXPECT_EQ(fused[1].ints, reference[1].ints);
}

// DequantizeLinear -> ReduceMean over an image's pixels -> Reshape -> QuantizeLinear, as PyTorch
// exports adaptive average pooling before a classifier: a QLinearReduceMean (Q-MEAN) whose int8
// result the Reshape reshapes; GlobalAveragePool likewise. On the vector unit of a core with the
// int8 datapath, with Q-MEAN's bits (num::mean_int8 of each image's sum) on every backend, within
// an output step of the unfused graph's fp32 arithmetic.
TEST(Graph, QuantisedMeansFuseAndRunOnTheVectorUnit) {
  for (const bool global : {false, true}) {
    SCOPED_TRACE(global ? "GlobalAveragePool" : "ReduceMean");
    Graph g;
    g.opset = 18;
    g.inputs = {{"x", DType::Int8, {2, 3, 2, 3}}};
    g.outputs = {{"y", DType::UInt8, {}}};
    g.constants["xs"] = Tensor::of_floats({}, {0.04f});
    g.constants["xz"] = Tensor::of_ints({}, {5}, DType::Int8);
    g.constants["ys"] = Tensor::of_floats({}, {0.03f});
    g.constants["yz"] = Tensor::of_ints({}, {130}, DType::UInt8);
    g.constants["axes"] = Tensor::of_ints({2}, {-1, -2});
    g.constants["shape"] = Tensor::of_ints({2}, {2, 3});
    g.nodes = {node("DequantizeLinear", {"x", "xs", "xz"}, {"xf"}),
               global ? node("GlobalAveragePool", {"xf"}, {"m"})
                      : node("ReduceMean", {"xf", "axes"}, {"m"}),
               node("Reshape", {"m", "shape"}, {"v"}),
               node("QuantizeLinear", {"v", "ys", "yz"}, {"y"})};
    for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
    const Graph unfused = g;
    EXPECT_EQ(fuse_quantized_products(g), 1u);
    ASSERT_EQ(g.nodes.size(), 2u);
    EXPECT_EQ(g.nodes[0].op, global ? "QLinearGlobalAveragePool" : "QLinearReduceMean");
    EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "xs", "xz", "ys", "yz"}));
    EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"m"}));
    EXPECT_EQ(g.nodes[1].op, "Reshape");
    EXPECT_EQ(g.nodes[1].outputs, (std::vector<std::string>{"y"}));
    EXPECT_EQ(check_order(g), "");

    std::vector<std::int64_t> x(36);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int64_t>(i * 53 % 256) - 128;
    const std::vector<Tensor> inputs = {Tensor::of_ints({2, 3, 2, 3}, x, DType::Int8)};
    // Q-MEAN of each image's 6 values, uint8 moved down by 128 and back.
    const num::QuantMeanParams params =
        num::quant_mean_params(0.04f, 5, 0.03f, 130 - 128, 6, num::QuantActivation::kNone);
    std::vector<std::int64_t> want;
    for (std::size_t image = 0; image < 6; ++image) {
      std::int32_t sum = 0;
      for (std::size_t i = 0; i < 6; ++i) sum += static_cast<std::int32_t>(x[image * 6 + i]);
      want.push_back(num::mean_int8(sum, params) + 128);
    }
    const std::vector<Tensor> reference = run(unfused, inputs, nullptr);
    for (std::size_t e = 0; e < want.size(); ++e) {
      EXPECT_LE(std::abs(want[e] - reference[0].ints[e]), 1) << "output " << e;
    }
    Int8VectorBackends backends(test::small_vector_core());
    for (Backend* accelerator : backends.all()) {
      std::vector<OpRun> runs;
      const std::vector<Tensor> y = run(g, inputs, accelerator, &runs);
      EXPECT_EQ(y[0].dtype, DType::UInt8);
      EXPECT_EQ(y[0].shape, (Shape{2, 3}));
      EXPECT_EQ(y[0].ints, want);
      EXPECT_EQ(runs[0].on_accelerator, accelerator == &backends.on_vector);
    }
  }
}

// A QuantizeLinear to uint8 and a DequantizeLinear back (a QDQ model's input and output): on
// the vector unit of a core with the int8 datapath, with Q-QUANT's and Q-DEQUANT's bits
// (num::quantize_int8, num::dequantize_int8); elsewhere on the host, onnxruntime's quotient,
// within a step of them; scales per channel on the host everywhere.
TEST(Graph, QuantisationAndDequantisationRunOnTheVectorUnit) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {2, 40}}};
  g.outputs = {{"q", DType::UInt8, {}}, {"y", DType::Float32, {}}};
  g.constants["s"] = Tensor::of_floats({}, {0.1f / 3});
  g.constants["z"] = Tensor::of_ints({}, {131}, DType::UInt8);
  g.nodes = {node("QuantizeLinear", {"x", "s", "z"}, {"q"}),
             node("DequantizeLinear", {"q", "s", "z"}, {"y"})};
  g.nodes[1].name = "dq";
  std::vector<float> x(80);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = (static_cast<float>(i) - 40) * 0.1f / 6 * (i % 3 == 0 ? 20.0f : 1.0f);
  }
  const std::vector<Tensor> inputs = {Tensor::of_floats({2, 40}, x)};
  const num::QuantizeParams params = num::quantize_params(0.1f / 3, 131 - 128);
  std::vector<std::int64_t> want_q;
  std::vector<float> want_y;
  for (const float v : x) {
    const std::int8_t q = num::quantize_int8(num::float_to_fp32(v), params);
    want_q.push_back(q + 128);
    want_y.push_back(num::fp32_to_float(num::dequantize_int8(q, 3, num::float_to_fp32(0.1f / 3))));
  }
  Int8VectorBackends backends(test::small_vector_core());
  for (Backend* accelerator : backends.all()) {
    std::vector<OpRun> runs;
    const std::vector<Tensor> y = run(g, inputs, accelerator, &runs);
    ASSERT_EQ(y[0].dtype, DType::UInt8);
    EXPECT_EQ(runs[0].on_accelerator, accelerator == &backends.on_vector);
    EXPECT_EQ(runs[1].on_accelerator, accelerator == &backends.on_vector);
    for (std::size_t e = 0; e < x.size(); ++e) {
      if (accelerator == &backends.on_vector) {
        EXPECT_EQ(y[0].ints[e], want_q[e]) << e;
      } else {
        EXPECT_LE(std::abs(y[0].ints[e] - want_q[e]), 1) << e;
      }
      // (q - z) s from each backend's own q: the same product on the host and the core.
      EXPECT_EQ(y[1].floats[e], static_cast<float>(y[0].ints[e] - 131) * (0.1f / 3)) << e;
    }
  }
  g.constants["s"] = Tensor::of_floats({2}, {0.1f, 0.2f});
  g.constants["z"] = Tensor::of_ints({2}, {0, 0}, DType::UInt8);
  g.nodes[0].attributes["axis"] = Attribute::of_int(0);
  g.nodes[1].attributes["axis"] = Attribute::of_int(0);
  std::vector<OpRun> runs;
  run(g, inputs, &backends.on_vector, &runs);
  EXPECT_FALSE(runs[0].on_accelerator);
  EXPECT_FALSE(runs[1].on_accelerator);
}

// A ReduceMean and a ReduceMax over a middle axis (a transformer's tokens, [batch, tokens,
// features] to [batch, features]) run on the vector unit as pools of channels-last images:
// N-POOL's bits, the tokens folded in order (reference_pool), within a sliver of the host's mean;
// the maximum exactly. Over axes that are not one block, on the host.
TEST(Graph, ReductionsOverTheTokensRunOnTheVectorUnit) {
  std::vector<float> x(2 * 5 * 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 23) / 8 - 1.25f;
  const std::vector<Tensor> inputs = {Tensor::of_floats({2, 5, 3}, x)};
  for (const bool mean : {true, false}) {
    SCOPED_TRACE(mean ? "ReduceMean" : "ReduceMax");
    Graph g;
    g.opset = 18;
    g.inputs = {{"x", DType::Float32, {2, 5, 3}}};
    g.outputs = {{"y", DType::Float32, {}}};
    g.constants["axes"] = Tensor::of_ints({1}, {1});
    g.nodes = {node(mean ? "ReduceMean" : "ReduceMax", {"x", "axes"}, {"y"})};
    g.nodes[0].attributes["keepdims"] = Attribute::of_int(0);
    FunctionalModel on_vector(test::small_vector_core(), 0);
    std::vector<OpRun> runs;
    const Tensor y = run(g, inputs, &on_vector, &runs)[0];
    EXPECT_TRUE(runs[0].on_accelerator);
    ASSERT_EQ(y.shape, (Shape{2, 3}));
    const Tensor host = run(g, inputs, nullptr)[0];
    PoolSpec spec;
    spec.max = !mean;
    spec.batch = 2;
    spec.channels = 3;
    spec.height = spec.kernel_h = 5;
    spec.width = spec.kernel_w = spec.out_h = spec.out_w = 1;
    spec.count = mean ? 5 : 1;
    spec.channels_last = true;
    std::vector<num::fp32_t> bits;
    for (const float v : x) bits.push_back(num::float_to_fp32(v));
    const std::vector<num::fp32_t> want = reference_pool(spec, bits);
    ASSERT_EQ(want.size(), 6u);
    for (std::size_t e = 0; e < 6; ++e) {
      EXPECT_EQ(num::float_to_fp32(y.floats[e]), want[e]) << e;
      EXPECT_NEAR(y.floats[e], host.floats[e], 1e-6) << e;
    }
    g.constants["axes"] = Tensor::of_ints({2}, {0, 2});  // not one block of axes
    runs.clear();
    run(g, inputs, &on_vector, &runs);
    EXPECT_FALSE(runs[0].on_accelerator);
  }
}

// A K larger than one GEMM takes on the core (256 on the 4x4 test core for 2 rows: half its
// unified buffer, 128 rows, holds 64 tiles of a row twice) runs as several GEMMs, each adding onto
// the sums of the one before: the bits of the reference model's single product, bias and relu
// included, in bf16 and in int8; the weights of every part are written once a session.
// A Softmax over the last axis runs on a core with a vector unit, to N-SOFTMAX's bits
// (reference_softmax); elsewhere, and over another axis, on the host.
TEST(Graph, ASoftmaxRunsOnTheVectorUnit) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 3, 7}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.nodes = {node("Softmax", {"x"}, {"y"})};
  std::vector<float> x(2 * 3 * 7);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 5) - 0.75f * static_cast<float>(i % 3);
  const Tensor input = Tensor::of_floats({2, 3, 7}, x);
  const HardwareConfig vector = test::small_vector_core();
  FunctionalModel core(vector, 0);
  std::vector<OpRun> runs;
  const std::vector<Tensor> y = run(g, {input}, &core, &runs);
  std::vector<num::fp32_t> bits(x.size());
  std::memcpy(bits.data(), x.data(), x.size() * sizeof(float));
  const std::vector<num::fp32_t> expected = reference_softmax(vector, 6, 7, bits);
  ASSERT_EQ(y[0].floats.size(), expected.size());
  EXPECT_EQ(std::memcmp(y[0].floats.data(), expected.data(), expected.size() * 4), 0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].on_accelerator);
  EXPECT_EQ(runs[0].programs, 1u);
  EXPECT_GT(runs[0].estimated_cycles, 0.0);

  // The host's fp32: on a core without a vector unit, and over the middle axis.
  FunctionalModel plain(small_core(), 0);
  const std::vector<Tensor> host = run(g, {input}, nullptr);
  EXPECT_EQ(run(g, {input}, &plain, &runs)[0].floats, host[0].floats);
  EXPECT_FALSE(runs.back().on_accelerator);
  g.nodes[0].attributes["axis"].kind = Attribute::Kind::Int;
  g.nodes[0].attributes["axis"].i = 1;
  EXPECT_EQ(run(g, {input}, &core, &runs)[0].floats, run(g, {input}, nullptr)[0].floats);
  EXPECT_FALSE(runs.back().on_accelerator);
}

// An LSTM whose hidden state is whole rows of the array keeps its states on the core: per step
// the recurrent product on the hidden state where the gates left it, the gates on the products
// and the cell state where they lie (StateOnCore), the input product and the steps one
// program, the host writing the inputs and the initial states and reading the outputs once a
// direction. The same bits
// as the gates' step by step, each step's operands and results crossing the bus (hidden 8 on a core
// of 16 lanes a row), in fewer of the host's bytes: both directions, peepholes, a clip, initial
// states; and a GRU with linear_before_reset, in reverse.
TEST(Graph, RecurrentStatesStayOnTheCore) {
  constexpr std::int64_t kSteps = 5, kBatch = 3, kInputs = 6, kHidden = 8, kDirections = 2;
  const auto values = [](std::size_t count, float scale, int seed) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) {
      v[i] = scale * std::sin(static_cast<float>(seed * 131 + static_cast<int>(i) * 7) * 0.37f);
    }
    return v;
  };
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {kSteps, kBatch, kInputs}}};
  g.outputs = {{"y", DType::Float32, {}}, {"y_c", DType::Float32, {}}};
  const auto constant = [&](const std::string& name, Shape shape, float scale, int seed) {
    std::size_t count = 1;
    for (const std::int64_t d : shape) count *= static_cast<std::size_t>(d);
    g.constants[name] = Tensor::of_floats(shape, values(count, scale, seed));
  };
  constant("w", {kDirections, 4 * kHidden, kInputs}, 0.5f, 1);
  constant("r", {kDirections, 4 * kHidden, kHidden}, 0.5f, 2);
  constant("b", {kDirections, 8 * kHidden}, 0.2f, 3);
  constant("h0", {kDirections, kBatch, kHidden}, 0.5f, 4);
  constant("c0", {kDirections, kBatch, kHidden}, 0.5f, 5);
  constant("p", {kDirections, 3 * kHidden}, 0.3f, 6);
  Node lstm = node("LSTM", {"x", "w", "r", "b", "", "h0", "c0", "p"}, {"y", "", "y_c"});
  lstm.attributes["hidden_size"] = Attribute::of_int(kHidden);
  lstm.attributes["clip"] = Attribute::of_float(2.5f);
  lstm.attributes["direction"].kind = Attribute::Kind::String;
  lstm.attributes["direction"].s = "bidirectional";
  g.nodes = {lstm};
  const Tensor x =
      Tensor::of_floats({kSteps, kBatch, kInputs}, values(kSteps * kBatch * kInputs, 1.0f, 7));
  HardwareConfig wide = test::small_vector_core(256);
  wide.dim = 16;
  wide.vector_lanes = 4;
  FunctionalModel on_core(test::small_vector_core(256), 0), step_by_step(wide, 0);
  // The graph's node on both cores: the same bits; on the core that keeps the states one program
  // a direction (its input products and its steps, each the product and the gates), the same
  // MACs and fewer host bytes.
  const auto states_stay = [&](const std::string& what, std::uint64_t directions) {
    std::vector<OpRun> kept, crossing;
    const std::vector<Tensor> y = run(g, {x}, &on_core, &kept);
    const std::vector<Tensor> want = run(g, {x}, &step_by_step, &crossing);
    ASSERT_EQ(y.size(), want.size());
    for (std::size_t o = 0; o < y.size(); ++o) {
      ASSERT_EQ(y[o].floats.size(), want[o].floats.size());
      EXPECT_EQ(std::memcmp(y[o].floats.data(), want[o].floats.data(), y[o].floats.size() * 4), 0)
          << what << " output " << o;
    }
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_TRUE(kept[0].on_accelerator);
    EXPECT_FALSE(kept[0].host_arithmetic);
    EXPECT_FALSE(crossing[0].host_arithmetic);
    EXPECT_EQ(kept[0].programs, directions);
    EXPECT_GT(crossing[0].programs, directions * kSteps);  // a program a step at least
    EXPECT_EQ(kept[0].macs, crossing[0].macs);
    std::cout << "[ bytes    ] " << what << " host bytes: states on the core " << kept[0].host_bytes
              << ", step by step " << crossing[0].host_bytes << '\n';
    EXPECT_LT(kept[0].host_bytes, crossing[0].host_bytes);
  };
  states_stay("LSTM", kDirections);

  // A GRU as PyTorch exports it (linear_before_reset), in reverse, from an initial state.
  constant("gw", {1, 3 * kHidden, kInputs}, 0.5f, 8);
  constant("gr", {1, 3 * kHidden, kHidden}, 0.5f, 9);
  constant("gb", {1, 6 * kHidden}, 0.2f, 10);
  constant("g0", {1, kBatch, kHidden}, 0.5f, 11);
  Node gru = node("GRU", {"x", "gw", "gr", "gb", "", "g0"}, {"y", "y_c"});
  gru.attributes["hidden_size"] = Attribute::of_int(kHidden);
  gru.attributes["linear_before_reset"] = Attribute::of_int(1);
  gru.attributes["direction"].kind = Attribute::Kind::String;
  gru.attributes["direction"].s = "reverse";
  g.nodes = {gru};
  states_stay("GRU", 1);

  // ONNX's default GRU (the reset applied before its product), both directions: per step two
  // parts around the reset state's product, still one program a direction.
  constant("gw2", {kDirections, 3 * kHidden, kInputs}, 0.5f, 12);
  constant("gr2", {kDirections, 3 * kHidden, kHidden}, 0.5f, 13);
  constant("gb2", {kDirections, 6 * kHidden}, 0.2f, 14);
  Node reset_first = node("GRU", {"x", "gw2", "gr2", "gb2"}, {"y", "y_c"});
  reset_first.attributes["hidden_size"] = Attribute::of_int(kHidden);
  reset_first.attributes["direction"].kind = Attribute::Kind::String;
  reset_first.attributes["direction"].s = "bidirectional";
  g.nodes = {reset_first};
  states_stay("GRU (linear_before_reset 0)", kDirections);
}

// Elementwise operators on the vector unit (plan_elementwise): an Add of a bias along the last
// axis and its Relu, fused; a product of two inputs; a scalar minus a tensor and its Sigmoid,
// fused; a Tanh on its own. On a core with a vector unit each runs there as one program, with
// reference_elementwise's bits; on one without, on the host, as the host computes them.
TEST(Graph, ElementwiseOperatorsRunOnTheVectorUnit) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 3, 5}}, {"y", DType::Float32, {-1, 3, 5}}};
  g.outputs = {{"d", DType::Float32, {}}, {"t", DType::Float32, {}}};
  g.constants["bias"] = Tensor::of_floats({5}, {0.5f, -1, 2, -0.25f, 0});
  g.constants["half"] = Tensor::of_floats({}, {0.5f});
  g.nodes = {node("Add", {"x", "bias"}, {"s"}), node("Relu", {"s"}, {"r"}),
             node("Mul", {"r", "y"}, {"m"}),    node("Sub", {"half", "m"}, {"u"}),
             node("Sigmoid", {"u"}, {"d"}),     node("Tanh", {"x"}, {"t"})};
  EXPECT_EQ(fuse_epilogues(g), 2u);  // the Relu into the Add, the Sigmoid into the Sub
  ASSERT_EQ(g.nodes.size(), 4u);
  std::vector<float> x(30), y(30);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i % 7) - 3.25f;
    y[i] = 0.125f * static_cast<float>(i % 5) - 0.3f;
  }
  const std::vector<Tensor> inputs = {Tensor::of_floats({2, 3, 5}, x),
                                      Tensor::of_floats({2, 3, 5}, y)};
  const HardwareConfig vector = test::small_vector_core();
  FunctionalModel core(vector, 0);
  std::vector<OpRun> runs;
  const std::vector<Tensor> out = run(g, inputs, &core, &runs);

  const auto bits = [](const std::vector<float>& v) {
    std::vector<num::fp32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  const auto spec = [](isa::VectorOp op, isa::Func func, std::uint64_t a, std::uint64_t b) {
    ElementwiseSpec s;
    s.op = op;
    s.func = func;
    s.size = 30;
    s.a_period = a;
    s.b_period = b;
    return s;
  };
  const std::vector<num::fp32_t> sums = reference_elementwise(
      spec(isa::VectorOp::Add, isa::Func::Relu, 30, 5), bits(x), bits(g.constants["bias"].floats));
  const std::vector<num::fp32_t> products =
      reference_elementwise(spec(isa::VectorOp::Mul, isa::Func::None, 30, 30), sums, bits(y));
  const std::vector<num::fp32_t> d = reference_elementwise(
      spec(isa::VectorOp::Sub, isa::Func::Sigmoid, 1, 30), {bits({0.5f})}, products);
  ElementwiseSpec tanh_spec;
  tanh_spec.func = isa::Func::Tanh;
  tanh_spec.size = tanh_spec.a_period = 30;
  const std::vector<num::fp32_t> t = reference_elementwise(tanh_spec, bits(x), {});
  EXPECT_EQ(bits(out[0].floats), d);
  EXPECT_EQ(bits(out[1].floats), t);
  ASSERT_EQ(runs.size(), 4u);
  for (const OpRun& r : runs) {
    SCOPED_TRACE(r.op);
    EXPECT_TRUE(r.on_accelerator);
    EXPECT_EQ(r.programs, 1u);
    EXPECT_GT(r.host_bytes, 0u);
    EXPECT_GT(r.estimated_cycles, 0.0);
  }

  // The host's fp32 on a core without a vector unit.
  FunctionalModel plain(small_core(), 0);
  const std::vector<Tensor> host = run(g, inputs, nullptr);
  runs.clear();
  const std::vector<Tensor> on_plain = run(g, inputs, &plain, &runs);
  EXPECT_EQ(on_plain[0].floats, host[0].floats);
  EXPECT_EQ(on_plain[1].floats, host[1].floats);
  ASSERT_EQ(runs.size(), 4u);
  for (const OpRun& r : runs) EXPECT_FALSE(r.on_accelerator) << r.op;
}

// Pooling on the vector unit (plan_pool): a MaxPool with padding and stride, an AveragePool of
// one count, a GlobalAveragePool, a ReduceMean over the pixels (keepdims 0) and an AveragePool
// whose windows' counts differ (padding not counted) run there with reference_pool's bits; every
// pool on a core without a vector unit runs on the host.
TEST(Graph, PoolsRunOnTheVectorUnit) {
  const auto pool_node = [](const char* op, std::vector<std::int64_t> kernel,
                            std::vector<std::int64_t> strides, std::vector<std::int64_t> pads,
                            const char* out) {
    Node n = node(op, {"x"}, {out});
    n.attributes["kernel_shape"] = Attribute::of_ints(std::move(kernel));
    n.attributes["strides"] = Attribute::of_ints(std::move(strides));
    n.attributes["pads"] = Attribute::of_ints(std::move(pads));
    return n;
  };
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 5, 6, 6}}};
  g.outputs = {{"max", DType::Float32, {}},
               {"mean", DType::Float32, {}},
               {"global", DType::Float32, {}},
               {"reduced", DType::Float32, {}},
               {"uneven", DType::Float32, {}}};
  Node reduce = node("ReduceMean", {"x"}, {"reduced"});
  reduce.attributes["axes"] = Attribute::of_ints({2, 3});
  reduce.attributes["keepdims"] = Attribute::of_int(0);
  g.nodes = {pool_node("MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1}, "max"),
             pool_node("AveragePool", {2, 2}, {2, 2}, {0, 0, 0, 0}, "mean"),
             node("GlobalAveragePool", {"x"}, {"global"}), reduce,
             pool_node("AveragePool", {3, 3}, {1, 1}, {1, 1, 1, 1}, "uneven")};
  g.nodes[0].name = "max";
  g.nodes[4].name = "uneven";
  std::vector<float> x(2 * 5 * 6 * 6);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((i * 37) % 101) / 8.0f - 6.0f;
  }
  const Tensor input = Tensor::of_floats({2, 5, 6, 6}, x);
  const HardwareConfig vector = test::small_vector_core(256);
  FunctionalModel core(vector, 0);
  std::vector<OpRun> runs;
  const std::vector<Tensor> out = run(g, {input}, &core, &runs);
  std::vector<num::fp32_t> bits(x.size());
  std::memcpy(bits.data(), x.data(), x.size() * sizeof(float));
  const auto as_bits = [](const std::vector<float>& v) {
    std::vector<num::fp32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  PoolSpec s;
  s.batch = 2;
  s.channels = 5;
  s.height = s.width = 6;
  s.kernel_h = s.kernel_w = 3;
  s.stride_h = s.stride_w = 2;
  s.pad_top = s.pad_left = 1;
  s.out_h = s.out_w = 3;
  EXPECT_EQ(as_bits(out[0].floats), reference_pool(s, bits));
  s.max = false;
  s.kernel_h = s.kernel_w = 2;
  s.pad_top = s.pad_left = 0;
  s.count = 4;
  EXPECT_EQ(as_bits(out[1].floats), reference_pool(s, bits));
  s.kernel_h = s.kernel_w = 6;
  s.stride_h = s.stride_w = 1;
  s.out_h = s.out_w = 1;
  s.count = 36;
  EXPECT_EQ(as_bits(out[2].floats), reference_pool(s, bits));
  EXPECT_EQ(out[2].shape, (Shape{2, 5, 1, 1}));
  EXPECT_EQ(as_bits(out[3].floats), reference_pool(s, bits));
  EXPECT_EQ(out[3].shape, (Shape{2, 5}));
  // Each window's sum times the reciprocal of its values inside the image: 4, 6 or 9.
  s.kernel_h = s.kernel_w = 3;
  s.pad_top = s.pad_left = 1;
  s.out_h = s.out_w = 6;
  s.count_inside = true;
  EXPECT_EQ(as_bits(out[4].floats), reference_pool(s, bits));
  const std::vector<Tensor> host = run(g, {input}, nullptr);
  ASSERT_EQ(runs.size(), 5u);
  for (std::size_t n = 0; n < 5; ++n) EXPECT_TRUE(runs[n].on_accelerator) << runs[n].op;

  FunctionalModel plain(small_core(), 0);
  runs.clear();
  const std::vector<Tensor> on_plain = run(g, {input}, &plain, &runs);
  for (std::size_t n = 0; n < host.size(); ++n) EXPECT_EQ(on_plain[n].floats, host[n].floats);
  for (const OpRun& r : runs) EXPECT_FALSE(r.on_accelerator) << r.op;
}

// A depthwise Conv (as many groups as channels, one filter each) on the vector unit
// (plan_depthwise), its Clip to [0, 6] fused: the bits its one-column products give on the matrix
// unit of a core without a vector unit; its MACs counted as the vector unit's. A grouped Conv
// with two channels a group stays on the matrix unit.
TEST(Graph, DepthwiseConvolutionsRunOnTheVectorUnitWithTheMatrixUnitsBits) {
  const auto conv_node = [](std::int64_t group, const char* w, const char* out, const char* name) {
    Node n = node("Conv", {"x", w, "bias"}, {out});
    n.name = name;
    n.attributes["group"] = Attribute::of_int(group);
    n.attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
    n.attributes["strides"] = Attribute::of_ints({2, 1});
    return n;
  };
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 6, 7, 5}}};
  g.outputs = {{"y", DType::Float32, {}}, {"grouped", DType::Float32, {}}};
  std::vector<float> w(6 * 9), w2(6 * 2 * 9);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 13) % 11) / 4.0f - 1.2f;
  for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<float>((i * 7) % 9) / 3.0f - 1.f;
  g.constants["w"] = Tensor::of_floats({6, 1, 3, 3}, w);
  g.constants["w2"] = Tensor::of_floats({6, 2, 3, 3}, w2);
  g.constants["bias"] = Tensor::of_floats({6}, {0.5f, -1, 0.25f, 2, -0.75f, 0});
  g.constants["lo"] = Tensor::of_floats({}, {0});
  g.constants["hi"] = Tensor::of_floats({}, {6});
  g.nodes = {conv_node(6, "w", "conv", "depthwise"), node("Clip", {"conv", "lo", "hi"}, {"y"}),
             conv_node(3, "w2", "grouped", "grouped")};
  EXPECT_EQ(fuse_epilogues(g), 1u);
  std::vector<float> x(2 * 6 * 7 * 5);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 41) % 97) / 9.0f - 5.0f;
  const Tensor input = Tensor::of_floats({2, 6, 7, 5}, x);
  const HardwareConfig vector = test::small_vector_core(256);
  FunctionalModel core(vector, 0);
  std::vector<OpRun> runs;
  const std::vector<Tensor> out = run(g, {input}, &core, &runs);
  FunctionalModel plain(small_core(), 0);
  std::vector<OpRun> plain_runs;
  const std::vector<Tensor> on_plain = run(g, {input}, &plain, &plain_runs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (Shape{2, 6, 4, 5}));
  for (std::size_t n = 0; n < out.size(); ++n) {
    std::vector<num::fp32_t> got(out[n].size()), want(out[n].size());
    ASSERT_EQ(on_plain[n].size(), out[n].size());
    std::memcpy(got.data(), out[n].floats.data(), got.size() * sizeof(float));
    std::memcpy(want.data(), on_plain[n].floats.data(), want.size() * sizeof(float));
    EXPECT_EQ(got, want) << "output " << n;
  }
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].on_accelerator);
  EXPECT_EQ(runs[0].products, 0u);  // no GEMM: the vector unit's program
  EXPECT_EQ(runs[0].programs, 1u);
  EXPECT_EQ(runs[0].macs, 2u * 6 * 4 * 5 * 9);
  EXPECT_EQ(runs[0].vector_macs, runs[0].macs);
  EXPECT_EQ(plain_runs[0].macs, runs[0].macs);
  EXPECT_EQ(plain_runs[0].products, 6u);  // one a channel on the matrix unit
  EXPECT_EQ(runs[1].vector_macs, 0u);
  EXPECT_EQ(runs[1].products, 3u);
}

// A depthwise QLinearConv (int8, per-channel weight scales, a bias, uint8 in and out) on the
// vector unit: the bits of its int8 products on a core without a vector unit.
TEST(Graph, Int8DepthwiseConvolutionsRunOnTheVectorUnitWithTheProductsBits) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::UInt8, {-1, 5, 6, 6}}};
  g.outputs = {{"y", DType::UInt8, {}}};
  std::vector<std::int64_t> w(5 * 9), x(2 * 5 * 6 * 6);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::int64_t>((i * 37) % 255) - 127;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int64_t>((i * 53) % 256);
  g.constants["x_scale"] = Tensor::of_floats({}, {0.05f});
  g.constants["x_zero"] = Tensor::of_ints({}, {131}, DType::UInt8);
  g.constants["w"] = Tensor::of_ints({5, 1, 3, 3}, w, DType::Int8);
  g.constants["w_scale"] = Tensor::of_floats({5}, {0.01f, 0.02f, 0.005f, 0.015f, 0.03f});
  g.constants["w_zero"] = Tensor::of_ints({5}, {0, 0, 0, 0, 0}, DType::Int8);
  g.constants["y_scale"] = Tensor::of_floats({}, {0.1f});
  g.constants["y_zero"] = Tensor::of_ints({}, {120}, DType::UInt8);
  g.constants["bias"] = Tensor::of_ints({5}, {100, -2000, 0, 512, -77}, DType::Int32);
  Node conv = node(
      "QLinearConv",
      {"x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias"}, {"y"});
  conv.attributes["group"] = Attribute::of_int(5);
  conv.attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
  g.nodes = {conv};
  const Tensor input = Tensor::of_ints({2, 5, 6, 6}, x, DType::UInt8);
  HardwareConfig vector = test::small_vector_core(256);
  vector.int8 = true;
  HardwareConfig plain = small_core();
  plain.int8 = true;
  FunctionalModel core(vector, 0), plain_core(plain, 0);
  std::vector<OpRun> runs, plain_runs;
  const std::vector<Tensor> out = run(g, {input}, &core, &runs);
  const std::vector<Tensor> want = run(g, {input}, &plain_core, &plain_runs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Shape{2, 5, 6, 6}));
  EXPECT_EQ(out[0].ints, want[0].ints);
  std::set<std::int64_t> distinct(out[0].ints.begin(), out[0].ints.end());
  EXPECT_GT(distinct.size(), 20u);  // not a clamped constant
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].products, 0u);
  EXPECT_EQ(runs[0].vector_macs, 2u * 5 * 36 * 9);
  EXPECT_EQ(plain_runs[0].products, 5u);
}

// LayerNormalization over the last axis on the vector unit (plan_layernorm): reference_layernorm's
// bits; with its Mean output wanted, or on a core without a vector unit, on the host.
TEST(Graph, ALayerNormRunsOnTheVectorUnit) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 3, 6}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.constants["gamma"] = Tensor::of_floats({6}, {1, 0.5f, -2, 1.5f, 0.25f, 3});
  g.constants["beta"] = Tensor::of_floats({6}, {0, 1, -1, 0.5f, 2, -0.75f});
  g.nodes = {node("LayerNormalization", {"x", "gamma", "beta"}, {"y"})};
  std::vector<float> x(2 * 3 * 6);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 29) % 17) / 4.0f - 2.0f;
  const Tensor input = Tensor::of_floats({2, 3, 6}, x);
  const HardwareConfig vector = test::small_vector_core();
  FunctionalModel core(vector, 0);
  std::vector<OpRun> runs;
  const std::vector<Tensor> out = run(g, {input}, &core, &runs);
  const auto bits = [](const std::vector<float>& v) {
    std::vector<num::fp32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  LayerNormSpec spec;
  spec.rows = 6;
  spec.length = 6;
  spec.epsilon = bits({1e-5f})[0];
  spec.has_beta = true;
  EXPECT_EQ(bits(out[0].floats),
            reference_layernorm(vector, spec, bits(x), bits(g.constants["gamma"].floats),
                                bits(g.constants["beta"].floats)));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].on_accelerator);
  EXPECT_EQ(runs[0].programs, 1u);

  FunctionalModel plain(small_core(), 0);
  runs.clear();
  EXPECT_EQ(run(g, {input}, &plain, &runs)[0].floats, run(g, {input}, nullptr)[0].floats);
  EXPECT_FALSE(runs[0].on_accelerator);
  g.nodes[0].outputs.push_back("mean");
  g.outputs.push_back({"mean", DType::Float32, {}});
  runs.clear();
  EXPECT_EQ(run(g, {input}, &core, &runs)[0].floats, run(g, {input}, nullptr)[0].floats);
  EXPECT_FALSE(runs[0].on_accelerator);
}

TEST(Graph, ALargeKRunsAsSeveralGemmsToTheContractsBits) {
  constexpr std::size_t kM = 2, kK = 600, kN = 3;
  HardwareConfig core = small_core();
  core.int8 = true;
  GemmSpec bf16_spec;
  bf16_spec.m = kM;
  bf16_spec.n = kN;
  ASSERT_EQ(max_gemm_k(core, bf16_spec), 256u);
  std::uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  std::vector<float> x(kM * kK), w(kK * kN), bias(kN);
  std::vector<std::int64_t> xq(kM * kK), wq(kK * kN);
  for (float& v : x) v = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
  for (float& v : w) v = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
  for (float& v : bias) v = static_cast<float>(next() % 2001) / 100.0f - 10.0f;
  for (std::int64_t& v : xq) v = static_cast<std::int64_t>(next() % 256) - 128;
  for (std::int64_t& v : wq) v = static_cast<std::int64_t>(next() % 255) - 127;
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, static_cast<std::int64_t>(kK)}},
              {"xq", DType::Int8, {-1, static_cast<std::int64_t>(kK)}}};
  g.outputs = {{"y", DType::Float32, {}}, {"yq", DType::Int8, {}}};
  g.constants["w"] = Tensor::of_floats({kK, kN}, w);
  g.constants["b"] = Tensor::of_floats({kN}, bias);
  g.constants["wq"] = Tensor::of_ints({kK, kN}, wq, DType::Int8);
  g.constants["s"] = Tensor::of_floats({}, {0.01f});
  g.constants["ys"] = Tensor::of_floats({}, {0.5f});
  g.constants["xz"] = Tensor::of_ints({}, {5}, DType::Int8);
  g.constants["z"] = Tensor::of_ints({}, {0}, DType::Int8);
  g.constants["yz"] = Tensor::of_ints({}, {-3}, DType::Int8);
  Node gemm = node("Gemm", {"x", "w", "b"}, {"y"});
  gemm.epilogue = Epilogue::Relu;
  g.nodes = {gemm, node("QLinearMatMul", {"xq", "s", "xz", "wq", "s", "z", "ys", "yz"}, {"yq"})};
  const std::vector<Tensor> inputs = {Tensor::of_floats({kM, kK}, x),
                                      Tensor::of_ints({kM, kK}, xq, DType::Int8)};

  // The reference model's single products.
  bf16_spec.k = kK;
  bf16_spec.has_bias = true;
  bf16_spec.act = isa::Func::Relu;
  std::vector<num::fp32_t> bias_bits(kN);
  std::memcpy(bias_bits.data(), bias.data(), kN * sizeof(float));
  const num::MatrixFp32 expected =
      reference_gemm(bf16_spec, nn::bf16_matrix(x.data(), kM, kK),
                     nn::bf16_matrix(w.data(), kK, kN), nullptr, &bias_bits);
  GemmSpec int8_spec;
  int8_spec.m = kM;
  int8_spec.k = kK;
  int8_spec.n = kN;
  int8_spec.in = InType::Int8;
  int8_spec.out = OutType::Int8;
  int8_spec.input_zero_point = 5;
  int8_spec.output_zero_point = -3;
  num::MatrixI8 a8(kM, kK), b8(kK, kN);
  for (std::size_t e = 0; e < xq.size(); ++e) a8.data[e] = static_cast<std::int8_t>(xq[e]);
  for (std::size_t e = 0; e < wq.size(); ++e) b8.data[e] = static_cast<std::int8_t>(wq[e]);
  const num::QuantizedMultiplier m = num::quantize_multiplier(0.01 * 0.01 / 0.5);
  RequantColumns requant{std::vector<std::int32_t>(kN, 0),
                         std::vector<std::int32_t>(kN, m.multiplier),
                         std::vector<std::int32_t>(kN, m.shift)};
  const num::MatrixI32 expected_q = reference_gemm(int8_spec, a8, b8, nullptr, &requant);

  FunctionalModel backend(core, 0);
  Session session(g, &backend);
  for (int run_index = 0; run_index < 2; ++run_index) {
    std::vector<OpRun> runs;
    const std::vector<Tensor> y = session.run(inputs, &runs);
    ASSERT_EQ(y[0].floats.size(), kM * kN);
    for (std::size_t e = 0; e < kM * kN; ++e) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &y[0].floats[e], sizeof bits);
      EXPECT_EQ(bits, expected.data[e]) << "bf16 output " << e;
      EXPECT_EQ(y[1].ints[e], expected_q.data[e]) << "int8 output " << e;
    }
    EXPECT_EQ(runs[0].products, 3u);  // K = 256 + 256 + 88
    EXPECT_EQ(runs[1].products, 3u);
    // Each part's weights once: 600 rows padded to 64 + 64 + 22 tiles of 4 rows, 4 columns.
    EXPECT_EQ(runs[0].weight_bytes, run_index == 0 ? 600u * 4 * 2 : 0u);
    EXPECT_EQ(runs[1].weight_bytes, run_index == 0 ? 600u * 4 : 0u);
  }
}

// A Conv whose weights have a zero point per channel other than 0 is not the core's: it stays a
// float Conv and its weights' DequantizeLinear folds into float weights.
TEST(Graph, AsymmetricPerChannelWeightsStayFloat) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Int8, {1, 1, 2, 2}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.constants["s"] = Tensor::of_floats({}, {0.5f});
  g.constants["z"] = Tensor::of_ints({}, {0}, DType::Int8);
  g.constants["w"] = Tensor::of_ints({2, 1, 1, 1}, {2, 4}, DType::Int8);
  g.constants["ws"] = Tensor::of_floats({2}, {1.0f, 1.0f});
  g.constants["wz"] = Tensor::of_ints({2}, {0, 1}, DType::Int8);
  Node w = node("DequantizeLinear", {"w", "ws", "wz"}, {"wf"});
  w.name = "w_dq";
  w.attributes["axis"].kind = Attribute::Kind::Int;
  w.attributes["axis"].i = 0;
  g.nodes = {node("DequantizeLinear", {"x", "s", "z"}, {"xf"}), w,
             node("Conv", {"xf", "wf"}, {"c"}), node("QuantizeLinear", {"c", "s", "z"}, {"y"})};
  EXPECT_EQ(fuse_quantized_products(g), 0u);
  EXPECT_EQ(fold_constants(g), 1u);  // the weights' DequantizeLinear
  EXPECT_EQ(g.constants.at("wf").floats, (std::vector<float>{2, 3}));
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

// x [N, 2, 3] flattened as an exporter writes it: Reshape(x, Concat(Gather(Shape(x), 0), [-1])).
// The shape arithmetic and the Reshape are no work; the Relu after them is.
Graph flatten_by_shape_graph() {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 2, 3}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.constants["zero"] = Tensor::of_ints({1}, {0});
  g.constants["rest"] = Tensor::of_ints({1}, {-1});
  Node gather = node("Gather", {"shape", "zero"}, {"batch"});
  gather.attributes["axis"] = Attribute::of_int(0);
  Node concat = node("Concat", {"batch", "rest"}, {"flat_shape"});
  concat.attributes["axis"] = Attribute::of_int(0);
  g.nodes = {node("Shape", {"x"}, {"shape"}), gather, concat,
             node("Reshape", {"x", "flat_shape"}, {"flat"}), node("Relu", {"flat"}, {"y"})};
  return g;
}

TEST(Graph, ViewsAndShapeArithmeticAreNoWork) {
  const Graph g = flatten_by_shape_graph();
  EXPECT_EQ(node_work(g),
            (std::vector<NodeWork>{NodeWork::ShapeArithmetic, NodeWork::ShapeArithmetic,
                                   NodeWork::ShapeArithmetic, NodeWork::View, NodeWork::Values}));
  std::vector<OpRun> runs;
  const Tensor x = Tensor::of_floats({2, 2, 3}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12});
  const Tensor y = run(g, {x}, nullptr, &runs)[0];
  EXPECT_EQ(y.shape, (Shape{2, 6}));
  EXPECT_EQ(y.floats, (std::vector<float>{1, 0, 3, 0, 5, 0, 7, 0, 9, 0, 11, 0}));
  ASSERT_EQ(runs.size(), 5u);
  EXPECT_EQ(runs[3].work, NodeWork::View);
  EXPECT_EQ(runs[4].work, NodeWork::Values);
  // A Gather of the input's values is work, whatever it reads beside them.
  Graph data = g;
  data.nodes[1].inputs[0] = "x";
  EXPECT_EQ(node_work(data)[1], NodeWork::Values);
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
  transpose.attributes["perm"] = Attribute::of_ints({1, 0});
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

// Attention's K^T (a Transpose of the last two axes, then a Reshape and a scale on the way to a
// MatMul's B) moves nothing on a core with a vector unit: READ_WEIGHTS T takes K's rows as the
// columns of B's tiles, the same bits as B laid out by the host and given as an input. K of 13
// values a token spans more tiles than the weight FIFO holds, and ends in a partial one. The
// scale may be a constant or come from the shape arithmetic (PyTorch's opset-17 export).
TEST(Graph, AttentionsTransposeOfKIsAView) {
  const auto values = [](std::size_t count, float scale) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) {
      v[i] = scale * static_cast<float>((i * 37) % 23) - 5.0f * scale;
    }
    return v;
  };
  const Tensor q = Tensor::of_floats({2, 6, 13}, values(2 * 6 * 13, 0.25f));
  const Tensor k = Tensor::of_floats({2, 6, 13}, values(2 * 6 * 13, -0.125f));
  Tensor kt(DType::Float32, {2, 13, 6});
  for (std::size_t h = 0; h < 2; ++h) {
    for (std::size_t t = 0; t < 6; ++t) {
      for (std::size_t d = 0; d < 13; ++d) {
        kt.floats[(h * 13 + d) * 6 + t] = k.floats[(h * 6 + t) * 13 + d];
      }
    }
  }
  const auto attention = [](bool transpose, const Shape& kt_shape, bool shape_scale = false) {
    Graph g;
    g.opset = 17;
    g.inputs = {{"q", DType::Float32, {2, 6, 13}},
                {"k", DType::Float32, transpose ? Shape{2, 6, 13} : Shape{2, 13, 6}}};
    g.outputs = {{"y", DType::Float32, {}}};
    g.constants["kt_shape"] = Tensor::of_ints({static_cast<std::int64_t>(kt_shape.size())},
                                              std::vector<std::int64_t>(kt_shape));
    g.constants["q_shape"] = Tensor::of_ints({4}, {1, 2, 6, 13});
    g.constants["scale"] = Tensor::of_floats({1}, {0.5f});
    Node t = node("Transpose", {"k"}, {"kt"});
    t.attributes["perm"] = Attribute::of_ints({0, 2, 1});
    if (transpose) g.nodes.push_back(t);
    g.nodes.push_back(node("Reshape", {transpose ? "kt" : "k", "kt_shape"}, {"r"}));
    if (shape_scale) {
      // The head's size, 13, from q's shape.
      g.constants["last"] = Tensor::of_ints({}, {2});
      Node cast = node("Cast", {"head"}, {"head_float"});
      cast.attributes["to"] = Attribute::of_int(1);
      g.nodes.push_back(node("Shape", {"q"}, {"q_dims"}));
      g.nodes.push_back(node("Gather", {"q_dims", "last"}, {"head"}));
      g.nodes.push_back(cast);
    }
    g.nodes.push_back(node("Mul", {"r", shape_scale ? "head_float" : "scale"}, {"s"}));
    g.nodes.push_back(node("Reshape", {"q", "q_shape"}, {"q4"}));
    g.nodes.push_back(node("MatMul", {"q4", "s"}, {"y"}));
    return g;
  };
  const Graph fused = attention(true, {1, 2, 13, 6}), given = attention(false, {1, 2, 13, 6});
  EXPECT_EQ(transposed_operands(fused), (std::vector<bool>{true, false, false, false, false}));
  EXPECT_EQ(transposed_operands(given), std::vector<bool>(4, false));

  FunctionalModel core(test::small_vector_core(), 0);
  std::vector<OpRun> runs;
  const Tensor y = run(fused, {q, k}, &core, &runs)[0];
  const Tensor expected = run(given, {q, kt}, &core)[0];
  ASSERT_EQ(y.shape, (Shape{1, 2, 6, 6}));
  EXPECT_EQ(y.floats, expected.floats);
  EXPECT_FALSE(y.stored_transposed);
  EXPECT_EQ(runs[0].work, NodeWork::View);
  for (const OpRun& r : runs) {
    EXPECT_TRUE(r.work != NodeWork::Values || r.on_accelerator) << r.node << " is a host step";
  }
  // A core without a vector unit moves K^T on the host, to the same bits.
  FunctionalModel plain(test::small_core(), 0);
  EXPECT_EQ(run(fused, {q, k}, &plain)[0].floats, expected.floats);
  const Graph scaled = attention(true, {1, 2, 13, 6}, true);
  EXPECT_TRUE(transposed_operands(scaled)[0]);
  runs.clear();
  EXPECT_EQ(run(scaled, {q, k}, &core, &runs)[0].floats,
            run(attention(false, {1, 2, 13, 6}, true), {q, kt}, &core)[0].floats);
  EXPECT_EQ(runs[0].work, NodeWork::View);

  // A Reshape that mixes the last two axes gets them laid out by the host (a host step), and
  // the product its B as it is.
  const Graph mixed = attention(true, {1, 13, 12}), mixed_given = attention(false, {1, 13, 12});
  runs.clear();
  const Tensor y_mixed = run(mixed, {q, k}, &core, &runs)[0];
  EXPECT_EQ(y_mixed.floats, run(mixed_given, {q, kt}, &core)[0].floats);
  EXPECT_EQ(runs[1].work, NodeWork::Values);
  EXPECT_FALSE(runs[1].on_accelerator);
}

// Moves of values whose trailing axes stay in place (a Transpose of the leading ones, a Gather,
// Slice, Concat, Expand or Tile before them) run on a vector-unit core's DMA (tpu/move.hpp) where
// they move whole array rows: the host's values, fp32 bits and int8 alike. A Transpose of the last
// axis, or runs that are not whole rows, stay on the host.
TEST(Graph, MovesOfWholeRowsRunOnTheCore) {
  const HardwareConfig config = test::small_int8_vector_core();  // rows of 4 values
  FunctionalModel core(config, 0);
  const auto check = [&](Graph g, const std::vector<Tensor>& inputs, bool on_core) {
    std::vector<OpRun> runs;
    const std::vector<Tensor> y = run(g, inputs, &core, &runs);
    const std::vector<Tensor> host = run(g, inputs, nullptr);
    EXPECT_EQ(runs[0].on_accelerator, on_core) << g.nodes[0].op;
    EXPECT_EQ(y[0].shape, host[0].shape);
    EXPECT_EQ(y[0].floats, host[0].floats);
    EXPECT_EQ(y[0].ints, host[0].ints);
  };
  std::vector<float> values(3 * 5 * 8);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f - 7;
  const Tensor x = Tensor::of_floats({3, 5, 8}, values);
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {3, 5, 8}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.nodes = {node("Transpose", {"x"}, {"y"})};
  g.nodes[0].attributes["perm"] = Attribute::of_ints({1, 0, 2});
  check(g, {x}, true);
  g.nodes[0].attributes["perm"] = Attribute::of_ints({0, 2, 1});  // the last axis moves
  check(g, {x}, false);
  // Moving an axis of one element moves no value: a view, run nowhere.
  g.inputs[0].shape = {3, 1, 5, 8};
  g.nodes[0].attributes["perm"] = Attribute::of_ints({0, 2, 1, 3});
  std::vector<OpRun> runs;
  const Tensor x4 = Tensor::of_floats({3, 1, 5, 8}, values);
  const Tensor viewed = run(g, {x4}, &core, &runs)[0];
  EXPECT_EQ(runs[0].work, NodeWork::View);
  EXPECT_FALSE(runs[0].on_accelerator);
  EXPECT_EQ(viewed.shape, (Shape{3, 5, 1, 8}));
  EXPECT_EQ(viewed.floats, values);
  g.inputs[0].shape = {3, 5, 8};
  g.constants["i"] = Tensor::of_ints({2}, {4, 1});
  g.nodes = {node("Gather", {"x", "i"}, {"y"})};
  g.nodes[0].attributes["axis"] = Attribute::of_int(1);
  check(g, {x}, true);
  g.constants["starts"] = Tensor::of_ints({2}, {1, 4});
  g.constants["ends"] = Tensor::of_ints({2}, {3, 8});
  g.constants["axes"] = Tensor::of_ints({2}, {0, 2});
  g.nodes = {node("Slice", {"x", "starts", "ends", "axes"}, {"y"})};
  check(g, {x}, true);  // runs of the last axis's second half
  g.constants["starts"] = Tensor::of_ints({2}, {1, 2});
  check(g, {x}, false);  // runs of 6: not whole rows
  g.constants["shape"] = Tensor::of_ints({4}, {2, 3, 5, 8});
  g.nodes = {node("Expand", {"x", "shape"}, {"y"})};
  check(g, {x}, true);
  // A Concat of x and a constant along the middle axis: blocks of rows from each.
  std::vector<float> more(3 * 2 * 8);
  for (std::size_t i = 0; i < more.size(); ++i) more[i] = 100.0f + static_cast<float>(i);
  g.constants["more"] = Tensor::of_floats({3, 2, 8}, more);
  g.nodes = {node("Concat", {"x", "more"}, {"y"})};
  g.nodes[0].attributes["axis"] = Attribute::of_int(1);
  check(g, {x}, true);
  g.nodes[0].attributes["axis"] = Attribute::of_int(2);  // along the last axis: runs of 8 then 8
  g.constants["more"] =
      Tensor::of_floats({3, 5, 2}, std::vector<float>(more.begin(), more.begin() + 30));
  check(g, {x}, false);
  // int8 values, through the unified buffer.
  std::vector<std::int64_t> ints(values.size());
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<std::int64_t>(i % 256) - 128;
  g.inputs[0].dtype = DType::Int8;
  g.outputs[0].dtype = DType::Int8;
  g.nodes = {node("Transpose", {"x"}, {"y"})};
  g.nodes[0].attributes["perm"] = Attribute::of_ints({1, 0, 2});
  check(g, {Tensor::of_ints({3, 5, 8}, ints, DType::Int8)}, true);
}

// A vision transformer's patch embedding without a convolution: images of one channel, padded,
// cut into patches of 4 x 2 pixels by Reshape, Transpose, Reshape, times weights with a bias and
// a relu. fuse_patch_embeddings makes it the convolution it is (NhwcConv; QLinearConv with
// channels_last in its QDQ form, whose Pad pads with the zero point), with the same bits on the
// host and on a core whose rows (4 values) the patches' runs of 2 do not fill.
Graph patch_graph(const std::vector<std::int64_t>& perm) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {-1, 1, 6, 6}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.constants["pads"] = Tensor::of_ints({8}, {0, 0, 1, 1, 0, 0, 1, 1});
  g.constants["cut"] = Tensor::of_ints({5}, {-1, 2, 4, 4, 2});
  g.constants["rows"] = Tensor::of_ints({3}, {-1, 8, 8});
  std::vector<float> w(8 * 3), bias{0.5f, -0.25f, 1};
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.375f - 1;
  g.constants["w"] = Tensor::of_floats({8, 3}, w);
  g.constants["bias"] = Tensor::of_floats({3}, bias);
  Node transpose = node("Transpose", {"blocks"}, {"moved"});
  transpose.attributes["perm"] = Attribute::of_ints(perm);
  g.nodes = {node("Pad", {"x", "pads"}, {"padded"}),
             node("Reshape", {"padded", "cut"}, {"blocks"}),
             transpose,
             node("Reshape", {"moved", "rows"}, {"patches"}),
             node("MatMul", {"patches", "w"}, {"p"}),
             node("Add", {"p", "bias"}, {"pb"}),
             node("Relu", {"pb"}, {"y"})};
  for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
  return g;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  return ops;
}

TEST(Graph, PatchEmbeddingsBecomeConvolutions) {
  std::vector<float> values(3 * 36);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = std::sin(static_cast<float>(i)) * 3.1f + 0.2f;
  }
  const Tensor x = Tensor::of_floats({3, 1, 6, 6}, values);
  FunctionalModel core(test::small_int8_vector_core(), 0);
  const auto same_bits = [&](const Graph& fused, const Graph& unfused, const Tensor& input) {
    for (Backend* accelerator : {static_cast<Backend*>(nullptr), static_cast<Backend*>(&core)}) {
      std::vector<OpRun> runs;
      const Tensor y = run(fused, {input}, accelerator, &runs)[0];
      const Tensor want = run(unfused, {input}, accelerator)[0];
      EXPECT_EQ(y.shape, want.shape);
      EXPECT_EQ(y.floats, want.floats);
      EXPECT_EQ(y.ints, want.ints);
      EXPECT_GT(std::count_if(y.floats.begin(), y.floats.end(), [](float v) { return v != 0; }),
                20);
      for (const OpRun& r : runs) {
        EXPECT_TRUE(r.work != NodeWork::Values || r.on_accelerator == (accelerator != nullptr))
            << r.node;
      }
    }
  };
  Graph unfused = patch_graph({0, 1, 3, 2, 4});
  EXPECT_EQ(fuse_epilogues(unfused), 2u);  // the bias and the relu
  Graph g = unfused;
  EXPECT_EQ(fuse_patch_embeddings(g), 1u);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Reshape", "NhwcConv", "Reshape"}));
  EXPECT_EQ(check_order(g), "");
  const Node& conv = g.nodes[1];
  EXPECT_EQ(conv.ints_attr("kernel_shape"), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(conv.ints_attr("strides"), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(conv.ints_attr("pads"), (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(conv.epilogue, Epilogue::Relu);
  same_bits(g, unfused, x);
  EXPECT_EQ(run(g, {x}, nullptr)[0].shape, (Shape{3, 8, 3}));
  // Not patches: the Transpose keeps a patch's rows apart. Images of two channels stay too.
  Graph other = patch_graph({0, 3, 1, 2, 4});
  EXPECT_EQ(fuse_patch_embeddings(other), 0u);
  other = patch_graph({0, 1, 3, 2, 4});
  other.inputs[0].shape = {-1, 2, 6, 3};
  EXPECT_EQ(fuse_patch_embeddings(other), 0u);
  // The QDQ form: the int8 Pad pads with x's zero point, 3.
  Graph qdq = patch_graph({0, 1, 3, 2, 4});
  qdq.constants["s"] = Tensor::of_floats({}, {0.05f});
  qdq.constants["z"] = Tensor::of_ints({}, {3}, DType::Int8);
  qdq.constants["wq"] = Tensor::of_ints({8, 3}, {1,   -2, 3,  4,  5,  -6,  7,  8,  -9, 10, 11, 12,
                                                 -13, 14, 15, 16, 17, -18, 19, 20, 21, 22, 23, -24},
                                        DType::Int8);
  qdq.constants["ws"] = Tensor::of_floats({3}, {0.01f, 0.02f, 0.03f});
  qdq.constants["wz"] = Tensor::of_ints({3}, {0, 0, 0}, DType::Int8);
  qdq.constants["ys"] = Tensor::of_floats({}, {0.1f});
  qdq.constants["yz"] = Tensor::of_ints({}, {-5}, DType::Int8);
  Node wdq = node("DequantizeLinear", {"wq", "ws", "wz"}, {"wf"});
  wdq.attributes["axis"] = Attribute::of_int(1);
  // Each value node of the float chain between a DequantizeLinear and a QuantizeLinear.
  std::vector<Node> nodes = {node("QuantizeLinear", {"x", "s", "z"}, {"xq"}), wdq};
  std::string value = "xq";
  for (std::size_t n = 0; n < 4; ++n) {
    Node moved = qdq.nodes[n];
    nodes.push_back(node("DequantizeLinear", {value, "s", "z"}, {value + "f"}));
    moved.inputs[0] = value + "f";
    nodes.push_back(moved);
    value = moved.outputs[0] + "q";
    nodes.push_back(node("QuantizeLinear", {moved.outputs[0], "s", "z"}, {value}));
  }
  nodes.push_back(node("DequantizeLinear", {value, "s", "z"}, {"af"}));
  nodes.push_back(node("MatMul", {"af", "wf"}, {"p"}));
  nodes.push_back(node("QuantizeLinear", {"p", "ys", "yz"}, {"pq"}));
  nodes.push_back(node("DequantizeLinear", {"pq", "ys", "yz"}, {"y"}));
  qdq.nodes = nodes;
  for (std::size_t n = 0; n < qdq.nodes.size(); ++n) qdq.nodes[n].name = "q" + std::to_string(n);
  EXPECT_EQ(fuse_quantized_products(qdq), 5u);
  EXPECT_EQ(ops_of(qdq),
            (std::vector<std::string>{"QuantizeLinear", "Pad", "Reshape", "Transpose", "Reshape",
                                      "QLinearMatMul", "DequantizeLinear"}));
  EXPECT_EQ(qdq.nodes[1].input(2), "z");
  Graph qconv = qdq;
  EXPECT_EQ(fuse_patch_embeddings(qconv), 1u);
  EXPECT_EQ(ops_of(qconv), (std::vector<std::string>{"QuantizeLinear", "Reshape", "QLinearConv",
                                                     "Reshape", "DequantizeLinear"}));
  EXPECT_EQ(qconv.nodes[2].int_attr("channels_last", 0), 1);
  same_bits(qconv, qdq, x);
  // A QLinearConv with channels_last is onnxruntime's, made here only by the fusion.
  EXPECT_NE(check_supported(qconv), "");
}

// Images channels last (NHWC), as the project's networks keep them and a product leaves its
// results: onnxruntime's NhwcConv and QLinearConv with channels_last, and pools with
// channels_last, give the NCHW operators' bits, transposed, on the host and on the core (the
// convolution from its images, the pools on the vector unit).
TEST(Graph, ChannelsLastImagesGiveTheNchwBits) {
  constexpr std::int64_t kN = 2, kC = 16, kH = 8, kW = 9, kF = 6;
  const auto nhwc_of = [](const Tensor& x) {
    const std::int64_t n = x.shape[0], c = x.shape[1], plane = x.shape[2] * x.shape[3];
    Tensor y(x.dtype, {n, x.shape[2], x.shape[3], c});
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t ch = 0; ch < c; ++ch) {
        for (std::int64_t p = 0; p < plane; ++p) {
          const auto from = static_cast<std::size_t>((i * c + ch) * plane + p),
                     to = static_cast<std::size_t>((i * plane + p) * c + ch);
          if (x.is_float()) {
            y.floats[to] = x.floats[from];
          } else {
            y.ints[to] = x.ints[from];
          }
        }
      }
    }
    return y;
  };
  std::vector<float> values(kN * kC * kH * kW), weights(kF * kC * 9), bias(kF);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(0.7f * static_cast<float>(i));
  for (std::size_t i = 0; i < weights.size(); ++i) {
    weights[i] = std::cos(1.3f * static_cast<float>(i)) * 0.5f;
  }
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.2f;
  const Tensor x = Tensor::of_floats({kN, kC, kH, kW}, values);
  const auto images = [&](bool last, bool int8) {
    Graph g;
    g.opset = 17;
    g.inputs = {{"x", DType::Float32, last ? Shape{-1, kH, kW, kC} : Shape{-1, kC, kH, kW}}};
    g.outputs = {{"y", DType::Float32, {}}};
    g.constants["w"] = Tensor::of_floats({kF, kC, 3, 3}, weights);
    g.constants["b"] = Tensor::of_floats({kF}, bias);
    g.constants["s"] = Tensor::of_floats({}, {0.02f});
    g.constants["z"] = Tensor::of_ints({}, {-3}, DType::Int8);
    std::vector<std::int64_t> w8(weights.size());
    for (std::size_t i = 0; i < w8.size(); ++i) w8[i] = std::lround(weights[i] * 200);
    g.constants["w8"] = Tensor::of_ints({kF, kC, 3, 3}, w8, DType::Int8);
    g.constants["ws"] = Tensor::of_floats({}, {0.005f});
    g.constants["wz"] = Tensor::of_ints({}, {0}, DType::Int8);
    g.constants["ys"] = Tensor::of_floats({}, {0.05f});
    Node conv = int8 ? node("QLinearConv", {"xq", "s", "z", "w8", "ws", "wz", "ys", "z"}, {"c"})
                     : node(last ? "NhwcConv" : "Conv", {"x", "w", "b"}, {"c"});
    conv.attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
    Node max = node("MaxPool", {"c"}, {"m"});
    max.attributes["kernel_shape"] = Attribute::of_ints({2, 2});
    max.attributes["strides"] = Attribute::of_ints({2, 2});
    Node average = node("AveragePool", {"m"}, {"y"});
    average.attributes["kernel_shape"] = Attribute::of_ints({3, 3});
    average.attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
    average.attributes["count_include_pad"] = Attribute::of_int(1);
    for (Node* n : {&max, &average}) {
      if (last) n->attributes["channels_last"] = Attribute::of_int(1);
    }
    if (last && int8) conv.attributes["channels_last"] = Attribute::of_int(1);
    if (int8) {
      average = node("DequantizeLinear", {"m", "ys", "z"}, {"y"});
      g.nodes = {node("QuantizeLinear", {"x", "s", "z"}, {"xq"}), conv, max, average};
    } else {
      g.nodes = {conv, max, average};
    }
    for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
    return g;
  };
  FunctionalModel core(test::small_int8_vector_core(256), 0);
  for (const bool int8 : {false, true}) {
    SCOPED_TRACE(int8 ? "int8" : "float");
    for (Backend* accelerator : {static_cast<Backend*>(nullptr), static_cast<Backend*>(&core)}) {
      std::vector<OpRun> runs;
      const Tensor nchw = run(images(false, int8), {x}, accelerator)[0];
      const Tensor last = run(images(true, int8), {nhwc_of(x)}, accelerator, &runs)[0];
      EXPECT_EQ(last.shape, nhwc_of(nchw).shape);
      EXPECT_EQ(last.floats, nhwc_of(nchw).floats);
      std::uint64_t from_images = 0;
      for (const OpRun& r : runs) {
        EXPECT_TRUE(r.work != NodeWork::Values || r.on_accelerator == (accelerator != nullptr))
            << r.node;
        from_images += r.from_images;
      }
      EXPECT_EQ(from_images, accelerator ? 1u : 0u);
    }
  }
  Graph from_file = images(true, false);
  EXPECT_NE(check_supported(from_file), "");  // channels_last and NhwcConv are onnxruntime's
}

// An int8 network's last layer as the project's network files run it: MatMulInteger's int32
// sums, the Add of an int32 bias, the DequantizeLinear per column; the Add and the
// dequantisation on the vector unit (ELTWISE I32: wrapping sums; dequant, Q-DEQUANT's bits),
// the host's values, and an NCHW ConvInteger's sums dequantised along their channels (the
// scales as a repeating block of the planes).
TEST(Graph, Int32SumsAddAndDequantiseOnTheVectorUnit) {
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Int8, {-1, 6}}};
  g.outputs = {{"y", DType::Float32, {}}};
  std::vector<std::int64_t> w(6 * 5), bias(5);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::int64_t>(i * 37 % 255) - 127;
  for (std::size_t i = 0; i < bias.size(); ++i)
    bias[i] = 1000 * static_cast<std::int64_t>(i) - 2100;
  g.constants["w"] = Tensor::of_ints({6, 5}, w, DType::Int8);
  g.constants["xz"] = Tensor::of_ints({}, {3}, DType::Int8);
  g.constants["bias"] = Tensor::of_ints({5}, bias, DType::Int32);
  g.constants["scales"] = Tensor::of_floats({5}, {0.5f, 0.25f, 1e-3f, 3.0f, 0.125f});
  Node dq = node("DequantizeLinear", {"biased", "scales"}, {"y"});
  dq.attributes["axis"] = Attribute::of_int(1);
  g.nodes = {node("MatMulInteger", {"x", "w", "xz"}, {"sums"}),
             node("Add", {"sums", "bias"}, {"biased"}), dq};
  for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
  std::vector<std::int64_t> xs(64);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<std::int64_t>(i * 53 % 256) - 128;
  const Tensor x =
      Tensor::of_ints({7, 6}, std::vector<std::int64_t>(xs.begin(), xs.begin() + 42), DType::Int8);
  FunctionalModel core(test::small_int8_vector_core(256), 0);
  std::vector<OpRun> runs;
  const Tensor on_core = run(g, {x}, &core, &runs)[0];
  const Tensor on_host = run(g, {x}, nullptr)[0];
  EXPECT_EQ(on_core.floats, on_host.floats);
  for (const OpRun& r : runs) EXPECT_TRUE(r.on_accelerator) << r.node;
  // ConvInteger's NCHW sums, dequantised along axis 1 (each scale a plane of 4 x 4 values).
  Graph conv;
  conv.opset = 17;
  conv.inputs = {{"x", DType::Int8, {-1, 2, 4, 4}}};
  conv.outputs = {{"y", DType::Float32, {}}};
  conv.constants["w"] = Tensor::of_ints({3, 2, 1, 1}, {1, -2, 3, 4, -5, 6}, DType::Int8);
  conv.constants["scales"] = Tensor::of_floats({3}, {0.5f, 0.75f, -2.0f});
  Node cdq = node("DequantizeLinear", {"sums", "scales"}, {"y"});
  cdq.attributes["axis"] = Attribute::of_int(1);
  conv.nodes = {node("ConvInteger", {"x", "w"}, {"sums"}), cdq};
  conv.nodes[1].name = "dq";
  const Tensor images = Tensor::of_ints({2, 2, 4, 4}, xs, DType::Int8);
  runs.clear();
  EXPECT_EQ(run(conv, {images}, &core, &runs)[0].floats, run(conv, {images}, nullptr)[0].floats);
  EXPECT_TRUE(runs[1].on_accelerator);
}

// LeakyRelu, HardSigmoid and HardSwish on the vector unit: a bf16 slope (0.25, 1.5) as ACTIVATE's
// leaky, PyTorch's default 0.01 (no bf16 value) as max(x, 0.01 x), HardSigmoid as
// max(min(alpha x + beta, 1), 0) and HardSwish as x times that (alpha 1/6, beta 1/2); the host's
// values (no product here falls below 2^-126, where the core flushes), over a tensor that ends
// inside a row. A leaky slope past 1 that is no bf16 value (1.3) stays on the host; PRelu of one
// slope runs as LeakyRelu.
TEST(Graph, FunctionsOfOneValueRunOnTheVectorUnit) {
  std::vector<float> values(2 * 3 * 7);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = std::sin(1.7f * static_cast<float>(i)) * 5.0f;
  }
  values[0] = -0.0f;
  values[1] = 0.0f;
  values[2] = -3.0f;  // HardSwish's corner
  const Tensor x = Tensor::of_floats({2, 3, 7}, values);
  FunctionalModel core(test::small_vector_core(64), 0);
  struct Case {
    const char* op;
    float alpha, beta;
    bool on_core;
  };
  const Case cases[] = {{"LeakyRelu", 0.01f, 0, true},     {"LeakyRelu", 0.25f, 0, true},
                        {"LeakyRelu", 1.0f, 0, true},      {"LeakyRelu", 0.0f, 0, true},
                        {"LeakyRelu", 1.5f, 0, true},      {"LeakyRelu", 1.3f, 0, false},
                        {"HardSigmoid", 0.2f, 0.5f, true}, {"HardSigmoid", 0.3f, -0.4f, true},
                        {"HardSwish", 0, 0, true}};
  const auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.op << " " << c.alpha << " " << c.beta);
    Graph g;
    g.opset = 17;
    g.inputs = {{"x", DType::Float32, {2, 3, 7}}};
    g.outputs = {{"y", DType::Float32, {}}};
    g.nodes = {node(c.op, {"x"}, {"y"})};
    if (std::string(c.op) != "HardSwish") {
      g.nodes[0].attributes["alpha"] = Attribute::of_float(c.alpha);
    }
    if (std::string(c.op) == "HardSigmoid") {
      g.nodes[0].attributes["beta"] = Attribute::of_float(c.beta);
    }
    std::vector<OpRun> runs;
    const Tensor y = run(g, {x}, &core, &runs)[0];
    const Tensor host = run(g, {x}, nullptr)[0];
    EXPECT_EQ(y.shape, host.shape);
    EXPECT_EQ(bits(y.floats), bits(host.floats));
    EXPECT_EQ(runs[0].on_accelerator, c.on_core);
  }
  // PRelu of one slope (PyTorch's PReLU of one parameter; a slope per channel, all the same) is a
  // leaky relu of it; slopes that differ stay on the host.
  for (const std::vector<float>& slopes :
       {std::vector<float>{0.25f}, std::vector<float>{0.1f, 0.1f, 0.1f},
        std::vector<float>{0.1f, 0.2f, 0.1f}}) {
    SCOPED_TRACE(testing::Message() << "PRelu of " << slopes.size() << " slopes");
    Graph g;
    g.opset = 17;
    g.inputs = {{"x", DType::Float32, {2, 3, 7}}};
    g.outputs = {{"y", DType::Float32, {}}};
    g.constants["slope"] = Tensor::of_floats(
        slopes.size() == 1 ? Shape{1} : Shape{static_cast<std::int64_t>(slopes.size()), 1}, slopes);
    g.nodes = {node("PRelu", {"x", "slope"}, {"y"})};
    std::vector<OpRun> runs;
    const Tensor y = run(g, {x}, &core, &runs)[0];
    EXPECT_EQ(bits(y.floats), bits(run(g, {x}, nullptr)[0].floats));
    EXPECT_EQ(runs[0].on_accelerator,
              slopes[1 % slopes.size()] == slopes[0] && slopes[2 % slopes.size()] == slopes[0]);
  }
  // HardSwish as ONNX defines it, on three values worked out by hand: x max(0, min(1, x/6 + 1/2)).
  Graph g;
  g.opset = 17;
  g.inputs = {{"x", DType::Float32, {3}}};
  g.outputs = {{"y", DType::Float32, {}}};
  g.nodes = {node("HardSwish", {"x"}, {"y"})};
  EXPECT_EQ(run(g, {Tensor::of_floats({3}, {-4.0f, 3.0f, 6.0f})}, &core)[0].floats,
            (std::vector<float>{-0.0f, 3.0f, 6.0f}));
}

TEST(Graph, UnknownOperatorsAreNamed) {
  Graph g = small_graph();
  g.nodes[0].op = "NonZero";
  EXPECT_EQ(check_supported(g), "node \"Relu0\" (NonZero): operator not supported");
}

}  // namespace
}  // namespace tpu::graph
