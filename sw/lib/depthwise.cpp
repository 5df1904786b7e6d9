#include "tpu/depthwise.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "acc_rows.hpp"
#include "tpu/array_fold.hpp"
#include "tpu/nn.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

// Accumulator row 0 holds +0 (int8: 0) in every lane, the seed of the folds; the filters follow
// it, tap by tap, each tap's tiles in order, then the bias (int8: each tile's bias, multiplier
// and shift). Each bank keeps that many rows free at its start, so that both hold bands alike.
constexpr std::uint32_t kZeroRow = 0, kFilterRow = 1;

bool core_function(isa::Func f) {
  switch (f) {
    case isa::Func::None:
    case isa::Func::Relu:
    case isa::Func::Relu6:
    case isa::Func::Sigmoid:
    case isa::Func::Tanh:
    case isa::Func::Gelu:
      return true;
    default:
      return false;
  }
}

void check_spec(const HardwareConfig& config, const DepthwiseSpec& s) {
  if (config.vector_lanes == 0) {
    throw std::invalid_argument("a depthwise convolution on the core needs a vector unit; " +
                                config.name() + " has none");
  }
  if (s.batch == 0 || s.channels == 0 || s.height == 0 || s.width == 0 || s.out_h == 0 ||
      s.out_w == 0) {
    throw std::invalid_argument("a depthwise convolution of an empty tensor");
  }
  if (s.kernel_h == 0 || s.kernel_w == 0 || s.stride_h == 0 || s.stride_w == 0 ||
      s.dilation_h == 0 || s.dilation_w == 0) {
    throw std::invalid_argument("a depthwise convolution with a kernel, stride or dilation of 0");
  }
  if (!core_function(s.func)) {
    throw std::invalid_argument(
        "a depthwise convolution's function is relu, relu6, sigmoid, tanh, "
        "gelu or none");
  }
  if (s.int8) {
    if (!config.int8) {
      throw std::invalid_argument("an int8 depthwise convolution needs the int8 datapath; " +
                                  config.name() + " has none");
    }
    if (s.func != isa::Func::None || s.bf16_out) {
      throw std::invalid_argument(
          "an int8 depthwise convolution takes its activation as the requantisation's clamp");
    }
    const auto int8 = [](int v) { return v >= -128 && v <= 127; };
    if (!int8(s.input_zero_point) || !int8(s.output_zero_point) || !int8(s.clamp_lo) ||
        !int8(s.clamp_hi) || s.clamp_lo > s.clamp_hi) {
      throw std::invalid_argument(
          "an int8 depthwise convolution's zero points and clamp are int8 values, the clamp "
          "ordered");
    }
  } else if (!config.float_datapath) {
    throw std::invalid_argument("a float depthwise convolution needs the float datapath; " +
                                config.name() + " has none");
  }
}

// Accumulator rows of constants: the zero row, the filters, and the bias (int8: three rows a
// tile).
std::uint64_t const_rows_of(const DepthwiseSpec& s, std::uint32_t tiles) {
  const std::uint64_t bias_rows = s.int8 ? 3 : s.bias ? 1 : 0;
  return 1 + (std::uint64_t{s.taps()} + bias_rows) * tiles;
}

// The image with its padding: rows and columns from the top-left padding to the furthest any
// window reaches (or the image's end).
struct Padded {
  std::uint32_t height = 0, width = 0;
};
Padded padded_of(const DepthwiseSpec& s) {
  const std::uint64_t reach_h =
      std::uint64_t{s.out_h - 1} * s.stride_h + std::uint64_t{s.kernel_h - 1} * s.dilation_h + 1;
  const std::uint64_t reach_w =
      std::uint64_t{s.out_w - 1} * s.stride_w + std::uint64_t{s.kernel_w - 1} * s.dilation_w + 1;
  const std::uint64_t h = std::max<std::uint64_t>(reach_h, std::uint64_t{s.pad_top} + s.height);
  const std::uint64_t w = std::max<std::uint64_t>(reach_w, std::uint64_t{s.pad_left} + s.width);
  if (h > 0xFFFF || w > 0xFFFF) {
    throw std::invalid_argument("a depthwise convolution's padded image is too large for the core");
  }
  return {static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(w)};
}

// A pass: channel tiles [tile, tile + tiles) of images [image, image + images), output rows
// [out_row, out_row + out_rows) of each and the padded rows [row, row + rows) they read.
struct Band {
  std::uint32_t image = 0, images = 1;
  std::uint32_t tile = 0, tiles = 0;
  std::uint32_t out_row = 0, out_rows = 0;
  std::uint32_t row = 0, rows = 0;
};

// Padded rows `count` output rows read.
std::uint64_t rows_read(const DepthwiseSpec& s, std::uint64_t count) {
  return (count - 1) * s.stride_h + std::uint64_t{s.kernel_h - 1} * s.dilation_h + 1;
}

// `rows` unified-buffer rows from row `ub`, read from host `host` on (rows `stride` bytes apart:
// 0 for the padding's row).
struct Segment {
  std::uint32_t ub = 0, rows = 0;
  std::uint64_t host = 0;
};

// READ_HOSTs of the segments: runs of one length whose unified-buffer rows and host addresses
// advance by the same steps become one instruction.
void load_segments(isa::ProgramBuilder& p, const std::vector<Segment>& segments,
                   std::uint32_t stride, bool int8) {
  std::size_t i = 0;
  while (i < segments.size()) {
    const Segment& first = segments[i];
    std::size_t count = 1;
    std::uint64_t ub_step = 0, host_step = 0;
    if (i + 1 < segments.size() && segments[i + 1].rows == first.rows &&
        segments[i + 1].ub > first.ub && segments[i + 1].host >= first.host) {
      ub_step = segments[i + 1].ub - first.ub;
      host_step = segments[i + 1].host - first.host;
      while (i + count < segments.size() && count < 0xFFFF && ub_step <= 0xFFFF &&
             host_step <= 0xFFFFFFFFu && segments[i + count].rows == first.rows &&
             segments[i + count].ub == first.ub + count * ub_step &&
             segments[i + count].host == first.host + count * host_step) {
        ++count;
      }
    }
    isa::ReadHostArgs load;
    load.i8 = int8;
    load.count = static_cast<std::uint32_t>(count);
    load.rows = first.rows;
    load.addr_b = first.ub;
    load.step_b = count > 1 ? static_cast<std::uint32_t>(ub_step) : 0;
    load.host_addr = static_cast<std::uint32_t>(first.host);
    load.host_stride = stride;
    load.host_step = count > 1 ? static_cast<std::uint32_t>(host_step) : 0;
    p.read_host(load);
    i += count;
  }
}

}  // namespace

std::uint64_t DepthwisePlan::written_bytes() const {
  const std::uint64_t pixels = std::uint64_t{spec.batch} * spec.height * spec.width;
  return ub_stride + const_rows_of(spec, tiles) * acc_stride + pixels * tiles * ub_stride +
         program.size() * isa::kInstrBytes;
}

std::uint64_t DepthwisePlan::read_bytes() const {
  return std::uint64_t{spec.batch} * spec.out_h * spec.out_w * tiles *
         (spec.bf16_out || spec.int8 ? ub_stride : acc_stride);
}

DepthwisePlan plan_depthwise(const HardwareConfig& config, const DepthwiseSpec& spec,
                             std::uint64_t base) {
  isa::validate_config(config);
  check_spec(config, spec);
  DepthwisePlan plan;
  plan.spec = spec;
  plan.config = config;
  const DepthwiseSpec& s = spec;
  const Padded padded = padded_of(s);
  const std::uint32_t taps = s.taps();
  const std::uint32_t tiles = (s.channels + config.dim - 1) / config.dim;
  plan.tiles = tiles;
  plan.ub_stride = std::max((s.int8 ? 1 : 2) * config.dim, config.bus_bytes);
  plan.acc_stride = acc_rows::Layout::of(config, s.channels).stride;
  const std::uint64_t const_rows = const_rows_of(s, tiles);
  const std::uint32_t bank = config.acc_depth / 2;
  const std::uint32_t ub_half = config.ub_depth / 2;
  if (const_rows >= bank) {
    throw std::invalid_argument(fmt::format(
        "a depthwise convolution's {} filter and bias rows do not fit half the {} accumulator rows",
        const_rows, config.acc_depth));
  }
  const auto region = static_cast<std::uint32_t>(bank - const_rows);
  const std::uint64_t out_wide = s.out_w;
  // bf16 and int8 results wait in the unified buffer (1), fp32 ones in the accumulators (0).
  const std::uint64_t ub_results = s.bf16_out || s.int8 ? 1 : 0;

  // The most channel tiles a band takes with which one output row fits: its scratch (two
  // regions of each tap's products for `chunk` output columns, half the region at most), its
  // output row in the rest, and the padded rows it reads in half the unified buffer.
  std::uint32_t group = tiles, chunk = 0;
  for (; group > 0; --group) {
    chunk = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(out_wide, (region / 2) / (2ull * taps * group)));
    if (chunk == 0) continue;
    const std::uint64_t scratch = 2ull * taps * chunk * group;
    const std::uint64_t row_ub = (rows_read(s, 1) * padded.width + ub_results * out_wide) * group;
    if (out_wide * group <= region - scratch && row_ub <= ub_half) break;
  }
  if (group == 0) {
    throw std::invalid_argument(fmt::format(
        "one output row of a depthwise convolution ({} columns, a {}x{} kernel over {} padded "
        "columns) does not fit the core's accumulators and unified buffer",
        s.out_w, s.kernel_h, s.kernel_w, padded.width));
  }
  plan.group = group;
  plan.chunk = chunk;
  const std::uint32_t scratch = 2 * taps * chunk * group;
  const std::uint64_t out_room = region - scratch;

  // Whole images where one fits, else as many output rows of one image as fit.
  std::vector<Band> bands;
  const std::uint64_t image_out = std::uint64_t{s.out_h} * out_wide * group;
  const std::uint64_t image_ub =
      (std::uint64_t{padded.height} * padded.width + ub_results * s.out_h * out_wide) * group;
  if (image_out <= out_room && image_ub <= ub_half) {
    const auto per_band = static_cast<std::uint32_t>(
        std::min<std::uint64_t>({s.batch, out_room / image_out, ub_half / image_ub}));
    for (std::uint32_t t = 0; t < tiles; t += group) {
      for (std::uint32_t n = 0; n < s.batch; n += per_band) {
        bands.push_back({n, std::min(per_band, s.batch - n), t, std::min(group, tiles - t), 0,
                         s.out_h, 0, padded.height});
      }
    }
  } else {
    const auto fits = [&](std::uint64_t count) {
      return count * out_wide * group <= out_room &&
             (rows_read(s, count) * padded.width + ub_results * count * out_wide) * group <=
                 ub_half;
    };
    std::uint32_t per_band = 1;
    while (per_band < s.out_h && fits(per_band + 1)) ++per_band;
    for (std::uint32_t t = 0; t < tiles; t += group) {
      for (std::uint32_t n = 0; n < s.batch; ++n) {
        for (std::uint32_t oy = 0; oy < s.out_h; oy += per_band) {
          const std::uint32_t count = std::min(per_band, s.out_h - oy);
          bands.push_back({n, 1, t, std::min(group, tiles - t), oy, count, oy * s.stride_h,
                           static_cast<std::uint32_t>(rows_read(s, count))});
        }
      }
    }
  }
  plan.bands = static_cast<std::uint32_t>(bands.size());

  const std::uint64_t pad_addr = acc_rows::region_start(base);
  const std::uint64_t filter_addr = acc_rows::region_start(pad_addr + plan.ub_stride);
  const std::uint64_t in_addr = filter_addr + const_rows * plan.acc_stride;
  const std::uint64_t pixels_in = std::uint64_t{s.batch} * s.height * s.width;
  const std::uint64_t pixels_out = std::uint64_t{s.batch} * s.out_h * s.out_w;
  const std::uint64_t out_addr =
      acc_rows::region_start(in_addr + pixels_in * tiles * plan.ub_stride);
  const std::uint64_t prog_addr = acc_rows::region_start(
      out_addr + pixels_out * tiles * (ub_results ? plan.ub_stride : plan.acc_stride));
  if (prog_addr > 0xFFFFFFFFull) {
    throw std::invalid_argument(
        "the depthwise convolution's tensors exceed the core's 32-bit host addresses");
  }
  plan.pad_addr = static_cast<std::uint32_t>(pad_addr);
  plan.filter_addr = static_cast<std::uint32_t>(filter_addr);
  plan.in_addr = static_cast<std::uint32_t>(in_addr);
  plan.out_addr = static_cast<std::uint32_t>(out_addr);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  isa::ProgramBuilder p(config);
  acc_rows::load(p, 0, static_cast<std::uint32_t>(const_rows), plan.filter_addr, plan.acc_stride);
  const auto acc_base = [&](std::size_t b) {
    return static_cast<std::uint32_t>((b % 2) * bank + const_rows);
  };
  const auto ub_base = [&](std::size_t b) { return static_cast<std::uint32_t>((b % 2) * ub_half); };

  // A band's padded rows into its half of the unified buffer: the image's pixels (each the
  // band's tiles of its row of tiles), the padding from the padding's row.
  const auto load_band = [&](std::size_t b) {
    const Band& band = bands[b];
    const std::uint32_t g = band.tiles;
    const std::uint32_t row_rows = padded.width * g;
    std::vector<Segment> zeros, data;
    // Padding rows into the zero segments, one run where they touch the one before.
    const auto zero = [&](std::uint32_t ub, std::uint32_t rows) {
      if (rows == 0) return;
      if (!zeros.empty() && zeros.back().ub + zeros.back().rows == ub) {
        zeros.back().rows += rows;
      } else {
        zeros.push_back({ub, rows, plan.pad_addr});
      }
    };
    for (std::uint32_t i = 0; i < band.images; ++i) {
      const std::uint64_t image = band.image + i;
      for (std::uint32_t r = 0; r < band.rows; ++r) {
        const std::uint32_t ub = ub_base(b) + (i * band.rows + r) * row_rows;
        const std::int64_t iy = std::int64_t{band.row} + r - s.pad_top;
        if (iy < 0 || iy >= std::int64_t{s.height}) {
          zero(ub, row_rows);
          continue;
        }
        zero(ub, s.pad_left * g);
        const std::uint64_t pixel = (image * s.height + static_cast<std::uint64_t>(iy)) * s.width;
        const std::uint32_t first = ub + s.pad_left * g;
        if (g == tiles) {
          data.push_back({first, s.width * g, plan.in_addr + pixel * tiles * plan.ub_stride});
        } else {
          for (std::uint32_t x = 0; x < s.width; ++x) {
            data.push_back({first + x * g, g,
                            plan.in_addr + ((pixel + x) * tiles + band.tile) * plan.ub_stride});
          }
        }
        zero(first + s.width * g, (padded.width - s.pad_left - s.width) * g);
      }
    }
    load_segments(p, zeros, 0, s.int8);
    load_segments(p, data, plan.ub_stride, s.int8);
  };

  const std::uint32_t largest_in = bands[0].images * bands[0].rows * padded.width * bands[0].tiles;
  load_band(0);
  std::optional<isa::WriteHostArgs> pending_store;  // the band before's
  std::uint32_t chunks = 0;  // chunks done: the scratch regions alternate
  for (std::size_t b = 0; b < bands.size(); ++b) {
    if (b + 1 < bands.size()) load_band(b + 1);
    const Band& band = bands[b];
    const std::uint32_t g = band.tiles;
    const std::uint32_t out_base = acc_base(b) + scratch;
    const std::uint32_t out_rows = band.images * band.out_rows * s.out_w * g;
    // The outputs set to +0 (int8: 0), the matrix unit's start without a seed.
    acc_rows::seed_rows(p, isa::VectorOp::Add, s.int8, kZeroRow, out_base, out_rows);
    for (std::uint32_t i = 0; i < band.images; ++i) {
      for (std::uint32_t r = 0; r < band.out_rows; ++r) {
        const std::uint32_t out_row = out_base + ((i * band.out_rows + r) * s.out_w) * g;
        for (std::uint32_t ox = 0; ox < s.out_w; ox += chunk) {
          const std::uint32_t columns = std::min(chunk, s.out_w - ox);
          const std::uint32_t temp = acc_base(b) + (chunks++ % 2) * taps * chunk * g;
          for (std::uint32_t ky = 0; ky < s.kernel_h; ++ky) {
            for (std::uint32_t kx = 0; kx < s.kernel_w; ++kx) {
              const std::uint32_t tap = ky * s.kernel_w + kx;
              const std::uint32_t row = r * s.stride_h + ky * s.dilation_h;  // of the band's
              const std::uint32_t column = ox * s.stride_w + kx * s.dilation_w;
              isa::EltwiseArgs mul;
              mul.op = isa::VectorOp::Mul;
              mul.ub = true;
              mul.int32 = s.int8;
              mul.count = columns;
              mul.rows = g;
              mul.addr_a = ub_base(b) + ((i * band.rows + row) * padded.width + column) * g;
              mul.step_a = s.stride_w * g;
              mul.bias_addr = kFilterRow + tap * tiles + band.tile;
              mul.addr_b = temp + tap * columns * g;
              mul.step_b = g;
              p.eltwise(mul);
            }
          }
          // S = add(product, S), the taps in order, each iteration reading what the one before
          // wrote.
          isa::EltwiseArgs fold;
          fold.op = isa::VectorOp::Add;
          fold.int32 = s.int8;
          fold.count = taps;
          fold.rows = columns * g;
          fold.addr_a = temp;
          fold.step_a = columns * g;
          fold.bias_addr = out_row + ox * g;
          fold.addr_b = out_row + ox * g;
          p.eltwise(fold);
        }
      }
    }
    if (s.bias && !s.int8) {
      isa::EltwiseArgs bias;
      bias.op = isa::VectorOp::Add;
      bias.count = out_rows / g;
      bias.rows = g;
      bias.addr_a = bias.addr_b = out_base;
      bias.step_a = bias.step_b = g;
      bias.bias_addr = kFilterRow + taps * tiles + band.tile;
      p.eltwise(bias);
    }
    // bf16 and int8 results through the unified buffer, after the padded rows of the largest
    // band (the first): a band's store comes after the next band's load into the same half.
    const std::uint32_t ub_out = ub_base(b) + largest_in;
    const bool through_ub = s.bf16_out || s.int8;
    if (s.int8) {
      // Each tile's sums requantised with its bias, multiplier and shift rows (Q-REQ).
      for (std::uint32_t t = 0; t < g; ++t) {
        isa::ActivateArgs a;
        a.bias = a.req = true;
        a.count = out_rows / g;
        a.addr_a = out_base + t;
        a.addr_b = ub_out + t;
        a.step_a = a.step_b = g;
        a.bias_addr = kFilterRow + taps * tiles + 3 * (band.tile + t);
        a.zero_point = s.output_zero_point;
        a.clamp_lo = s.clamp_lo;
        a.clamp_hi = s.clamp_hi;
        p.activate(a);
      }
    } else if (s.func != isa::Func::None || s.bf16_out) {
      isa::ActivateArgs a;
      a.f32 = !s.bf16_out;
      a.func = s.func;
      a.rows = out_rows;
      a.addr_a = out_base;
      a.addr_b = s.bf16_out ? ub_out : out_base;
      p.activate(a);
    }
    const std::uint32_t stride = through_ub ? plan.ub_stride : plan.acc_stride;
    const std::uint64_t first_pixel =
        (std::uint64_t{band.image} * s.out_h + band.out_row) * s.out_w;
    isa::WriteHostArgs store;
    store.acc = !through_ub;
    store.i8 = s.int8;
    store.addr_a = through_ub ? ub_out : out_base;
    store.host_addr =
        static_cast<std::uint32_t>(plan.out_addr + (first_pixel * tiles + band.tile) * stride);
    store.host_stride = stride;
    if (g == tiles) {
      store.rows = out_rows;
    } else {
      store.count = out_rows / g;
      store.rows = g;
      store.step_a = g;
      store.host_step = tiles * stride;
    }
    // The store goes after the next band's function: issue is in order, and a store that waits
    // for its band's ACTIVATE would hold up the next band's work behind it.
    if (pending_store) p.write_host(*pending_store);
    pending_store = store;
  }
  if (pending_store) p.write_host(*pending_store);
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

namespace {

void check_operands(const DepthwisePlan& plan, std::size_t x, std::size_t w, std::size_t bias) {
  const DepthwiseSpec& s = plan.spec;
  const std::size_t biases = s.bias ? s.channels : 0u;
  if (x != std::uint64_t{s.batch} * s.channels * s.height * s.width ||
      w != std::uint64_t{s.channels} * s.taps() || bias != biases) {
    throw std::invalid_argument(fmt::format(
        "the depthwise convolution's operands have {}, {} and {} values, the plan {}x{}x{}x{}, "
        "{}x{}x{} and {}",
        x, w, bias, s.batch, s.channels, s.height, s.width, s.channels, s.kernel_h, s.kernel_w,
        biases));
  }
}

// The padding's row (every lane `pad`), the constant accumulator rows (`rows`, D lanes each: the
// zero row's lanes first), the images (NCHW values to pixels of C lanes, D to a row, the lanes
// of n values `to_lanes(values, lanes, n)`) and the program.
template <typename Lane, typename Value, typename ToLanes>
void write_operands(const DepthwisePlan& plan, HostMemory& memory, Lane pad,
                    const std::vector<num::fp32_t>& rows, const std::vector<Value>& x,
                    ToLanes to_lanes) {
  const DepthwiseSpec& s = plan.spec;
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  const std::uint32_t d = plan.config.dim;
  memory.write_array(plan.pad_addr, std::vector<Lane>(d, pad));
  acc_rows::write(memory, plan.filter_addr, acc_rows::Layout{d, d, 1, plan.acc_stride}, rows.data(),
                  rows.size(), 0);
  // Each image channels last (a pixel's C values in a run), then a row of D lanes at a time.
  const std::uint64_t plane = std::uint64_t{s.height} * s.width;
  std::vector<Value> pixels(plane * s.channels);
  std::vector<Lane> pixel_lanes(plane * s.channels), lanes(d);
  for (std::uint64_t n = 0; n < s.batch; ++n) {
    nn::transpose_into(&x[n * s.channels * plane], s.channels, plane, pixels.data());
    to_lanes(pixels.data(), pixel_lanes.data(), pixels.size());
    for (std::uint64_t q = 0; q < plane; ++q) {
      const Lane* pixel = &pixel_lanes[q * s.channels];
      for (std::uint32_t t = 0; t < plan.tiles; ++t) {
        const std::uint32_t first = t * d, used = std::min(d, s.channels - first);
        std::copy_n(pixel + first, used, lanes.begin());
        std::fill(lanes.begin() + used, lanes.end(), Lane{0});
        memory.write(plan.in_addr + ((n * plane + q) * plan.tiles + t) * plan.ub_stride,
                     lanes.data(), d * sizeof(Lane));
      }
    }
  }
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

// The output's pixels (rows of D lanes `stride` bytes apart, each lane `value(lane)`) as NCHW.
template <typename Lane, typename Out, typename FromLane>
std::vector<Out> read_output(const DepthwisePlan& plan, const HostMemory& memory,
                             std::uint32_t stride, FromLane value) {
  const DepthwiseSpec& s = plan.spec;
  const std::uint64_t plane = std::uint64_t{s.out_h} * s.out_w;
  const std::uint32_t d = plan.config.dim;
  std::vector<Out> y(std::uint64_t{s.batch} * s.channels * plane);
  // Each image's pixels channels last, then transposed into its planes.
  std::vector<Out> pixels(plane * s.channels);
  std::vector<Lane> lanes(d);
  for (std::uint64_t n = 0; n < s.batch; ++n) {
    for (std::uint64_t q = 0; q < plane; ++q) {
      Out* pixel = &pixels[q * s.channels];
      for (std::uint32_t t = 0; t < plan.tiles; ++t) {
        const std::uint64_t row = (n * plane + q) * plan.tiles + t;
        memory.read(plan.out_addr + row * stride, lanes.data(), d * sizeof(Lane));
        const std::uint32_t first = t * d, used = std::min(d, s.channels - first);
        for (std::uint32_t j = 0; j < used; ++j) pixel[first + j] = value(lanes[j]);
      }
    }
    nn::transpose_into(pixels.data(), plane, s.channels, &y[n * s.channels * plane]);
  }
  return y;
}

// The constant rows: the zero row, each tap's filters (`filter(c, tap)`), then the bias rows.
template <typename Filter>
std::vector<num::fp32_t> constant_rows(const DepthwisePlan& plan, Filter filter) {
  const DepthwiseSpec& s = plan.spec;
  const std::uint32_t d = plan.config.dim;
  std::vector<num::fp32_t> rows(const_rows_of(s, plan.tiles) * d, 0);
  for (std::uint32_t c = 0; c < s.channels; ++c) {
    for (std::uint32_t tap = 0; tap < s.taps(); ++tap) {
      rows[(1 + std::uint64_t{tap} * plan.tiles) * d + c] = filter(c, tap);
    }
  }
  return rows;
}

}  // namespace

void write_depthwise_inputs(const DepthwisePlan& plan, HostMemory& memory,
                            const std::vector<num::fp32_t>& x, const std::vector<num::fp32_t>& w,
                            const std::vector<num::fp32_t>& bias) {
  const DepthwiseSpec& s = plan.spec;
  if (s.int8) throw std::invalid_argument("the plan is of an int8 depthwise convolution");
  check_operands(plan, x.size(), w.size(), bias.size());
  const std::uint32_t taps = s.taps();
  // The filters as bf16 values, widened; the bias after them.
  std::vector<num::fp32_t> rows = constant_rows(plan, [&](std::uint32_t c, std::uint32_t tap) {
    return num::bf16_to_fp32(num::fp32_to_bf16(w[std::uint64_t{c} * taps + tap]));
  });
  const std::uint64_t bias_row = 1 + std::uint64_t{taps} * plan.tiles;
  for (std::uint32_t c = 0; s.bias && c < s.channels; ++c) {
    rows[bias_row * plan.config.dim + c] = bias[c];
  }
  write_operands(plan, memory, num::bf16_t{0}, rows, x, detail::round_to_bf16);
}

std::vector<num::fp32_t> read_depthwise_output(const DepthwisePlan& plan,
                                               const HostMemory& memory) {
  if (plan.spec.bf16_out) {
    return read_output<num::bf16_t, num::fp32_t>(plan, memory, plan.ub_stride, num::bf16_to_fp32);
  }
  return read_output<num::fp32_t, num::fp32_t>(plan, memory, plan.acc_stride,
                                               [](num::fp32_t v) { return v; });
}

DepthwiseRun execute_depthwise(const DepthwisePlan& plan, Backend& backend,
                               const std::vector<num::fp32_t>& x, const std::vector<num::fp32_t>& w,
                               const std::vector<num::fp32_t>& bias) {
  write_depthwise_inputs(plan, backend.memory(), x, w, bias);
  DepthwiseRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_depthwise_output(plan, backend.memory());
  return run;
}

void write_depthwise_int8_inputs(const DepthwisePlan& plan, HostMemory& memory,
                                 const std::vector<std::int8_t>& x,
                                 const std::vector<std::int8_t>& w,
                                 const std::vector<std::int32_t>& bias,
                                 const std::vector<num::QuantizedMultiplier>& multipliers) {
  const DepthwiseSpec& s = plan.spec;
  if (!s.int8) throw std::invalid_argument("the plan is of a float depthwise convolution");
  check_operands(plan, x.size(), w.size(), bias.size());
  if (multipliers.size() != s.channels) {
    throw std::invalid_argument(
        fmt::format("{} multipliers for {} channels", multipliers.size(), s.channels));
  }
  const std::uint32_t taps = s.taps(), d = plan.config.dim;
  std::vector<num::fp32_t> rows = constant_rows(plan, [&](std::uint32_t c, std::uint32_t tap) {
    return static_cast<num::fp32_t>(static_cast<std::int32_t>(w[std::uint64_t{c} * taps + tap]));
  });
  // Each tile's bias (Q-ZP: less the input zero point times the filter's sum, modulo 2^32),
  // multiplier and shift rows.
  for (std::uint32_t c = 0; c < s.channels; ++c) {
    std::uint32_t sum = 0;
    for (std::uint32_t tap = 0; tap < taps; ++tap) {
      sum +=
          static_cast<std::uint32_t>(static_cast<std::int32_t>(w[std::uint64_t{c} * taps + tap]));
    }
    const std::uint32_t folded = static_cast<std::uint32_t>(s.bias ? bias[c] : 0) -
                                 static_cast<std::uint32_t>(s.input_zero_point) * sum;
    const std::uint64_t first = (1 + std::uint64_t{taps} * plan.tiles + 3 * (c / d)) * d + c % d;
    rows[first] = folded;
    rows[first + d] = static_cast<num::fp32_t>(multipliers[c].multiplier);
    rows[first + 2 * d] = static_cast<num::fp32_t>(multipliers[c].shift);
  }
  write_operands(plan, memory, static_cast<std::int8_t>(s.input_zero_point), rows, x,
                 [](const std::int8_t* values, std::int8_t* lanes, std::size_t n) {
                   std::copy_n(values, n, lanes);
                 });
}

std::vector<std::int8_t> read_depthwise_int8_output(const DepthwisePlan& plan,
                                                    const HostMemory& memory) {
  return read_output<std::int8_t, std::int8_t>(plan, memory, plan.ub_stride,
                                               [](std::int8_t v) { return v; });
}

DepthwiseInt8Run execute_depthwise_int8(const DepthwisePlan& plan, Backend& backend,
                                        const std::vector<std::int8_t>& x,
                                        const std::vector<std::int8_t>& w,
                                        const std::vector<std::int32_t>& bias,
                                        const std::vector<num::QuantizedMultiplier>& multipliers) {
  write_depthwise_int8_inputs(plan, backend.memory(), x, w, bias, multipliers);
  DepthwiseInt8Run run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_depthwise_int8_output(plan, backend.memory());
  return run;
}

namespace {

// For each output in NCHW order, `output(c, inputs)`: channel c's input index of each tap
// (ky, kx) of the output's window, in order, -1 where the tap lies in the padding.
template <typename Output>
void each_window(const DepthwiseSpec& s, Output output) {
  const std::uint64_t plane = std::uint64_t{s.height} * s.width;
  std::vector<std::int64_t> inputs(s.taps());
  for (std::uint64_t n = 0; n < s.batch; ++n) {
    for (std::uint32_t c = 0; c < s.channels; ++c) {
      const auto image = static_cast<std::int64_t>((n * s.channels + c) * plane);
      for (std::int64_t oy = 0; oy < std::int64_t{s.out_h}; ++oy) {
        for (std::int64_t ox = 0; ox < std::int64_t{s.out_w}; ++ox) {
          for (std::int64_t ky = 0; ky < std::int64_t{s.kernel_h}; ++ky) {
            for (std::int64_t kx = 0; kx < std::int64_t{s.kernel_w}; ++kx) {
              const std::int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
              const std::int64_t ix = ox * s.stride_w - s.pad_left + kx * s.dilation_w;
              const bool inside =
                  iy >= 0 && iy < std::int64_t{s.height} && ix >= 0 && ix < std::int64_t{s.width};
              inputs[static_cast<std::size_t>(ky * s.kernel_w + kx)] =
                  inside ? image + iy * s.width + ix : -1;
            }
          }
          output(c, inputs);
        }
      }
    }
  }
}

}  // namespace

std::vector<num::fp32_t> reference_depthwise(const DepthwiseSpec& s,
                                             const std::vector<num::fp32_t>& x,
                                             const std::vector<num::fp32_t>& w,
                                             const std::vector<num::fp32_t>& bias) {
  std::vector<num::fp32_t> y;
  y.reserve(std::uint64_t{s.batch} * s.channels * s.out_h * s.out_w);
  each_window(s, [&](std::uint32_t c, const std::vector<std::int64_t>& inputs) {
    num::fp32_t sum = 0;  // N-ORDER without a seed: +0
    for (std::size_t t = 0; t < inputs.size(); ++t) {
      const num::bf16_t a = inputs[t] < 0
                                ? num::bf16_t{0}
                                : num::fp32_to_bf16(x[static_cast<std::size_t>(inputs[t])]);
      sum = num::mac(sum, a, num::fp32_to_bf16(w[std::size_t{c} * inputs.size() + t]));
    }
    // N-ACT: the bias (or -0), then the function; N-OUT for bf16 results.
    sum = num::add_fp32(sum, s.bias ? bias[c] : 0x80000000u);
    sum = num::act_func(static_cast<unsigned>(s.func), sum, 0);
    if (s.bf16_out) sum = num::bf16_to_fp32(num::fp32_to_bf16(sum));
    y.push_back(sum);
  });
  return y;
}

std::vector<std::int8_t> reference_depthwise_int8(
    const DepthwiseSpec& s, const std::vector<std::int8_t>& x, const std::vector<std::int8_t>& w,
    const std::vector<std::int32_t>& bias,
    const std::vector<num::QuantizedMultiplier>& multipliers) {
  std::vector<std::int8_t> y;
  y.reserve(std::uint64_t{s.batch} * s.channels * s.out_h * s.out_w);
  each_window(s, [&](std::uint32_t c, const std::vector<std::int64_t>& inputs) {
    std::uint32_t sum = 0;  // Q-MAC: modulo 2^32
    for (std::size_t t = 0; t < inputs.size(); ++t) {
      const int a = inputs[t] < 0 ? s.input_zero_point : x[static_cast<std::size_t>(inputs[t])];
      const int f = w[std::size_t{c} * inputs.size() + t];
      sum += static_cast<std::uint32_t>((a - s.input_zero_point) * f);
    }
    const num::RequantParams params{s.bias ? bias[c] : 0, multipliers[c], s.output_zero_point,
                                    s.clamp_lo, s.clamp_hi};
    y.push_back(num::requantize(isa::int32_value(sum), params));
  });
  return y;
}

}  // namespace tpu
