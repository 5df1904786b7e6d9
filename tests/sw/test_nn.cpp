// Network layers and files on the functional model, each against an
// independent expectation: im2col against a direct convolution, col2im as its
// adjoint, max-pooling against a direct window scan, dense and conv2d layers
// bit for bit against the reference model's MAC chain (num::mac in k order,
// then bias, function and rounding as docs/numerics.md says), the host fp32
// path against double precision, the trainer's gradients against finite
// differences, and the network file format with its rejections.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/graph/network_graph.hpp"
#include "tpu/model.hpp"
#include "tpu/nn.hpp"
#include "tpu/npy.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/train.hpp"

namespace tpu::nn {
namespace {

namespace fs = std::filesystem;

HardwareConfig small_core() {
  HardwareConfig c;
  c.dim = 4;
  c.ub_depth = 1024;
  c.acc_depth = 256;
  c.weight_tiles = 2;
  return c;
}

// Small integers: every product and sum below is exact in fp32, so any
// summation order gives the same value.
Tensor integer_tensor(std::vector<std::uint32_t> shape, std::mt19937& rng) {
  Tensor t(std::move(shape));
  std::uniform_int_distribution<int> value(-4, 4);
  for (float& v : t.data) v = static_cast<float>(value(rng));
  return t;
}

Tensor uniform_tensor(std::vector<std::uint32_t> shape, std::mt19937& rng, float scale) {
  Tensor t(std::move(shape));
  std::uniform_real_distribution<float> value(-scale, scale);
  for (float& v : t.data) v = value(rng);
  return t;
}

float at(const Tensor& x, std::size_t b, std::ptrdiff_t y, std::ptrdiff_t xx, std::size_t c) {
  const auto h = static_cast<std::ptrdiff_t>(x.shape[1]), w = static_cast<std::ptrdiff_t>(x.shape[2]);
  if (y < 0 || y >= h || xx < 0 || xx >= w) return 0.0f;  // "same" zero padding
  return x.data[((b * x.shape[1] + static_cast<std::size_t>(y)) * x.shape[2] +
                 static_cast<std::size_t>(xx)) *
                    x.shape[3] +
                c];
}

Layer conv_layer(std::uint32_t kernel, std::uint32_t in_channels, std::uint32_t filters,
                 isa::Func act, std::mt19937& rng, float scale) {
  Layer layer;
  layer.kind = LayerKind::Conv2d;
  layer.window = Window::same(kernel);
  layer.units = filters;
  layer.activation = act;
  layer.weight_rows = kernel * kernel * in_channels;
  std::uniform_real_distribution<float> value(-scale, scale);
  layer.weights.resize(std::size_t{layer.weight_rows} * filters);
  for (float& w : layer.weights) w = value(rng);
  layer.bias.resize(filters);
  for (float& b : layer.bias) b = value(rng);
  return layer;
}

Layer dense_layer(std::uint32_t inputs, std::uint32_t units, isa::Func act, std::mt19937& rng,
                  float scale) {
  Layer layer;
  layer.kind = LayerKind::Dense;
  layer.units = units;
  layer.activation = act;
  layer.weight_rows = inputs;
  std::uniform_real_distribution<float> value(-scale, scale);
  layer.weights.resize(std::size_t{inputs} * units);
  for (float& w : layer.weights) w = value(rng);
  layer.bias.resize(units);
  for (float& b : layer.bias) b = value(rng);
  return layer;
}

Network image_network(const char* name, std::uint32_t height, std::uint32_t width,
                      std::uint32_t channels) {
  Network net;
  net.name = name;
  net.height = height;
  net.width = width;
  net.channels = channels;
  return net;
}

Layer plain(LayerKind kind, std::uint32_t pool = 0) {
  Layer layer;
  layer.kind = kind;
  if (kind == LayerKind::MaxPool) layer.window = Window::pool(pool);
  return layer;
}

num::bf16_t bf16_of(float x) { return num::fp32_to_bf16(num::float_to_fp32(x)); }

// What the contract says one output is: the products in k order from +0,
// then the bias, the function, and (hidden layers) the rounding to bf16.
float contract_output(const std::vector<float>& inputs, const Layer& layer, std::size_t unit,
                      const std::function<float(std::size_t)>& weight, bool round) {
  num::fp32_t sum = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    sum = num::mac(sum, bf16_of(inputs[k]), bf16_of(weight(k)));
  }
  sum = num::add_fp32(sum, num::float_to_fp32(layer.bias[unit]));
  sum = num::act_func(static_cast<unsigned>(layer.activation), sum, layer.alpha);
  if (round) sum = num::bf16_to_fp32(num::fp32_to_bf16(sum));
  return num::fp32_to_float(sum);
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(num::float_to_fp32(got[i]), num::float_to_fp32(want[i]))
        << what << " element " << i << ": " << got[i] << " vs " << want[i];
  }
}

// The host's conversion of the operands it writes against the reference's N-OUT rounding: every
// exponent and sign with the bits around each rounding boundary (the halfway point, either side
// of it, an odd and an even bf16 below it), and a stride through all 2^32 patterns.
TEST(Bf16Matrix, RoundsAsTheReference) {
  std::vector<num::fp32_t> patterns;
  for (num::fp32_t sign : {0u, 0x80000000u}) {
    for (num::fp32_t exponent = 0; exponent < 256; ++exponent) {
      for (num::fp32_t high : {0x00u, 0x01u, 0x3Fu, 0x7Eu, 0x7Fu}) {
        for (num::fp32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
          patterns.push_back(sign | exponent << 23 | high << 16 | low);
        }
      }
    }
  }
  for (std::uint64_t x = 0; x <= 0xFFFFFFFFu; x += 65537) {
    patterns.push_back(static_cast<num::fp32_t>(x));
  }
  std::vector<float> values(patterns.size());
  std::memcpy(values.data(), patterns.data(), patterns.size() * sizeof(float));
  const num::MatrixBf16 got = nn::bf16_matrix(values.data(), 1, values.size());
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    ASSERT_EQ(got.data[i], num::fp32_to_bf16(patterns[i])) << std::hex << patterns[i];
  }
}

TEST(Im2col, MatchesADirectConvolution) {
  std::mt19937 rng(7);
  for (std::uint32_t kernel : {1u, 3u, 5u}) {
    const Tensor x = integer_tensor({2, 6, 5, 3}, rng);
    const Tensor w = integer_tensor({kernel, kernel, 3, 4}, rng);  // (ky, kx, c) x filters
    const std::vector<float> cols = im2col(x, Window::same(kernel));
    const std::size_t k = std::size_t{kernel} * kernel * 3;
    ASSERT_EQ(cols.size(), 2u * 6 * 5 * k);
    const auto half = static_cast<std::ptrdiff_t>(kernel / 2);
    for (std::size_t b = 0; b < 2; ++b) {
      for (std::ptrdiff_t y = 0; y < 6; ++y) {
        for (std::ptrdiff_t xx = 0; xx < 5; ++xx) {
          const std::size_t row = (b * 6 + static_cast<std::size_t>(y)) * 5 +
                                  static_cast<std::size_t>(xx);
          for (std::size_t f = 0; f < 4; ++f) {
            float direct = 0.0f, lowered = 0.0f;
            for (std::uint32_t ky = 0; ky < kernel; ++ky) {
              for (std::uint32_t kx = 0; kx < kernel; ++kx) {
                for (std::size_t c = 0; c < 3; ++c) {
                  direct += at(x, b, y + ky - half, xx + kx - half, c) *
                            w.data[((ky * kernel + kx) * 3 + c) * 4 + f];
                }
              }
            }
            for (std::size_t kk = 0; kk < k; ++kk) lowered += cols[row * k + kk] * w.data[kk * 4 + f];
            ASSERT_EQ(lowered, direct) << "kernel " << kernel << " row " << row << " filter " << f;
          }
        }
      }
    }
  }
}

TEST(Im2col, Col2imIsItsAdjoint) {
  // <im2col(x), g> = <x, col2im(g)> for every x and g: the backward pass of a
  // convolution's input is exact.
  std::mt19937 rng(11);
  const Tensor x = integer_tensor({2, 5, 7, 2}, rng);
  const std::uint32_t kernel = 3;
  const std::vector<float> cols = im2col(x, Window::same(kernel));
  Tensor g = integer_tensor({static_cast<std::uint32_t>(cols.size())}, rng);
  const Tensor back = col2im(g.data, x.shape, Window::same(kernel));
  double left = 0.0, right = 0.0;
  for (std::size_t i = 0; i < cols.size(); ++i) left += double{cols[i]} * g.data[i];
  for (std::size_t i = 0; i < x.data.size(); ++i) right += double{x.data[i]} * back.data[i];
  EXPECT_EQ(left, right);
  EXPECT_THROW(col2im(std::vector<float>(3), x.shape, Window::same(kernel)), std::invalid_argument);
}

TEST(MaxPool, TakesTheLargestOfEachWindow) {
  std::mt19937 rng(3);
  const Tensor x = integer_tensor({2, 6, 4, 3}, rng);
  const Tensor y = max_pool(x, Window::pool(2));
  ASSERT_EQ(y.shape, (std::vector<std::uint32_t>{2, 3, 2, 3}));
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::ptrdiff_t oy = 0; oy < 3; ++oy) {
      for (std::ptrdiff_t ox = 0; ox < 2; ++ox) {
        for (std::size_t c = 0; c < 3; ++c) {
          const float want = std::max({at(x, b, 2 * oy, 2 * ox, c), at(x, b, 2 * oy, 2 * ox + 1, c),
                                       at(x, b, 2 * oy + 1, 2 * ox, c),
                                       at(x, b, 2 * oy + 1, 2 * ox + 1, c)});
          EXPECT_EQ(y.data[((b * 3 + static_cast<std::size_t>(oy)) * 2 +
                            static_cast<std::size_t>(ox)) *
                               3 +
                           c],
                    want);
        }
      }
    }
  }
}

TEST(Layers, DenseOnTheModelFollowsTheContract) {
  std::mt19937 rng(5);
  FunctionalModel model(small_core(), 1 << 20);
  for (isa::Func act : {isa::Func::Relu, isa::Func::None, isa::Func::Tanh}) {
    Layer layer = dense_layer(37, 11, act, rng, 0.5f);
    const Tensor x = uniform_tensor({6, 37}, rng, 2.0f);
    for (bool last : {false, true}) {
      const std::vector<float> got = layer_forward(&model, layer, x.data.data(), 6, last);
      std::vector<float> want;
      for (std::size_t i = 0; i < 6; ++i) {
        const std::vector<float> row(x.data.begin() + static_cast<std::ptrdiff_t>(i * 37),
                                     x.data.begin() + static_cast<std::ptrdiff_t>(i * 37 + 37));
        for (std::size_t j = 0; j < 11; ++j) {
          want.push_back(contract_output(
              row, layer, j, [&](std::size_t k) { return layer.weights[k * 11 + j]; }, !last));
        }
      }
      expect_same_bits(got, want, "dense");
    }
  }
}

TEST(Layers, ConvAndPoolOnTheModelFollowTheContract) {
  // conv2d -> maxpool -> flatten, run as the network's graph, against a direct convolution
  // computed with the reference MAC chain.
  std::mt19937 rng(9);
  Network net = image_network("conv", 6, 8, 2);
  net.layers.push_back(conv_layer(3, 2, 5, isa::Func::Relu, rng, 0.5f));
  net.layers.push_back(plain(LayerKind::MaxPool, 2));
  net.layers.push_back(plain(LayerKind::Flatten));
  net.classes = layer_shapes(net).back()[0];
  const Tensor x = uniform_tensor({3, 6, 8, 2}, rng, 1.0f);
  HardwareConfig vector_core = small_core();
  vector_core.vector_lanes = 2;  // the pool on the core too
  FunctionalModel model(vector_core, 1 << 20);
  const graph::Graph as_graph = graph::network_graph(net);
  graph::Session session(as_graph, &model);
  std::vector<graph::OpRun> runs;
  const Tensor got = graph::infer(session, net, x, &runs);
  // The images stay NHWC, as the file and the products have them: no Transpose, and every node
  // that computes does so on the core.
  for (const graph::Node& node : as_graph.nodes) EXPECT_NE(node.op, "Transpose");
  for (const graph::OpRun& run : runs) {
    EXPECT_TRUE(run.work != graph::NodeWork::Values || run.on_accelerator) << run.node;
  }

  const Layer& conv = net.layers[0];
  Tensor conv_out({3, 6, 8, 5});
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::ptrdiff_t y = 0; y < 6; ++y) {
      for (std::ptrdiff_t xx = 0; xx < 8; ++xx) {
        std::vector<float> window;  // (ky, kx, c) order, zeros outside the image
        for (std::ptrdiff_t ky = -1; ky <= 1; ++ky) {
          for (std::ptrdiff_t kx = -1; kx <= 1; ++kx) {
            for (std::size_t c = 0; c < 2; ++c) window.push_back(at(x, b, y + ky, xx + kx, c));
          }
        }
        for (std::size_t f = 0; f < 5; ++f) {
          conv_out
              .data[((b * 6 + static_cast<std::size_t>(y)) * 8 + static_cast<std::size_t>(xx)) * 5 +
                    f] =
              contract_output(
                  window, conv, f, [&](std::size_t k) { return conv.weights[k * 5 + f]; }, false);
        }
      }
    }
  }
  // The network's last product: its results leave the core in fp32 (round false above).
  const Tensor pooled = max_pool(conv_out, Window::pool(2));
  EXPECT_EQ(got.shape, (std::vector<std::uint32_t>{3, 3 * 4 * 5}));
  expect_same_bits(got.data, pooled.data, "conv2d + maxpool");
}

TEST(Layers, HostFp32PathMatchesDoublePrecision) {
  std::mt19937 rng(13);
  Network net = image_network("mlp", 4, 4, 1);
  net.layers.push_back(plain(LayerKind::Flatten));
  net.layers.push_back(dense_layer(16, 8, isa::Func::Relu, rng, 0.5f));
  net.layers.push_back(dense_layer(8, 3, isa::Func::None, rng, 0.5f));
  net.classes = 3;
  const Tensor x = uniform_tensor({5, 4, 4, 1}, rng, 1.0f);
  const Tensor got = forward_host_fp32(net, x);
  for (std::size_t i = 0; i < 5; ++i) {
    std::vector<double> hidden(8);
    for (std::size_t j = 0; j < 8; ++j) {
      double s = net.layers[1].bias[j];
      for (std::size_t k = 0; k < 16; ++k) {
        s += double{x.data[i * 16 + k]} * net.layers[1].weights[k * 8 + j];
      }
      hidden[j] = std::max(s, 0.0);
    }
    for (std::size_t j = 0; j < 3; ++j) {
      double s = net.layers[2].bias[j];
      for (std::size_t k = 0; k < 8; ++k) s += hidden[k] * net.layers[2].weights[k * 3 + j];
      EXPECT_NEAR(got.data[i * 3 + j], s, 1e-5);
    }
  }
}

// Mean softmax cross-entropy of the host fp32 network, in double.
double loss_of(const Network& net, const Tensor& x, const std::vector<std::uint8_t>& labels) {
  const Tensor z = forward_host_fp32(net, x);
  const std::size_t n = labels.size(), classes = z.per_example();
  double loss = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    double top = z.data[i * classes];
    for (std::size_t j = 1; j < classes; ++j) top = std::max(top, double{z.data[i * classes + j]});
    double total = 0.0;
    for (std::size_t j = 0; j < classes; ++j) total += std::exp(z.data[i * classes + j] - top);
    loss -= z.data[i * classes + labels[i]] - top - std::log(total);
  }
  return loss / static_cast<double>(n);
}

TEST(Trainer, GradientsAgreeWithFiniteDifferences) {
  // Adam's first step moves each parameter by -lr * g / (|g| + eps), that is
  // by lr against the sign of its gradient: every parameter whose central
  // difference is clearly non-zero must move the other way. A small CNN
  // covers the conv (col2im), pooling, flatten and dense gradients.
  std::mt19937 rng(17);
  Network net = image_network("tiny", 8, 8, 1);
  net.layers.push_back(conv_layer(3, 1, 3, isa::Func::Relu, rng, 0.6f));
  net.layers.push_back(plain(LayerKind::MaxPool, 2));
  net.layers.push_back(plain(LayerKind::Flatten));
  net.layers.push_back(dense_layer(48, 10, isa::Func::Relu, rng, 0.3f));
  net.layers.push_back(dense_layer(10, 4, isa::Func::None, rng, 0.5f));
  net.classes = 4;
  const Tensor x = uniform_tensor({4, 8, 8, 1}, rng, 1.0f);
  const std::vector<std::uint8_t> labels{0, 1, 2, 3};

  const Network before = net;
  TrainOptions options;
  options.learning_rate = 1e-4f;
  Trainer trainer(net, nullptr, options);
  trainer.step(x, labels);

  const float h = 1e-3f;
  std::size_t checked = 0;
  for (std::size_t l = 0; l < before.layers.size(); ++l) {
    for (bool bias : {false, true}) {
      const std::size_t count =
          bias ? before.layers[l].bias.size() : before.layers[l].weights.size();
      for (std::size_t i = 0; i < count; ++i) {
        Network probe = before;
        float& p = bias ? probe.layers[l].bias[i] : probe.layers[l].weights[i];
        const float original = p;
        p = original + h;
        const double up = loss_of(probe, x, labels);
        p = original - h;
        const double down = loss_of(probe, x, labels);
        const double gradient = (up - down) / (2.0 * h);
        if (std::fabs(gradient) < 2e-3) continue;
        const float moved = (bias ? net.layers[l].bias[i] : net.layers[l].weights[i]) - original;
        EXPECT_LT(moved * gradient, 0.0)
            << "layer " << l << (bias ? " bias " : " weight ") << i << ": gradient " << gradient
            << ", moved " << moved;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100u);  // the check covered most parameters, not a handful
}

class NetworkFiles : public ::testing::Test {
 protected:
  fs::path dir_;
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tpu_net_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static std::string message_of(const std::string& path) {
    try {
      load_network(path);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "accepted";
  }
};

TEST_F(NetworkFiles, RoundTripKeepsEveryBit) {
  const Network net = make_network(Architecture::Cnn, 3);
  const std::string path = (dir_ / "cnn.json").string();
  save_network(net, path);
  const Network back = load_network(path);
  ASSERT_EQ(back.layers.size(), net.layers.size());
  EXPECT_EQ(back.classes, 10u);
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    EXPECT_EQ(back.layers[l].kind, net.layers[l].kind);
    EXPECT_EQ(back.layers[l].window, net.layers[l].window);
    EXPECT_EQ(back.layers[l].activation, net.layers[l].activation);
    expect_same_bits(back.layers[l].weights, net.layers[l].weights, "weights");
    expect_same_bits(back.layers[l].bias, net.layers[l].bias, "bias");
  }
}

// Windows of any size, stride and padding, against their definition: output pixel (oy, ox)
// tap (ky, kx) reads input (oy * sy + ky - top, ox * sx + kx - left), or a zero outside.
TEST(Windows, Im2colOfAnyStrideAndPadding) {
  std::mt19937 rng(11);
  const Tensor x = integer_tensor({2, 7, 6, 3}, rng);
  const Window win{3, 2, 2, 3, 1, 0, 2, 1};
  const std::uint32_t oh = win.out_height(7), ow = win.out_width(6);
  EXPECT_EQ(oh, (7u + 1 + 2 - 3) / 2 + 1);
  EXPECT_EQ(ow, (6u + 0 + 1 - 2) / 3 + 1);
  const std::vector<float> cols = im2col(x, win);
  ASSERT_EQ(cols.size(), std::size_t{2} * oh * ow * 3 * 2 * 3);
  std::size_t i = 0;
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::uint32_t oy = 0; oy < oh; ++oy) {
      for (std::uint32_t ox = 0; ox < ow; ++ox) {
        for (std::uint32_t ky = 0; ky < 3; ++ky) {
          for (std::uint32_t kx = 0; kx < 2; ++kx) {
            for (std::size_t c = 0; c < 3; ++c, ++i) {
              EXPECT_EQ(cols[i],
                        at(x, b, std::ptrdiff_t{oy} * 2 + ky - 1, std::ptrdiff_t{ox} * 3 + kx, c));
            }
          }
        }
      }
    }
  }
  // col2im stays im2col's adjoint: <im2col(x), g> = <x, col2im(g)>.
  const Tensor g = integer_tensor({1, static_cast<std::uint32_t>(cols.size())}, rng);
  const Tensor back = col2im(g.data, x.shape, win);
  double lhs = 0, rhs = 0;
  for (std::size_t k = 0; k < cols.size(); ++k) lhs += double{cols[k]} * g.data[k];
  for (std::size_t k = 0; k < x.data.size(); ++k) rhs += double{x.data[k]} * back.data[k];
  EXPECT_EQ(lhs, rhs);
}

TEST(Windows, PoolsCountOnlyTheImageUnlessAsked) {
  Tensor x({1, 2, 2, 1});
  x.data = {1, 2, 3, 4};
  const Window win{2, 2, 1, 1, 1, 1, 0, 0};  // a 2x2 window padded above and to the left
  const Tensor mean = avg_pool(x, win, false);
  const Tensor padded_mean = avg_pool(x, win, true);
  const Tensor largest = max_pool(Tensor(x), win);
  ASSERT_EQ(mean.shape, (std::vector<std::uint32_t>{1, 2, 2, 1}));
  EXPECT_EQ(mean.data, (std::vector<float>{1.0f, 1.5f, 2.0f, 2.5f}));
  EXPECT_EQ(padded_mean.data, (std::vector<float>{0.25f, 0.75f, 1.0f, 2.5f}));
  EXPECT_EQ(largest.data, (std::vector<float>{1, 2, 3, 4}));
}

TEST(InferInput, NchwFilesAreTransposedAndShapesChecked) {
  Network net;
  net.height = 2;
  net.width = 3;
  net.channels = 2;
  net.layout = InputLayout::Nchw;
  std::vector<float> data(12);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  const Tensor x = input_from_file(net, {1, 2, 2, 3}, data);
  ASSERT_EQ(x.shape, (std::vector<std::uint32_t>{1, 2, 3, 2}));
  // NHWC element (y, x, c) is NCHW element (c, y, x).
  for (std::size_t y = 0; y < 2; ++y) {
    for (std::size_t xx = 0; xx < 3; ++xx) {
      for (std::size_t c = 0; c < 2; ++c) {
        EXPECT_EQ(x.data[(y * 3 + xx) * 2 + c], data[(c * 2 + y) * 3 + xx]);
      }
    }
  }
  EXPECT_THROW(input_from_file(net, {1, 2, 3, 2}, data), std::invalid_argument);
  EXPECT_THROW(input_from_file(net, {12}, data), std::invalid_argument);
  net.layout = InputLayout::Flat;
  EXPECT_EQ(input_from_file(net, {1, 12}, data).shape, (std::vector<std::uint32_t>{1, 12}));
}

TEST(InferOutput, SoftmaxRowsSumToOne) {
  Tensor y({2, 3});
  y.data = {1000.0f, 1000.0f, 1000.0f, 0.0f, std::log(3.0f), -INFINITY};
  softmax_rows(y);
  for (std::size_t j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(y.data[j], 1.0f / 3.0f);
  EXPECT_FLOAT_EQ(y.data[3], 0.25f);
  EXPECT_FLOAT_EQ(y.data[4], 0.75f);
  EXPECT_EQ(y.data[5], 0.0f);
}

// A quantised softmax as ONNX's QuantizeLinear then DequantizeLinear: x / scale in fp32, ties
// to even, the zero point added, saturated to int8.
TEST(InferOutput, QuantisedSoftmaxRoundsHalfToEvenAndSaturates) {
  Network net;
  net.softmax_output = true;
  net.softmax_quant = ActivationQuant{0.2, 0};
  Tensor y({1, 2});
  y.data = {0.0f, 0.0f};  // softmax 0.5 each: 0.5 / 0.2 = 2.5, to 2 (half away would give 3)
  finish_output(net, y);
  EXPECT_EQ(y.data[0], 2.0f * 0.2f);
  EXPECT_EQ(y.data[1], 2.0f * 0.2f);
  net.softmax_quant = ActivationQuant{0.001, 100};
  y.data = {0.0f, 0.0f};  // 500 + 100 saturates at 127: 27 steps
  finish_output(net, y);
  EXPECT_EQ(y.data[0], 27.0f * 0.001f);
  net.softmax_output = false;  // logits pass unchanged
  y.data = {3.0f, -1.0f};
  finish_output(net, y);
  EXPECT_EQ(y.data, (std::vector<float>{3.0f, -1.0f}));
}

TEST_F(NetworkFiles, RoundTripKeepsWindowsLayoutsAndSoftmax) {
  std::mt19937 rng(5);
  Network net = image_network("imported", 9, 8, 2);
  net.layout = InputLayout::Nchw;
  net.softmax_output = true;
  net.softmax_quant = ActivationQuant{1.0 / 256.0, -128};
  Layer conv = conv_layer(3, 2, 4, isa::Func::Relu6, rng, 0.5f);
  conv.window = {3, 2, 2, 1, 1, 0, 0, 1};
  conv.weight_rows = 3 * 2 * 2;
  conv.weights.resize(std::size_t{conv.weight_rows} * 4);
  net.layers.push_back(conv);
  Layer pool = plain(LayerKind::AvgPool);
  pool.window = {2, 2, 1, 1, 1, 1, 0, 0};
  pool.count_padding = true;
  net.layers.push_back(pool);
  net.layers.push_back(plain(LayerKind::Flatten));
  const std::uint32_t flat = layer_shapes(net).back()[0];
  net.layers.push_back(dense_layer(flat, 3, isa::Func::None, rng, 0.5f));
  const std::string path = (dir_ / "imported.json").string();
  save_network(net, path);
  const Network back = load_network(path);
  EXPECT_EQ(back.layout, InputLayout::Nchw);
  EXPECT_TRUE(back.softmax_output);
  ASSERT_TRUE(back.softmax_quant);
  EXPECT_EQ(back.softmax_quant->scale, 1.0 / 256.0);
  EXPECT_EQ(back.softmax_quant->zero_point, -128);
  ASSERT_EQ(back.layers.size(), 4u);
  EXPECT_EQ(back.layers[0].window, conv.window);
  EXPECT_EQ(back.layers[1].kind, LayerKind::AvgPool);
  EXPECT_EQ(back.layers[1].window, pool.window);
  EXPECT_TRUE(back.layers[1].count_padding);
  // Without overwrite, an existing file stops the save and nothing is replaced or left.
  const auto files = std::distance(fs::directory_iterator(dir_), fs::directory_iterator());
  EXPECT_THROW(save_network(net, path, false), std::runtime_error);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), files);
}

TEST_F(NetworkFiles, RejectsMalformedDescriptions) {
  npy::write((dir_ / "w.npy").string(), {{4, 3}, std::vector<float>(12, 0.5f)});
  npy::write((dir_ / "b.npy").string(), {{3}, std::vector<float>(3, 0.0f)});
  const std::string head =
      R"({"name": "n", "input": {"height": 2, "width": 2, "channels": 1}, "layers": [)"
      R"({"type": "flatten"}, )";
  auto dense = [](const std::string& extra) {
    return R"({"type": "dense", "units": 3, "weights": "w.npy", "bias": "b.npy")" + extra + "}";
  };
  EXPECT_EQ(message_of(write("ok.json", head + dense("") + "]}")), "accepted");
  EXPECT_NE(message_of((dir_ / "absent.json").string()).find("cannot open"), std::string::npos);
  EXPECT_NE(message_of(write("syntax.json", head)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(message_of(write("type.json", head + R"({"type": "lstm"}]})"))
                .find("unknown layer type lstm"),
            std::string::npos);
  EXPECT_NE(message_of(write("act.json", head + dense(R"(, "activation": "swish")") + "]}"))
                .find("unknown activation swish"),
            std::string::npos);
  EXPECT_NE(message_of(write("field.json", R"({"name": "n", "layers": []})")).find("malformed"),
            std::string::npos);
  npy::write((dir_ / "w5.npy").string(), {{5, 3}, std::vector<float>(15, 0.5f)});
  const std::string wrong = head + R"({"type": "dense", "units": 3, "weights": "w5.npy", )" +
                            R"("bias": "b.npy"}]})";
  EXPECT_NE(message_of(write("shape.json", wrong)).find("should be 4 x 3"), std::string::npos);
  const std::string unflat =
      R"({"name": "n", "input": {"height": 2, "width": 2, "channels": 1}, "layers": []})";
  EXPECT_NE(message_of(write("unflat.json", unflat)).find("flat layer"), std::string::npos);
  const std::string logits_quant =
      R"({"name": "n", "input": {"features": 4}, "softmax_quant": {"scale": 0.1, )"
      R"("zero_point": 0}, "layers": [)" +
      dense("") + "]}";
  EXPECT_NE(message_of(write("lq.json", logits_quant)).find("softmax_quant without"),
            std::string::npos);
}

}  // namespace
}  // namespace tpu::nn
