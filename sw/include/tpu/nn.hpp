// Neural networks as the project's network files describe them (docs/networks.md): layers
// in a chain, in JSON with their weights in .npy files, float or quantised (dtype int8,
// tpu/quantize.hpp makes one); and the pieces the trainer (tpu/train.hpp) runs them by.
//
// Activations are float tensors in NHWC order. Inference runs a network as a graph
// (tpu/graph/network_graph.hpp), on the graph's one executor for float and int8: its dense and
// conv2d layers on the accelerator (bf16 operands, fp32 sums, docs/numerics.md; or TensorFlow
// Lite's int8 scheme, the Q-rules), the rest on the host. Here remain the host fp32 forward pass
// (the trainer's reference and the quantiser's calibration) and the trainer's per-layer
// products.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/isa_defs.hpp"
#include "tpu/numerics/gemm.hpp"

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

enum class LayerKind : std::uint8_t { Dense, Conv2d, MaxPool, AvgPool, Flatten };

// A sliding window of conv2d and the pools: its size, its stride and the zeros around the
// image. Output size per dimension: (in + both pads - size) / stride + 1, rounded down.
struct Window {
  std::uint32_t height = 0, width = 0;
  std::uint32_t stride_y = 1, stride_x = 1;
  std::uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  // A square kernel, stride 1, "same" padding (an odd kernel keeps the image's size).
  static Window same(std::uint32_t kernel);
  // A square pool: the stride is the size, no padding.
  static Window pool(std::uint32_t size);
  // Output size, or 0 when the window does not fit the padded image.
  std::uint32_t out_height(std::uint32_t in) const;
  std::uint32_t out_width(std::uint32_t in) const;
  std::uint32_t taps() const { return height * width; }
  bool operator==(const Window& other) const;
};

// How `tpu infer` reads a network's input (docs/networks.md): images batch first, channels
// last (the project's own networks) or channels first (an imported NCHW model), or flat
// vectors of height x width x channels values.
enum class InputLayout : std::uint8_t { Nhwc, Nchw, Flat };

// The int8 form of a dense or conv2d layer in a quantised network (docs/networks.md). Real
// values are scale * (q - zero_point). Every vector has one entry a column (output channel),
// except `weights`.
struct QuantLayer {
  std::vector<std::int8_t> weights;      // weight_rows x units, row-major, in [-127, 127]
  std::vector<float> weight_scales;      // the weights' scales (zero points 0), positive
  std::vector<std::int32_t> bias;        // scale input_scale * weight_scales[j], zero point 0
  std::vector<std::int32_t> multiplier;  // Q-REQ's M and s (hidden layers; Q-SCALE of
  std::vector<std::int32_t> shift;       //   input_scale * weight_scales[j] / output_scale)
  double input_scale = 1.0;              // the int8 input rows
  std::int32_t input_zero_point = 0;
  // The int8 output: every hidden layer has one. The last layer may: then it is requantised
  // like the others and the host dequantises its int8 values; without one its int32 sums
  // (plus the bias) become fp32 logits on the host, times input_scale * weight_scales[j].
  bool int8_output = false;
  double output_scale = 1.0;
  std::int32_t output_zero_point = 0;

  // Column j's real requantisation multiplier, input_scale * weight_scales[j] / output_scale,
  // in double: what Q-SCALE turns into multiplier[j] and shift[j].
  double real_multiplier(std::size_t j) const {
    return input_scale * static_cast<double>(weight_scales[j]) / output_scale;
  }
};

struct Layer {
  LayerKind kind = LayerKind::Dense;
  std::uint32_t units = 0;     // dense: outputs; conv2d: filters
  Window window;               // conv2d: the kernel; maxpool, avgpool: the pool
  bool count_padding = false;  // avgpool: padding zeros count in the mean (else only the image)
  isa::Func activation = isa::Func::None;
  std::uint16_t alpha = 0;  // bf16 slope of leaky
  // dense: inputs x units; conv2d: (kernel height * kernel width * in_channels) x filters,
  // rows in (ky, kx, c) order, matching im2col. Row-major.
  std::vector<float> weights;
  std::vector<float> bias;        // units
  std::uint32_t weight_rows = 0;  // inputs of the GEMM (K)
  // Quantised networks: the layer's int8 form. `weights` and `bias` above then hold its
  // dequantised values (scale * q), for the shape checks and for reading.
  QuantLayer quant;
};

// int8 parameters of an activation tensor: real = scale * (q - zero_point).
struct ActivationQuant {
  double scale = 1.0;
  std::int32_t zero_point = 0;
  bool operator==(const ActivationQuant& o) const {
    return scale == o.scale && zero_point == o.zero_point;
  }
};

struct Network {
  std::string name;
  std::uint32_t height = 0, width = 0, channels = 0;  // input shape per example
  InputLayout layout = InputLayout::Nhwc;  // Flat: the input is height * width * channels values
  std::uint32_t classes = 0;               // outputs of the last layer
  std::vector<Layer> layers;
  bool int8 = false;  // a quantised network ("dtype": "int8"): its layers' `quant` hold it
  bool softmax_output = false;  // the output is the softmax of the last layer ("output")
  // A quantised softmax ("softmax_quant", from an imported QDQ model): its int8 scale and zero
  // point, applied to the softmax on the host.
  std::optional<ActivationQuant> softmax_quant;
};

// A dense or conv2d layer: one that runs on the accelerator, with weights.
bool gemm_layer(const Layer& layer);

// The shape of one example after each layer, for checking and for the trainer.
std::vector<std::vector<std::uint32_t>> layer_shapes(const Network& net);
// The shape of one example of the network's input as a file gives it (`tpu infer`): [h, w, c],
// [c, h, w] or [features], by the layout.
std::vector<std::uint32_t> input_file_shape(const Network& net);
// A batch in the file's shape (input_file_shape with the batch first) as the tensor the network
// runs on: NCHW transposed to NHWC. Throws std::invalid_argument for another shape.
Tensor input_from_file(const Network& net, const std::vector<std::size_t>& shape,
                       std::vector<float> data);
// Softmax of each row, on the host (fp32, the row's maximum subtracted first).
void softmax_rows(Tensor& x);
// The network's output from its last layer's, on the host: the softmax where the network ends
// in one, then its quantisation where it has one (ONNX's QuantizeLinear, x / scale in fp32
// rounded half to even, plus the zero point, saturated to int8), dequantised back to fp32.
void finish_output(const Network& net, Tensor& y);

// JSON description (docs/networks.md) with weights in .npy files next to it, float or
// quantised ("dtype": "int8"). Throws std::runtime_error("<path>: <what is wrong>") for anything
// malformed; for a quantised network also for an int8 form out of range or inconsistent (zero
// points outside [-128, 127], scales not positive, M or s outside Q-REQ's ranges or not
// Q-SCALE of the scales, a layer's input not the previous layer's output, functions other
// than none, relu and relu6).
Network load_network(const std::string& json_path);
// Writes the description and one .npy per array (float32; for a quantised network int8
// weights, int32 bias, multiplier and shift, float32 weight scales), named
// <stem>.<layer>.<type>.<part>.npy after the JSON file. All or nothing: every file is written
// under a temporary name first and renamed once all are complete. Without `overwrite`, a file
// that exists already stops it ("<path>: already exists") before any is renamed.
void save_network(const Network& net, const std::string& json_path, bool overwrite = true);

// The same network in plain host fp32 (no bf16 rounding). `observe`, when given, receives
// each dense and conv2d layer's output (after its function): (layer index, values).
// A quantised network is refused (std::invalid_argument).
using LayerObserver = std::function<void(std::size_t, const std::vector<float>&)>;
Tensor forward_host_fp32(const Network& net, const Tensor& input,
                         const LayerObserver& observe = {});
// One dense layer, or a conv2d layer on its im2col rows: rows x K times the
// layer's K x units weights, plus bias, then the function. On an accelerator
// (bf16 out for hidden layers, fp32 for the last), or in host fp32 when
// `accelerator` is null.
std::vector<float> layer_forward(Backend* accelerator, const Layer& layer, const float* rows_data,
                                 std::size_t rows, bool last);

// A plain product, A (m x k) times B (k x n), row-major: on an accelerator
// with bf16 operands and fp32 sums, or in host fp32 when `accelerator` is null. `result`, when
// given, receives the accelerator's run (its counters, where the backend has them).
std::vector<float> matmul(Backend* accelerator, const float* a, const float* b, std::uint32_t m,
                          std::uint32_t k, std::uint32_t n, RunResult* result = nullptr);

// Host-side pieces, also used by the trainer and the graph executor.
// A row-major float matrix as the accelerator takes it: bf16 by N-OUT.
num::MatrixBf16 bf16_matrix(const float* data, std::size_t rows, std::size_t cols);
// A row-major rows x cols matrix transposed into `out` (cols x rows), in square blocks that keep
// the rows read and the rows written in the cache.
template <typename T>
void transpose_into(const T* data, std::size_t rows, std::size_t cols, T* out) {
  constexpr std::size_t kBlock = 32;
  for (std::size_t i0 = 0; i0 < rows; i0 += kBlock) {
    const std::size_t i_end = std::min(rows, i0 + kBlock);
    for (std::size_t j0 = 0; j0 < cols; j0 += kBlock) {
      const std::size_t j_end = std::min(cols, j0 + kBlock);
      for (std::size_t i = i0; i < i_end; ++i) {
        for (std::size_t j = j0; j < j_end; ++j) out[j * rows + i] = data[i * cols + j];
      }
    }
  }
}
// The same into a new matrix.
template <typename T>
std::vector<T> transpose(const T* data, std::size_t rows, std::size_t cols) {
  std::vector<T> t(rows * cols);
  transpose_into(data, rows, cols, t.data());
  return t;
}
// im2col of an NHWC tensor: one row per output pixel, [n * oh * ow, kh * kw * c], columns in
// (ky, kx, c) order, zeros where the window covers padding.
std::vector<float> im2col(const Tensor& x, const Window& kernel);
// Its adjoint: sums each column entry back into the [n, h, w, c] position it came from.
Tensor col2im(const std::vector<float>& cols, const std::vector<std::uint32_t>& shape,
              const Window& kernel);
// Pools over the window's positions inside the image (padding never wins a max; the mean
// counts it only with `count_padding`).
Tensor max_pool(const Tensor& x, const Window& pool);
Tensor avg_pool(const Tensor& x, const Window& pool, bool count_padding);
std::vector<std::uint32_t> argmax_rows(const Tensor& logits);

// Images of a data set as a [n, h, w, 1] tensor of pixel / 255.
Tensor images_to_tensor(const std::vector<std::uint8_t>& images, std::uint32_t first,
                        std::uint32_t count, std::uint32_t height, std::uint32_t width);

}  // namespace tpu::nn
