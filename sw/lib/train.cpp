#include "tpu/train.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <stdexcept>


namespace tpu::nn {
namespace {

constexpr float kAdamBeta1 = 0.9f, kAdamBeta2 = 0.999f, kAdamEpsilon = 1e-8f;
const char* const kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// A uniform float in [0, 1) from the engine's raw output only, so the same
// seed gives the same numbers on every platform.
float uniform01(std::mt19937_64& rng) {
  return static_cast<float>(rng() >> 40) * 0x1p-24f;
}

Layer weighted_layer(LayerKind kind, std::uint32_t inputs, std::uint32_t units,
                     std::uint32_t kernel, isa::Func activation, std::mt19937_64& rng) {
  Layer layer;
  layer.kind = kind;
  layer.units = units;
  if (kind == LayerKind::Conv2d) layer.window = Window::same(kernel);
  layer.activation = activation;
  layer.weight_rows = inputs;
  // He uniform: the variance that keeps relu activations at scale.
  const float limit = std::sqrt(6.0f / static_cast<float>(inputs));
  layer.weights.resize(std::size_t{inputs} * units);
  for (float& w : layer.weights) w = (2.0f * uniform01(rng) - 1.0f) * limit;
  layer.bias.assign(units, 0.0f);
  return layer;
}

Layer plain_layer(LayerKind kind, std::uint32_t pool = 0) {
  Layer layer;
  layer.kind = kind;
  if (kind == LayerKind::MaxPool) layer.window = Window::pool(pool);
  return layer;
}

void adam(std::vector<float>& params, const std::vector<float>& grads, std::vector<float>& m,
          std::vector<float>& v, float lr, std::uint64_t step) {
  const float correct1 = 1.0f - std::pow(kAdamBeta1, static_cast<float>(step));
  const float correct2 = 1.0f - std::pow(kAdamBeta2, static_cast<float>(step));
  for (std::size_t i = 0; i < params.size(); ++i) {
    m[i] = kAdamBeta1 * m[i] + (1.0f - kAdamBeta1) * grads[i];
    v[i] = kAdamBeta2 * v[i] + (1.0f - kAdamBeta2) * grads[i] * grads[i];
    params[i] -= lr * (m[i] / correct1) / (std::sqrt(v[i] / correct2) + kAdamEpsilon);
  }
}

Tensor batch_of(const idx::Dataset& data, const std::vector<std::uint32_t>& order,
                std::size_t first, std::size_t count, std::vector<std::uint8_t>& labels) {
  const std::size_t per = std::size_t{data.rows} * data.cols;
  Tensor x({static_cast<std::uint32_t>(count), data.rows, data.cols, 1});
  labels.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t example = order[first + i];
    for (std::size_t p = 0; p < per; ++p) {
      x.data[i * per + p] = static_cast<float>(data.images[example * per + p]) / 255.0f;
    }
    labels[i] = data.labels[example];
  }
  return x;
}

// The examples of epoch `epoch` in the seed's order.
std::vector<std::uint32_t> epoch_order(const idx::Dataset& train, const TrainOptions& options,
                                       unsigned epoch) {
  const std::uint32_t examples =
      options.examples ? std::min(options.examples, train.count) : train.count;
  std::vector<std::uint32_t> order(examples);
  for (std::uint32_t i = 0; i < examples; ++i) order[i] = i;
  std::mt19937_64 rng(options.seed * 1000003 + epoch);
  for (std::uint32_t i = examples; i > 1; --i) {
    std::swap(order[i - 1], order[static_cast<std::uint32_t>(rng() % i)]);
  }
  return order;
}

}  // namespace

Network make_network(Architecture architecture, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Network net;
  net.height = net.width = 28;
  net.channels = 1;
  net.classes = 10;
  if (architecture == Architecture::Mlp) {
    net.name = "mlp";
    net.layers.push_back(plain_layer(LayerKind::Flatten));
    net.layers.push_back(weighted_layer(LayerKind::Dense, 784, 256, 0, isa::Func::Relu, rng));
    net.layers.push_back(weighted_layer(LayerKind::Dense, 256, 128, 0, isa::Func::Relu, rng));
    net.layers.push_back(weighted_layer(LayerKind::Dense, 128, 10, 0, isa::Func::None, rng));
  } else {
    net.name = "cnn";
    net.layers.push_back(weighted_layer(LayerKind::Conv2d, 9, 16, 3, isa::Func::Relu, rng));
    net.layers.push_back(plain_layer(LayerKind::MaxPool, 2));
    net.layers.push_back(weighted_layer(LayerKind::Conv2d, 144, 32, 3, isa::Func::Relu, rng));
    net.layers.push_back(plain_layer(LayerKind::MaxPool, 2));
    net.layers.push_back(plain_layer(LayerKind::Flatten));
    net.layers.push_back(weighted_layer(LayerKind::Dense, 1568, 64, 0, isa::Func::Relu, rng));
    net.layers.push_back(weighted_layer(LayerKind::Dense, 64, 10, 0, isa::Func::None, rng));
  }
  layer_shapes(net);  // the pieces fit together
  return net;
}

Trainer::Trainer(Network& net, Backend* accelerator, const TrainOptions& options)
    : net_(net), accelerator_(accelerator), options_(options) {
  if (options.batch == 0 || options.epochs == 0) {
    throw std::invalid_argument("training needs a batch size and a number of epochs");
  }
  if (!(options.lr_decay > 0.0f && options.lr_decay <= 1.0f)) {
    throw std::invalid_argument("the learning rate's decay must be in (0, 1]");
  }
  if (net_.int8) {
    throw std::invalid_argument(
        "a quantised (int8) network cannot be trained: train the float "
        "network, then quantise it");
  }
  for (const Layer& layer : net_.layers) {
    if (layer.activation != isa::Func::None && layer.activation != isa::Func::Relu) {
      throw std::invalid_argument("the trainer knows the gradients of relu and none only");
    }
    // The max-pool gradient below assumes windows that tile the image.
    if ((layer.kind == LayerKind::MaxPool &&
         !(layer.window == Window::pool(layer.window.height))) ||
        layer.kind == LayerKind::AvgPool) {
      throw std::invalid_argument(
          "the trainer takes max-pooling with square windows as large as their stride, no "
          "padding, and no average pooling");
    }
    adam_m_.emplace_back(layer.weights.size(), 0.0f);
    adam_v_.emplace_back(layer.weights.size(), 0.0f);
    adam_m_.emplace_back(layer.bias.size(), 0.0f);
    adam_v_.emplace_back(layer.bias.size(), 0.0f);
  }
}

std::vector<float> Trainer::matmul(const float* a, const float* b, std::uint32_t m, std::uint32_t k,
                                   std::uint32_t n) {
  macs_ += std::uint64_t{m} * k * n;
  return nn::matmul(accelerator_, a, b, m, k, n);
}

Tensor Trainer::forward_layer(std::size_t l, const Tensor& x, bool last) {
  const Layer& layer = net_.layers[l];
  const std::uint32_t n = x.shape[0];
  switch (layer.kind) {
    case LayerKind::Flatten: {
      Tensor y = x;
      y.shape = {n, static_cast<std::uint32_t>(x.per_example())};
      return y;
    }
    case LayerKind::MaxPool: {
      const std::uint32_t p = layer.window.height, h = x.shape[1], w = x.shape[2], c = x.shape[3];
      Tensor y = max_pool(x, layer.window);
      const std::uint32_t oh = y.shape[1], ow = y.shape[2];
      auto& where = argmax_[l];
      where.assign(y.data.size(), 0);
      for (std::uint32_t b = 0; b < n; ++b) {
        for (std::uint32_t oy = 0; oy < oh; ++oy) {
          for (std::uint32_t ox = 0; ox < ow; ++ox) {
            for (std::uint32_t ch = 0; ch < c; ++ch) {
              const std::size_t out = ((std::size_t{b} * oh + oy) * ow + ox) * c + ch;
              // The first position holding the maximum takes the gradient.
              for (std::uint32_t d = 0; d < p * p; ++d) {
                const std::size_t in =
                    ((std::size_t{b} * h + oy * p + d / p) * w + ox * p + d % p) * c + ch;
                if (x.data[in] == y.data[out]) {
                  where[out] = static_cast<std::uint32_t>(in);
                  break;
                }
              }
            }
          }
        }
      }
      return y;
    }
    case LayerKind::AvgPool:  // refused by the constructor
      throw std::logic_error("the trainer has no average pooling");
    case LayerKind::Dense: {
      Tensor y({n, layer.units});
      y.data = layer_forward(accelerator_, layer, x.data.data(), n, last);
      macs_ += std::uint64_t{n} * layer.weight_rows * layer.units;
      return y;
    }
    case LayerKind::Conv2d: {
      columns_[l] = im2col(x, layer.window);
      const std::uint32_t oh = layer.window.out_height(x.shape[1]);
      const std::uint32_t ow = layer.window.out_width(x.shape[2]);
      const std::size_t rows = std::size_t{n} * oh * ow;
      Tensor y({n, oh, ow, layer.units});
      y.data = layer_forward(accelerator_, layer, columns_[l].data(), rows, last);
      macs_ += rows * layer.weight_rows * layer.units;
      return y;
    }
  }
  throw std::logic_error("unknown layer kind");
}

float Trainer::step(const Tensor& images, const std::vector<std::uint8_t>& labels) {
  Gradients gradients;
  const double loss = compute_gradients(images, labels, true, gradients);
  apply(gradients);
  return static_cast<float>(loss / images.shape[0]);
}

void Trainer::apply(const Gradients& gradients) {
  ++steps_;
  for (std::size_t l = 0; l < net_.layers.size(); ++l) {
    Layer& layer = net_.layers[l];
    if (gradients.weights[l].empty()) continue;
    adam(layer.weights, gradients.weights[l], adam_m_[2 * l], adam_v_[2 * l], learning_rate(),
         steps_);
    adam(layer.bias, gradients.bias[l], adam_m_[2 * l + 1], adam_v_[2 * l + 1], learning_rate(),
         steps_);
  }
}

double Trainer::compute_gradients(const Tensor& images, const std::vector<std::uint8_t>& labels,
                                  bool mean, Gradients& gradients) {
  const std::size_t layers = net_.layers.size();
  gradients.weights.assign(layers, {});
  gradients.bias.assign(layers, {});
  inputs_.assign(layers, Tensor());
  outputs_.assign(layers, Tensor());
  columns_.assign(layers, {});
  argmax_.assign(layers, {});

  Tensor x = images;
  for (std::size_t l = 0; l < layers; ++l) {
    inputs_[l] = x;
    x = forward_layer(l, x, l + 1 == layers);
    outputs_[l] = x;
  }

  // Softmax cross-entropy, and its gradient (p - onehot) / n, or its sum over the examples.
  const std::uint32_t n = x.shape[0], classes = static_cast<std::uint32_t>(x.per_example());
  Tensor grad({n, classes});
  double loss = 0.0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const float* z = &x.data[std::size_t{i} * classes];
    const float top = *std::max_element(z, z + classes);
    double total = 0.0;
    for (std::uint32_t j = 0; j < classes; ++j) total += std::exp(double{z[j]} - top);
    for (std::uint32_t j = 0; j < classes; ++j) {
      const double p = std::exp(double{z[j]} - top) / total;
      const double g = p - (j == labels[i] ? 1.0 : 0.0);
      grad.data[std::size_t{i} * classes + j] = static_cast<float>(mean ? g / n : g);
    }
    loss -= double{z[labels[i]]} - top - std::log(total);
  }

  // The first layer with weights needs no input gradient.
  std::size_t first_weighted = 0;
  while (net_.layers[first_weighted].weights.empty()) ++first_weighted;

  for (std::size_t l = layers; l-- > first_weighted;) {
    Layer& layer = net_.layers[l];
    const Tensor& in = inputs_[l];
    switch (layer.kind) {
      case LayerKind::Flatten:
        grad.shape = in.shape;
        break;
      case LayerKind::MaxPool: {
        Tensor dx(in.shape);
        for (std::size_t i = 0; i < grad.data.size(); ++i) dx.data[argmax_[l][i]] += grad.data[i];
        grad = std::move(dx);
        break;
      }
      case LayerKind::AvgPool:  // refused by the constructor
        throw std::logic_error("the trainer has no average pooling");
      case LayerKind::Dense:
      case LayerKind::Conv2d: {
        const bool conv = layer.kind == LayerKind::Conv2d;
        const std::uint32_t rows = conv ? in.shape[0] * layer.window.out_height(in.shape[1]) *
                                              layer.window.out_width(in.shape[2])
                                        : in.shape[0];
        const std::uint32_t k = layer.weight_rows, units = layer.units;
        const float* a = conv ? columns_[l].data() : in.data.data();
        // Through the activation: relu passes the gradient where it passed the value.
        if (layer.activation == isa::Func::Relu) {
          for (std::size_t i = 0; i < grad.data.size(); ++i) {
            if (!(outputs_[l].data[i] > 0.0f)) grad.data[i] = 0.0f;
          }
        }
        const std::vector<float> a_t = transpose(a, rows, k);
        std::vector<float> dw = matmul(a_t.data(), grad.data.data(), k, rows, units);
        std::vector<float> db(units, 0.0f);
        for (std::uint32_t r = 0; r < rows; ++r) {
          for (std::uint32_t j = 0; j < units; ++j) db[j] += grad.data[std::size_t{r} * units + j];
        }
        if (l > first_weighted) {
          const std::vector<float> w_t = transpose(layer.weights.data(), k, units);
          std::vector<float> da = matmul(grad.data.data(), w_t.data(), rows, units, k);
          if (conv) {
            grad = col2im(da, in.shape, layer.window);
          } else {
            grad = Tensor(in.shape);
            grad.data = std::move(da);
          }
        }
        gradients.weights[l] = std::move(dw);
        gradients.bias[l] = std::move(db);
        break;
      }
    }
  }
  return loss;
}

float Trainer::learning_rate() const {
  return options_.learning_rate * std::pow(options_.lr_decay, static_cast<float>(epochs_done_));
}

float Trainer::epoch(const idx::Dataset& train,
                     const std::function<void(unsigned, unsigned, float)>& progress) {
  const std::vector<std::uint32_t> order = epoch_order(train, options_, epochs_done_);
  const auto examples = static_cast<std::uint32_t>(order.size());
  const unsigned batches = (examples + options_.batch - 1) / options_.batch;
  double total = 0.0;
  std::vector<std::uint8_t> labels;
  for (unsigned b = 0; b < batches; ++b) {
    const std::size_t first = std::size_t{b} * options_.batch;
    const std::size_t count = std::min<std::size_t>(options_.batch, examples - first);
    const Tensor x = batch_of(train, order, first, count, labels);
    total += step(x, labels);
    if (progress) progress(b + 1, batches, static_cast<float>(total / (b + 1)));
  }
  finish_epoch();
  return static_cast<float>(total / batches);
}

DataParallelTrainer::DataParallelTrainer(const Network& net, Pod& pod, const TrainOptions& options)
    : pod_(pod), options_(options) {
  const std::vector<unsigned> local = pod.local_chips();
  replicas_.assign(local.size(), net);
  for (std::size_t k = 0; k < local.size(); ++k) {
    trainers_.push_back(std::make_unique<Trainer>(replicas_[k], &pod.chip(local[k]), options));
  }
}

std::uint64_t DataParallelTrainer::macs() const {
  std::uint64_t total = 0;
  for (const auto& trainer : trainers_) total += trainer->macs();
  return total;
}

float DataParallelTrainer::step(const Tensor& images, const std::vector<std::uint8_t>& labels) {
  const unsigned chips = pod_.size();
  const std::uint32_t batch = images.shape[0];
  const std::vector<unsigned> local = pod_.local_chips();
  std::vector<Trainer::Gradients> gradients(local.size());
  double loss = 0;
  std::uint32_t local_examples = 0;
  for (std::size_t k = 0; k < local.size(); ++k) {
    const unsigned c = local[k];
    // Chip c's share: batch / N examples, one more for the first batch mod N chips.
    const std::uint32_t first = c * (batch / chips) + std::min(c, batch % chips);
    const std::uint32_t count = batch / chips + (c < batch % chips ? 1 : 0);
    if (count == 0) continue;
    Tensor part = images;
    part.shape[0] = count;
    const std::size_t per = images.per_example();
    part.data.assign(images.data.begin() + static_cast<std::ptrdiff_t>(first * per),
                     images.data.begin() + static_cast<std::ptrdiff_t>((first + count) * per));
    const std::vector<std::uint8_t> part_labels(labels.begin() + first,
                                                labels.begin() + first + count);
    loss += trainers_[k]->compute_gradients(part, part_labels, false, gradients[k]);
    local_examples += count;
  }
  // One tensor per chip: every layer's weight and bias gradients back to back (zeros for a chip
  // without examples).
  const Network& net = replicas_.front();
  std::size_t values = 0;
  for (const Layer& layer : net.layers) values += layer.weights.size() + layer.bias.size();
  std::vector<std::vector<num::fp32_t>> sums(local.size(), std::vector<num::fp32_t>(values, 0));
  for (std::size_t k = 0; k < local.size(); ++k) {
    if (gradients[k].weights.empty()) continue;
    std::size_t at = 0;
    for (std::size_t l = 0; l < net.layers.size(); ++l) {
      for (const auto* part : {&gradients[k].weights[l], &gradients[k].bias[l]}) {
        for (float g : *part) sums[k][at++] = num::float_to_fp32(g);
      }
    }
  }
  sums = run_allreduce(pod_, sums);
  // The mean gradient, in fp32 on every chip, and the same update to every copy.
  const float scale = static_cast<float>(batch);
  for (std::size_t k = 0; k < local.size(); ++k) {
    Trainer::Gradients mean;
    mean.weights.assign(net.layers.size(), {});
    mean.bias.assign(net.layers.size(), {});
    std::size_t at = 0;
    for (std::size_t l = 0; l < net.layers.size(); ++l) {
      const Layer& layer = net.layers[l];
      if (layer.weights.empty()) continue;
      for (auto [part, size] : {std::pair{&mean.weights[l], layer.weights.size()},
                                std::pair{&mean.bias[l], layer.bias.size()}}) {
        part->resize(size);
        for (float& g : *part) g = num::fp32_to_float(sums[k][at++]) / scale;
      }
    }
    trainers_[k]->apply(mean);
  }
  // Every copy the same bits: here, and across processes by a hash of them.
  std::uint64_t hash = 1469598103934665603ull;
  for (const Layer& layer : replicas_.front().layers) {
    for (const auto* part : {&layer.weights, &layer.bias}) {
      for (float w : *part) hash = (hash ^ num::float_to_fp32(w)) * 1099511628211ull;
    }
  }
  bool same = true;
  for (std::size_t k = 1; k < replicas_.size(); ++k) {
    for (std::size_t l = 0; l < replicas_[k].layers.size(); ++l) {
      same = same && replicas_[k].layers[l].weights == replicas_[0].layers[l].weights &&
             replicas_[k].layers[l].bias == replicas_[0].layers[l].bias;
    }
  }
  const bool hashes_agree = pod_.max_over_chips(hash) == ~pod_.max_over_chips(~hash);
  if (pod_.max_over_chips(same && hashes_agree ? 0 : 1) != 0) {
    throw std::runtime_error("the chips' copies of the network differ after a step");
  }
  return local_examples ? static_cast<float>(loss / local_examples) : 0.0f;
}

float DataParallelTrainer::epoch(const idx::Dataset& train,
                                 const std::function<void(unsigned, unsigned, float)>& progress) {
  const std::vector<std::uint32_t> order = epoch_order(train, options_, epochs_done_);
  const unsigned batches = static_cast<unsigned>((order.size() + options_.batch - 1) /
                                                 options_.batch);
  double total = 0.0;
  std::vector<std::uint8_t> labels;
  for (unsigned b = 0; b < batches; ++b) {
    const std::size_t first = std::size_t{b} * options_.batch;
    const std::size_t count = std::min<std::size_t>(options_.batch, order.size() - first);
    const Tensor x = batch_of(train, order, first, count, labels);
    total += step(x, labels);
    if (progress) progress(b + 1, batches, static_cast<float>(total / (b + 1)));
  }
  ++epochs_done_;
  for (auto& trainer : trainers_) trainer->finish_epoch();
  return static_cast<float>(total / batches);
}

idx::Dataset load_fashion_mnist(bool train, const std::string& dir) {
  const std::string where = dir.empty() ? kFashionMnistDir : dir;
  const std::string prefix = where + "/" + (train ? "train" : "t10k");
  const std::string images = prefix + "-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(images)) {
    throw std::runtime_error("Fashion-MNIST is not in " + where +
                             ": install Debian's dataset-fashion-mnist (scripts/deps.sh does)");
  }
  return idx::read_dataset(images, prefix + "-labels-idx1-ubyte.gz");
}

}  // namespace tpu::nn
