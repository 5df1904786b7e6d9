#include "tpu/nn.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "tpu/array_fold.hpp"
#include "tpu/compiler.hpp"
#include "tpu/isa.hpp"
#include "tpu/npy.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu::nn {
namespace {

using Json = nlohmann::json;

std::size_t product(const std::vector<std::uint32_t>& dims) {
  std::size_t n = 1;
  for (std::uint32_t d : dims) n *= d;
  return n;
}

// One example of the network's input, as the layers see it: [h, w, c] or [features].
std::vector<std::uint32_t> input_shape(const Network& net) {
  if (net.layout == InputLayout::Flat) return {net.height * net.width * net.channels};
  return {net.height, net.width, net.channels};
}

const char* kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::Dense:
      return "dense";
    case LayerKind::Conv2d:
      return "conv2d";
    case LayerKind::MaxPool:
      return "maxpool";
    case LayerKind::AvgPool:
      return "avgpool";
    case LayerKind::Flatten:
      return "flatten";
  }
  return "?";
}

num::bf16_t to_bf16(float x) {
  num::fp32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return num::fp32_to_bf16(bits);
}

float bits_to_float(num::fp32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The activation functions in host floating point, for the fp32 reference.
float activate_host(isa::Func f, float x, float alpha) {
  switch (f) {
    case isa::Func::None:
      return x;
    case isa::Func::Relu:
      return x > 0.0f ? x : 0.0f;
    case isa::Func::Relu6:
      return x > 0.0f ? (x < 6.0f ? x : 6.0f) : 0.0f;
    case isa::Func::Leaky:
      return x >= 0.0f ? x : x * alpha;
    case isa::Func::Sigmoid:
      return static_cast<float>(1.0 / (1.0 + std::exp(-double{x})));
    case isa::Func::Tanh:
      return static_cast<float>(std::tanh(double{x}));
    case isa::Func::Gelu:
      return static_cast<float>(0.5 * x * (1.0 + std::erf(double{x} / std::sqrt(2.0))));
    case isa::Func::Exp:
      return static_cast<float>(std::exp(double{x}));
    case isa::Func::Recip:
      return 1.0f / x;
    case isa::Func::Rsqrt:
      return static_cast<float>(1.0 / std::sqrt(double{x}));
  }
  return x;
}

// One dense or conv2d layer as a GEMM on the accelerator: rows x K times
// K x units, plus bias, then the function.
std::vector<float> layer_gemm(Backend& accelerator, const Layer& layer, const float* rows_data,
                              std::size_t rows, bool last) {
  GemmSpec spec;
  spec.m = static_cast<std::uint32_t>(rows);
  spec.k = layer.weight_rows;
  spec.n = layer.units;
  spec.has_bias = true;
  spec.act = layer.activation;
  spec.alpha = layer.alpha;
  // Hidden results go to the next layer, which takes them as bf16 anyway.
  spec.out = last ? OutType::Fp32 : OutType::Bf16;
  const num::MatrixBf16 a = bf16_matrix(rows_data, rows, spec.k);
  const num::MatrixBf16 b = bf16_matrix(layer.weights.data(), spec.k, spec.n);
  std::vector<num::fp32_t> bias(layer.bias.size());
  std::memcpy(bias.data(), layer.bias.data(), bias.size() * sizeof(float));
  const num::MatrixFp32 out = run_gemm(accelerator, spec, a, b, nullptr, &bias);
  std::vector<float> values(out.data.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = bits_to_float(out.data[i]);
  return values;
}

std::vector<float> layer_gemm_host(const Layer& layer, const float* rows_data, std::size_t rows) {
  const std::size_t k = layer.weight_rows, n = layer.units;
  const float alpha = bits_to_float(num::bf16_to_fp32(layer.alpha));
  std::vector<float> out(rows * n);
  std::vector<float> sums(n);
  for (std::size_t i = 0; i < rows; ++i) {
    std::fill(sums.begin(), sums.end(), 0.0f);
    for (std::size_t kk = 0; kk < k; ++kk) {
      const float x = rows_data[i * k + kk];
      const float* w = &layer.weights[kk * n];
      for (std::size_t j = 0; j < n; ++j) sums[j] += x * w[j];
    }
    for (std::size_t j = 0; j < n; ++j) {
      out[i * n + j] = activate_host(layer.activation, sums[j] + layer.bias[j], alpha);
    }
  }
  return out;
}

// `input` as a batch of the network's input shape: [n, h, w, c], or for a flat network
// [n, features] (an [n, h, w, c] batch is flattened). Throws std::invalid_argument otherwise.
Tensor network_input(const Network& net, const Tensor& input) {
  const bool image = input.shape.size() == 4 && input.shape[1] == net.height &&
                     input.shape[2] == net.width && input.shape[3] == net.channels;
  if (net.layout != InputLayout::Flat) {
    if (!image) {
      throw std::invalid_argument("the input is not [n, " + std::to_string(net.height) + ", " +
                                  std::to_string(net.width) + ", " + std::to_string(net.channels) +
                                  "]");
    }
    return input;
  }
  const std::uint32_t features = net.height * net.width * net.channels;
  if (!image && (input.shape.size() != 2 || input.shape[1] != features)) {
    throw std::invalid_argument("the input is not [n, " + std::to_string(features) + "]");
  }
  Tensor flat = input;
  flat.shape = {input.shape[0], features};
  return flat;
}

// Runs the network, with `gemm` doing its dense and conv2d layers.
template <typename Gemm>
Tensor run_network(const Network& net, const Tensor& input, Gemm&& gemm) {
  const auto shapes = layer_shapes(net);
  Tensor x = network_input(net, input);
  const std::uint32_t n = input.shape[0];
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const Layer& layer = net.layers[l];
    const bool last = l + 1 == net.layers.size();
    std::vector<std::uint32_t> out_shape{n};
    out_shape.insert(out_shape.end(), shapes[l + 1].begin(), shapes[l + 1].end());
    switch (layer.kind) {
      case LayerKind::Flatten:
        x.shape = out_shape;
        break;
      case LayerKind::MaxPool:
        x = max_pool(x, layer.window);
        break;
      case LayerKind::AvgPool:
        x = avg_pool(x, layer.window, layer.count_padding);
        break;
      case LayerKind::Dense: {
        Tensor y(out_shape);
        y.data = gemm(l, layer, x.data.data(), std::size_t{n}, last);
        x = std::move(y);
        break;
      }
      case LayerKind::Conv2d: {
        const std::vector<float> cols = im2col(x, layer.window);
        Tensor y(out_shape);
        y.data = gemm(l, layer, cols.data(), std::size_t{n} * out_shape[1] * out_shape[2], last);
        x = std::move(y);
        break;
      }
    }
  }
  return x;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

std::vector<float> read_matrix(const std::string& json_path, const std::string& file,
                               std::size_t rows, std::size_t cols, const char* what) {
  const std::filesystem::path path = std::filesystem::path(json_path).parent_path() / file;
  const npy::Array a = npy::read(path.string());
  const bool vector_ok = rows == 1 && a.shape.size() == 1 && a.shape[0] == cols;
  if (!vector_ok && (a.rows() != rows || a.cols() != cols || a.shape.size() != 2)) {
    fail(json_path, std::string(what) + " " + file + " should be " + std::to_string(rows) + " x " +
                        std::to_string(cols));
  }
  return a.data;
}

// An int8 or int32 matrix (or, for rows = 1, a vector of cols values).
std::vector<std::int32_t> read_int_matrix(const std::string& json_path, const std::string& file,
                                          std::size_t rows, std::size_t cols, npy::Dtype dtype,
                                          const char* what) {
  const std::filesystem::path path = std::filesystem::path(json_path).parent_path() / file;
  const npy::IntArray a = npy::read_int(path.string(), dtype);
  const bool vector_ok = rows == 1 && a.shape.size() == 1 && a.shape[0] == cols;
  if (!vector_ok && (a.rows() != rows || a.cols() != cols || a.shape.size() != 2)) {
    fail(json_path, std::string(what) + " " + file + " should be " + std::to_string(rows) + " x " +
                        std::to_string(cols));
  }
  return a.data;
}

// A JSON integer (not a float) in [lo, hi].
std::int32_t json_int(const Json& value, const std::string& what, std::int32_t lo,
                      std::int32_t hi) {
  if (!value.is_number_integer()) throw std::invalid_argument(what + " is not an integer");
  // A value beyond int64 (an unsigned one) is out of range as it is.
  const std::int64_t v = value.is_number_unsigned() && value.get<std::uint64_t>() > 1u << 31
                             ? std::int64_t{1} << 31
                             : value.get<std::int64_t>();
  if (v < lo || v > hi) {
    throw std::invalid_argument(what + " " + value.dump() + " is outside [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "]");
  }
  return static_cast<std::int32_t>(v);
}

double json_scale(const Json& value, const std::string& what) {
  if (!value.is_number()) throw std::invalid_argument(what + " is not a number");
  const double v = value.get<double>();
  if (!(std::isfinite(v) && v > 0.0)) {
    throw std::invalid_argument(what + " must be positive and finite");
  }
  return v;
}

// The checks of a quantised layer's int8 form that need no other layer (docs/networks.md).
void check_quant_layer(const Layer& layer, const std::string& where) {
  const QuantLayer& q = layer.quant;
  if (layer.activation != isa::Func::None && layer.activation != isa::Func::Relu &&
      layer.activation != isa::Func::Relu6) {
    throw std::invalid_argument(where + "int8 layers take none, relu or relu6, not " +
                                isa::kFuncTable[static_cast<unsigned>(layer.activation)].mnemonic);
  }
  for (std::size_t i = 0; i < q.weights.size(); ++i) {
    if (q.weights[i] == -128) {
      throw std::invalid_argument(where + "weight " + std::to_string(i) +
                                  " is -128; symmetric int8 weights are in [-127, 127]");
    }
  }
  for (std::size_t j = 0; j < q.weight_scales.size(); ++j) {
    const float ws = q.weight_scales[j];
    if (!(std::isfinite(ws) && ws > 0.0f)) {
      throw std::invalid_argument(where + "weight scale " + std::to_string(j) +
                                  " must be positive and finite");
    }
  }
  if (!q.int8_output) return;
  for (std::size_t j = 0; j < q.multiplier.size(); ++j) {
    const std::string column = " of column " + std::to_string(j);
    const num::QuantizedMultiplier m{q.multiplier[j], q.shift[j]};
    if (!num::valid_quantized_multiplier(m)) {
      throw std::invalid_argument(where + "multiplier " + std::to_string(m.multiplier) +
                                  " and shift " + std::to_string(m.shift) + column +
                                  " are outside Q-REQ's ranges (M 0 or in [2^30, 2^31 - 1], s "
                                  "in [-31, 30])");
    }
    num::QuantizedMultiplier expected;
    try {
      expected = num::quantize_multiplier(q.real_multiplier(j));
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(where + "the real multiplier" + column +
                                  " (input scale x weight scale / output scale) is too large");
    }
    if (expected.multiplier != m.multiplier || expected.shift != m.shift) {
      throw std::invalid_argument(where + "multiplier " + std::to_string(m.multiplier) +
                                  " and shift " + std::to_string(m.shift) + column +
                                  " are not Q-SCALE of input scale x weight scale / " +
                                  "output scale (" + std::to_string(expected.multiplier) + ", " +
                                  std::to_string(expected.shift) + ")");
    }
  }
}

// The checks between the layers of a quantised network: it ends in its last dense or conv2d
// layer, which gives int32 sums or int8; every other one gives int8, and each one's input is
// the previous one's output (max-pooling and flattening keep the scale and zero point).
void check_quant_chain(const Network& net) {
  const QuantLayer* previous = nullptr;
  std::size_t last_gemm = net.layers.size();
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    if (gemm_layer(net.layers[l])) last_gemm = l;
  }
  if (net.layers.empty() || last_gemm + 1 != net.layers.size()) {
    throw std::invalid_argument("an int8 network must end in a dense layer");
  }
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const Layer& layer = net.layers[l];
    if (!gemm_layer(layer)) continue;
    const std::string where = "layer " + std::to_string(l) + " (" + kind_name(layer.kind) + "): ";
    const QuantLayer& q = layer.quant;
    if (l != last_gemm && !q.int8_output) {
      throw std::invalid_argument(where + "a hidden layer needs its int8 \"output\"");
    }
    if (previous && (previous->output_scale != q.input_scale ||
                     previous->output_zero_point != q.input_zero_point)) {
      throw std::invalid_argument(where + "its input scale and zero point are not the previous " +
                                  "layer's output scale and zero point");
    }
    previous = &q;
  }
}

// Files written under temporary names and renamed into place together (save_network).
class StagedFiles {
 public:
  explicit StagedFiles(std::filesystem::path dir) : dir_(std::move(dir)) {}
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  ~StagedFiles() {
    if (committed_) return;
    std::error_code ignored;
    for (const auto& [temp, final_path] : files_) std::filesystem::remove(temp, ignored);
  }
  // The temporary path to write `name` (in the directory) to.
  std::string add(const std::string& name) {
    const std::filesystem::path final_path = dir_ / name;
    std::string temp = final_path.string() + ".tmp" + std::to_string(::getpid());
    files_.emplace_back(temp, final_path.string());
    return temp;
  }
  // Renames every file into place; with `overwrite` false, first refuses if any exists.
  void commit(const std::string& json_path, bool overwrite) {
    for (const auto& [temp, final_path] : files_) {
      if (!overwrite && std::filesystem::exists(final_path)) fail(final_path, "already exists");
    }
    for (const auto& [temp, final_path] : files_) {
      if (std::rename(temp.c_str(), final_path.c_str()) != 0) {
        fail(json_path, "cannot write " + final_path + ": " + std::strerror(errno));
      }
    }
    committed_ = true;
  }

 private:
  std::filesystem::path dir_;
  std::vector<std::pair<std::string, std::string>> files_;
  bool committed_ = false;
};

// The output height and width of a conv2d or pool layer's window on an image of shape `in`.
std::array<std::uint32_t, 2> window_out(const Layer& layer, const std::vector<std::uint32_t>& in,
                                        const std::string& where) {
  const Window& win = layer.window;
  if (in.size() != 3) throw std::invalid_argument(where + "needs an image input");
  if (win.taps() == 0 || win.stride_y == 0 || win.stride_x == 0) {
    throw std::invalid_argument(where + "needs a window and a stride of at least 1");
  }
  if (layer.kind != LayerKind::Conv2d &&
      (win.pad_top >= win.height || win.pad_bottom >= win.height || win.pad_left >= win.width ||
       win.pad_right >= win.width)) {
    throw std::invalid_argument(where + "padding must be smaller than the window");
  }
  const std::uint32_t oh = win.out_height(in[0]), ow = win.out_width(in[1]);
  if (oh == 0 || ow == 0) {
    throw std::invalid_argument(where + "needs an image at least as large as its window");
  }
  return {oh, ow};
}

// The shape of one example after `layer`, given the shape before it; checks
// that the layer fits.
std::vector<std::uint32_t> next_shape(const Layer& layer, const std::vector<std::uint32_t>& in,
                                      std::size_t index) {
  const std::string where = "layer " + std::to_string(index) + " (" + kind_name(layer.kind) + "): ";
  switch (layer.kind) {
    case LayerKind::Flatten:
      return {static_cast<std::uint32_t>(product(in))};
    case LayerKind::MaxPool:
    case LayerKind::AvgPool:
      return {window_out(layer, in, where)[0], window_out(layer, in, where)[1], in[2]};
    case LayerKind::Dense:
    case LayerKind::Conv2d: {
      const bool dense = layer.kind == LayerKind::Dense;
      if (dense && in.size() != 1) throw std::invalid_argument(where + "needs a flat input");
      const std::vector<std::uint32_t> out =
          dense ? std::vector<std::uint32_t>{layer.units}
                : std::vector<std::uint32_t>{window_out(layer, in, where)[0],
                                             window_out(layer, in, where)[1], layer.units};
      const std::size_t inputs = dense ? in[0] : std::size_t{layer.window.taps()} * in[2];
      if (layer.weight_rows != inputs || layer.units == 0 ||
          layer.weights.size() != std::size_t{layer.weight_rows} * layer.units ||
          layer.bias.size() != layer.units) {
        throw std::invalid_argument(where + "needs " + std::to_string(inputs) + " x " +
                                    std::to_string(layer.units) + " weights and " +
                                    std::to_string(layer.units) + " biases");
      }
      return out;
    }
  }
  throw std::invalid_argument(where + "unknown layer kind");
}

// A window size or stride: one number for both dimensions, or [height, width].
std::array<std::uint32_t, 2> json_pair(const Json& value) {
  if (value.is_array()) {
    if (value.size() != 2) throw std::invalid_argument("a [height, width] pair needs 2 numbers");
    return {value[0].get<std::uint32_t>(), value[1].get<std::uint32_t>()};
  }
  const auto v = value.get<std::uint32_t>();
  return {v, v};
}

// A conv2d layer's kernel ("kernel", "stride" 1, "padding" "same" unless given) or a pool's
// window ("size", "stride" the size, no padding unless given) from its JSON description.
Window read_window(const Json& item, bool conv, const std::string& where) {
  const auto [height, width] = json_pair(item.at(conv ? "kernel" : "size"));
  Window win{height, width, conv ? 1 : height, conv ? 1 : width, 0, 0, 0, 0};
  if (item.contains("stride")) {
    const std::array<std::uint32_t, 2> stride = json_pair(item.at("stride"));
    win.stride_y = stride[0];
    win.stride_x = stride[1];
  }
  const Json padding = item.value("padding", Json(conv ? "same" : "none"));
  if (padding.is_string() && padding.get<std::string>() == "same" && conv) {
    if (height % 2 == 0 || width % 2 == 0 || win.stride_y != 1 || win.stride_x != 1) {
      throw std::invalid_argument(where + "\"same\" padding needs an odd kernel and stride 1");
    }
    win.pad_top = win.pad_bottom = height / 2;
    win.pad_left = win.pad_right = width / 2;
  } else if (padding.is_array() && padding.size() == 4) {
    win.pad_top = padding[0].get<std::uint32_t>();
    win.pad_left = padding[1].get<std::uint32_t>();
    win.pad_bottom = padding[2].get<std::uint32_t>();
    win.pad_right = padding[3].get<std::uint32_t>();
  } else if (!(padding.is_string() && padding.get<std::string>() == "none")) {
    throw std::invalid_argument(where +
                                "padding is \"same\" (conv2d), \"none\" or [top, left, "
                                "bottom, right]");
  }
  return win;
}

// The JSON of a window: the short forms where they say it all.
void write_window(Json& item, const Window& win, bool conv) {
  auto pair = [](std::uint32_t a, std::uint32_t b) { return a == b ? Json(a) : Json({a, b}); };
  item[conv ? "kernel" : "size"] = pair(win.height, win.width);
  if (conv && win.height == win.width && win == Window::same(win.height) && win.height % 2 == 1) {
    return;
  }
  if (!conv && win == Window::pool(win.height) && win.height == win.width) return;
  item["stride"] = pair(win.stride_y, win.stride_x);
  item["padding"] = {win.pad_top, win.pad_left, win.pad_bottom, win.pad_right};
}

// A quantised dense or conv2d layer's int8 form (docs/networks.md), checked, and its
// dequantised weights and bias.
void read_quant_layer(const std::string& json_path, const Json& item, std::size_t index,
                      Layer& layer) {
  const std::string where = "layer " + std::to_string(index) + " (" + kind_name(layer.kind) + "): ";
  QuantLayer& q = layer.quant;
  const std::size_t k = layer.weight_rows, n = layer.units;
  const std::vector<std::int32_t> weights = read_int_matrix(
      json_path, item.at("weights").get<std::string>(), k, n, npy::Dtype::Int8, "weights");
  q.weights.assign(weights.begin(), weights.end());
  q.bias = read_int_matrix(json_path, item.at("bias").get<std::string>(), 1, n, npy::Dtype::Int32,
                           "bias");
  q.weight_scales =
      read_matrix(json_path, item.at("weight_scales").get<std::string>(), 1, n, "weight scales");
  const Json& input = item.at("input");
  q.input_scale = json_scale(input.at("scale"), where + "input scale");
  q.input_zero_point = json_int(input.at("zero_point"), where + "input zero point", -128, 127);
  q.int8_output = item.contains("output");
  if (q.int8_output) {
    const Json& output = item.at("output");
    q.output_scale = json_scale(output.at("scale"), where + "output scale");
    q.output_zero_point = json_int(output.at("zero_point"), where + "output zero point", -128, 127);
    q.multiplier = read_int_matrix(json_path, item.at("multiplier").get<std::string>(), 1, n,
                                   npy::Dtype::Int32, "multiplier");
    q.shift = read_int_matrix(json_path, item.at("shift").get<std::string>(), 1, n,
                              npy::Dtype::Int32, "shift");
  }
  check_quant_layer(layer, where);
  layer.weights.resize(k * n);
  for (std::size_t i = 0; i < k * n; ++i) {
    layer.weights[i] = q.weight_scales[i % n] * static_cast<float>(q.weights[i]);
  }
  layer.bias.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    layer.bias[j] = static_cast<float>(q.bias[j] * q.input_scale * q.weight_scales[j]);
  }
}

}  // namespace

num::MatrixBf16 bf16_matrix(const float* data, std::size_t rows, std::size_t cols) {
  num::MatrixBf16 m(rows, cols);
  // The floats' bits a chunk at a time through a buffer in the cache (a copy, not a cast).
  std::array<num::fp32_t, 4096> bits;
  for (std::size_t first = 0; first < rows * cols; first += bits.size()) {
    const std::size_t count = std::min(bits.size(), rows * cols - first);
    std::memcpy(bits.data(), data + first, count * sizeof(float));
    detail::round_to_bf16(bits.data(), &m.data[first], count);
  }
  return m;
}

Tensor::Tensor(std::vector<std::uint32_t> dims) : shape(std::move(dims)), data(product(shape)) {}

bool gemm_layer(const Layer& layer) {
  return layer.kind == LayerKind::Dense || layer.kind == LayerKind::Conv2d;
}

std::size_t Tensor::per_example() const {
  return shape.empty() ? 0 : data.size() / std::max<std::size_t>(shape[0], 1);
}

Window Window::same(std::uint32_t kernel) {
  const std::uint32_t half = kernel / 2;
  return {kernel, kernel, 1, 1, half, half, half, half};
}

Window Window::pool(std::uint32_t size) {
  return {size, size, size, size, 0, 0, 0, 0};
}

std::uint32_t Window::out_height(std::uint32_t in) const {
  const std::uint64_t padded = std::uint64_t{in} + pad_top + pad_bottom;
  return padded < height || stride_y == 0
             ? 0
             : static_cast<std::uint32_t>((padded - height) / stride_y + 1);
}

std::uint32_t Window::out_width(std::uint32_t in) const {
  const std::uint64_t padded = std::uint64_t{in} + pad_left + pad_right;
  return padded < width || stride_x == 0
             ? 0
             : static_cast<std::uint32_t>((padded - width) / stride_x + 1);
}

bool Window::operator==(const Window& other) const {
  return std::tie(height, width, stride_y, stride_x, pad_top, pad_left, pad_bottom, pad_right) ==
         std::tie(other.height, other.width, other.stride_y, other.stride_x, other.pad_top,
                  other.pad_left, other.pad_bottom, other.pad_right);
}

std::vector<std::vector<std::uint32_t>> layer_shapes(const Network& net) {
  std::vector<std::vector<std::uint32_t>> shapes{input_shape(net)};
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    shapes.push_back(next_shape(net.layers[l], shapes.back(), l));
  }
  if (shapes.back().size() != 1) {
    throw std::invalid_argument("the network must end in a flat layer of class scores");
  }
  return shapes;
}

Network load_network(const std::string& json_path) {
  std::ifstream file(json_path);
  if (!file) fail(json_path, std::string("cannot open: ") + std::strerror(errno));
  Json doc;
  try {
    doc = Json::parse(file);
  } catch (const Json::parse_error& e) {
    fail(json_path, std::string("not valid JSON: ") + e.what());
  }
  Network net;
  try {
    const std::string dtype = doc.value("dtype", std::string("float32"));
    if (dtype != "float32" && dtype != "int8") {
      fail(json_path, "unknown dtype " + dtype + " (float32 or int8)");
    }
    net.int8 = dtype == "int8";
    net.name = doc.at("name").get<std::string>();
    const Json& input = doc.at("input");
    if (input.contains("features")) {
      net.layout = InputLayout::Flat;
      net.height = net.width = 1;
      net.channels = input.at("features").get<std::uint32_t>();
    } else {
      net.height = input.at("height").get<std::uint32_t>();
      net.width = input.at("width").get<std::uint32_t>();
      net.channels = input.at("channels").get<std::uint32_t>();
      const std::string layout = input.value("layout", std::string("nhwc"));
      if (layout != "nhwc" && layout != "nchw") {
        fail(json_path, "unknown input layout " + layout + " (nhwc or nchw)");
      }
      net.layout = layout == "nchw" ? InputLayout::Nchw : InputLayout::Nhwc;
    }
    const std::string output = doc.value("output", std::string("logits"));
    if (output != "logits" && output != "softmax") {
      fail(json_path, "unknown output " + output + " (logits or softmax)");
    }
    net.softmax_output = output == "softmax";
    if (doc.contains("softmax_quant")) {
      if (!net.softmax_output) fail(json_path, "softmax_quant without \"output\": \"softmax\"");
      const Json& quant = doc.at("softmax_quant");
      net.softmax_quant =
          ActivationQuant{json_scale(quant.at("scale"), "softmax_quant scale"),
                          json_int(quant.at("zero_point"), "softmax_quant zero point", -128, 127)};
    }
    std::vector<std::uint32_t> shape = input_shape(net);
    for (const Json& item : doc.at("layers")) {
      Layer layer;
      const std::string type = item.at("type").get<std::string>();
      const std::string where = "layer " + std::to_string(net.layers.size()) + " (" + type + "): ";
      if (type == "flatten") {
        layer.kind = LayerKind::Flatten;
      } else if (type == "maxpool" || type == "avgpool") {
        layer.kind = type == "maxpool" ? LayerKind::MaxPool : LayerKind::AvgPool;
        layer.window = read_window(item, false, where);
        layer.count_padding = type == "avgpool" && item.value("count_padding", false);
      } else if (type == "dense" || type == "conv2d") {
        layer.kind = type == "dense" ? LayerKind::Dense : LayerKind::Conv2d;
        layer.units = item.at(type == "dense" ? "units" : "filters").get<std::uint32_t>();
        if (layer.kind == LayerKind::Conv2d) layer.window = read_window(item, true, where);
        const std::string act = item.value("activation", std::string("none"));
        const isa::FuncInfo* func = isa::find_func(act);
        if (!func) fail(json_path, "unknown activation " + act);
        layer.activation = func->func;
        if (item.contains("alpha")) {
          layer.alpha = to_bf16(item.at("alpha").get<float>());
        }
        layer.weight_rows = layer.kind == LayerKind::Dense
                                ? static_cast<std::uint32_t>(product(shape))
                                : layer.window.taps() * shape.back();
        if (net.int8) {
          read_quant_layer(json_path, item, net.layers.size(), layer);
        } else {
          layer.weights = read_matrix(json_path, item.at("weights").get<std::string>(),
                                      layer.weight_rows, layer.units, "weights");
          layer.bias =
              read_matrix(json_path, item.at("bias").get<std::string>(), 1, layer.units, "bias");
        }
      } else {
        fail(json_path, "unknown layer type " + type);
      }
      shape = next_shape(layer, shape, net.layers.size());
      net.layers.push_back(std::move(layer));
    }
    net.classes = layer_shapes(net).back()[0];
    if (net.int8) check_quant_chain(net);
  } catch (const Json::exception& e) {
    fail(json_path, std::string("malformed network description: ") + e.what());
  } catch (const std::invalid_argument& e) {
    fail(json_path, e.what());
  }
  return net;
}

void save_network(const Network& net, const std::string& json_path, bool overwrite) {
  layer_shapes(net);  // refuses a network that does not fit together
  if (net.int8) check_quant_chain(net);
  const std::filesystem::path json_file(json_path);
  const std::string stem = json_file.stem().string();
  StagedFiles files(json_file.parent_path());
  Json doc;
  doc["name"] = net.name;
  if (net.int8) doc["dtype"] = "int8";
  if (net.layout == InputLayout::Flat) {
    doc["input"] = {{"features", net.height * net.width * net.channels}};
  } else {
    doc["input"] = {{"height", net.height}, {"width", net.width}, {"channels", net.channels}};
    if (net.layout == InputLayout::Nchw) doc["input"]["layout"] = "nchw";
  }
  if (net.softmax_output) doc["output"] = "softmax";
  if (net.softmax_quant) {
    doc["softmax_quant"] = {{"scale", net.softmax_quant->scale},
                            {"zero_point", net.softmax_quant->zero_point}};
  }
  doc["layers"] = Json::array();
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const Layer& layer = net.layers[l];
    Json item;
    item["type"] = kind_name(layer.kind);
    if (layer.kind == LayerKind::MaxPool || layer.kind == LayerKind::AvgPool) {
      write_window(item, layer.window, false);
      if (layer.count_padding) item["count_padding"] = true;
    }
    if (gemm_layer(layer)) {
      item[layer.kind == LayerKind::Dense ? "units" : "filters"] = layer.units;
      if (layer.kind == LayerKind::Conv2d) write_window(item, layer.window, true);
      item["activation"] = isa::kFuncTable[static_cast<unsigned>(layer.activation)].mnemonic;
      if (layer.activation == isa::Func::Leaky) {
        item["alpha"] = bits_to_float(num::bf16_to_fp32(layer.alpha));
      }
      const std::string base = stem + "." + std::to_string(l) + "." + kind_name(layer.kind);
      const std::size_t columns = layer.units;
      auto write_float = [&](const std::string& key, const std::string& name,
                             std::vector<std::size_t> shape, const std::vector<float>& data) {
        item[key] = base + name;
        npy::write(files.add(base + name), {std::move(shape), data});
      };
      auto write_int = [&](const std::string& key, const std::string& name, npy::Dtype dtype,
                           std::vector<std::size_t> shape, std::vector<std::int32_t> data) {
        item[key] = base + name;
        npy::write_int(files.add(base + name), {std::move(shape), dtype, std::move(data)});
      };
      if (!net.int8) {
        write_float("weights", ".weights.npy", {layer.weight_rows, columns}, layer.weights);
        write_float("bias", ".bias.npy", {columns}, layer.bias);
      } else {
        const QuantLayer& q = layer.quant;
        write_int("weights", ".weights.npy", npy::Dtype::Int8, {layer.weight_rows, columns},
                  {q.weights.begin(), q.weights.end()});
        write_int("bias", ".bias.npy", npy::Dtype::Int32, {columns}, q.bias);
        write_float("weight_scales", ".scales.npy", {columns}, q.weight_scales);
        item["input"] = {{"scale", q.input_scale}, {"zero_point", q.input_zero_point}};
        if (q.int8_output) {
          item["output"] = {{"scale", q.output_scale}, {"zero_point", q.output_zero_point}};
          write_int("multiplier", ".multiplier.npy", npy::Dtype::Int32, {columns}, q.multiplier);
          write_int("shift", ".shift.npy", npy::Dtype::Int32, {columns}, q.shift);
        }
      }
    }
    doc["layers"].push_back(item);
  }
  {
    std::ofstream out(files.add(json_file.filename().string()));
    out << doc.dump(2) << "\n";
    if (!out) fail(json_path, "cannot write");
  }
  files.commit(json_path, overwrite);
}

std::vector<float> matmul(Backend* accelerator, const float* a, const float* b, std::uint32_t m,
                          std::uint32_t k, std::uint32_t n, RunResult* result) {
  std::vector<float> out(std::size_t{m} * n, 0.0f);
  if (accelerator) {
    GemmSpec spec;
    spec.m = m;
    spec.k = k;
    spec.n = n;
    const num::MatrixFp32 product =
        run_gemm(*accelerator, spec, bf16_matrix(a, m, k), bf16_matrix(b, k, n), nullptr, nullptr,
                 result);
    std::memcpy(out.data(), product.data.data(), out.size() * sizeof(float));
    return out;
  }
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t kk = 0; kk < k; ++kk) {
      const float x = a[i * k + kk];
      const float* row = &b[kk * n];
      float* sums = &out[i * n];
      for (std::size_t j = 0; j < n; ++j) sums[j] += x * row[j];
    }
  }
  return out;
}

std::vector<float> layer_forward(Backend* accelerator, const Layer& layer, const float* rows_data,
                                 std::size_t rows, bool last) {
  if (!accelerator) return layer_gemm_host(layer, rows_data, rows);
  return layer_gemm(*accelerator, layer, rows_data, rows, last);
}

Tensor forward_host_fp32(const Network& net, const Tensor& input, const LayerObserver& observe) {
  if (net.int8) {
    throw std::invalid_argument("a quantised (int8) network has no fp32 forward pass");
  }
  return run_network(
      net, input,
      [&](std::size_t l, const Layer& layer, const float* rows_data, std::size_t rows, bool last) {
        std::vector<float> out = layer_forward(nullptr, layer, rows_data, rows, last);
        if (observe) observe(l, out);
        return out;
      });
}

namespace {

// Calls visit(output pixel, tap, image pixel) for every position (tap = ky * width + kx) of
// the window over every output pixel of an [n, h, w, c] tensor that falls inside the image:
// positions in the padding have no image pixel and are skipped. Pixels count from 0 in NHWC
// order without the channels.
template <typename Visit>
void for_each_tap(const std::vector<std::uint32_t>& shape, const Window& win, Visit visit) {
  const std::size_t n = shape[0], h = shape[1], w = shape[2];
  const std::size_t oh = win.out_height(shape[1]), ow = win.out_width(shape[2]);
  for (std::size_t b = 0; b < n; ++b) {
    for (std::size_t oy = 0; oy < oh; ++oy) {
      for (std::size_t ox = 0; ox < ow; ++ox) {
        const std::size_t out = (b * oh + oy) * ow + ox;
        for (std::uint32_t ky = 0; ky < win.height; ++ky) {
          const std::ptrdiff_t sy = static_cast<std::ptrdiff_t>(oy * win.stride_y + ky) -
                                    static_cast<std::ptrdiff_t>(win.pad_top);
          if (sy < 0 || sy >= static_cast<std::ptrdiff_t>(h)) continue;
          for (std::uint32_t kx = 0; kx < win.width; ++kx) {
            const std::ptrdiff_t sx = static_cast<std::ptrdiff_t>(ox * win.stride_x + kx) -
                                      static_cast<std::ptrdiff_t>(win.pad_left);
            if (sx < 0 || sx >= static_cast<std::ptrdiff_t>(w)) continue;
            visit(out, std::size_t{ky} * win.width + kx,
                  (b * h + static_cast<std::size_t>(sy)) * w + static_cast<std::size_t>(sx));
          }
        }
      }
    }
  }
}

std::vector<std::uint32_t> pooled_shape(const std::vector<std::uint32_t>& shape,
                                        const Window& win) {
  if (shape.size() != 4 || win.out_height(shape[1]) == 0 || win.out_width(shape[2]) == 0) {
    throw std::invalid_argument("the window does not fit an [n, h, w, c] tensor");
  }
  return {shape[0], win.out_height(shape[1]), win.out_width(shape[2]), shape[3]};
}

// Max-pooling of any element type: the largest value over the window's positions in the
// image (`lowest` where there are none, which padding no smaller than the window rules out).
template <typename T, typename Better>
std::vector<T> max_pool_values(const std::vector<T>& x, const std::vector<std::uint32_t>& shape,
                               const Window& win, T lowest, Better better) {
  const std::size_t c = shape[3];
  const std::vector<std::uint32_t> out_shape = pooled_shape(shape, win);
  std::vector<T> y(product(out_shape), lowest);
  for_each_tap(shape, win, [&](std::size_t out, std::size_t, std::size_t in) {
    for (std::size_t ch = 0; ch < c; ++ch) {
      if (better(x[in * c + ch], y[out * c + ch])) y[out * c + ch] = x[in * c + ch];
    }
  });
  return y;
}

}  // namespace

std::vector<float> im2col(const Tensor& x, const Window& kernel) {
  if (x.shape.size() != 4) throw std::invalid_argument("im2col needs an [n, h, w, c] tensor");
  const std::size_t c = x.shape[3], row_len = kernel.taps() * c;
  std::vector<float> cols(product(pooled_shape(x.shape, kernel)) / c * row_len, 0.0f);
  for_each_tap(x.shape, kernel, [&](std::size_t out, std::size_t tap, std::size_t in) {
    std::copy(&x.data[in * c], &x.data[in * c] + c, &cols[out * row_len + tap * c]);
  });
  return cols;
}

Tensor col2im(const std::vector<float>& cols, const std::vector<std::uint32_t>& shape,
              const Window& kernel) {
  if (shape.size() != 4) throw std::invalid_argument("col2im needs an [n, h, w, c] shape");
  Tensor x(shape);
  const std::size_t c = shape[3], row_len = kernel.taps() * c;
  if (cols.size() != product(pooled_shape(shape, kernel)) / c * row_len) {
    throw std::invalid_argument("col2im: columns of the wrong size");
  }
  for_each_tap(shape, kernel, [&](std::size_t out, std::size_t tap, std::size_t in) {
    for (std::size_t ch = 0; ch < c; ++ch)
      x.data[in * c + ch] += cols[out * row_len + tap * c + ch];
  });
  return x;
}

Tensor max_pool(const Tensor& x, const Window& pool) {
  Tensor y(pooled_shape(x.shape, pool));
  // NaN wins, so a NaN in the window is not hidden.
  y.data = max_pool_values(x.data, x.shape, pool, -INFINITY,
                           [](float v, float best) { return v > best || std::isnan(v); });
  return y;
}

Tensor avg_pool(const Tensor& x, const Window& pool, bool count_padding) {
  Tensor y(pooled_shape(x.shape, pool));
  const std::size_t c = x.shape[3];
  std::vector<std::uint32_t> counted(y.data.size() / c, 0);
  for_each_tap(x.shape, pool, [&](std::size_t out, std::size_t, std::size_t in) {
    for (std::size_t ch = 0; ch < c; ++ch) y.data[out * c + ch] += x.data[in * c + ch];
    ++counted[out];
  });
  for (std::size_t i = 0; i < y.data.size(); ++i) {
    const std::uint32_t divisor = count_padding ? pool.taps() : counted[i / c];
    y.data[i] /= static_cast<float>(divisor);
  }
  return y;
}

std::vector<std::uint32_t> input_file_shape(const Network& net) {
  switch (net.layout) {
    case InputLayout::Flat:
      return {net.height * net.width * net.channels};
    case InputLayout::Nchw:
      return {net.channels, net.height, net.width};
    case InputLayout::Nhwc:
      break;
  }
  return {net.height, net.width, net.channels};
}

Tensor input_from_file(const Network& net, const std::vector<std::size_t>& shape,
                       std::vector<float> data) {
  const std::vector<std::uint32_t> example = input_file_shape(net);
  const bool fits = shape.size() == example.size() + 1 && shape[0] > 0 &&
                    shape[0] <= std::numeric_limits<std::uint32_t>::max() &&
                    std::equal(example.begin(), example.end(), shape.begin() + 1);
  if (!fits) {
    std::string want = "[n";
    for (std::uint32_t d : example) want += ", " + std::to_string(d);
    throw std::invalid_argument("the network takes " + want + "] (" +
                                (net.layout == InputLayout::Nchw   ? "NCHW"
                                 : net.layout == InputLayout::Flat ? "flat"
                                                                   : "NHWC") +
                                ")");
  }
  const auto n = static_cast<std::uint32_t>(shape[0]);
  if (net.layout == InputLayout::Flat) {
    Tensor x({n, example[0]});
    x.data = std::move(data);
    return x;
  }
  Tensor x({n, net.height, net.width, net.channels});
  if (net.layout == InputLayout::Nhwc) {
    x.data = std::move(data);
    return x;
  }
  const std::size_t h = net.height, w = net.width, c = net.channels;
  for (std::size_t b = 0; b < n; ++b) {
    for (std::size_t ch = 0; ch < c; ++ch) {
      for (std::size_t i = 0; i < h * w; ++i) {
        x.data[(b * h * w + i) * c + ch] = data[(b * c + ch) * h * w + i];
      }
    }
  }
  return x;
}

void softmax_rows(Tensor& x) {
  const std::size_t n = x.batch(), k = x.per_example();
  for (std::size_t i = 0; i < n; ++i) {
    float* row = &x.data[i * k];
    const float top = *std::max_element(row, row + k);
    float sum = 0.0f;
    for (std::size_t j = 0; j < k; ++j) {
      row[j] = std::exp(row[j] - top);
      sum += row[j];
    }
    for (std::size_t j = 0; j < k; ++j) row[j] /= sum;
  }
}

void finish_output(const Network& net, Tensor& y) {
  if (!net.softmax_output) return;
  softmax_rows(y);
  if (!net.softmax_quant) return;
  const float scale = static_cast<float>(net.softmax_quant->scale);
  const float zero_point = static_cast<float>(net.softmax_quant->zero_point);
  for (float& v : y.data) {
    const float q = std::clamp(std::nearbyint(v / scale) + zero_point, -128.0f, 127.0f);
    v = (q - zero_point) * scale;
  }
}

std::vector<std::uint32_t> argmax_rows(const Tensor& logits) {
  const std::size_t n = logits.batch(), k = logits.per_example();
  std::vector<std::uint32_t> best(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 1; j < k; ++j) {
      if (logits.data[i * k + j] > logits.data[i * k + best[i]]) {
        best[i] = static_cast<std::uint32_t>(j);
      }
    }
  }
  return best;
}

Tensor images_to_tensor(const std::vector<std::uint8_t>& images, std::uint32_t first,
                        std::uint32_t count, std::uint32_t height, std::uint32_t width) {
  const std::size_t per = std::size_t{height} * width;
  if ((std::size_t{first} + count) * per > images.size()) {
    throw std::out_of_range("image range beyond the data set");
  }
  Tensor x({count, height, width, 1});
  for (std::size_t i = 0; i < count * per; ++i) {
    x.data[i] = static_cast<float>(images[first * per + i]) / 255.0f;
  }
  return x;
}

}  // namespace tpu::nn
