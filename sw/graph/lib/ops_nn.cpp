// The network operators: matrix products and convolutions (on the accelerator when there is
// one), pooling, normalisation, softmax and reductions (on the host).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops.hpp"
#include "tpu/nn.hpp"

namespace tpu::graph::ops {
namespace {

// MatMul as numpy.matmul: 1-D operands promoted, batch dimensions broadcast. A B that is one
// matrix (weights, typically) takes every row of A in one product.
std::vector<Tensor> matmul(Context& context, const Node& node, const Inputs& in) {
  Tensor a = need_float(node, in, 0);
  Tensor b = need_float(node, in, 1);
  if (a.rank() == 0 || b.rank() == 0) fail(node, "a scalar operand");
  const bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
  if (a_vector) a.shape.insert(a.shape.begin(), 1);
  if (b_vector) b.shape.push_back(1);
  const std::size_t m = static_cast<std::size_t>(a.shape[a.rank() - 2]);
  const std::size_t k = static_cast<std::size_t>(a.shape.back());
  const std::size_t n = static_cast<std::size_t>(b.shape.back());
  if (static_cast<std::size_t>(b.shape[b.rank() - 2]) != k) {
    fail(node,
         "shapes " + shape_text(a.shape) + " and " + shape_text(b.shape) + " do not multiply");
  }
  const Shape a_batch(a.shape.begin(), a.shape.end() - 2);
  const Shape b_batch(b.shape.begin(), b.shape.end() - 2);
  const Shape batch = broadcast_shapes(node, {a_batch, b_batch});
  Shape out = batch;
  if (!a_vector) out.push_back(static_cast<std::int64_t>(m));
  if (!b_vector) out.push_back(static_cast<std::int64_t>(n));
  Tensor y(DType::Float32, out);
  if (element_count(b_batch) == 1 && a_batch == batch) {
    y.floats = product(context, a.floats.data(), b.floats.data(), element_count(batch) * m, k, n,
                       {in[1], 0}, {nullptr, node.epilogue});
    return {y};
  }
  const std::vector<std::size_t> a_at = broadcast_offsets(a_batch, batch);
  const std::vector<std::size_t> b_at = broadcast_offsets(b_batch, batch);
  for (std::size_t i = 0; i < a_at.size(); ++i) {
    const std::vector<float> c =
        product(context, &a.floats[a_at[i] * m * k], &b.floats[b_at[i] * k * n], m, k, n,
                {in[1], b_at[i]}, {nullptr, node.epilogue});
    std::copy(c.begin(), c.end(), y.floats.begin() + static_cast<std::ptrdiff_t>(i * m * n));
  }
  return {y};
}

std::vector<Tensor> gemm(Context& context, const Node& node, const Inputs& in) {
  const Tensor& a = need_float(node, in, 0);
  const Tensor& b = need_float(node, in, 1);
  if (a.rank() != 2 || b.rank() != 2) fail(node, "operands not matrices");
  const bool ta = node.int_attr("transA", 0) != 0, tb = node.int_attr("transB", 0) != 0;
  const auto a0 = static_cast<std::size_t>(a.shape[0]), a1 = static_cast<std::size_t>(a.shape[1]);
  const auto b0 = static_cast<std::size_t>(b.shape[0]), b1 = static_cast<std::size_t>(b.shape[1]);
  const std::size_t m = ta ? a1 : a0, k = ta ? a0 : a1, n = tb ? b0 : b1;
  if ((tb ? b1 : b0) != k) {
    fail(node, "shapes " + shape_text(a.shape) + " and " + shape_text(b.shape) +
                   " do not multiply" + (ta || tb ? " as transposed" : ""));
  }
  const std::vector<float> at = ta ? nn::transpose(a.floats.data(), a0, a1) : std::vector<float>{};
  const std::vector<float> bt = tb ? nn::transpose(b.floats.data(), b0, b1) : std::vector<float>{};
  // A C that is a bias goes into the product's epilogue, with the fused activation.
  const std::vector<float> bias = gemm_bias(node, in.size() > 2 ? in[2] : nullptr, n);
  const float alpha = node.float_attr("alpha", 1.0f), beta = node.float_attr("beta", 1.0f);
  if (node.epilogue != Epilogue::None && bias.empty() &&
      (alpha != 1.0f || (in.size() > 2 && in[2]))) {
    fail(node, "an activation fused after an alpha or a C that is no bias");
  }
  std::vector<float> c = product(context, ta ? at.data() : a.floats.data(),
                                 tb ? bt.data() : b.floats.data(), m, k, n, {in[1], 0},
                                 {bias.empty() ? nullptr : bias.data(), node.epilogue});
  const Shape out{static_cast<std::int64_t>(m), static_cast<std::int64_t>(n)};
  if (!bias.empty()) return {Tensor::of_floats(out, std::move(c))};
  if (alpha != 1.0f) {
    for (float& v : c) v *= alpha;
  }
  if (in.size() > 2 && in[2] && beta != 0.0f) {
    const Tensor& addend = need_float(node, in, 2);
    if (broadcast_shapes(node, {addend.shape, out}) != out) {
      fail(node,
           "a C of shape " + shape_text(addend.shape) + " for a " + shape_text(out) + " product");
    }
    const std::vector<std::size_t> offsets = broadcast_offsets(addend.shape, out);
    for (std::size_t e = 0; e < c.size(); ++e) c[e] += beta * addend.floats[offsets[e]];
  }
  return {Tensor::of_floats(out, std::move(c))};
}

// A convolution's or a pool's window over the spatial dimensions (one or two; one is treated
// as a height of 1): kernel, strides, dilations and the padding before and after.
struct Window {
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  std::int64_t top = 0, left = 0, bottom = 0, right = 0;
  std::int64_t oh = 0, ow = 0;
};

Window window_of(const Node& node, const Shape& x, std::vector<std::int64_t> kernel,
                 bool ceil_mode) {
  const std::size_t spatial = x.size() - 2;
  if (x.size() < 3 || spatial > 2) {
    fail(node, "a rank-" + std::to_string(x.size()) + " input (1 or 2 spatial dimensions)");
  }
  if (kernel.size() != spatial) fail(node, "a kernel of another rank than the input's");
  std::vector<std::int64_t> strides =
      node.ints_attr("strides", std::vector<std::int64_t>(spatial, 1));
  std::vector<std::int64_t> dilations =
      node.ints_attr("dilations", std::vector<std::int64_t>(spatial, 1));
  std::vector<std::int64_t> pads =
      node.ints_attr("pads", std::vector<std::int64_t>(2 * spatial, 0));
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) {
    fail(node, "strides, dilations or pads of another rank than the input's");
  }
  const std::string auto_pad = node.string_attr("auto_pad", "NOTSET");
  const std::int64_t h = spatial == 2 ? x[2] : 1, w = x.back();
  Window win;
  if (spatial == 2) {
    win = {kernel[0],    kernel[1],    strides[0], strides[1],
           dilations[0], dilations[1], pads[0],    pads[1],
           pads[2],      pads[3],      0,          0};
  } else {
    win = {1, kernel[0], 1, strides[0], 1, dilations[0], 0, pads[0], 0, pads[1], 0, 0};
  }
  if (win.kh < 1 || win.kw < 1 || win.sh < 1 || win.sw < 1 || win.dh < 1 || win.dw < 1 ||
      win.top < 0 || win.left < 0 || win.bottom < 0 || win.right < 0) {
    fail(node, "a kernel, stride or dilation below 1 or a negative pad");
  }
  const auto span = [](std::int64_t k, std::int64_t d) { return (k - 1) * d + 1; };
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const auto same = [&](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d,
                          std::int64_t& begin, std::int64_t& end) {
      const std::int64_t out = (in + s - 1) / s;
      const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * s + span(k, d) - in);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    };
    if (spatial == 2) same(h, win.kh, win.sh, win.dh, win.top, win.bottom);
    same(w, win.kw, win.sw, win.dw, win.left, win.right);
  } else if (auto_pad == "VALID") {
    win.top = win.left = win.bottom = win.right = 0;
  } else if (auto_pad != "NOTSET") {
    fail(node, "auto_pad \"" + auto_pad + "\" not known");
  }
  const auto out_size = [&](std::int64_t in, std::int64_t begin, std::int64_t end, std::int64_t k,
                            std::int64_t s, std::int64_t d) {
    const std::int64_t room = in + begin + end - span(k, d);
    if (room < 0) return std::int64_t{0};
    std::int64_t out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + begin) --out;  // a window that starts in the padding
    return out;
  };
  win.oh = out_size(h, win.top, win.bottom, win.kh, win.sh, win.dh);
  win.ow = out_size(w, win.left, win.right, win.kw, win.sw, win.dw);
  if (win.oh < 1 || win.ow < 1) fail(node, "the window does not fit the padded input");
  return win;
}

Shape spatial_out(const Shape& x, std::int64_t channels, const Window& win) {
  return x.size() == 4 ? Shape{x[0], channels, win.oh, win.ow} : Shape{x[0], channels, win.ow};
}

std::vector<Tensor> conv(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need_float(node, in, 0);
  const Tensor& w = need_float(node, in, 1);
  if (x.rank() < 3) fail(node, "an input of rank " + std::to_string(x.rank()));
  if (w.rank() != x.rank()) fail(node, "weights of another rank than the input's");
  const std::int64_t group = node.int_attr("group", 1);
  const std::int64_t channels = x.shape[1], filters = w.shape[0];
  if (group < 1 || channels % group != 0 || filters % group != 0 ||
      w.shape[1] * group != channels) {
    fail(node, "group " + std::to_string(group) + " with " + std::to_string(channels) +
                   " input channels, weights " + shape_text(w.shape));
  }
  const Shape kernel_shape(w.shape.begin() + 2, w.shape.end());
  std::vector<std::int64_t> kernel = node.ints_attr("kernel_shape", kernel_shape);
  if (kernel != kernel_shape) fail(node, "kernel_shape differs from the weights'");
  const Window win = window_of(node, x.shape, kernel, false);
  const std::int64_t h = x.rank() == 4 ? x.shape[2] : 1, wd = x.shape.back();
  const std::int64_t batch = x.shape[0], cg = channels / group, mg = filters / group;
  const auto rows = static_cast<std::size_t>(batch * win.oh * win.ow);
  const auto depth = static_cast<std::size_t>(cg * win.kh * win.kw);
  Tensor y(DType::Float32, spatial_out(x.shape, filters, win));
  const std::size_t plane = static_cast<std::size_t>(win.oh * win.ow);
  // The bias, added in each group's product with the fused activation.
  const Tensor* bias = in.size() > 2 && in[2] ? &need_float(node, in, 2) : nullptr;
  if (bias && bias->size() != static_cast<std::size_t>(filters)) {
    fail(node, "a bias of another size");
  }
  for (std::int64_t g = 0; g < group; ++g) {
    // im2col of this group's channels: a row per output pixel, columns in (c, ky, kx) order,
    // the order of a filter's weights in the file.
    std::vector<float> cols(rows * depth, 0.0f);
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t oy = 0; oy < win.oh; ++oy) {
        for (std::int64_t ox = 0; ox < win.ow; ++ox) {
          float* row = &cols[static_cast<std::size_t>((n * win.oh + oy) * win.ow + ox) * depth];
          for (std::int64_t c = 0; c < cg; ++c) {
            const float* image =
                &x.floats[static_cast<std::size_t>((n * channels + g * cg + c) * h * wd)];
            for (std::int64_t ky = 0; ky < win.kh; ++ky) {
              const std::int64_t iy = oy * win.sh - win.top + ky * win.dh;
              for (std::int64_t kx = 0; kx < win.kw; ++kx) {
                const std::int64_t ix = ox * win.sw - win.left + kx * win.dw;
                if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
                  row[(c * win.kh + ky) * win.kw + kx] = image[iy * wd + ix];
                }
              }
            }
          }
        }
      }
    }
    // The group's filters as a depth x mg matrix.
    const std::vector<float> weights = nn::transpose(
        &w.floats[static_cast<std::size_t>(g * mg) * depth], static_cast<std::size_t>(mg), depth);
    const std::vector<float> out =
        product(context, cols.data(), weights.data(), rows, depth, static_cast<std::size_t>(mg),
                {in[1], static_cast<std::size_t>(g)},
                {bias ? &bias->floats[static_cast<std::size_t>(g * mg)] : nullptr, node.epilogue});
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t n = r / plane, pixel = r % plane;
      for (std::int64_t f = 0; f < mg; ++f) {
        y.floats[(n * static_cast<std::size_t>(filters) + static_cast<std::size_t>(g * mg + f)) *
                     plane +
                 pixel] = out[r * static_cast<std::size_t>(mg) + static_cast<std::size_t>(f)];
      }
    }
  }
  return {y};
}

// MaxPool and AveragePool over (one or two) spatial dimensions.
std::vector<Tensor> pool(Context&, const Node& node, const Inputs& in, bool max) {
  const Tensor& x = need_float(node, in, 0);
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) fail(node, "the Indices output");
  if (x.rank() < 3) fail(node, "an input of rank " + std::to_string(x.rank()));
  const bool ceil_mode = node.int_attr("ceil_mode", 0) != 0;
  const Window win = window_of(node, x.shape, node.ints_attr("kernel_shape"), ceil_mode);
  if (!max && node.has("dilations") && (win.dh != 1 || win.dw != 1)) {
    fail(node, "dilations not supported for AveragePool");
  }
  const bool count_pad = node.int_attr("count_include_pad", 0) != 0;
  const std::int64_t h = x.rank() == 4 ? x.shape[2] : 1, w = x.shape.back();
  const std::int64_t planes = x.shape[0] * x.shape[1];
  Tensor y(DType::Float32, spatial_out(x.shape, x.shape[1], win));
  std::size_t e = 0;
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* image = &x.floats[static_cast<std::size_t>(p * h * w)];
    for (std::int64_t oy = 0; oy < win.oh; ++oy) {
      for (std::int64_t ox = 0; ox < win.ow; ++ox) {
        float best = -std::numeric_limits<float>::infinity(), sum = 0;
        std::int64_t inside = 0, padded = 0;
        for (std::int64_t ky = 0; ky < win.kh; ++ky) {
          const std::int64_t iy = oy * win.sh - win.top + ky * win.dh;
          for (std::int64_t kx = 0; kx < win.kw; ++kx) {
            const std::int64_t ix = ox * win.sw - win.left + kx * win.dw;
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
              const float v = image[iy * w + ix];
              best = std::max(best, v);
              sum += v;
              ++inside;
            } else if (iy < h + win.bottom && ix < w + win.right) {
              ++padded;  // in the padding (not beyond it, where ceil_mode's last window ends)
            }
          }
        }
        y.floats[e++] = max ? best : sum / static_cast<float>(count_pad ? inside + padded : inside);
      }
    }
  }
  return {y};
}

std::vector<Tensor> global_pool(Context&, const Node& node, const Inputs& in, bool max) {
  const Tensor& x = need_float(node, in, 0);
  if (x.rank() < 3) fail(node, "an input of rank " + std::to_string(x.rank()));
  Shape out = x.shape;
  std::fill(out.begin() + 2, out.end(), 1);
  const std::size_t planes = static_cast<std::size_t>(x.shape[0] * x.shape[1]);
  const std::size_t plane = planes ? x.size() / planes : 0;
  Tensor y(DType::Float32, out);
  for (std::size_t p = 0; p < planes; ++p) {
    const float* v = &x.floats[p * plane];
    float acc = max ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (std::size_t i = 0; i < plane; ++i) acc = max ? std::max(acc, v[i]) : acc + v[i];
    y.floats[p] = max ? acc : acc / static_cast<float>(plane);
  }
  return {y};
}

// Softmax and LogSoftmax: along one axis from opset 13, over the dimensions from `axis` on
// (the input as a 2-D matrix) before it.
std::vector<Tensor> softmax(Context& context, const Node& node, const Inputs& in, bool log) {
  Tensor y = need_float(node, in, 0);
  if (y.rank() == 0) fail(node, "a scalar input");
  const bool one_axis = context.opset >= 13;
  const std::size_t axis = axis_index(node, node.int_attr("axis", one_axis ? -1 : 1), y.rank());
  const std::size_t outer = element_count(Shape(y.shape.begin(), y.shape.begin() + axis));
  const std::size_t length = one_axis ? static_cast<std::size_t>(y.shape[axis])
                                      : element_count(Shape(y.shape.begin() + axis, y.shape.end()));
  const std::size_t inner =
      one_axis ? element_count(Shape(y.shape.begin() + axis + 1, y.shape.end())) : 1;
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inner; ++i) {
      float* v = &y.floats[o * length * inner + i];
      float top = -std::numeric_limits<float>::infinity();
      for (std::size_t j = 0; j < length; ++j) top = std::max(top, v[j * inner]);
      float sum = 0;
      for (std::size_t j = 0; j < length; ++j) sum += std::exp(v[j * inner] - top);
      for (std::size_t j = 0; j < length; ++j) {
        float& value = v[j * inner];
        value = log ? value - top - std::log(sum) : std::exp(value - top) / sum;
      }
    }
  }
  return {y};
}

std::vector<Tensor> batch_norm(Context&, const Node& node, const Inputs& in) {
  Tensor y = need_float(node, in, 0);
  if (y.rank() < 2) fail(node, "an input of rank " + std::to_string(y.rank()));
  if (node.int_attr("training_mode", 0) != 0) fail(node, "training_mode");
  const auto channels = static_cast<std::size_t>(y.shape[1]);
  const float epsilon = node.float_attr("epsilon", 1e-5f);
  std::vector<const Tensor*> params;
  for (std::size_t i = 1; i <= 4; ++i) {
    params.push_back(&need_float(node, in, i));
    if (params.back()->size() != channels) fail(node, "parameters of another size than C");
  }
  const std::size_t inner = element_count(Shape(y.shape.begin() + 2, y.shape.end()));
  for (std::size_t e = 0; e < y.size(); ++e) {
    const std::size_t c = (e / inner) % channels;
    const float scale = params[0]->floats[c], bias = params[1]->floats[c];
    const float mean = params[2]->floats[c], var = params[3]->floats[c];
    y.floats[e] = (y.floats[e] - mean) / std::sqrt(var + epsilon) * scale + bias;
  }
  return {y};
}

std::vector<Tensor> layer_norm(Context&, const Node& node, const Inputs& in) {
  Tensor y = need_float(node, in, 0);
  const std::size_t axis = axis_index(node, node.int_attr("axis", -1), y.rank());
  const float epsilon = node.float_attr("epsilon", 1e-5f);
  const Shape normalised(y.shape.begin() + axis, y.shape.end());
  const std::size_t length = element_count(normalised);
  const std::size_t outer = length ? y.size() / length : 0;
  const Tensor& scale = need_float(node, in, 1);
  const Tensor* bias = in.size() > 2 && in[2] ? &need_float(node, in, 2) : nullptr;
  if (broadcast_shapes(node, {scale.shape, normalised}) != normalised ||
      (bias && broadcast_shapes(node, {bias->shape, normalised}) != normalised)) {
    fail(node, "a scale or bias that does not broadcast to " + shape_text(normalised));
  }
  const std::vector<std::size_t> s_at = broadcast_offsets(scale.shape, normalised);
  const std::vector<std::size_t> b_at =
      bias ? broadcast_offsets(bias->shape, normalised) : std::vector<std::size_t>{};
  Shape stat_shape = y.shape;
  std::fill(stat_shape.begin() + axis, stat_shape.end(), 1);
  Tensor means(DType::Float32, stat_shape), inv_std(DType::Float32, stat_shape);
  for (std::size_t o = 0; o < outer; ++o) {
    float* v = &y.floats[o * length];
    float mean = 0;
    for (std::size_t j = 0; j < length; ++j) mean += v[j];
    mean /= static_cast<float>(length);
    float var = 0;
    for (std::size_t j = 0; j < length; ++j) var += (v[j] - mean) * (v[j] - mean);
    var /= static_cast<float>(length);
    const float inv = 1.0f / std::sqrt(var + epsilon);
    for (std::size_t j = 0; j < length; ++j) {
      v[j] = (v[j] - mean) * inv * scale.floats[s_at[j]] + (bias ? bias->floats[b_at[j]] : 0.0f);
    }
    means.floats[o] = mean;
    inv_std.floats[o] = inv;
  }
  return {y, means, inv_std};
}

// ReduceMean, ReduceSum, ReduceMax, ReduceMin: axes an attribute until the opset in which they
// became an input (13 for ReduceSum, 18 for the others).
enum class Reduce { Mean, Sum, Max, Min };

std::vector<Tensor> reduce(Context& context, const Node& node, const Inputs& in, Reduce kind) {
  const Tensor& x = need_float(node, in, 0);
  const int input_from = kind == Reduce::Sum ? 13 : 18;
  std::vector<std::int64_t> axes =
      context.opset >= input_from
          ? (in.size() > 1 && in[1] ? int_values(*in[1]) : std::vector<std::int64_t>{})
          : node.ints_attr("axes");
  const bool keep = node.int_attr("keepdims", 1) != 0;
  if (axes.empty() && node.int_attr("noop_with_empty_axes", 0) != 0) return {x};
  std::vector<bool> reduced(x.rank(), axes.empty());
  for (const std::int64_t a : axes) reduced[axis_index(node, a, x.rank())] = true;
  Shape kept_shape = x.shape, out;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    if (reduced[d]) kept_shape[d] = 1;
    if (!reduced[d] || keep) out.push_back(kept_shape[d]);
  }
  const std::vector<std::size_t> to = broadcast_offsets(kept_shape, x.shape);
  Tensor y(DType::Float32, out);
  const float start = kind == Reduce::Max   ? -std::numeric_limits<float>::infinity()
                      : kind == Reduce::Min ? std::numeric_limits<float>::infinity()
                                            : 0.0f;
  std::fill(y.floats.begin(), y.floats.end(), start);
  for (std::size_t e = 0; e < x.size(); ++e) {
    float& acc = y.floats[to[e]];
    const float v = x.floats[e];
    acc = kind == Reduce::Max ? std::max(acc, v) : kind == Reduce::Min ? std::min(acc, v) : acc + v;
  }
  if (kind == Reduce::Mean && y.size()) {
    const auto count = static_cast<float>(x.size() / y.size());
    for (float& v : y.floats) v /= count;
  }
  return {y};
}

std::vector<Tensor> lrn(Context&, const Node& node, const Inputs& in) {
  const Tensor& x = need_float(node, in, 0);
  if (x.rank() < 3) fail(node, "an input of rank " + std::to_string(x.rank()));
  const std::int64_t size = node.int_attr("size", 0);
  if (size < 1) fail(node, "size below 1");
  const float alpha = node.float_attr("alpha", 1e-4f), beta = node.float_attr("beta", 0.75f);
  const float bias = node.float_attr("bias", 1.0f);
  const std::int64_t channels = x.shape[1];
  const auto inner =
      static_cast<std::int64_t>(element_count(Shape(x.shape.begin() + 2, x.shape.end())));
  Tensor y = x;
  const std::int64_t below = (size - 1) / 2, above = size - 1 - below;
  for (std::int64_t n = 0; n < x.shape[0]; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t i = 0; i < inner; ++i) {
        float square_sum = 0;
        for (std::int64_t j = std::max<std::int64_t>(0, c - below);
             j <= std::min(channels - 1, c + above); ++j) {
          const float v = x.floats[static_cast<std::size_t>((n * channels + j) * inner + i)];
          square_sum += v * v;
        }
        float& v = y.floats[static_cast<std::size_t>((n * channels + c) * inner + i)];
        v /= std::pow(bias + alpha / static_cast<float>(size) * square_sum, beta);
      }
    }
  }
  return {y};
}

// Resize and Upsample with mode nearest: each output position's source coordinate by the
// coordinate transformation, rounded by the nearest mode.
std::vector<Tensor> resize(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const std::string mode = node.string_attr("mode", "nearest");
  if (mode != "nearest") fail(node, "mode \"" + mode + "\" not supported (nearest)");
  if (node.int_attr("antialias", 0) != 0) fail(node, "antialias not supported");
  if (node.has("axes")) fail(node, "axes not supported");
  const std::string keep_ratio = node.string_attr("keep_aspect_ratio_policy", "stretch");
  if (keep_ratio != "stretch") fail(node, "keep_aspect_ratio_policy " + keep_ratio);
  // Scales: Upsample's input 1; Resize-10's input 1; from opset 11 input 2, or sizes (input 3).
  const bool upsample = node.op == "Upsample";
  const std::size_t scales_at = upsample || context.opset < 11 ? 1 : 2;
  std::vector<double> scales;
  Shape out = x.shape;
  if (in.size() > 3 && in[3] && in[3]->size() > 0 && !upsample) {
    const std::vector<std::int64_t> sizes = int_values(*in[3]);
    if (sizes.size() != x.rank()) fail(node, "sizes of another rank");
    for (std::size_t d = 0; d < x.rank(); ++d) {
      out[d] = sizes[d];
      scales.push_back(static_cast<double>(sizes[d]) / static_cast<double>(x.shape[d]));
    }
  } else {
    const Tensor& s = need_float(node, in, scales_at);
    if (s.size() != x.rank()) fail(node, "scales of another rank");
    for (std::size_t d = 0; d < x.rank(); ++d) {
      scales.push_back(s.floats[d]);
      out[d] = static_cast<std::int64_t>(std::floor(static_cast<double>(x.shape[d]) * s.floats[d]));
    }
  }
  const std::string transform =
      context.opset < 11 || upsample
          ? "asymmetric"
          : node.string_attr("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = node.string_attr("nearest_mode", "round_prefer_floor");
  static const std::vector<std::string> transforms = {"half_pixel", "asymmetric", "align_corners",
                                                      "pytorch_half_pixel", "tf_half_pixel_for_nn"};
  static const std::vector<std::string> roundings = {"round_prefer_floor", "round_prefer_ceil",
                                                     "floor", "ceil"};
  if (std::find(transforms.begin(), transforms.end(), transform) == transforms.end() ||
      std::find(roundings.begin(), roundings.end(), nearest) == roundings.end()) {
    fail(node, "coordinate_transformation_mode " + transform + " or nearest_mode " + nearest +
                   " not supported");
  }
  // The source index along each dimension, for each output index.
  std::vector<std::vector<std::size_t>> source(x.rank());
  for (std::size_t d = 0; d < x.rank(); ++d) {
    const double in_size = static_cast<double>(x.shape[d]), out_size = static_cast<double>(out[d]);
    for (std::int64_t o = 0; o < out[d]; ++o) {
      const double i = static_cast<double>(o);
      double c = 0;
      if (transform == "half_pixel")
        c = (i + 0.5) / scales[d] - 0.5;
      else if (transform == "asymmetric")
        c = i / scales[d];
      else if (transform == "align_corners")
        c = out_size > 1 ? i * (in_size - 1) / (out_size - 1) : 0;
      else if (transform == "pytorch_half_pixel")
        c = out_size > 1 ? (i + 0.5) / scales[d] - 0.5 : 0;
      else
        c = (i + 0.5) / scales[d];  // tf_half_pixel_for_nn
      double r = 0;
      if (nearest == "floor")
        r = std::floor(c);
      else if (nearest == "ceil")
        r = std::ceil(c);
      else if (c - std::floor(c) == 0.5)
        r = nearest == "round_prefer_floor" ? std::floor(c) : std::ceil(c);
      else
        r = std::round(c);
      source[d].push_back(static_cast<std::size_t>(std::clamp(r, 0.0, in_size - 1)));
    }
  }
  const std::vector<std::size_t> strides = strides_of(x.shape);
  Tensor y(x.dtype, out);
  Shape index(out.size(), 0);
  for (std::size_t e = 0; e < y.size(); ++e) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < out.size(); ++d) {
      at += source[d][static_cast<std::size_t>(index[d])] * strides[d];
    }
    if (y.is_float())
      y.floats[e] = x.floats[at];
    else
      y.ints[e] = x.ints[at];
    for (std::size_t d = out.size(); d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return {y};
}

}  // namespace

void add_nn(Table& t) {
  t["Resize"] = resize;
  t["Upsample"] = resize;
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Conv"] = conv;
  t["MaxPool"] = [](Context& c, const Node& n, const Inputs& i) { return pool(c, n, i, true); };
  t["AveragePool"] = [](Context& c, const Node& n, const Inputs& i) {
    return pool(c, n, i, false);
  };
  t["GlobalMaxPool"] = [](Context& c, const Node& n, const Inputs& i) {
    return global_pool(c, n, i, true);
  };
  t["GlobalAveragePool"] = [](Context& c, const Node& n, const Inputs& i) {
    return global_pool(c, n, i, false);
  };
  t["Softmax"] = [](Context& c, const Node& n, const Inputs& i) { return softmax(c, n, i, false); };
  t["LogSoftmax"] = [](Context& c, const Node& n, const Inputs& i) {
    return softmax(c, n, i, true);
  };
  t["BatchNormalization"] = batch_norm;
  t["LayerNormalization"] = layer_norm;
  t["ReduceMean"] = [](Context& c, const Node& n, const Inputs& i) {
    return reduce(c, n, i, Reduce::Mean);
  };
  t["ReduceSum"] = [](Context& c, const Node& n, const Inputs& i) {
    return reduce(c, n, i, Reduce::Sum);
  };
  t["ReduceMax"] = [](Context& c, const Node& n, const Inputs& i) {
    return reduce(c, n, i, Reduce::Max);
  };
  t["ReduceMin"] = [](Context& c, const Node& n, const Inputs& i) {
    return reduce(c, n, i, Reduce::Min);
  };
  t["LRN"] = lrn;
}

}  // namespace tpu::graph::ops
