// Post-training quantisation (tpu/quantize.hpp) and quantised networks (nn.hpp): the scales,
// biases and multipliers of a small case worked out by hand; the int8 network's graph on the host
// (the reference model) against the functional model, bit for bit, for a small network with
// every kind of layer and for the shipped MLP and CNN quantised on a few training images; the
// file format's round trip; and every refusal of the loader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/graph/network_graph.hpp"
#include "tpu/model.hpp"
#include "tpu/nn.hpp"
#include "tpu/npy.hpp"
#include "tpu/quantize.hpp"
#include "tpu/train.hpp"

namespace tpu::nn {
namespace {

namespace fs = std::filesystem;

HardwareConfig int8_core(unsigned dim) {
  HardwareConfig c;
  c.dim = dim;
  c.ub_depth = dim == 16 ? 16384 : 1024;
  c.acc_depth = dim == 16 ? 4096 : 256;
  c.weight_tiles = 2;
  c.int8 = true;
  return c;
}

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The network's scores for x: its graph (tpu/graph/network_graph.hpp) on a backend, or on the
// host (the int8 reference model) when null.
Tensor infer(Backend* backend, const Network& net, const Tensor& x,
             std::vector<graph::OpRun>* runs = nullptr) {
  const graph::Graph model = graph::network_graph(net);
  graph::Session session(model, backend);
  return graph::infer(session, net, x, runs);
}

void expect_same_logits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape, b.shape) << what;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    ASSERT_EQ(bits(a.data[i]), bits(b.data[i])) << what << ": logit " << i;
  }
}

Layer gemm_layer(LayerKind kind, std::uint32_t k, std::uint32_t units, isa::Func act,
                 std::mt19937& rng) {
  Layer layer;
  layer.kind = kind;
  layer.units = units;
  layer.weight_rows = k;
  layer.activation = act;
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  layer.weights.resize(std::size_t{k} * units);
  for (float& w : layer.weights) w = value(rng);
  layer.bias.resize(units);
  for (float& b : layer.bias) b = 0.2f * value(rng);
  return layer;
}

// 4 x 4 x 2 images: conv 3x3 -> 3 relu, maxpool 2, flatten, dense 12 -> 5 relu6, dense 5 -> 4.
Network small_network() {
  std::mt19937 rng(7);
  Network net;
  net.name = "small";
  net.height = 4;
  net.width = 4;
  net.channels = 2;
  Layer conv = gemm_layer(LayerKind::Conv2d, 18, 3, isa::Func::Relu, rng);
  conv.window = Window::same(3);
  net.layers.push_back(conv);
  Layer pool;
  pool.kind = LayerKind::MaxPool;
  pool.window = Window::pool(2);
  net.layers.push_back(pool);
  Layer flatten;
  flatten.kind = LayerKind::Flatten;
  net.layers.push_back(flatten);
  net.layers.push_back(gemm_layer(LayerKind::Dense, 12, 5, isa::Func::Relu6, rng));
  net.layers.push_back(gemm_layer(LayerKind::Dense, 5, 4, isa::Func::None, rng));
  net.classes = 4;
  return net;
}

// Images with values in [-0.5, 1.5]: negative inputs, so the input zero point is not -128.
Tensor small_images(std::uint32_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-0.5f, 1.5f);
  Tensor x({n, 4, 4, 2});
  for (float& v : x.data) v = value(rng);
  return x;
}

Network quantized_small_network() {
  const Network net = small_network();
  Calibration calibration;
  calibrate(net, small_images(32, 1), calibration);
  return quantize_network(net, calibration);
}

// A network of one dense layer 2 -> 2 (relu), then one 2 -> 2, with weights and biases whose
// quantisation is worked out by hand below.
TEST(Quantize, HandCheckedScalesBiasesAndMultipliers) {
  Network net;
  net.name = "tiny";
  net.height = 1;
  net.width = 1;
  net.channels = 2;
  Layer flatten;
  flatten.kind = LayerKind::Flatten;
  net.layers.push_back(flatten);
  Layer first;
  first.kind = LayerKind::Dense;
  first.units = 2;
  first.weight_rows = 2;
  first.activation = isa::Func::Relu;
  first.weights = {1.0f, 0.2f,     // row k = 0: columns 0 and 1
                   -0.3f, 0.05f};  // row k = 1
  first.bias = {0.11f, -0.03f};
  net.layers.push_back(first);
  Layer second = first;
  second.activation = isa::Func::None;
  second.weights = {0.5f, -1.2f, 0.2f, 2.0f};
  second.bias = {0.0f, 0.0f};
  net.layers.push_back(second);
  net.classes = 2;

  // Two images, (1, 0) and (0, 1): the first layer gives relu(1.11, 0.17) and relu(-0.19, 0.02).
  Tensor x({2, 1, 1, 2});
  x.data = {1.0f, 0.0f, 0.0f, 1.0f};
  Calibration calibration;
  calibrate(net, x, calibration);
  EXPECT_EQ(calibration.images, 2u);
  EXPECT_EQ(calibration.input.lo, 0.0f);
  EXPECT_EQ(calibration.input.hi, 1.0f);
  EXPECT_EQ(calibration.output[1].lo, 0.0f);
  EXPECT_FLOAT_EQ(calibration.output[1].hi, 1.11f);

  const Network q = quantize_network(net, calibration);
  ASSERT_TRUE(q.int8);
  const QuantLayer& l1 = q.layers[1].quant;
  // Input [0, 1]: scale 1/255 (as a float32, as ONNX keeps scales), zero point -128 - 0 / scale
  // = -128.
  EXPECT_EQ(l1.input_scale, static_cast<float>(1.0 / 255.0));
  EXPECT_EQ(l1.input_zero_point, -128);
  // Column 0: max |w| = 1, scale 1/127; 1 -> 127, -0.3 -> round(-38.1) = -38.
  // Column 1: max |w| = 0.2, scale 0.2/127; 0.2 -> 127, 0.05 -> round(31.75) = 32.
  EXPECT_FLOAT_EQ(l1.weight_scales[0], 1.0f / 127.0f);
  EXPECT_FLOAT_EQ(l1.weight_scales[1], 0.2f / 127.0f);
  EXPECT_EQ(l1.weights, (std::vector<std::int8_t>{127, 127, -38, 32}));
  // Bias: 0.11 / (1/255 x 1/127) = 3562.35 -> 3562; -0.03 / (1/255 x 0.2/127) = -4857.75 -> -4858.
  EXPECT_EQ(l1.bias, (std::vector<std::int32_t>{3562, -4858}));
  // Output [0, 1.11]: scale 1.11/255, zero point -128.
  ASSERT_TRUE(l1.int8_output);
  EXPECT_EQ(l1.output_scale, static_cast<float>(1.11f / 255.0));
  EXPECT_EQ(l1.output_zero_point, -128);
  // Column 0's real multiplier (1/255)(1/127) / (1.11/255) = 1 / (127 x 1.11) = 0.0070936... =
  // 0.90798... x 2^-7: M = round(0.90798 x 2^31), s = -7 (Q-SCALE).
  const double r0 = l1.input_scale * static_cast<double>(l1.weight_scales[0]) / l1.output_scale;
  EXPECT_NEAR(r0, 1.0 / (127 * 1.11), 1e-9);
  EXPECT_EQ(l1.shift[0], -7);
  EXPECT_EQ(l1.multiplier[0], static_cast<std::int32_t>(std::llround(std::ldexp(r0, 31 + 7))));
  // Column 1's: 0.2 / (127 x 1.11) = 0.00141872... = 0.72638... x 2^-9.
  const double r1 = l1.input_scale * static_cast<double>(l1.weight_scales[1]) / l1.output_scale;
  EXPECT_EQ(l1.shift[1], -9);
  EXPECT_EQ(l1.multiplier[1], static_cast<std::int32_t>(std::llround(std::ldexp(r1, 31 + 9))));
  // The last layer takes the first one's output quantisation and gives int32 sums.
  const QuantLayer& l2 = q.layers[2].quant;
  EXPECT_EQ(l2.input_scale, l1.output_scale);
  EXPECT_EQ(l2.input_zero_point, -128);
  EXPECT_FALSE(l2.int8_output);
  EXPECT_TRUE(l2.multiplier.empty());
  // Column 0: scale 0.5/127, 0.5 -> 127, 0.2 -> round(50.8) = 51; column 1: scale 2/127,
  // -1.2 -> round(-76.2) = -76, 2 -> 127.
  EXPECT_EQ(l2.weights, (std::vector<std::int8_t>{127, -76, 51, 127}));

  // Image (1, 0) by hand. Its int8 form is (127, -128) (1 / (1/255) - 128, 0 - 128). Layer 1,
  // column 0: (127 + 128) x 127 + 0 x (-38) + 3562 = 35947, times the real multiplier
  // 1 / (127 x 1.11) is 254.997, so 255 - 128 = 127 (the top of the range, 1.11). Column 1:
  // 255 x 127 + 0 x 32 - 4858 = 27527, times 0.2 / (127 x 1.11) is 39.05: 39 - 128 = -89 (0.17).
  // Layer 2, column 0: (127 + 128) x 127 + (-89 + 128) x 51 = 34374 (bias 0), dequantised by
  // the input scale 1.11/255 and the weight scale 0.5/127: 0.589.
  const Tensor logits = infer(nullptr, q, x);
  FunctionalModel model(int8_core(4), 1u << 20);
  expect_same_logits(infer(&model, q, x), logits, "tiny");
  EXPECT_EQ(static_cast<int>(std::lround(0.17 / l1.output_scale)), 39);
  const std::int32_t sum = (127 + 128) * 127 + (-89 + 128) * 51;
  // The sum dequantised in float32 by the column's scale, input scale x weight scale rounded to
  // float32 (DequantizeLinear of int32).
  EXPECT_EQ(logits.data[0],
            static_cast<float>(sum) *
                static_cast<float>(l1.output_scale * static_cast<double>(l2.weight_scales[0])));
  EXPECT_NEAR(logits.data[0], 1.11 * 0.5 + 0.17 * 0.2, 0.005);  // the float network's 0.589
}

TEST(Quantize, ActivationRangesIncludeZero) {
  Range positive;
  positive.add(2.0f);
  positive.add(6.0f);
  const ActivationQuant a = activation_quant(positive);  // [0, 6]
  EXPECT_EQ(a.scale, static_cast<float>(6.0 / 255.0));   // a float32 value
  EXPECT_EQ(a.zero_point, -128);
  Range negative;
  negative.add(-5.1f);
  negative.add(-1.0f);
  const ActivationQuant b = activation_quant(negative);  // [-5.1, 0]
  EXPECT_NEAR(b.scale, 5.1 / 255.0, 1e-9);
  EXPECT_EQ(b.zero_point, 127);
  Range both;
  both.add(-1.0f);
  both.add(3.0f);
  const ActivationQuant c = activation_quant(both);  // -128 + 1 / (4/255) = -64.25 -> -64
  EXPECT_EQ(c.zero_point, -64);
  EXPECT_DOUBLE_EQ(activation_quant(Range{}).scale, 1.0);
}

TEST(Quantize, SmallNetworkHostMatchesModelBitForBit) {
  const Network q = quantized_small_network();
  const Tensor x = small_images(6, 2);
  const Tensor host = infer(nullptr, q, x);
  for (unsigned dim : {1u, 4u}) {
    FunctionalModel model(int8_core(dim), 1u << 20);
    std::vector<graph::OpRun> runs;
    expect_same_logits(infer(&model, q, x, &runs), host, "dim " + std::to_string(dim));
    // The products on the core: the convolution's 96 im2col rows of 18 times its 3 filters.
    std::vector<graph::OpRun> on_core;
    for (const graph::OpRun& run : runs) {
      if (run.on_accelerator) on_core.push_back(run);
    }
    ASSERT_EQ(on_core.size(), 3u);
    EXPECT_EQ(on_core[0].op, "QLinearConv");
    EXPECT_EQ(on_core[0].macs, 96u * 18 * 3);
  }
  // The quantised network classifies close to the float one.
  const Tensor reference = forward_host_fp32(small_network(), x);
  for (std::size_t i = 0; i < host.data.size(); ++i) {
    EXPECT_NEAR(host.data[i], reference.data[i], 0.1) << "logit " << i;
  }
}

// A last layer with an int8 output (as an imported QDQ model has): requantised on the core like
// the hidden layers, dequantised on the host; within a step of its int32 logits quantised in
// double, saturating where they leave the int8 range.
TEST(Quantize, LastLayerWithAnInt8OutputIsDequantised) {
  const Network q = quantized_small_network();
  const Tensor x = small_images(6, 2);
  const Tensor sums = infer(nullptr, q, x);
  float largest = 0.0f;
  for (float v : sums.data) largest = std::max(largest, std::fabs(v));
  Network requantised = q;
  QuantLayer& last = requantised.layers.back().quant;
  last.int8_output = true;
  last.output_scale = static_cast<float>(largest / 150.0);  // the largest logits saturate
  last.output_zero_point = -7;
  complete_quant_layer(requantised.layers.back(), "last: ");
  const Tensor host = infer(nullptr, requantised, x);
  for (unsigned dim : {1u, 4u}) {
    FunctionalModel model(int8_core(dim), 1u << 20);
    expect_same_logits(infer(&model, requantised, x), host, "dim " + std::to_string(dim));
  }
  int saturated = 0;
  for (std::size_t i = 0; i < host.data.size(); ++i) {
    const double step = std::round(host.data[i] / last.output_scale);
    EXPECT_EQ(host.data[i], static_cast<float>(step * last.output_scale)) << "output " << i;
    const double expected =
        std::clamp(std::round(sums.data[i] / last.output_scale) - 7, -128.0, 127.0) + 7;
    EXPECT_LE(std::fabs(step - expected), 1.0) << "output " << i;
    if (sums.data[i] / last.output_scale - 7 > 127.5) {
      EXPECT_EQ(step, 134.0) << "output " << i;
      ++saturated;
    }
  }
  EXPECT_GT(saturated, 0);
}

TEST(Quantize, RefusesWhatItCannotQuantise) {
  Network net = small_network();
  Calibration calibration;
  calibrate(net, small_images(4, 3), calibration);
  auto message = [&](const Network& n, const Calibration& c) {
    try {
      quantize_network(n, c);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(net, calibration), "accepted");
  Network sigmoid = net;
  sigmoid.layers[3].activation = isa::Func::Sigmoid;
  EXPECT_EQ(message(sigmoid, calibration),
            "layer 3 (dense): int8 layers take none, relu or relu6, not sigmoid");
  Network flat_end = net;
  Layer flatten;
  flatten.kind = LayerKind::Flatten;
  flat_end.layers.push_back(flatten);
  Calibration longer = calibration;
  longer.output.resize(flat_end.layers.size());
  EXPECT_EQ(message(flat_end, longer), "an int8 network must end in a dense layer");
  EXPECT_EQ(message(quantize_network(net, calibration), calibration),
            "the network is already quantised (dtype int8)");
  EXPECT_EQ(message(net, Calibration{}), "the calibration is not of this network");
  EXPECT_THROW(forward_host_fp32(quantize_network(net, calibration), small_images(1, 1)),
               std::invalid_argument);
}

class QuantizedFiles : public ::testing::Test {
 protected:
  fs::path dir_;
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tpu_quant_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string read(const std::string& name) const {
    std::ifstream in(path(name));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }
  static std::string message_of(const std::string& file) {
    try {
      load_network(file);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "accepted";
  }
};

void expect_same_network(const Network& a, const Network& b) {
  ASSERT_EQ(a.int8, b.int8);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const QuantLayer &p = a.layers[l].quant, &q = b.layers[l].quant;
    EXPECT_EQ(a.layers[l].kind, b.layers[l].kind);
    EXPECT_EQ(a.layers[l].activation, b.layers[l].activation);
    EXPECT_EQ(p.weights, q.weights) << "layer " << l;
    EXPECT_EQ(p.bias, q.bias) << "layer " << l;
    EXPECT_EQ(p.multiplier, q.multiplier) << "layer " << l;
    EXPECT_EQ(p.shift, q.shift) << "layer " << l;
    ASSERT_EQ(p.weight_scales.size(), q.weight_scales.size());
    for (std::size_t j = 0; j < p.weight_scales.size(); ++j) {
      EXPECT_EQ(bits(p.weight_scales[j]), bits(q.weight_scales[j]));
    }
    EXPECT_EQ(p.input_scale, q.input_scale);
    EXPECT_EQ(p.input_zero_point, q.input_zero_point);
    EXPECT_EQ(p.int8_output, q.int8_output);
    EXPECT_EQ(p.output_scale, q.output_scale);
    EXPECT_EQ(p.output_zero_point, q.output_zero_point);
  }
}

TEST_F(QuantizedFiles, RoundTripKeepsEveryBit) {
  const Network q = quantized_small_network();
  save_network(q, path("smallq.json"));
  const Network back = load_network(path("smallq.json"));
  expect_same_network(q, back);
  const Tensor x = small_images(3, 4);
  expect_same_logits(infer(nullptr, back, x), infer(nullptr, q, x), "after the round trip");
  // Every file is in place and nothing temporary is left.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(
      names,
      (std::vector<std::string>{
          "smallq.0.conv2d.bias.npy", "smallq.0.conv2d.multiplier.npy",
          "smallq.0.conv2d.scales.npy", "smallq.0.conv2d.shift.npy", "smallq.0.conv2d.weights.npy",
          "smallq.3.dense.bias.npy", "smallq.3.dense.multiplier.npy", "smallq.3.dense.scales.npy",
          "smallq.3.dense.shift.npy", "smallq.3.dense.weights.npy", "smallq.4.dense.bias.npy",
          "smallq.4.dense.scales.npy", "smallq.4.dense.weights.npy", "smallq.json"}));
}

// Each case edits the saved file of the small network and expects the loader's one line.
TEST_F(QuantizedFiles, RejectsEveryMalformedPart) {
  const Network q = quantized_small_network();
  save_network(q, path("q.json"));
  const std::string json = read("q.json");
  auto with = [&](const std::string& from, const std::string& to) {
    const std::size_t at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    std::string text = json;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    write("edited.json", text);
    return message_of(path("edited.json"));
  };
  auto contains = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  EXPECT_EQ(message_of(path("q.json")), "accepted");
  const std::string edited = path("edited.json") + ": ";

  EXPECT_EQ(with(R"("dtype": "int8")", R"("dtype": "int4")"),
            edited + "unknown dtype int4 (float32 or int8)");
  // A missing file, and files of the wrong dtype or shape.
  EXPECT_TRUE(contains(with("q.3.dense.shift.npy", "absent.npy"), "absent.npy"));
  EXPECT_TRUE(contains(with("q.3.dense.weights.npy", "q.3.dense.scales.npy"), "'|i1'"));
  EXPECT_TRUE(contains(with("q.3.dense.bias.npy", "q.3.dense.weights.npy"), "'<i4'"));
  EXPECT_TRUE(contains(with("q.3.dense.scales.npy", "q.3.dense.bias.npy"), "'<f4'"));
  EXPECT_EQ(with("q.3.dense.multiplier.npy", "q.4.dense.bias.npy"),
            edited + "multiplier q.4.dense.bias.npy should be 1 x 5");
  EXPECT_TRUE(contains(with("\"weight_scales\": \"q.4", "\"weightscales\": \"q.4"),
                       "malformed network description"));
  // Zero points and scales out of range.
  const std::string zero_point =
      "\"zero_point\": " + std::to_string(q.layers[0].quant.input_zero_point);
  EXPECT_EQ(with(zero_point, "\"zero_point\": 128"),
            edited + "layer 0 (conv2d): input zero point 128 is outside [-128, 127]");
  EXPECT_EQ(with(zero_point, "\"zero_point\": 1.5"),
            edited + "layer 0 (conv2d): input zero point is not an integer");
  EXPECT_EQ(with("\"scale\": ", "\"scale\": -"),
            edited + "layer 0 (conv2d): input scale must be positive and finite");

  // M and s out of Q-REQ's ranges, or not Q-SCALE of the scales.
  auto with_int = [&](const std::string& file, std::size_t index, std::int32_t value) {
    npy::IntArray a = npy::read_int(path(file), npy::Dtype::Int32);
    const std::vector<std::int32_t> saved = a.data;
    a.data[index] = value;
    npy::write_int(path(file), a);
    const std::string message = message_of(path("q.json"));
    a.data = saved;
    npy::write_int(path(file), a);
    return message;
  };
  const std::string qpath = path("q.json") + ": ";
  EXPECT_EQ(with_int("q.3.dense.multiplier.npy", 2, 12345),
            qpath + "layer 3 (dense): multiplier 12345 and shift " +
                std::to_string(q.layers[3].quant.shift[2]) +
                " of column 2 are outside Q-REQ's ranges (M 0 or in [2^30, 2^31 - 1], s in "
                "[-31, 30])");
  EXPECT_TRUE(contains(with_int("q.3.dense.shift.npy", 0, 31), "outside Q-REQ's ranges"));
  EXPECT_TRUE(contains(with_int("q.0.conv2d.multiplier.npy", 1, (1 << 30) + 1),
                       "of column 1 are not Q-SCALE of input scale x weight scale / output scale"));
  // A weight of -128 (the weights are symmetric), a scale that is not positive.
  {
    npy::IntArray w = npy::read_int(path("q.4.dense.weights.npy"), npy::Dtype::Int8);
    w.data[3] = -128;
    npy::write_int(path("q.4.dense.weights.npy"), w);
    EXPECT_EQ(message_of(path("q.json")),
              qpath +
                  "layer 4 (dense): weight 3 is -128; symmetric int8 weights are in [-127, "
                  "127]");
    save_network(q, path("q.json"));
    npy::Array s = npy::read(path("q.4.dense.scales.npy"));
    s.data[1] = 0.0f;
    npy::write(path("q.4.dense.scales.npy"), s);
    EXPECT_EQ(message_of(path("q.json")),
              qpath + "layer 4 (dense): weight scale 1 must be positive and finite");
    save_network(q, path("q.json"));
  }
  // The layers must fit together: a function int8 has not, an output where there is none, an
  // input that is not the previous output.
  EXPECT_EQ(with(R"("activation": "relu6")", R"("activation": "tanh")"),
            edited + "layer 3 (dense): int8 layers take none, relu or relu6, not tanh");
  const std::string zero_point3 = "\"zero_point\": -128";  // layer 3's input: a relu output
  const std::size_t third = json.find(zero_point3, json.find("q.3.dense"));
  ASSERT_NE(third, std::string::npos);
  {
    std::string text = json;
    text.replace(third, zero_point3.size(), "\"zero_point\": -127");
    write("edited.json", text);
    EXPECT_EQ(message_of(path("edited.json")),
              edited +
                  "layer 3 (dense): its input scale and zero point are not the previous "
                  "layer's output scale and zero point");
  }
  EXPECT_EQ(message_of(path("q.json")), "accepted");
}

// The shipped networks quantised on 16 training images: the host's int8 forward pass equals the
// functional model's on the 16x16 core, and accuracy stays near the float network's.
class ShippedQuantized : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedQuantized, HostEqualsModelBitForBit) {
  const Network net = load_network(std::string(TPU_NETS_DIR) + "/" + GetParam() + ".json");
  const idx::Dataset train = load_fashion_mnist(true);
  const idx::Dataset test = load_fashion_mnist(false);
  const Network q = quantize_network(net, calibrate(net, train, 16));
  const std::uint32_t images = GetParam() == "mlp" ? 200 : 50;
  FunctionalModel model(int8_core(16), 1u << 20);
  std::vector<std::uint32_t> on_model, on_host, on_float;
  const double model_accuracy = graph::accuracy(&model, q, test, images, 50, &on_model);
  const double host_accuracy = graph::accuracy(nullptr, q, test, images, 50, &on_host);
  const double float_accuracy = graph::accuracy(nullptr, net, test, images, 50, &on_float);
  EXPECT_EQ(on_model, on_host);
  EXPECT_EQ(model_accuracy, host_accuracy);
  EXPECT_NEAR(model_accuracy, float_accuracy, 0.05);
  const Tensor x = images_to_tensor(test.images, 0, 8, test.rows, test.cols);
  expect_same_logits(infer(&model, q, x), infer(nullptr, q, x), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Networks, ShippedQuantized, ::testing::Values("mlp", "cnn"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace tpu::nn
