// Training the networks of nn.hpp the way TPUs train: every matrix product of
// the forward and the backward pass runs on the accelerator with bf16
// operands and fp32 accumulation, while the fp32 master weights are updated
// on the host (mixed precision). The same trainer runs entirely in host fp32
// as the reference to compare with. Everything is deterministic: a seed fixes
// the initial weights and the order of the examples.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/idx.hpp"
#include "tpu/nn.hpp"
#include "tpu/pod.hpp"

namespace tpu::nn {

enum class Architecture : std::uint8_t {
  Mlp,  // 784-256-128-10, relu
  Cnn,  // conv 3x3x16, pool 2, conv 3x3x32, pool 2, dense 64, dense 10, relu
};

// A network of that architecture for 28 x 28 grey images and 10 classes, with
// He-uniform initial weights and zero biases drawn from `seed`.
Network make_network(Architecture architecture, std::uint64_t seed);

struct TrainOptions {
  unsigned epochs = 10;
  unsigned batch = 64;
  float learning_rate = 1e-3f;  // Adam
  float lr_decay = 1.0f;        // the learning rate's factor from one epoch to the next
  std::uint64_t seed = 1;       // order of the examples
  std::uint32_t examples = 0;   // the first N training examples only (0: all)
};

// Where the products run: the host in fp32 (accelerator null), or an
// accelerator backend. A quantised (int8) network is refused (std::invalid_argument).
class Trainer {
 public:
  Trainer(Network& net, Backend* accelerator, const TrainOptions& options);

  // One Adam step on a batch ([n, h, w, c] images, n labels); the mean loss.
  float step(const Tensor& images, const std::vector<std::uint8_t>& labels);
  // Per layer, the gradients of the weights and of the biases (empty for layers without).
  struct Gradients {
    std::vector<std::vector<float>> weights, bias;
  };
  // The forward and backward pass of step() without the update: the gradients of the mean loss
  // over the batch (mean) or of the summed loss; returns the summed loss.
  double compute_gradients(const Tensor& images, const std::vector<std::uint8_t>& labels,
                           bool mean, Gradients& gradients);
  // The Adam update step() makes with the gradients it computed.
  void apply(const Gradients& gradients);
  // One pass over the training set in the seed's order; `progress` gets
  // (batches done, batches in all, mean loss so far).
  float epoch(const idx::Dataset& train,
              const std::function<void(unsigned, unsigned, float)>& progress = {});
  std::uint64_t macs() const { return macs_; }  // multiply-accumulates of the products so far
  // The learning rate's decay counts epochs: epoch() calls this at its end.
  void finish_epoch() { ++epochs_done_; }

 private:
  std::vector<float> matmul(const float* a, const float* b, std::uint32_t m, std::uint32_t k,
                            std::uint32_t n);
  Tensor forward_layer(std::size_t l, const Tensor& x, bool last);
  float learning_rate() const;

  Network& net_;
  Backend* accelerator_;
  TrainOptions options_;
  std::vector<std::vector<float>> adam_m_, adam_v_;  // per weight and bias array
  std::uint64_t steps_ = 0, macs_ = 0;
  unsigned epochs_done_ = 0;
  // What the forward pass keeps for the backward pass, per layer.
  std::vector<Tensor> inputs_, outputs_;
  std::vector<std::vector<float>> columns_;         // conv2d: im2col of the input
  std::vector<std::vector<std::uint32_t>> argmax_;  // maxpool: where each maximum came from
};

// Data-parallel training on a pod (docs/pod.md), as TPU pods train: each batch is split across
// the chips as evenly as possible (the first batch mod N chips take one example more); each chip
// runs the products of its share on itself and sums its gradients; the sums are all-reduced on
// the chips (ALLREDUCE, N-REDUCE) and divided by the batch size in fp32; every chip applies the
// same Adam update to its own copy of the network. After every step the copies must be the same
// bits, or std::runtime_error stops training. Under MPI this process holds its own chip's copy.
class DataParallelTrainer {
 public:
  DataParallelTrainer(const Network& net, Pod& pod, const TrainOptions& options);

  // One step on a batch; the mean loss of this process's examples.
  float step(const Tensor& images, const std::vector<std::uint8_t>& labels);
  // One pass over the training set in the same order as Trainer::epoch.
  float epoch(const idx::Dataset& train,
              const std::function<void(unsigned, unsigned, float)>& progress = {});
  // The network as every chip holds it.
  const Network& network() const { return replicas_.front(); }
  std::uint64_t macs() const;  // of this process's chips

 private:
  Pod& pod_;
  TrainOptions options_;
  std::vector<Network> replicas_;                   // one per local chip
  std::vector<std::unique_ptr<Trainer>> trainers_;  // on each local chip
  unsigned epochs_done_ = 0;
};

// Fashion-MNIST from Debian's dataset-fashion-mnist package (or `dir`).
idx::Dataset load_fashion_mnist(bool train, const std::string& dir = "");

}  // namespace tpu::nn
