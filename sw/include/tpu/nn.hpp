// Neural networks on the TPU: layers, networks described in JSON with their
// weights in .npy files, and inference on any backend.
//
// Activations are float tensors in NHWC order. Dense and conv2d layers run on
// the accelerator as compiled GEMMs (conv2d lowered by im2col on the host);
// max-pooling, flattening and softmax run on the host, because the core has
// no unit for them. The accelerator takes bf16 operands (the float values
// rounded by N-OUT) and accumulates in fp32 (docs/numerics.md). The same
// network also runs on the host in plain fp32, as the reference it is
// compared with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/isa_defs.hpp"

namespace tpu::nn {

struct Tensor {
  std::vector<std::uint32_t> shape;  // [n, h, w, c] or [n, features]
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(std::vector<std::uint32_t> dims);
  std::size_t batch() const { return shape.empty() ? 0 : shape[0]; }
  // Elements per example (everything but the batch dimension).
  std::size_t per_example() const;
};

enum class LayerKind : std::uint8_t { Dense, Conv2d, MaxPool, Flatten };

struct Layer {
  LayerKind kind = LayerKind::Dense;
  std::uint32_t units = 0;   // dense: outputs; conv2d: filters
  std::uint32_t kernel = 0;  // conv2d: kernel size (square), "same" padding, stride 1
  std::uint32_t pool = 0;    // maxpool: window and stride
  isa::Func activation = isa::Func::None;
  std::uint16_t alpha = 0;  // bf16 slope of leaky
  // dense: inputs x units; conv2d: (kernel * kernel * in_channels) x filters, rows
  // in (ky, kx, c) order, matching im2col. Row-major.
  std::vector<float> weights;
  std::vector<float> bias;        // units
  std::uint32_t weight_rows = 0;  // inputs of the GEMM (K)
};

struct Network {
  std::string name;
  std::uint32_t height = 0, width = 0, channels = 0;  // input shape per example
  std::uint32_t classes = 0;                          // outputs of the last layer
  std::vector<Layer> layers;
};

// The shape of one example after each layer, for checking and for the trainer.
std::vector<std::vector<std::uint32_t>> layer_shapes(const Network& net);

// JSON description (docs/networks.md) with weights in .npy files next to it.
// Throws std::runtime_error("<path>: <what is wrong>") for anything malformed.
Network load_network(const std::string& json_path);
// Writes the description and one .npy per weight matrix and bias vector.
void save_network(const Network& net, const std::string& json_path);

// Per-layer figures of one inference.
struct LayerRun {
  std::string name;        // e.g. "conv2d 1: 784x25x8"
  std::uint64_t macs = 0;  // useful multiply-accumulates
  std::optional<Counters> counters;
};

// Forward pass on an accelerator backend: returns the logits, [n, classes].
Tensor forward(Backend& accelerator, const Network& net, const Tensor& input,
               std::vector<LayerRun>* runs = nullptr);
// The same network in plain host fp32 (no bf16 rounding).
Tensor forward_host_fp32(const Network& net, const Tensor& input);

// One dense layer, or a conv2d layer on its im2col rows: rows x K times the
// layer's K x units weights, plus bias, then the function. On an accelerator
// (bf16 out for hidden layers, fp32 for the last), or in host fp32 when
// `accelerator` is null.
std::vector<float> layer_forward(Backend* accelerator, const Layer& layer, const float* rows_data,
                                 std::size_t rows, bool last, LayerRun* run = nullptr);

// A plain product, A (m x k) times B (k x n), row-major: on an accelerator
// with bf16 operands and fp32 sums, or in host fp32 when `accelerator` is null.
std::vector<float> matmul(Backend* accelerator, const float* a, const float* b, std::uint32_t m,
                          std::uint32_t k, std::uint32_t n);

// Host-side pieces, also used by the trainer.
// im2col of an NHWC tensor for a square kernel, "same" padding, stride 1:
// [n * h * w, kernel * kernel * c], columns in (ky, kx, c) order.
std::vector<float> im2col(const Tensor& x, std::uint32_t kernel);
// Its adjoint: sums each column entry back into the [n, h, w, c] position it came from.
Tensor col2im(const std::vector<float>& cols, const std::vector<std::uint32_t>& shape,
              std::uint32_t kernel);
Tensor max_pool(const Tensor& x, std::uint32_t pool);
std::vector<std::uint32_t> argmax_rows(const Tensor& logits);

// Images of a data set as a [n, h, w, 1] tensor of pixel / 255.
Tensor images_to_tensor(const std::vector<std::uint8_t>& images, std::uint32_t first,
                        std::uint32_t count, std::uint32_t height, std::uint32_t width);

}  // namespace tpu::nn
