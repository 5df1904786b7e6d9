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
  layer.kernel = kernel;
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
  layer.pool = pool;
  return layer;
}

std::vector<float> transpose(const float* data, std::size_t rows, std::size_t cols) {
  std::vector<float> t(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) t[j * rows + i] = data[i * cols + j];
  }
  return t;
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
  for (const Layer& layer : net_.layers) {
    if (layer.activation != isa::Func::None && layer.activation != isa::Func::Relu) {
      throw std::invalid_argument("the trainer knows the gradients of relu and none only");
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
      const std::uint32_t p = layer.pool, h = x.shape[1], w = x.shape[2], c = x.shape[3];
      Tensor y = max_pool(x, p);
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
    case LayerKind::Dense: {
      Tensor y({n, layer.units});
      y.data = layer_forward(accelerator_, layer, x.data.data(), n, last);
      macs_ += std::uint64_t{n} * layer.weight_rows * layer.units;
      return y;
    }
    case LayerKind::Conv2d: {
      columns_[l] = im2col(x, layer.kernel);
      const std::size_t rows = std::size_t{n} * x.shape[1] * x.shape[2];
      Tensor y({n, x.shape[1], x.shape[2], layer.units});
      y.data = layer_forward(accelerator_, layer, columns_[l].data(), rows, last);
      macs_ += rows * layer.weight_rows * layer.units;
      return y;
    }
  }
  throw std::logic_error("unknown layer kind");
}

float Trainer::step(const Tensor& images, const std::vector<std::uint8_t>& labels) {
  const std::size_t layers = net_.layers.size();
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

  // Softmax cross-entropy, and its gradient (p - onehot) / n.
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
      grad.data[std::size_t{i} * classes + j] =
          static_cast<float>((p - (j == labels[i] ? 1.0 : 0.0)) / n);
    }
    loss -= double{z[labels[i]]} - top - std::log(total);
  }

  // The first layer with weights needs no input gradient.
  std::size_t first_weighted = 0;
  while (net_.layers[first_weighted].weights.empty()) ++first_weighted;

  ++steps_;
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
      case LayerKind::Dense:
      case LayerKind::Conv2d: {
        const bool conv = layer.kind == LayerKind::Conv2d;
        const std::uint32_t rows = conv ? in.shape[0] * in.shape[1] * in.shape[2] : in.shape[0];
        const std::uint32_t k = layer.weight_rows, units = layer.units;
        const float* a = conv ? columns_[l].data() : in.data.data();
        // Through the activation: relu passes the gradient where it passed the value.
        if (layer.activation == isa::Func::Relu) {
          for (std::size_t i = 0; i < grad.data.size(); ++i) {
            if (!(outputs_[l].data[i] > 0.0f)) grad.data[i] = 0.0f;
          }
        }
        const std::vector<float> a_t = transpose(a, rows, k);
        const std::vector<float> dw = matmul(a_t.data(), grad.data.data(), k, rows, units);
        std::vector<float> db(units, 0.0f);
        for (std::uint32_t r = 0; r < rows; ++r) {
          for (std::uint32_t j = 0; j < units; ++j) db[j] += grad.data[std::size_t{r} * units + j];
        }
        if (l > first_weighted) {
          const std::vector<float> w_t = transpose(layer.weights.data(), k, units);
          std::vector<float> da = matmul(grad.data.data(), w_t.data(), rows, units, k);
          if (conv) {
            grad = col2im(da, in.shape, layer.kernel);
          } else {
            grad = Tensor(in.shape);
            grad.data = std::move(da);
          }
        }
        adam(layer.weights, dw, adam_m_[2 * l], adam_v_[2 * l], learning_rate(), steps_);
        adam(layer.bias, db, adam_m_[2 * l + 1], adam_v_[2 * l + 1], learning_rate(), steps_);
        break;
      }
    }
  }
  return static_cast<float>(loss / n);
}

float Trainer::learning_rate() const {
  return options_.learning_rate * std::pow(options_.lr_decay, static_cast<float>(epochs_done_));
}

float Trainer::epoch(const idx::Dataset& train,
                     const std::function<void(unsigned, unsigned, float)>& progress) {
  const std::uint32_t examples =
      options_.examples ? std::min(options_.examples, train.count) : train.count;
  std::vector<std::uint32_t> order(examples);
  for (std::uint32_t i = 0; i < examples; ++i) order[i] = i;
  std::mt19937_64 rng(options_.seed * 1000003 + epochs_done_);
  for (std::uint32_t i = examples; i > 1; --i) {
    std::swap(order[i - 1], order[static_cast<std::uint32_t>(rng() % i)]);
  }
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
  ++epochs_done_;
  return static_cast<float>(total / batches);
}

double accuracy(Backend* accelerator, const Network& net, const idx::Dataset& data,
                std::uint32_t count, std::uint32_t batch, std::vector<std::uint32_t>* predictions) {
  count = count ? std::min(count, data.count) : data.count;
  if (batch == 0) throw std::invalid_argument("accuracy needs a batch size");
  std::uint32_t correct = 0;
  if (predictions) predictions->clear();
  for (std::uint32_t first = 0; first < count; first += batch) {
    const std::uint32_t n = std::min(batch, count - first);
    const Tensor x = images_to_tensor(data.images, first, n, data.rows, data.cols);
    const Tensor logits = accelerator ? forward(*accelerator, net, x) : forward_host_fp32(net, x);
    const std::vector<std::uint32_t> best = argmax_rows(logits);
    for (std::uint32_t i = 0; i < n; ++i) correct += best[i] == data.labels[first + i];
    if (predictions) predictions->insert(predictions->end(), best.begin(), best.end());
  }
  return static_cast<double>(correct) / count;
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
