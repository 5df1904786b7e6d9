// Random convolutions of the compiler's plan_conv and their expectation: the im2col matrix of
// the images (a row per output pixel, columns in (ky, kx, c) order, the padding value where a
// window reaches past the image), written here from the definition of a convolution, whose
// product with the filters (reference_gemm) a convolution's plan must give bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "oracle/operand_sets.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/compiler.hpp"

namespace tpu::test {

// Images of `total_channels` channels, of which the convolution takes `geometry.channels` from
// `first_channel` on (a group of a grouped convolution): its images as plan_conv's writer
// reads them.
template <typename T>
struct ConvImages {
  ConvGeometry geometry;
  std::uint32_t total_channels = 0, first_channel = 0;
  std::vector<T> values;  // N x total_channels x H x W

  std::size_t plane() const { return std::size_t{geometry.height} * geometry.width; }
  const T* first() const { return values.data() + first_channel * plane(); }
  std::size_t image_stride() const { return total_channels * plane(); }
  ImageStrides strides() const { return nchw_images(geometry, image_stride()); }

  // The im2col matrix: a row per output pixel (n, oy, ox), taps x channels columns.
  num::Matrix<T> im2col(T pad) const {
    const ConvGeometry& g = geometry;
    num::Matrix<T> cols(std::size_t{g.batch} * g.out_h() * g.out_w(),
                        std::size_t{g.taps()} * g.channels, pad);
    std::size_t row = 0;
    for (std::uint32_t n = 0; n < g.batch; ++n) {
      for (std::uint32_t oy = 0; oy < g.out_h(); ++oy) {
        for (std::uint32_t ox = 0; ox < g.out_w(); ++ox, ++row) {
          for (std::uint32_t ky = 0; ky < g.kernel_h; ++ky) {
            for (std::uint32_t kx = 0; kx < g.kernel_w; ++kx) {
              const std::int64_t y = std::int64_t{oy} * g.stride_h + ky * g.dilation_h - g.pad_top;
              const std::int64_t x = std::int64_t{ox} * g.stride_w + kx * g.dilation_w - g.pad_left;
              if (y < 0 || y >= g.height || x < 0 || x >= g.width) continue;
              for (std::uint32_t c = 0; c < g.channels; ++c) {
                cols.at(row, (ky * g.kernel_w + kx) * g.channels + c) =
                    first()[n * image_stride() + c * plane() + y * g.width + x];
              }
            }
          }
        }
      }
    }
    return cols;
  }
};

// N square images of C channels, size x size, a square kernel with `pad` pixels of padding on
// every side, stride and dilation 1.
inline ConvGeometry square_conv(std::uint32_t batch, std::uint32_t channels, std::uint32_t size,
                                std::uint32_t kernel, std::uint32_t pad) {
  ConvGeometry g;
  g.batch = batch;
  g.channels = channels;
  g.height = g.width = size;
  g.kernel_h = g.kernel_w = kernel;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
  return g;
}

// A random geometry whose kernel fits its padded image: up to 2 images, up to `max_channels`
// channels, images up to 7 x 7, kernels up to 3 x 3, strides and dilations up to 2, padding
// up to 2 on each side.
inline ConvGeometry random_conv_geometry(oracle::OperandRng& rng, std::uint32_t max_channels) {
  for (;;) {
    ConvGeometry g;
    const auto pick = [&](std::uint64_t lo, std::uint64_t hi) {
      return static_cast<std::uint32_t>(rng.uniform(lo, hi));
    };
    g.batch = pick(1, 2);
    g.channels = pick(1, max_channels);
    g.height = pick(1, 7);
    g.width = pick(1, 7);
    g.kernel_h = pick(1, 3);
    g.kernel_w = pick(1, 3);
    g.stride_h = pick(1, 2);
    g.stride_w = pick(1, 2);
    g.dilation_h = pick(1, 2);
    g.dilation_w = pick(1, 2);
    g.pad_top = pick(0, 2);
    g.pad_left = pick(0, 2);
    g.pad_bottom = pick(0, 2);
    g.pad_right = pick(0, 2);
    if (g.out_h() > 0 && g.out_w() > 0) return g;
  }
}

inline std::string describe(const ConvGeometry& g) {
  const auto s = [](std::uint32_t v) { return std::to_string(v); };
  return s(g.batch) + "x" + s(g.channels) + "x" + s(g.height) + "x" + s(g.width) + " kernel " +
         s(g.kernel_h) + "x" + s(g.kernel_w) + " stride " + s(g.stride_h) + "," + s(g.stride_w) +
         " dilation " + s(g.dilation_h) + "," + s(g.dilation_w) + " pads " + s(g.pad_top) + "," +
         s(g.pad_left) + "," + s(g.pad_bottom) + "," + s(g.pad_right);
}

// Images of the geometry within up to 3 more channels, each value from `value()`.
template <typename T, typename Value>
ConvImages<T> random_conv_images(oracle::OperandRng& rng, const ConvGeometry& g, Value value) {
  ConvImages<T> images;
  images.geometry = g;
  images.first_channel = static_cast<std::uint32_t>(rng.uniform(0, 2));
  images.total_channels =
      g.channels + images.first_channel + static_cast<std::uint32_t>(rng.uniform(0, 1));
  images.values.resize(std::size_t{g.batch} * images.total_channels * g.height * g.width);
  for (T& v : images.values) v = value();
  return images;
}

// A random convolution case of one type (bf16: T bf16_t, Columns the bias; int8: T int8_t,
// Columns Q-REQ's): the spec of its plan (N, types, epilogue), its images, its filters as the
// im2col product's B, its columns (used where the spec has them), and its expected result.
template <typename T, typename Columns>
struct ConvCase {
  GemmSpec spec;
  ConvImages<T> images;
  num::Matrix<T> b;
  Columns columns;

  const ConvGeometry& geometry() const { return images.geometry; }
  const Columns* columns_used() const {
    if constexpr (std::is_same_v<T, std::int8_t>) {
      return spec.out == OutType::Int8 ? &columns : nullptr;
    } else {
      return spec.has_bias ? &columns : nullptr;
    }
  }
  // The im2col product's spec, and its result by the reference computation (the padding +0,
  // or the input zero point).
  GemmSpec im2col_spec() const {
    GemmSpec s = spec;
    s.m = geometry().batch * geometry().out_h() * geometry().out_w();
    s.k = geometry().taps() * geometry().channels;
    return s;
  }
  auto expected() const {
    return reference_gemm(im2col_spec(), images.im2col(static_cast<T>(spec.input_zero_point)), b,
                          nullptr, columns_used());
  }
  std::string describe() const {
    return test::describe(geometry()) + " n " + std::to_string(spec.n) + " act " +
           std::to_string(static_cast<int>(spec.act)) + " za " +
           std::to_string(spec.input_zero_point);
  }
};

using Bf16ConvCase = ConvCase<num::bf16_t, std::vector<num::fp32_t>>;
using Int8ConvCase = ConvCase<std::int8_t, RequantColumns>;

// A bf16 case of the geometry with up to max_n filters: any epilogue, fp32 or bf16 results,
// operands with special values mixed in.
inline Bf16ConvCase random_bf16_conv(oracle::OperandRng& rng, const ConvGeometry& g,
                                     std::uint32_t max_n, unsigned func_count) {
  Bf16ConvCase c;
  c.spec.n = static_cast<std::uint32_t>(rng.uniform(1, max_n));
  c.spec.has_bias = rng.uniform(0, 1);
  c.spec.act = static_cast<isa::Func>(rng.uniform(0, func_count - 1));
  if (c.spec.act == isa::Func::Leaky) c.spec.alpha = rng.bf16();
  c.spec.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
  const num::MatrixBf16 values = oracle::random_bf16_matrix(
      rng, 1, std::size_t{g.batch} * (g.channels + 3) * g.height * g.width, 5);
  std::size_t next = 0;
  c.images = random_conv_images<num::bf16_t>(rng, g, [&] { return values.data[next++]; });
  c.b = oracle::random_bf16_matrix(rng, std::size_t{g.taps()} * g.channels, c.spec.n, 5);
  c.columns = oracle::random_seed_matrix(rng, 1, c.spec.n).data;
  return c;
}

// An int8 case of the geometry with up to max_n filters: a random input zero point (0 in a third
// of the `trial`s), requantised to int8 (odd trials; relu's clamp in a fifth) or int32 sums.
inline Int8ConvCase random_int8_conv(oracle::OperandRng& rng, const ConvGeometry& g,
                                     std::uint32_t max_n, int trial) {
  const auto int8 = [&] { return static_cast<std::int8_t>(int(rng.uniform(0, 255)) - 128); };
  Int8ConvCase c;
  GemmSpec& s = c.spec;
  s.in = InType::Int8;
  s.n = static_cast<std::uint32_t>(rng.uniform(1, max_n));
  s.out = trial % 2 ? OutType::Int8 : OutType::Int32;
  s.input_zero_point = trial % 3 ? int8() : 0;
  if (s.out == OutType::Int8) {
    s.output_zero_point = int8();
    s.clamp_lo = trial % 5 ? -128 : s.output_zero_point;
    for (std::uint32_t j = 0; j < s.n; ++j) {
      c.columns.bias.push_back(static_cast<std::int32_t>(rng.uniform(0, 1u << 16)) - (1 << 15));
      c.columns.multiplier.push_back(
          static_cast<std::int32_t>(rng.uniform(1u << 30, (1u << 31) - 1)));
      c.columns.shift.push_back(-static_cast<int>(rng.uniform(4, 12)));
    }
  }
  c.images = random_conv_images<std::int8_t>(rng, g, int8);
  c.b = num::MatrixI8(std::size_t{g.taps()} * g.channels, s.n);
  for (std::int8_t& v : c.b.data) v = int8();
  return c;
}

}  // namespace tpu::test
