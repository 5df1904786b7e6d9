// The network operators: matrix products and convolutions (on the accelerator when there is
// one), pooling, normalisation, softmax and reductions (on the host).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>

#include "ops.hpp"
#include "tpu/nn.hpp"

namespace tpu::graph::ops {
namespace {

// numpy.matmul's shapes: 1-D operands promoted, batch dimensions broadcast; the product is
// one m x k by k x n product per batch element (at a_at[i] * m * k in A and b_at[i] * k * n in
// B), or, where B is one matrix (weights, typically), every row of A in one product.
struct MatmulShape {
  std::size_t m = 0, k = 0, n = 0;
  Shape out;
  bool one_product = false;
  std::vector<std::size_t> a_at, b_at;
};

MatmulShape matmul_shape(const Node& node, Shape a, Shape b) {
  if (a.empty() || b.empty()) fail(node, "a scalar operand");
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  MatmulShape shape;
  shape.m = static_cast<std::size_t>(a[a.size() - 2]);
  shape.k = static_cast<std::size_t>(a.back());
  shape.n = static_cast<std::size_t>(b.back());
  if (static_cast<std::size_t>(b[b.size() - 2]) != shape.k) {
    fail(node, "shapes " + shape_text(a) + " and " + shape_text(b) + " do not multiply");
  }
  const Shape a_batch(a.begin(), a.end() - 2);
  const Shape b_batch(b.begin(), b.end() - 2);
  const Shape batch = broadcast_shapes(node, {a_batch, b_batch});
  shape.out = batch;
  if (!a_vector) shape.out.push_back(static_cast<std::int64_t>(shape.m));
  if (!b_vector) shape.out.push_back(static_cast<std::int64_t>(shape.n));
  if (element_count(b_batch) == 1 && a_batch == batch) {
    shape.one_product = true;
    shape.m *= element_count(batch);
  } else {
    shape.a_at = broadcast_offsets(a_batch, batch);
    shape.b_at = broadcast_offsets(b_batch, batch);
  }
  return shape;
}

// One m x n block of a MatMul's output: A's and B's offsets, and which of B's matrices it takes.
struct MatmulPart {
  std::size_t a_at = 0, b_at = 0, part = 0;
};

// Runs a MatMul's products: `multiply_all(parts)` computes each part's m x n block (one part, the
// whole output, where B is one matrix), which go at `y` in order.
template <typename T, typename MultiplyAll>
void matmul_products(const MatmulShape& shape, std::vector<T>& y, MultiplyAll multiply_all) {
  if (shape.one_product) {
    y = std::move(multiply_all(std::vector<MatmulPart>{{}})[0]);
    return;
  }
  std::vector<MatmulPart> parts;
  for (std::size_t i = 0; i < shape.a_at.size(); ++i) {
    parts.push_back(
        {shape.a_at[i] * shape.m * shape.k, shape.b_at[i] * shape.k * shape.n, shape.b_at[i]});
  }
  const std::vector<std::vector<T>> blocks = multiply_all(parts);
  const std::size_t block = shape.m * shape.n;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::copy(blocks[i].begin(), blocks[i].end(),
              y.begin() + static_cast<std::ptrdiff_t>(i * block));
  }
}

// The products of a MatMul's parts (products(), products_int8()): A and B at each part's
// offsets, B's source with the part, the same epilogue.
template <typename Call, typename T, typename Epilogue>
std::vector<Call> matmul_calls(const MatmulShape& shape, const std::vector<MatmulPart>& parts,
                               const T* a, const T* b, const Tensor* source,
                               const Epilogue& epilogue) {
  std::vector<Call> calls;
  for (const MatmulPart& part : parts) {
    calls.push_back(
        {a + part.a_at, b + part.b_at, shape.m, shape.k, shape.n, {source, part.part}, epilogue});
  }
  return calls;
}

// MatMul as numpy.matmul; a third input is the bias of B's columns that fuse_epilogues moved
// into it from the Add after it.
std::vector<Tensor> matmul(Context& context, const Node& node, const Inputs& in) {
  const Tensor& a = need_float(node, in, 0);
  const Tensor& b = need_float(node, in, 1);
  const MatmulShape shape = matmul_shape(node, a.shape, b.shape);
  const Tensor* bias = in.size() > 2 ? &need_float(node, in, 2) : nullptr;
  if (bias && bias->size() != shape.n) fail(node, "a bias of " + shape_text(bias->shape));
  Tensor y(DType::Float32, shape.out);
  matmul_products(shape, y.floats, [&](const std::vector<MatmulPart>& parts) {
    std::vector<ProductCall> calls = matmul_calls<ProductCall>(
        shape, parts, a.floats.data(), b.floats.data(), in[1],
        ProductEpilogue{bias ? bias->floats.data() : nullptr, node.epilogue, node.bf16_result});
    // B's matrices as their transposes' rows (attention's K, transposed_operands).
    for (ProductCall& call : calls) call.b_transposed = b.stored_transposed;
    return products(context, calls);
  });
  return outputs(std::move(y));
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

  // A C that is a bias goes into the product's epilogue, with the fused activation.
  const std::vector<float> bias = gemm_bias(node, in.size() > 2 ? in[2] : nullptr, n);
  const float alpha = node.float_attr("alpha", 1.0f), beta = node.float_attr("beta", 1.0f);
  if (node.epilogue != Epilogue::None && bias.empty() &&
      (alpha != 1.0f || (in.size() > 2 && in[2]))) {
    fail(node, "an activation fused after an alpha or a C that is no bias");
  }
  // B given transposed is laid out by the host where it writes it (once, for resident weights).
  std::vector<float> c =
      product(context, ta ? at.data() : a.floats.data(), b.floats.data(), m, k, n, {in[1], 0},
              {bias.empty() ? nullptr : bias.data(), node.epilogue, node.bf16_result}, tb, true);
  const Shape out{static_cast<std::int64_t>(m), static_cast<std::int64_t>(n)};
  const bool addend = in.size() > 2 && in[2] && beta != 0.0f;
  if (!bias.empty() || (alpha == 1.0f && !addend))
    return outputs(Tensor::of_floats(out, std::move(c)));
  // alpha and C on the host, into a new tensor: the product's own result buffer goes on only
  // as it came (a compiled model chains products by it).
  std::vector<float> y(c.size());
  for (std::size_t e = 0; e < c.size(); ++e) y[e] = alpha == 1.0f ? c[e] : c[e] * alpha;
  if (addend) {
    const Tensor& added = need_float(node, in, 2);
    if (broadcast_shapes(node, {added.shape, out}) != out) {
      fail(node,
           "a C of shape " + shape_text(added.shape) + " for a " + shape_text(out) + " product");
    }
    const std::vector<std::size_t> offsets = broadcast_offsets(added.shape, out);
    for (std::size_t e = 0; e < y.size(); ++e) y[e] += beta * added.floats[offsets[e]];
  }
  return outputs(Tensor::of_floats(out, std::move(y)));
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

// A convolution's shapes: per group g, an im2col matrix of `rows` (an output pixel each) by
// `depth` (the group's channels times the kernel's taps) times the group's filters (depth x mg).
struct ConvShape {
  bool channels_last = false;  // x (N, spatial..., C) and the result likewise, not NCHW
  Window win;
  std::int64_t group = 1, channels = 0, filters = 0, batch = 0, h = 1, w = 1, cg = 0, mg = 0;
  std::size_t rows = 0, depth = 0, plane = 0;
  Shape out;
};

// Whether a convolution takes and gives its images channels last (NHWC): onnxruntime's NhwcConv,
// and its QLinearConv's channels_last, which fuse_patch_embeddings and the project's networks
// (network_graph) make, ConvInteger's too there.
bool channels_last(const Node& node) {
  return node.op == "NhwcConv" || node.int_attr("channels_last", 0) != 0;
}

// An NCHW shape as an image's tensor has it: itself, or channels last (N, spatial..., C).
Shape laid_out(Shape nchw, bool last) {
  if (last) std::rotate(nchw.begin() + 1, nchw.begin() + 2, nchw.end());
  return nchw;
}

// An image tensor's shape as NCHW: itself, or from channels last.
Shape as_nchw(Shape shape, bool last) {
  if (last) std::rotate(shape.begin() + 1, shape.end() - 1, shape.end());
  return shape;
}

ConvShape conv_shape(const Node& node, const Shape& given, const Shape& w) {
  if (given.size() < 3) fail(node, "an input of rank " + std::to_string(given.size()));
  if (w.size() != given.size()) fail(node, "weights of another rank than the input's");
  ConvShape c;
  c.channels_last = channels_last(node);
  const Shape x = as_nchw(given, c.channels_last);
  c.group = node.int_attr("group", 1);
  c.channels = x[1];
  c.filters = w[0];
  if (c.group < 1 || c.channels % c.group != 0 || c.filters % c.group != 0 ||
      w[1] * c.group != c.channels) {
    fail(node, "group " + std::to_string(c.group) + " with " + std::to_string(c.channels) +
                   " input channels, weights " + shape_text(w));
  }
  const Shape kernel_shape(w.begin() + 2, w.end());
  std::vector<std::int64_t> kernel = node.ints_attr("kernel_shape", kernel_shape);
  if (kernel != kernel_shape) fail(node, "kernel_shape differs from the weights'");
  c.win = window_of(node, x, kernel, false);
  c.h = x.size() == 4 ? x[2] : 1;
  c.w = x.back();
  c.batch = x[0];
  c.cg = c.channels / c.group;
  c.mg = c.filters / c.group;
  c.rows = static_cast<std::size_t>(c.batch * c.win.oh * c.win.ow);
  c.depth = static_cast<std::size_t>(c.cg * c.win.kh * c.win.kw);
  c.plane = static_cast<std::size_t>(c.win.oh * c.win.ow);
  c.out = laid_out(spatial_out(x, c.filters, c.win), c.channels_last);
  return c;
}

// im2col of group g's channels of x: a row per output pixel, columns in (ky, kx, c) order, `pad`
// where the window reaches into the padding. The sums thus run over the kernel's taps, each over
// the channels (N-ORDER's k): the order of the network files' conv2d (docs/networks.md) and of a
// convolution accumulated tap by tap in the core's accumulators. Each image's group channels are
// first laid out channels last, so that a tap of a row is one run of cg values.
template <typename Lane, typename T, typename ToLanes>
std::vector<Lane> im2col(const ConvShape& c, const std::vector<T>& x, std::int64_t g, Lane pad,
                         ToLanes to_lanes) {
  const Window& win = c.win;
  const auto cg = static_cast<std::size_t>(c.cg);
  const auto plane = static_cast<std::size_t>(c.h * c.w);
  std::vector<Lane> cols(c.rows * c.depth);
  std::vector<T> pixels(plane * cg);  // an image's group channels, channels last
  std::vector<Lane> lanes(plane * cg);
  Lane* row = cols.data();
  const auto channels = static_cast<std::size_t>(c.channels);
  for (std::int64_t n = 0; n < c.batch; ++n) {
    const auto image = static_cast<std::size_t>(n) * channels * plane;
    const auto first = static_cast<std::size_t>(g * c.cg);
    if (c.channels_last) {
      for (std::size_t p = 0; p < plane; ++p) {
        std::copy_n(&x[image + p * channels + first], cg, &pixels[p * cg]);
      }
    } else {
      nn::transpose_into(&x[image + first * plane], cg, plane, pixels.data());
    }
    to_lanes(pixels, lanes);
    for (std::int64_t oy = 0; oy < win.oh; ++oy) {
      for (std::int64_t ox = 0; ox < win.ow; ++ox) {
        for (std::int64_t ky = 0; ky < win.kh; ++ky) {
          const std::int64_t iy = oy * win.sh - win.top + ky * win.dh;
          for (std::int64_t kx = 0; kx < win.kw; ++kx, row += cg) {
            const std::int64_t ix = ox * win.sw - win.left + kx * win.dw;
            if (iy >= 0 && iy < c.h && ix >= 0 && ix < c.w) {
              std::memcpy(row, &lanes[static_cast<std::size_t>(iy * c.w + ix) * cg],
                          cg * sizeof(Lane));
            } else {
              std::fill(row, row + cg, pad);
            }
          }
        }
      }
    }
  }
  return cols;
}

// Group g's filters (weights [filters, cg, kh, kw]) as the depth x mg matrix B of its product:
// rows in im2col's (ky, kx, c) order.
template <typename T>
std::vector<T> group_weights(const ConvShape& c, const std::vector<T>& w, std::int64_t g) {
  if (w.empty())
    throw std::logic_error("a convolution's filters asked for where the core alone has them");
  const auto mg = static_cast<std::size_t>(c.mg), cg = static_cast<std::size_t>(c.cg);
  const std::size_t taps = c.depth / cg;
  std::vector<T> b(c.depth * mg);
  for (std::size_t f = 0; f < mg; ++f) {
    const T* filter = &w[(static_cast<std::size_t>(g) * mg + f) * c.depth];
    for (std::size_t ch = 0; ch < cg; ++ch) {
      for (std::size_t tap = 0; tap < taps; ++tap)
        b[(tap * cg + ch) * mg + f] = filter[ch * taps + tap];
    }
  }
  return b;
}

// A group's convolution as the core runs it from its images (plan_conv); empty (no batch) where
// a dimension is beyond the plan's 32 bits.
ConvGeometry conv_geometry(const ConvShape& c) {
  const Window& win = c.win;
  const std::int64_t limit = std::int64_t{1} << 31;
  for (const std::int64_t v : {c.batch, c.cg, c.h, c.w, win.kh, win.kw, win.sh, win.sw, win.dh,
                               win.dw, win.top, win.left, win.bottom, win.right}) {
    if (v >= limit) return {};
  }
  const auto u = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  return {u(c.batch), u(c.cg),   u(c.h),    u(c.w),     u(win.kh),   u(win.kw),     u(win.sh),
          u(win.sw),  u(win.dh), u(win.dw), u(win.top), u(win.left), u(win.bottom), u(win.right)};
}

// Runs a convolution's groups (x's and the weights w's values, `pad` in the padding; the
// weights from `source`, group g's epilogue `epilogue_of(g)`): each on the core from its images
// where `on_core(geometry, images, strides, b, mg, weight, epilogue)` (conv_product or
// conv_product_int8) gives the group's rows x mg results; from the first group it does not,
// the im2col products of every group from there on, together (`run_all(calls)`: products or
// products_int8). The results go into y (N, filters, spatial...) at the group's filters; with
// c.channels_last, x is (N, spatial..., channels) and y (N, spatial..., filters). With
// `bf16_rows` (float products on the core), the im2col rows are made in bf16 from each image
// rounded once, the rows the core takes (ProductCall::a_bf16), not in fp32.
template <typename Call, typename T, typename Result, typename EpilogueOf, typename OnCore,
          typename RunAll>
void conv_groups(const ConvShape& c, const std::vector<T>& x, const std::vector<T>& w, T pad,
                 const Tensor* source, EpilogueOf epilogue_of, std::vector<Result>& y,
                 OnCore on_core, RunAll run_all, bool bf16_rows = false) {
  const ConvGeometry geometry = conv_geometry(c);
  const auto mg = static_cast<std::size_t>(c.mg);
  const auto plane = static_cast<std::size_t>(c.h * c.w);
  const auto groups = static_cast<std::size_t>(c.group);
  const auto channels = static_cast<std::size_t>(c.channels);
  const ImageStrides strides = c.channels_last ? ImageStrides{channels * plane, 1, channels}
                                               : nchw_images(geometry, channels * plane);
  const std::size_t group_offset = static_cast<std::size_t>(c.cg) * (c.channels_last ? 1 : plane);
  // Each group's filters as a depth x mg matrix, B of either product: made where a product
  // asks for them (not where its weights are resident on the core).
  std::vector<std::vector<T>> weights(groups);
  const auto weights_of = [&](std::size_t g) {
    if (weights[g].empty()) weights[g] = group_weights(c, w, static_cast<std::int64_t>(g));
    return weights[g].data();
  };
  std::vector<std::vector<Result>> outs;
  for (std::size_t g = 0; g < groups; ++g) {
    std::optional<std::vector<Result>> out =
        on_core(geometry, &x[g * group_offset], strides,
                ProductB<T>([&weights_of, g] { return weights_of(g); }), mg, WeightOf{source, g},
                epilogue_of(g));
    if (!out) break;
    outs.push_back(std::move(*out));
  }
  // Each remaining group's im2col rows, then their products.
  std::vector<std::vector<T>> cols;
  cols.reserve(groups);  // the calls point into it
  std::vector<Call> calls;
  for (std::size_t g = outs.size(); g < groups; ++g) {
    Call call{nullptr,
              ProductB<T>([&weights_of, g] { return weights_of(g); }),
              c.rows,
              c.depth,
              mg,
              {source, g},
              epilogue_of(g)};
    const auto group = static_cast<std::int64_t>(g);
    if constexpr (std::is_same_v<Call, ProductCall>) {
      if (bf16_rows) {
        call.a_bf16.rows = c.rows;
        call.a_bf16.cols = c.depth;
        call.a_bf16.data =
            im2col(c, x, group, num::bf16_t{0},
                   [](const std::vector<float>& values, std::vector<num::bf16_t>& lanes) {
                     lanes = nn::bf16_matrix(values.data(), 1, values.size()).data;
                   });
        calls.push_back(std::move(call));
        continue;
      }
    }
    cols.push_back(
        im2col(c, x, group, pad,
               [](const std::vector<T>& values, std::vector<T>& lanes) { lanes = values; }));
    call.a = cols.back().data();
    calls.push_back(std::move(call));
  }
  if (!calls.empty()) {
    for (std::vector<Result>& out : run_all(calls)) outs.push_back(std::move(out));
  }
  // Each image's rows (a pixel's filters each) transposed into its group's planes, or, channels
  // last, among the pixel's filters.
  const auto images = static_cast<std::size_t>(c.batch);
  const auto filters = static_cast<std::size_t>(c.filters);
  for (std::size_t g = 0; g < outs.size(); ++g) {
    for (std::size_t n = 0; n < images; ++n) {
      if (c.channels_last) {
        for (std::size_t p = 0; p < c.plane; ++p) {
          std::copy_n(&outs[g][(n * c.plane + p) * mg], mg,
                      &y[(n * c.plane + p) * filters + g * mg]);
        }
      } else {
        nn::transpose_into(&outs[g][n * c.plane * mg], c.plane, mg,
                           &y[(n * filters + g * mg) * c.plane]);
      }
    }
  }
}

// A depthwise convolution's geometry (as many groups as channels, one filter each) for the
// vector unit (tpu/depthwise.hpp); none for another convolution, or a core without a vector unit.
std::optional<DepthwiseSpec> depthwise_geometry(const Context& context, const ConvShape& c) {
  if (!context.accelerator || context.accelerator->config().vector_lanes == 0 ||
      c.group != c.channels || c.filters != c.channels || c.channels >= std::int64_t{1} << 31) {
    return std::nullopt;
  }
  const ConvGeometry g = conv_geometry(c);  // a group's: one channel
  if (g.batch == 0) return std::nullopt;
  DepthwiseSpec spec;
  spec.batch = g.batch;
  spec.channels = static_cast<std::uint32_t>(c.channels);
  spec.height = g.height;
  spec.width = g.width;
  spec.kernel_h = g.kernel_h;
  spec.kernel_w = g.kernel_w;
  spec.stride_h = g.stride_h;
  spec.stride_w = g.stride_w;
  spec.dilation_h = g.dilation_h;
  spec.dilation_w = g.dilation_w;
  spec.pad_top = g.pad_top;
  spec.pad_left = g.pad_left;
  spec.out_h = g.out_h();
  spec.out_w = g.out_w();
  return spec;
}

// A float depthwise convolution on the vector unit (ops::depthwise_on_core), the bits its
// products give on the matrix unit; none where it is not one or the plan does not fit the core.
std::optional<Tensor> depthwise_conv_on_core(Context& context, const Node& node, const ConvShape& c,
                                             const Tensor& x, const Tensor& w, const Tensor* bias) {
  std::optional<DepthwiseSpec> spec = depthwise_geometry(context, c);
  if (!spec) return std::nullopt;
  spec->bias = bias != nullptr;
  spec->func = core_function(node.epilogue);
  spec->bf16_out = node.bf16_result;
  std::optional<std::vector<float>> y = ops::depthwise_on_core(
      context, *spec, x.floats, w.floats, bias ? bias->floats : std::vector<float>{});
  if (!y) return std::nullopt;
  return Tensor::of_floats(c.out, std::move(*y));
}

std::vector<Tensor> conv(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need_float(node, in, 0);
  const Tensor& w = need_float(node, in, 1);
  const ConvShape c = conv_shape(node, x.shape, w.shape);
  // The bias, added in each group's product with the fused activation.
  const Tensor* bias = in.size() > 2 && in[2] ? &need_float(node, in, 2) : nullptr;
  if (bias && bias->size() != static_cast<std::size_t>(c.filters)) {
    fail(node, "a bias of another size");
  }
  // The vector unit's depthwise convolution takes NCHW images (a channels-last one runs as a
  // product a channel).
  if (std::optional<Tensor> y =
          c.channels_last ? std::nullopt : depthwise_conv_on_core(context, node, c, x, w, bias)) {
    return outputs(std::move(*y));
  }
  Tensor y(DType::Float32, c.out);
  const auto mg = static_cast<std::size_t>(c.mg);
  const auto epilogue = [&](std::size_t g) {
    return ProductEpilogue{bias ? &bias->floats[g * mg] : nullptr, node.epilogue, node.bf16_result};
  };
  conv_groups<ProductCall>(
      c, x.floats, w.floats, 0.0f, in[1], epilogue, y.floats,
      [&](auto&&... args) { return conv_product(context, args...); },
      [&](const std::vector<ProductCall>& calls) { return products(context, calls); },
      context.accelerator != nullptr);
  return outputs(std::move(y));
}

// The quantised products: int8 operands, int32 sums, requantised to int8 in the product's
// epilogue (docs/numerics.md's Q-rules) on the core's int8 datapath.

// A quantised product's operands, A at inputs 0-2 and B at 3-5 (value, scale, zero point), and
// its result, whose scale and zero point are inputs `result` and `result` + 1. A is quantised
// per tensor.
struct QuantProduct {
  QuantOperand a, b;
  QuantResult r;
};

QuantProduct quant_product(const Node& node, const Inputs& in, std::size_t result) {
  QuantProduct p{quant_operand(node, in, 0, 1, 2), quant_operand(node, in, 3, 4, 5),
                 quant_result(node, in, result, result + 1)};
  if (p.a.scales.size() != 1) fail(node, "an input quantised per channel");
  return p;
}

// B's zero point: one for the whole tensor (any value), or zeros per channel.
int weight_zero_point(const Node& node, const QuantOperand& w) {
  if (w.zero_points.size() == 1) return w.zero_points[0];
  for (const int zero_point : w.zero_points) {
    if (zero_point != 0) {
      fail(node, "a weight zero point of " + std::to_string(zero_point) +
                     " per channel (per-channel weights are symmetric here: zero points 0)");
    }
  }
  return 0;
}

// An int32 bias of n values (a QLinearConv's B, a QGemm's C), or empty where there is none.
std::vector<std::int32_t> quant_bias(const Node& node, const Inputs& in, std::size_t i,
                                     std::size_t n) {
  if (i >= in.size() || !in[i]) return {};
  const Tensor& b = *in[i];
  if (b.dtype != DType::Int32 || b.size() != n || b.rank() > 2 ||
      (b.rank() == 2 && b.shape[0] != 1)) {
    fail(node, "a bias that is not " + std::to_string(n) + " int32 values");
  }
  return std::vector<std::int32_t>(b.ints.begin(), b.ints.end());
}

QuantEpilogue quant_epilogue(const Node& node, const QuantOperand& x, const QuantOperand& w,
                             const std::vector<std::int32_t>& bias,
                             const std::vector<num::QuantizedMultiplier>& multipliers,
                             const QuantResult& r, std::size_t first_column) {
  return {x.zero_points[0],
          weight_zero_point(node, w),
          bias.empty() ? nullptr : &bias[first_column],
          &multipliers[first_column],
          r.zero_point,
          r.lo,
          r.hi};
}

// An int8 convolution's results (N, filters, spatial...): each group's im2col rows (x's zero
// point, the quantised 0.0, in the padding) times its filters, with `epilogue_of(first filter)`.
template <typename EpilogueOf>
std::vector<std::int32_t> conv_int8(Context& context, const ConvShape& c, const QuantOperand& x,
                                    const QuantOperand& w, const Tensor* source,
                                    EpilogueOf epilogue_of) {
  const auto mg = static_cast<std::size_t>(c.mg);
  std::vector<std::int32_t> y(element_count(c.out));
  conv_groups<ProductCallInt8>(
      c, x.values, w.values, static_cast<std::int8_t>(x.zero_points[0]), source,
      [&](std::size_t g) { return epilogue_of(g * mg); }, y,
      [&](auto&&... args) { return conv_product_int8(context, args...); },
      [&](const std::vector<ProductCallInt8>& calls) { return products_int8(context, calls); });
  return y;
}

// QLinearConv: x (0-2), w (3-5), y's scale and zero point (6, 7), an int32 bias (8).
std::vector<Tensor> qlinear_conv(Context& context, const Node& node, const Inputs& in) {
  const QuantProduct p = quant_product(node, in, 6);
  const QuantOperand& x = p.a;
  const QuantOperand& w = p.b;
  const QuantResult& r = p.r;
  const ConvShape c = conv_shape(node, in[0]->shape, in[3]->shape);
  const auto filters = static_cast<std::size_t>(c.filters);
  const std::vector<std::int32_t> bias = quant_bias(node, in, 8, filters);
  const std::vector<num::QuantizedMultiplier> multipliers =
      requant_multipliers(node, x.scales[0], w.scales, r.scale, filters);
  // A depthwise convolution with symmetric weights on the vector unit: the bits of its products.
  if (std::optional<DepthwiseSpec> spec =
          c.channels_last ? std::nullopt : depthwise_geometry(context, c);
      spec && weight_zero_point(node, w) == 0 && context.accelerator->config().int8) {
    spec->int8 = true;
    spec->bias = !bias.empty();
    spec->input_zero_point = x.zero_points[0];
    spec->output_zero_point = r.zero_point;
    spec->clamp_lo = r.lo;
    spec->clamp_hi = r.hi;
    if (std::optional<std::vector<std::int32_t>> y =
            ops::depthwise_int8_on_core(context, *spec, x.values, w.values, bias, multipliers)) {
      return outputs(quant_tensor(r, c.out, *y));
    }
  }
  const std::vector<std::int32_t> y =
      conv_int8(context, c, x, w, in[3], [&](std::size_t first_filter) {
        return quant_epilogue(node, x, w, bias, multipliers, r, first_filter);
      });
  return outputs(quant_tensor(r, c.out, y));
}

// QLinearMatMul: a (0-2), b (3-5), y's scale and zero point (6, 7); numpy.matmul's shapes.
std::vector<Tensor> qlinear_matmul(Context& context, const Node& node, const Inputs& in) {
  const QuantProduct p = quant_product(node, in, 6);
  const QuantOperand& a = p.a;
  const QuantOperand& b = p.b;
  const QuantResult& r = p.r;
  const MatmulShape shape = matmul_shape(node, in[0]->shape, in[3]->shape);
  const std::vector<num::QuantizedMultiplier> multipliers =
      requant_multipliers(node, a.scales[0], b.scales, r.scale, shape.n);
  std::vector<std::int32_t> y(element_count(shape.out));
  matmul_products(shape, y, [&](const std::vector<MatmulPart>& parts) {
    std::vector<ProductCallInt8> calls =
        matmul_calls<ProductCallInt8>(shape, parts, a.values.data(), b.values.data(), in[3],
                                      quant_epilogue(node, a, b, {}, multipliers, r, 0));
    // B's matrices as their transposes' rows (attention's K, transposed_operands).
    for (ProductCallInt8& call : calls) call.b_transposed = in[3]->stored_transposed;
    return products_int8(context, calls);
  });
  return outputs(quant_tensor(r, shape.out, y));
}

// QGemm (onnxruntime's com.microsoft operator, which fuse_quantized_products makes of a Gemm
// between DequantizeLinear and QuantizeLinear): A (0-2), B (3-5), an int32 C that is a bias row
// (6), y's scale and zero point (7, 8); transB, alpha 1.
std::vector<Tensor> qgemm(Context& context, const Node& node, const Inputs& in) {
  QuantProduct p = quant_product(node, in, 7);
  const QuantOperand& a = p.a;
  QuantOperand& b = p.b;
  const QuantResult& r = p.r;
  if (node.int_attr("transA", 0) != 0 || node.float_attr("alpha", 1.0f) != 1.0f) {
    fail(node, "transA or an alpha other than 1");
  }
  const Shape& as = in[0]->shape;
  const Shape& bs = in[3]->shape;
  if (as.size() != 2 || bs.size() != 2) fail(node, "operands not matrices");
  const bool tb = node.int_attr("transB", 0) != 0;
  const auto m = static_cast<std::size_t>(as[0]), k = static_cast<std::size_t>(as[1]);
  const auto n = static_cast<std::size_t>(bs[tb ? 0 : 1]);
  if (static_cast<std::size_t>(bs[tb ? 1 : 0]) != k) {
    fail(node, "shapes " + shape_text(as) + " and " + shape_text(bs) + " do not multiply");
  }
  if (tb) b.values = nn::transpose(b.values.data(), n, k);
  const std::vector<std::int32_t> bias = quant_bias(node, in, 6, n);
  const std::vector<num::QuantizedMultiplier> multipliers =
      requant_multipliers(node, a.scales[0], b.scales, r.scale, n);
  const std::vector<std::int32_t> y =
      product_int8(context, a.values.data(), b.values.data(), m, k, n, {in[3], 0},
                   quant_epilogue(node, a, b, bias, multipliers, r, 0));
  return outputs(quant_tensor(r, {static_cast<std::int64_t>(m), static_cast<std::int64_t>(n)}, y));
}

// MatMulInteger's and ConvInteger's zero points: A's one for the tensor (as QLinearMatMul's),
// B's one, or one per column that is zero.
QuantEpilogue integer_epilogue(const Node& node, const QuantOperand& a, const QuantOperand& b) {
  if (a.zero_points.size() != 1) fail(node, "an input zero point per row");
  QuantEpilogue epilogue;
  epilogue.input_zero_point = a.zero_points[0];
  epilogue.weight_zero_point = weight_zero_point(node, b);
  return epilogue;
}

// The int32 sums as a tensor.
Tensor int32_tensor(const Shape& shape, const std::vector<std::int32_t>& sums) {
  Tensor y(DType::Int32, shape);
  std::copy(sums.begin(), sums.end(), y.ints.begin());
  return y;
}

// MatMulInteger: a (0) and b (1) with their zero points (2, 3), the int32 sums of
// (a - a_zero_point)(b - b_zero_point) as numpy.matmul's shapes multiply.
std::vector<Tensor> matmul_integer(Context& context, const Node& node, const Inputs& in) {
  const QuantOperand a = integer_operand(node, in, 0, 2);
  const QuantOperand b = integer_operand(node, in, 1, 3);
  const MatmulShape shape = matmul_shape(node, in[0]->shape, in[1]->shape);
  if (b.zero_points.size() != 1 && b.zero_points.size() != shape.n) {
    fail(node, "b's zero points are neither one nor one per column");
  }
  const QuantEpilogue epilogue = integer_epilogue(node, a, b);
  std::vector<std::int32_t> y(element_count(shape.out));
  matmul_products(shape, y, [&](const std::vector<MatmulPart>& parts) {
    return products_int8(context, matmul_calls<ProductCallInt8>(shape, parts, a.values.data(),
                                                                b.values.data(), in[1], epilogue));
  });
  return outputs(int32_tensor(shape.out, y));
}

// ConvInteger: x (0) and w (1) with their zero points (2, 3), Conv's attributes; the int32 sums,
// x's zero point (the quantised 0.0) in the padding.
std::vector<Tensor> conv_integer(Context& context, const Node& node, const Inputs& in) {
  const QuantOperand x = integer_operand(node, in, 0, 2);
  const QuantOperand w = integer_operand(node, in, 1, 3);
  const ConvShape c = conv_shape(node, in[0]->shape, in[1]->shape);
  if (w.zero_points.size() != 1 && w.zero_points.size() != static_cast<std::size_t>(c.filters)) {
    fail(node, "w's zero points are neither one nor one per filter");
  }
  const QuantEpilogue epilogue = integer_epilogue(node, x, w);
  const std::vector<std::int32_t> y =
      conv_int8(context, c, x, w, in[1], [&](std::size_t) { return epilogue; });
  return outputs(int32_tensor(c.out, y));
}

// The positions of a window inside the image, and those in its padding (not beyond it, where
// ceil_mode's last window ends).
struct WindowCount {
  std::int64_t inside = 0, padded = 0;
};
WindowCount count_window(const Window& win, std::int64_t h, std::int64_t w, std::int64_t oy,
                         std::int64_t ox) {
  WindowCount count;
  for (std::int64_t ky = 0; ky < win.kh; ++ky) {
    const std::int64_t iy = oy * win.sh - win.top + ky * win.dh;
    for (std::int64_t kx = 0; kx < win.kw; ++kx) {
      const std::int64_t ix = ox * win.sw - win.left + kx * win.dw;
      if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
        ++count.inside;
      } else if (iy < h + win.bottom && ix < w + win.right) {
        ++count.padded;
      }
    }
  }
  return count;
}

// A pool of `win`'s windows on the vector unit (ops::pool_on_core), the images NCHW (`nchw`) or
// channels last: windows without dilation whose every window has a value inside the image, an
// average dividing by one count or by each window's values inside the image. A max pool of int8 or
// uint8 values (a QDQ model's, its DequantizeLinear and QuantizeLinear fused away) runs as int8
// pooling.
std::optional<Tensor> windows_on_core(Context& context, const Tensor& x, const Shape& nchw,
                                      bool last, const Window& win, bool max, bool count_pad) {
  if (!context.accelerator || context.accelerator->config().vector_lanes == 0 ||
      (!x.is_float() && !max) || win.dh != 1 || win.dw != 1) {
    return std::nullopt;
  }
  const std::int64_t h = nchw.size() == 4 ? nchw[2] : 1, w = nchw.back();
  // An average's divisor: one for every window, or each window's values inside the image
  // (padding not counted), which the plan takes per window; windows whose counts of padding
  // differ (ceil_mode's last, reaching past it) stay on the host.
  std::int64_t count = 0;
  bool counts_differ = false;
  for (std::int64_t oy = 0; oy < win.oh; ++oy) {
    for (std::int64_t ox = 0; ox < win.ow; ++ox) {
      const WindowCount c = count_window(win, h, w, oy, ox);
      const std::int64_t divisor = count_pad ? c.inside + c.padded : c.inside;
      if (c.inside == 0) return std::nullopt;
      counts_differ = counts_differ || (count != 0 && divisor != count);
      count = divisor;
    }
  }
  if (!max && counts_differ && count_pad) return std::nullopt;
  const auto dim = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  PoolSpec spec;
  spec.max = max;
  spec.channels_last = last;
  spec.batch = dim(nchw[0]);
  spec.channels = dim(nchw[1]);
  spec.height = dim(h);
  spec.width = dim(w);
  spec.kernel_h = dim(win.kh);
  spec.kernel_w = dim(win.kw);
  spec.stride_h = dim(win.sh);
  spec.stride_w = dim(win.sw);
  spec.pad_top = dim(win.top);
  spec.pad_left = dim(win.left);
  spec.out_h = dim(win.oh);
  spec.out_w = dim(win.ow);
  spec.count = max ? 1 : dim(count);
  spec.count_inside = !max && counts_differ;
  const Shape out_shape = laid_out(spatial_out(nchw, nchw[1], win), last);
  if (!x.is_float()) {
    // uint8 moved down by 128 and back: the order, and so the maximum, stays.
    const int shift = x.dtype == DType::UInt8 ? 128 : 0;
    std::vector<std::int8_t> values(x.size());
    std::transform(x.ints.begin(), x.ints.end(), values.begin(),
                   [&](std::int64_t v) { return static_cast<std::int8_t>(v - shift); });
    spec.int8 = true;
    std::optional<std::vector<std::int8_t>> y = ops::pool_int8_on_core(context, spec, values);
    if (!y) return std::nullopt;
    Tensor q(x.dtype, out_shape);
    std::transform(y->begin(), y->end(), q.ints.begin(),
                   [&](std::int8_t v) { return std::int64_t{v} + shift; });
    return q;
  }
  std::optional<std::vector<float>> y = ops::pool_on_core(context, spec, x.floats);
  if (!y) return std::nullopt;
  return Tensor::of_floats(out_shape, std::move(*y));
}

// The window of a whole image of x (N x C x H x W, or N x C x W): one output pixel.
Window whole_image(const Shape& x) {
  Window whole;
  whole.kh = x.size() == 4 ? x[2] : 1;
  whole.kw = x.back();
  whole.oh = whole.ow = 1;
  return whole;
}

// MaxPool (of float, int8 or uint8 values, as from opset 12) and AveragePool (of floats) over
// (one or two) spatial dimensions: on the vector unit where windows_on_core takes it, else on the
// host.
std::vector<Tensor> pool(Context& context, const Node& node, const Inputs& in, bool max) {
  const Tensor& x =
      max && !need(node, in, 0).is_float() ? need(node, in, 0) : need_float(node, in, 0);
  if (!x.is_float() && x.dtype != DType::Int8 && x.dtype != DType::UInt8) {
    fail(node, std::string("an input of type ") + dtype_name(x.dtype));
  }
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) fail(node, "the Indices output");
  if (x.rank() < 3) fail(node, "an input of rank " + std::to_string(x.rank()));
  const bool last = channels_last(node);
  const Shape nchw = as_nchw(x.shape, last);
  const bool ceil_mode = node.int_attr("ceil_mode", 0) != 0;
  const Window win = window_of(node, nchw, node.ints_attr("kernel_shape"), ceil_mode);
  if (!max && node.has("dilations") && (win.dh != 1 || win.dw != 1)) {
    fail(node, "dilations not supported for AveragePool");
  }
  const bool count_pad = node.int_attr("count_include_pad", 0) != 0;
  if (std::optional<Tensor> y = windows_on_core(context, x, nchw, last, win, max, count_pad)) {
    return outputs(std::move(*y));
  }
  const std::int64_t h = nchw.size() == 4 ? nchw[2] : 1, w = nchw.back(), c = nchw[1];
  const std::int64_t planes = nchw[0] * c;
  Tensor y(x.dtype, laid_out(spatial_out(nchw, c, win), last));
  // Value (plane p = n * C + channel, pixel) of x, and of y, in their layouts.
  const auto at = [&](std::int64_t p, std::int64_t pixel, std::int64_t pixels) {
    return static_cast<std::size_t>(last ? ((p / c) * pixels + pixel) * c + p % c
                                         : p * pixels + pixel);
  };
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < win.oh; ++oy) {
      for (std::int64_t ox = 0; ox < win.ow; ++ox) {
        const std::size_t e = at(p, oy * win.ow + ox, win.oh * win.ow);
        float best = -std::numeric_limits<float>::infinity(), sum = 0;
        for (std::int64_t ky = 0; ky < win.kh; ++ky) {
          const std::int64_t iy = oy * win.sh - win.top + ky * win.dh;
          for (std::int64_t kx = 0; kx < win.kw; ++kx) {
            const std::int64_t ix = ox * win.sw - win.left + kx * win.dw;
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
              // int8 and uint8 values are exact in float.
              const auto v = static_cast<float>(x.value(at(p, iy * w + ix, h * w)));
              best = std::max(best, v);
              sum += v;
            }
          }
        }
        const WindowCount count = count_window(win, h, w, oy, ox);
        if (!x.is_float()) {
          if (count.inside == 0) fail(node, "a window wholly in the padding of integer values");
          y.ints[e] = static_cast<std::int64_t>(best);
          continue;
        }
        y.floats[e] =
            max ? best
                : sum / static_cast<float>(count_pad ? count.inside + count.padded : count.inside);
      }
    }
  }
  return outputs(std::move(y));
}

// GlobalMaxPool and GlobalAveragePool: a window of the whole image, on the vector unit where
// windows_on_core takes it.
std::vector<Tensor> global_pool(Context& context, const Node& node, const Inputs& in, bool max) {
  const Tensor& x = need_float(node, in, 0);
  if (x.rank() < 3) fail(node, "an input of rank " + std::to_string(x.rank()));
  Shape out = x.shape;
  std::fill(out.begin() + 2, out.end(), 1);
  if (x.rank() <= 4) {
    if (std::optional<Tensor> y =
            windows_on_core(context, x, x.shape, false, whole_image(x.shape), max, false)) {
      return outputs(std::move(*y));
    }
  }
  const std::size_t planes = static_cast<std::size_t>(x.shape[0] * x.shape[1]);
  const std::size_t plane = planes ? x.size() / planes : 0;
  Tensor y(DType::Float32, out);
  for (std::size_t p = 0; p < planes; ++p) {
    const float* v = &x.floats[p * plane];
    float acc = max ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (std::size_t i = 0; i < plane; ++i) acc = max ? std::max(acc, v[i]) : acc + v[i];
    y.floats[p] = max ? acc : acc / static_cast<float>(plane);
  }
  return outputs(std::move(y));
}

// Softmax and LogSoftmax: along one axis from opset 13, over the dimensions from `axis` on
// (the input as a 2-D matrix) before it. A Softmax over the last dimensions runs on a core with
// a vector unit (softmax_on_core); the rest on the host, in fp32.
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
  if (!log && inner == 1 && softmax_on_core(context, y.floats, outer, length)) {
    return outputs(std::move(y));
  }
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
  return outputs(std::move(y));
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
  return outputs(std::move(y));
}

std::vector<Tensor> layer_norm(Context& context, const Node& node, const Inputs& in) {
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
  // On the vector unit where only Y is wanted and the scale and bias have a value for each of
  // a row's (N-LAYERNORM: the variance's rsqrt by the table).
  const bool only_y = std::all_of(node.outputs.begin() + 1, node.outputs.end(),
                                  [](const std::string& name) { return name.empty(); });
  if (only_y && scale.size() == length && (!bias || bias->size() == length) &&
      outer <= UINT32_MAX && length <= UINT32_MAX) {
    LayerNormSpec spec;
    spec.rows = static_cast<std::uint32_t>(outer);
    spec.length = static_cast<std::uint32_t>(length);
    std::memcpy(&spec.epsilon, &epsilon, sizeof epsilon);
    spec.has_beta = bias != nullptr;
    if (std::optional<std::vector<float>> on_core = layernorm_on_core(
            context, spec, y.floats, scale.floats, bias ? bias->floats : std::vector<float>{})) {
      y.floats = std::move(*on_core);
      return outputs(std::move(y));
    }
  }
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
  return outputs(std::move(y), std::move(means), std::move(inv_std));
}

// ReduceMean, ReduceSum, ReduceMax, ReduceMin: axes an attribute until the opset in which they
// became an input (13 for ReduceSum, 18 for the others).
enum class Reduce { Mean, Sum, Max, Min };

// A reduction's shapes: x's with the reduced axes 1 (`kept`), the output's (`out`: without them
// unless kept), and whether it is over an image's pixels (rank 3 or 4, every axis after the
// channels): a global pool, which the vector unit takes.
struct Reduction {
  Shape kept, out;
  bool spatial = false;
};
Reduction reduction_of(const Shape& x, const std::vector<bool>& reduced, bool keep) {
  Reduction r;
  r.kept = x;
  for (std::size_t d = 0; d < x.size(); ++d) {
    if (reduced[d]) r.kept[d] = 1;
    if (!reduced[d] || keep) r.out.push_back(r.kept[d]);
  }
  r.spatial = (x.size() == 3 || x.size() == 4) && !reduced[0] && !reduced[1] &&
              std::all_of(reduced.begin() + 2, reduced.end(), [](bool d) { return d; });
  return r;
}

// A reduction over one block of axes with others after it, x as [outer, R, inner]: each of the
// outer x inner results folds R values `inner` apart, as a global pool folds the pixels of
// images of R pixels with their `inner` channels last (a transformer's mean over its tokens).
std::optional<PoolSpec> middle_reduction(const Shape& x, const std::vector<bool>& reduced) {
  const auto first = std::find(reduced.begin(), reduced.end(), true);
  const auto end = std::find(first, reduced.end(), false);
  if (first == reduced.end() || end == reduced.end() ||
      std::find(end, reduced.end(), true) != reduced.end()) {
    return std::nullopt;  // none, at the end (the spatial pools' case), or not one block
  }
  const auto span = [&](std::vector<bool>::const_iterator from,
                        std::vector<bool>::const_iterator to) {
    return element_count(
        Shape(x.begin() + (from - reduced.begin()), x.begin() + (to - reduced.begin())));
  };
  const std::size_t outer = span(reduced.begin(), first), count = span(first, end),
                    inner = span(end, reduced.end());
  if (outer == 0 || count == 0 || inner == 0 || outer > UINT32_MAX || count > UINT32_MAX ||
      inner > UINT32_MAX) {
    return std::nullopt;
  }
  PoolSpec spec;
  spec.batch = static_cast<std::uint32_t>(outer);
  spec.channels = static_cast<std::uint32_t>(inner);
  spec.height = spec.kernel_h = static_cast<std::uint32_t>(count);
  spec.width = spec.kernel_w = spec.out_h = spec.out_w = 1;
  spec.count = static_cast<std::uint32_t>(count);
  spec.channels_last = true;
  return spec;
}

std::vector<Tensor> reduce(Context& context, const Node& node, const Inputs& in, Reduce kind) {
  const Tensor& x = need_float(node, in, 0);
  const int input_from = kind == Reduce::Sum ? 13 : 18;
  std::vector<std::int64_t> axes =
      context.opset >= input_from
          ? (in.size() > 1 && in[1] ? int_values(*in[1]) : std::vector<std::int64_t>{})
          : node.ints_attr("axes");
  const bool keep = node.int_attr("keepdims", 1) != 0;
  if (axes.empty() && node.int_attr("noop_with_empty_axes", 0) != 0) return outputs(x);
  std::vector<bool> reduced(x.rank(), axes.empty());
  for (const std::int64_t a : axes) reduced[axis_index(node, a, x.rank())] = true;
  const Reduction shapes = reduction_of(x.shape, reduced, keep);
  const Shape& kept_shape = shapes.kept;
  const Shape& out = shapes.out;
  // A mean or maximum over an image's pixels (PyTorch's adaptive pooling to 1 x 1 exports
  // as one): a global pool, on the vector unit where it can.
  if (shapes.spatial && (kind == Reduce::Mean || kind == Reduce::Max)) {
    if (std::optional<Tensor> y = windows_on_core(context, x, x.shape, false, whole_image(x.shape),
                                                  kind == Reduce::Max, false)) {
      y->shape = out;
      return outputs(std::move(*y));
    }
  }
  std::optional<PoolSpec> middle = middle_reduction(x.shape, reduced);
  if (middle && (kind == Reduce::Mean || kind == Reduce::Max)) {
    middle->max = kind == Reduce::Max;
    if (middle->max) middle->count = 1;
    if (std::optional<std::vector<float>> y = pool_on_core(context, *middle, x.floats)) {
      return outputs(Tensor::of_floats(out, std::move(*y)));
    }
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
  return outputs(std::move(y));
}

// QLinearReduceMean and QLinearGlobalAveragePool (onnxruntime's operators, which
// fuse_quantized_products makes of a DequantizeLinear, a ReduceMean or GlobalAveragePool and a
// QuantizeLinear): Q-MEAN over the axes (every axis after the channels for the global pool,
// whose dimensions stay). A mean over an image's pixels (rank 3 or 4) runs on the vector unit of
// a core with the int8 datapath; the rest on the host, the same bits.
std::vector<Tensor> quant_mean(Context& context, const Node& node, const Inputs& in, bool global) {
  const QuantOperand x = quant_operand(node, in, 0, 1, 2);
  if (x.scales.size() != 1) fail(node, "scales per channel");
  const QuantResult r = quant_result(node, in, 3, 4);
  const Shape& shape = need(node, in, 0).shape;
  if (global && shape.size() < 3) fail(node, "an input of rank " + std::to_string(shape.size()));
  std::vector<bool> reduced(shape.size(), false);
  if (global) {
    std::fill(reduced.begin() + 2, reduced.end(), true);
  } else {
    const std::vector<std::int64_t> axes = node.ints_attr("axes");
    if (axes.empty()) fail(node, "no axes");
    for (const std::int64_t a : axes) reduced[axis_index(node, a, shape.size())] = true;
  }
  const Reduction shapes =
      reduction_of(shape, reduced, global || node.int_attr("keepdims", 1) != 0);
  const Shape& kept_shape = shapes.kept;
  const Shape& out = shapes.out;
  const std::size_t outputs_count = element_count(kept_shape);
  const std::size_t count = outputs_count ? x.values.size() / outputs_count : 0;
  if (count == 0) fail(node, "a mean of no values");
  num::QuantMeanParams params;
  try {
    params = num::quant_mean_params(x.scales[0], x.zero_points[0], r.scale, r.zero_point, count,
                                    quant_activation(node));
  } catch (const std::invalid_argument& e) {
    fail(node, e.what());
  }
  if (shapes.spatial && shape[0] > 0 && shape[1] > 0) {
    const Window whole = whole_image(shape);
    const auto dim = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    PoolSpec spec;
    spec.max = false;
    spec.batch = dim(shape[0]);
    spec.channels = dim(shape[1]);
    spec.height = spec.kernel_h = dim(whole.kh);
    spec.width = spec.kernel_w = dim(whole.kw);
    spec.out_h = spec.out_w = 1;
    spec.count = dim(count);
    spec.int8 = true;
    spec.mean = params;
    if (std::optional<std::vector<std::int8_t>> y = pool_int8_on_core(context, spec, x.values)) {
      return outputs(quant_tensor(r, out, std::vector<std::int32_t>(y->begin(), y->end())));
    }
  }
  if (std::optional<PoolSpec> middle = middle_reduction(shape, reduced)) {
    middle->max = false;
    middle->int8 = true;
    middle->mean = params;
    if (std::optional<std::vector<std::int8_t>> y = pool_int8_on_core(context, *middle, x.values)) {
      return outputs(quant_tensor(r, out, std::vector<std::int32_t>(y->begin(), y->end())));
    }
  }
  const std::vector<std::size_t> to = broadcast_offsets(kept_shape, shape);
  std::vector<std::int64_t> sums(outputs_count, 0);
  for (std::size_t e = 0; e < x.values.size(); ++e) sums[to[e]] += x.values[e];
  std::vector<std::int32_t> y(outputs_count);
  // A sum of at most 2^22 int8 values (quant_mean_params) fits in int32.
  for (std::size_t o = 0; o < outputs_count; ++o) {
    y[o] = num::mean_int8(static_cast<std::int32_t>(sums[o]), params);
  }
  return outputs(quant_tensor(r, out, y));
}

// ArgMax and ArgMin along one axis: the index (int64) of the first extreme value, or of the last
// with select_last_index; NaN counts as the extreme, as onnxruntime's comparisons leave it.
std::vector<Tensor> arg_extreme(Context&, const Node& node, const Inputs& in, bool max) {
  const Tensor& x = need_float(node, in, 0);
  if (x.rank() == 0) fail(node, "a scalar input");
  const std::size_t axis = axis_index(node, node.int_attr("axis", 0), x.rank());
  const bool keep = node.int_attr("keepdims", 1) != 0;
  const bool last = node.int_attr("select_last_index", 0) != 0;
  Shape out;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    if (d != axis) {
      out.push_back(x.shape[d]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  const auto extent = static_cast<std::size_t>(x.shape[axis]);
  if (extent == 0) fail(node, "an empty axis");
  std::size_t inner = 1;
  for (std::size_t d = axis + 1; d < x.rank(); ++d) inner *= static_cast<std::size_t>(x.shape[d]);
  Tensor y(DType::Int64, out);
  for (std::size_t o = 0; o < y.size(); ++o) {
    const float* first = &x.floats[(o / inner) * extent * inner + o % inner];
    std::size_t best = 0;
    for (std::size_t i = 1; i < extent; ++i) {
      const float v = first[i * inner], b = first[best * inner];
      const bool better = std::isnan(b)   ? false
                          : std::isnan(v) ? true
                          : max           ? (last ? v >= b : v > b)
                                          : (last ? v <= b : v < b);
      if (better) best = i;
    }
    y.ints[o] = static_cast<std::int64_t>(best);
  }
  return outputs(std::move(y));
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
  return outputs(std::move(y));
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
  return outputs(std::move(y));
}

}  // namespace

void add_nn(Table& t) {
  t["Resize"] = resize;
  t["Upsample"] = resize;
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Conv"] = conv;
  t["NhwcConv"] = conv;
  t["QLinearConv"] = qlinear_conv;
  t["QLinearMatMul"] = qlinear_matmul;
  t["QGemm"] = qgemm;
  t["MatMulInteger"] = matmul_integer;
  t["ConvInteger"] = conv_integer;
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
  t["QLinearReduceMean"] = [](Context& c, const Node& n, const Inputs& i) {
    return quant_mean(c, n, i, false);
  };
  t["QLinearGlobalAveragePool"] = [](Context& c, const Node& n, const Inputs& i) {
    return quant_mean(c, n, i, true);
  };
  t["LRN"] = lrn;
  t["ArgMax"] = [](Context& c, const Node& n, const Inputs& i) {
    return arg_extreme(c, n, i, true);
  };
  t["ArgMin"] = [](Context& c, const Node& n, const Inputs& i) {
    return arg_extreme(c, n, i, false);
  };
}

}  // namespace tpu::graph::ops
