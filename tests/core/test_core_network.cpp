// Fashion-MNIST networks on the RTL: two mixed-precision training steps give
// bit-identical weights on the rtl and model backends, and the networks
// shipped in sw/nets classify test images as expected: the same predictions
// (the same logits) on both backends, and an accuracy no trained network falls below;
// quantised to int8, the same logits on the RTL (as a graph and compiled), the model and the
// host's int8 reference.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "backends/rtl_backend.hpp"
#include "core_harness.hpp"
#include "tpu/graph/compiled.hpp"
#include "tpu/graph/network_graph.hpp"
#include "tpu/model.hpp"
#include "tpu/nn.hpp"
#include "tpu/quantize.hpp"
#include "tpu/train.hpp"

namespace tpu::nn {

// Names for GoogleTest's test names and messages.
void PrintTo(Architecture architecture, std::ostream* os) {
  *os << (architecture == Architecture::Mlp ? "mlp" : "cnn");
}

namespace {

constexpr const char* kArray = "16x16";

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The network's scores for x: its graph on a backend, or on the host when null.
Tensor infer(Backend* backend, const Network& net, const Tensor& x) {
  const graph::Graph model = graph::network_graph(net);
  graph::Session session(model, backend);
  return graph::infer(session, net, x);
}

std::string architecture_name(const ::testing::TestParamInfo<Architecture>& param) {
  return param.param == Architecture::Mlp ? "mlp" : "cnn";
}

class TwoTrainingSteps : public ::testing::TestWithParam<Architecture> {};

TEST_P(TwoTrainingSteps, BitIdenticalOnRtlAndModel) {
  const idx::Dataset train = load_fashion_mnist(true);
  const std::uint32_t batch = GetParam() == Architecture::Mlp ? 8 : 2;
  const HardwareConfig config = testing::config_named(kArray);
  sim::RtlBackend rtl(config);
  FunctionalModel model(config, 1u << 20);
  Network on_rtl = make_network(GetParam(), 5), on_model = make_network(GetParam(), 5);
  TrainOptions options;
  options.batch = batch;
  Trainer rtl_trainer(on_rtl, &rtl, options), model_trainer(on_model, &model, options);
  for (std::uint32_t step = 0; step < 2; ++step) {
    const Tensor x = images_to_tensor(train.images, step * batch, batch, train.rows, train.cols);
    std::vector<std::uint8_t> labels(train.labels.begin() + step * batch,
                                     train.labels.begin() + (step + 1) * batch);
    EXPECT_EQ(bits(rtl_trainer.step(x, labels)), bits(model_trainer.step(x, labels)))
        << "loss of step " << step;
  }
  const Network untrained = make_network(GetParam(), 5);
  std::size_t changed = 0;
  for (std::size_t l = 0; l < on_rtl.layers.size(); ++l) {
    for (bool bias : {false, true}) {
      const auto& a = bias ? on_rtl.layers[l].bias : on_rtl.layers[l].weights;
      const auto& b = bias ? on_model.layers[l].bias : on_model.layers[l].weights;
      const auto& before = bias ? untrained.layers[l].bias : untrained.layers[l].weights;
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(bits(a[i]), bits(b[i])) << "layer " << l << (bias ? " bias " : " weight ") << i;
        changed += bits(a[i]) != bits(before[i]);
      }
    }
  }
  EXPECT_GT(changed, 0u) << "the steps trained nothing";
}

INSTANTIATE_TEST_SUITE_P(Networks, TwoTrainingSteps,
                         ::testing::Values(Architecture::Mlp, Architecture::Cnn), architecture_name);

// An accuracy on the first kImages test images (model backend) that no
// properly trained network of the kind falls below.
double minimum_accuracy(const std::string& network) {
  return network == "mlp" ? 0.86 : 0.88;
}

class ShippedNetwork : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedNetwork, ClassifiesTestImages) {
  constexpr std::uint32_t kImages = 1000, kRtlImages = 16;
  const Network net = load_network(std::string(TPU_NETS_DIR) + "/" + GetParam() + ".json");
  const idx::Dataset test = load_fashion_mnist(false);
  const HardwareConfig config = testing::config_named(kArray);
  FunctionalModel model(config, 1u << 20);
  std::vector<std::uint32_t> model_predictions, host_predictions;
  const double model_accuracy =
      graph::accuracy(&model, net, test, kImages, 100, &model_predictions);
  const double host_accuracy = graph::accuracy(nullptr, net, test, kImages, 100, &host_predictions);
  EXPECT_GE(model_accuracy, minimum_accuracy(GetParam()));
  EXPECT_NEAR(model_accuracy, host_accuracy, 0.01) << "bf16 inference against host fp32";

  // The first images on the RTL: the same logits, bit for bit.
  sim::RtlBackend rtl(config);
  const Tensor x = images_to_tensor(test.images, 0, kRtlImages, test.rows, test.cols);
  const Tensor on_rtl = infer(&rtl, net, x), on_model = infer(&model, net, x);
  ASSERT_EQ(on_rtl.data.size(), on_model.data.size());
  for (std::size_t i = 0; i < on_rtl.data.size(); ++i) {
    ASSERT_EQ(bits(on_rtl.data[i]), bits(on_model.data[i])) << "logit " << i;
  }
}

// The shipped network quantised on 16 training images: the first test images give the same
// logits, bit for bit, on the RTL, on the model and on the host (the int8 reference), and
// compiled (tpu compile's model), on the RTL.
TEST_P(ShippedNetwork, Int8SameLogitsOnRtlModelAndHost) {
  const Network net = load_network(std::string(TPU_NETS_DIR) + "/" + GetParam() + ".json");
  const Network q = quantize_network(net, calibrate(net, load_fashion_mnist(true), 16));
  const idx::Dataset test = load_fashion_mnist(false);
  const HardwareConfig config = testing::config_named(kArray);
  ASSERT_TRUE(config.int8);
  FunctionalModel model(config, 1u << 20);
  sim::RtlBackend rtl(config);
  const Tensor x = images_to_tensor(test.images, 0, 8, test.rows, test.cols);
  const Tensor on_rtl = infer(&rtl, q, x), on_model = infer(&model, q, x);
  const Tensor on_host = infer(nullptr, q, x);
  // Compiled for runs of the 8 images (its dense layers one program, chained in the core's
  // memory), on an RTL backend of its own, as tpu infer runs a compiled model (two backends in
  // one program, the second made after the first ran: both must go cleanly).
  const graph::CompiledModel compiled = graph::compile(graph::network_graph(q), config, 8);
  sim::RtlBackend compiled_rtl(config);
  graph::Session session(compiled, compiled_rtl);
  const Tensor compiled_on_rtl = graph::infer(session, q, x);
  ASSERT_EQ(on_rtl.data.size(), on_host.data.size());
  ASSERT_EQ(on_model.data.size(), on_host.data.size());
  ASSERT_EQ(compiled_on_rtl.data.size(), on_host.data.size());
  for (std::size_t i = 0; i < on_rtl.data.size(); ++i) {
    ASSERT_EQ(bits(on_rtl.data[i]), bits(on_host.data[i])) << "logit " << i << " on rtl";
    ASSERT_EQ(bits(on_model.data[i]), bits(on_host.data[i])) << "logit " << i << " on model";
    ASSERT_EQ(bits(compiled_on_rtl.data[i]), bits(on_host.data[i]))
        << "logit " << i << " compiled, on rtl";
  }
}

INSTANTIATE_TEST_SUITE_P(Networks, ShippedNetwork,
                         ::testing::Values("mlp", "cnn"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace tpu::nn
