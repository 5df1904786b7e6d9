#include "tpu/pool.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "acc_rows.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

constexpr num::fp32_t kMinusInfinity = 0xFF800000u;  // the seed of a maximum
constexpr num::fp32_t kMinusZero = 0x80000000u;      // the seed of a sum
// Accumulator rows 0 and 1 of the first bank: the seed row, an average's reciprocal row (int8:
// an average's 2^up, then rows 2 to 4, the requantisation's bias, multiplier and shift: a
// maximum's leaves each value as it is). Each bank keeps them free, so that both hold a band of
// the same size.
constexpr std::uint32_t kSeedRow = 0, kScaleRow = 1, kRequantRows = 2;

// The values inside the image of the windows at output row oy (`rows`) and column ox (`cols`)
// along one axis: the kernel offsets whose pixel lies inside.
std::uint32_t inside_count(std::int64_t o, std::uint32_t kernel, std::uint32_t stride,
                           std::uint32_t pad, std::uint32_t size) {
  const std::int64_t start = o * stride - std::int64_t{pad};
  const std::int64_t lo = std::max<std::int64_t>(start, 0);
  const std::int64_t hi = std::min<std::int64_t>(start + kernel, size);
  return static_cast<std::uint32_t>(std::max<std::int64_t>(hi - lo, 0));
}

// An average's divisor of the window at (oy, ox).
std::uint32_t window_count(const PoolSpec& s, std::int64_t oy, std::int64_t ox) {
  if (!s.count_inside) return s.count;
  return inside_count(oy, s.kernel_h, s.stride_h, s.pad_top, s.height) *
         inside_count(ox, s.kernel_w, s.stride_w, s.pad_left, s.width);
}

// An average's distinct divisors, in increasing order: reciprocal row kScaleRow + i is the i-th's
// (one where every window has the same).
std::vector<std::uint32_t> divisors(const PoolSpec& s) {
  if (!s.count_inside) return {s.count};
  std::vector<std::uint32_t> rows, cols, all;
  for (std::uint32_t oy = 0; oy < s.out_h; ++oy) {
    rows.push_back(inside_count(oy, s.kernel_h, s.stride_h, s.pad_top, s.height));
  }
  for (std::uint32_t ox = 0; ox < s.out_w; ++ox) {
    cols.push_back(inside_count(ox, s.kernel_w, s.stride_w, s.pad_left, s.width));
  }
  for (const std::uint32_t r : rows) {
    for (const std::uint32_t c : cols) all.push_back(r * c);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::uint32_t const_rows(const PoolSpec& s) {
  if (s.int8) return 5;
  return 1 + (s.max ? 1 : static_cast<std::uint32_t>(divisors(s).size()));
}

// The constant rows of a float pooling: the seed, then a maximum's 0 or an average's reciprocals.
std::vector<num::fp32_t> float_constants(const PoolSpec& s) {
  if (s.max) return {kMinusInfinity, 0};
  std::vector<num::fp32_t> rows = {kMinusZero};
  for (const std::uint32_t d : divisors(s)) rows.push_back(acc_rows::reciprocal(d));
  return rows;
}

// The requantisation of an int8 pool's int32 results: an average's (Q-MEAN), or for a maximum
// one that leaves every int8 value as it is (x 2, then SRDHM by 2^30 halves it exactly).
num::RequantParams int8_requant(const PoolSpec& s) {
  if (!s.max) return s.mean.requant;
  num::RequantParams same;
  same.m = {1 << 30, 1};
  return same;
}

// The output positions [first, last] along one axis whose windows have kernel offset k inside
// an input of `size` (first > last where none do).
struct Span {
  std::int64_t first = 0, last = -1;
  bool empty() const { return first > last; }
};
Span inside(std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t size,
            std::int64_t out) {
  // o * stride - pad + k in [0, size)
  const std::int64_t lo = pad - k;
  const std::int64_t first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  const std::int64_t hi = size - 1 + pad - k;
  const std::int64_t last = hi < 0 ? -1 : std::min(out - 1, hi / stride);
  return {first, last};
}

void check_spec(const HardwareConfig& config, const PoolSpec& s) {
  if (config.vector_lanes == 0) {
    throw std::invalid_argument("pooling on the core needs a vector unit; " + config.name() +
                                " has none");
  }
  if (s.batch == 0 || s.channels == 0 || s.height == 0 || s.width == 0 || s.out_h == 0 ||
      s.out_w == 0) {
    throw std::invalid_argument("pooling of an empty tensor");
  }
  if (s.kernel_h == 0 || s.kernel_w == 0 || s.stride_h == 0 || s.stride_w == 0) {
    throw std::invalid_argument("a pooling window with a kernel or stride of 0");
  }
  if (!s.max && s.count == 0 && !s.count_inside) {
    throw std::invalid_argument("an average over a count of 0");
  }
  if (s.count_inside && (s.max || s.int8)) {
    throw std::invalid_argument("counts of the values inside go with a float average");
  }
  if (s.int8) {
    if (!config.int8) {
      throw std::invalid_argument("int8 pooling needs the int8 datapath; " + config.name() +
                                  " has none");
    }
    if (config.ub_depth < config.acc_depth) {
      throw std::invalid_argument(
          "int8 pooling needs a unified buffer as deep as the accumulators");
    }
    if (!s.max) static_cast<void>(num::mean_int8(0, s.mean));  // the parameters' ranges
  }
  // Every window has a value inside the image: an output row has a kernel row inside, an
  // output column a kernel column.
  const auto covered = [](std::uint32_t out, std::uint32_t kernel, std::uint32_t stride,
                          std::uint32_t pad, std::uint32_t size) {
    for (std::uint32_t o = 0; o < out; ++o) {
      const std::int64_t start = std::int64_t{o} * stride - pad;
      if (start + kernel <= 0 || start >= size) return false;
    }
    return true;
  };
  if (!covered(s.out_h, s.kernel_h, s.stride_h, s.pad_top, s.height) ||
      !covered(s.out_w, s.kernel_w, s.stride_w, s.pad_left, s.width)) {
    throw std::invalid_argument(fmt::format(
        "a {}x{} output of {}x{} windows (stride {}x{}, padding {}x{}) over a {}x{} image has a "
        "window with no value inside it",
        s.out_h, s.out_w, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_top, s.pad_left,
        s.height, s.width));
  }
}

// A pass through the accumulators: channel tiles [tile, tile + tiles) of images
// [image, image + images) whole, or of the output rows [out_row, out_row + out_rows) of one image
// and the input rows [in_row, in_row + in_rows) they read.
struct Band {
  std::uint32_t image = 0, images = 1;
  std::uint32_t tile = 0, tiles = 0;
  std::uint32_t out_row = 0, out_rows = 0;
  std::uint32_t in_row = 0, in_rows = 0;
};

// The input rows output rows [first, first + count) read.
std::pair<std::uint32_t, std::uint32_t> input_rows(const PoolSpec& s, std::uint32_t first,
                                                   std::uint32_t count) {
  const std::int64_t lo = std::int64_t{first} * s.stride_h - s.pad_top;
  const std::int64_t hi = std::int64_t{first + count - 1} * s.stride_h - s.pad_top + s.kernel_h;
  const auto begin = static_cast<std::uint32_t>(std::max<std::int64_t>(0, lo));
  const auto end = static_cast<std::uint32_t>(std::min<std::int64_t>(s.height, hi));
  return {begin, end - begin};
}

// Whole images with all their channels where one fits a region; else as many output rows as fit
// with all the channels, or with as many channel tiles as let one output row fit.
std::vector<Band> bands_of(const PoolSpec& s, std::uint32_t tiles, std::uint64_t region) {
  const std::uint64_t in_image = std::uint64_t{s.height} * s.width * tiles;
  const std::uint64_t out_image = std::uint64_t{s.out_h} * s.out_w * tiles;
  std::vector<Band> bands;
  if (in_image + out_image <= region) {
    const auto per_band = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(s.batch, region / (in_image + out_image)));
    for (std::uint32_t n = 0; n < s.batch; n += per_band) {
      bands.push_back({n, std::min(per_band, s.batch - n), 0, tiles, 0, s.out_h, 0, s.height});
    }
    return bands;
  }
  // Whether `count` output rows of `group` tiles fit beside the input rows they read (the most
  // any such rows read).
  const auto fits = [&](std::uint32_t count, std::uint32_t group) {
    const std::uint64_t in_rows = (std::uint64_t{count} - 1) * s.stride_h + s.kernel_h;
    return (std::min<std::uint64_t>(in_rows, s.height) * s.width + std::uint64_t{count} * s.out_w) *
               group <=
           region;
  };
  std::uint32_t group = tiles;
  while (group > 0 && !fits(1, group)) --group;
  if (group == 0) {
    throw std::invalid_argument(fmt::format(
        "an output row of the pooling reads {} rows of {} pixels, more than a band of {} "
        "accumulator rows holds",
        std::min(s.kernel_h, s.height), s.width, region));
  }
  std::uint32_t per_band = 1;
  while (per_band < s.out_h && fits(per_band + 1, group)) ++per_band;
  for (std::uint32_t n = 0; n < s.batch; ++n) {
    for (std::uint32_t t = 0; t < tiles; t += group) {
      for (std::uint32_t oy = 0; oy < s.out_h; oy += per_band) {
        const std::uint32_t count = std::min(per_band, s.out_h - oy);
        const auto [in_row, in_rows] = input_rows(s, oy, count);
        bands.push_back({n, 1, t, std::min(group, tiles - t), oy, count, in_row, in_rows});
      }
    }
  }
  return bands;
}

// The ELTWISEs that fold one band's taps into its output rows (set to the seed before).
void fold_taps(isa::ProgramBuilder& p, const PoolSpec& s, const Band& band, std::uint32_t in_base,
               std::uint32_t out_base) {
  const std::uint32_t tiles = band.tiles;
  const isa::VectorOp op = s.max ? isa::VectorOp::Max : isa::VectorOp::Add;
  const std::uint32_t in_image = band.in_rows * s.width * tiles;
  const std::uint32_t out_image = band.out_rows * s.out_w * tiles;
  // A window row as wide as the image and unpadded: its taps are consecutive pixels.
  const bool whole_rows = s.out_w == 1 && s.kernel_w == s.width && s.pad_left == 0;
  for (std::uint32_t i = 0; i < band.images; ++i) {
    for (std::uint32_t r = 0; r < band.out_rows; ++r) {
      const std::uint32_t oy = band.out_row + r;
      const std::uint32_t out_row = out_base + i * out_image + r * s.out_w * tiles;
      // The pixel of input row iy, column ix in the band's rows.
      const auto pixel = [&](std::int64_t iy, std::int64_t ix) {
        return static_cast<std::uint32_t>(in_base + i * in_image +
                                          ((iy - band.in_row) * s.width + ix) * tiles);
      };
      const std::int64_t top = std::int64_t{oy} * s.stride_h - s.pad_top;
      const std::int64_t ky_first = std::max<std::int64_t>(0, -top);
      const std::int64_t ky_last = std::min<std::int64_t>(s.kernel_h, s.height - top) - 1;
      isa::EltwiseArgs e;
      e.op = op;
      e.int32 = e.ub = s.int8;  // int8: the pixels are unified-buffer rows
      e.rows = tiles;
      e.addr_b = e.bias_addr = out_row;
      if (whole_rows) {
        // Every tap of the window in order, each iteration the next pixel into the same row.
        e.count = static_cast<std::uint32_t>((ky_last - ky_first + 1) * s.width);
        e.addr_a = pixel(top + ky_first, 0);
        e.step_a = tiles;
        p.eltwise(e);
        continue;
      }
      for (std::int64_t ky = ky_first; ky <= ky_last; ++ky) {
        for (std::uint32_t kx = 0; kx < s.kernel_w; ++kx) {
          const Span ox = inside(kx, s.stride_w, s.pad_left, s.width, s.out_w);
          if (ox.empty()) continue;
          e.count = static_cast<std::uint32_t>(ox.last - ox.first + 1);
          e.addr_a = pixel(top + ky, ox.first * s.stride_w - s.pad_left + kx);
          e.step_a = s.stride_w * tiles;
          e.addr_b = e.bias_addr = out_row + static_cast<std::uint32_t>(ox.first) * tiles;
          e.step_b = e.bias_step = tiles;
          p.eltwise(e);
        }
      }
    }
  }
}

// An average's sums of one band times the reciprocals of their windows' counts inside the
// image: per output row, each run of columns whose windows have as many columns inside one
// ELTWISE mul by its divisor's row.
void scale_by_counts(isa::ProgramBuilder& p, const PoolSpec& s, const Band& band,
                     std::uint32_t out_base, const std::vector<std::uint32_t>& divisors) {
  const std::uint32_t tiles = band.tiles, out_image = band.out_rows * s.out_w * tiles;
  const auto row_of = [&](std::uint32_t count) {
    return kScaleRow +
           static_cast<std::uint32_t>(std::lower_bound(divisors.begin(), divisors.end(), count) -
                                      divisors.begin());
  };
  for (std::uint32_t i = 0; i < band.images; ++i) {
    for (std::uint32_t r = 0; r < band.out_rows; ++r) {
      const std::int64_t oy = band.out_row + r;
      const std::uint32_t out_row = out_base + i * out_image + r * s.out_w * tiles;
      for (std::uint32_t ox = 0; ox < s.out_w;) {
        const std::uint32_t count = window_count(s, oy, ox);
        std::uint32_t end = ox + 1;
        while (end < s.out_w && window_count(s, oy, end) == count) ++end;
        acc_rows::with_row(p, isa::VectorOp::Mul, out_row + ox * tiles, (end - ox) * tiles,
                           row_of(count));
        ox = end;
      }
    }
  }
}

}  // namespace

std::uint64_t PoolPlan::written_bytes() const {
  const std::uint64_t pixels = std::uint64_t{spec.batch} * spec.height * spec.width;
  return const_rows(spec) * row_stride + pixels * tiles * in_stride +
         program.size() * isa::kInstrBytes;
}

std::uint64_t PoolPlan::read_bytes() const {
  return std::uint64_t{spec.batch} * spec.out_h * spec.out_w * tiles * out_stride;
}

PoolPlan plan_pool(const HardwareConfig& config, const PoolSpec& spec, std::uint64_t base) {
  isa::validate_config(config);
  check_spec(config, spec);
  PoolPlan plan;
  plan.spec = spec;
  plan.config = config;
  const acc_rows::Layout layout = acc_rows::Layout::of(config, spec.channels);
  plan.tiles = layout.tiles;
  plan.row_stride = layout.stride;
  // int8 host rows: D bytes, aligned to D or the bus, whichever is smaller (HOST_ALIGN).
  plan.in_stride = plan.out_stride = spec.int8 ? config.dim : layout.stride;
  const std::uint32_t constants = const_rows(spec);
  const std::uint32_t bank = config.acc_depth / 2;
  const std::uint32_t region = bank - constants;
  const std::vector<Band> bands = bands_of(spec, plan.tiles, region);
  plan.bands = static_cast<std::uint32_t>(bands.size());

  const std::uint64_t const_addr = acc_rows::region_start(base);
  const std::uint64_t in_addr = const_addr + layout.bytes(constants);
  const std::uint64_t out_addr =
      in_addr + std::uint64_t{spec.batch} * spec.height * spec.width * plan.tiles * plan.in_stride;
  const std::uint64_t prog_addr =
      acc_rows::region_start(out_addr + std::uint64_t{spec.batch} * spec.out_h * spec.out_w *
                                            plan.tiles * plan.out_stride);
  if (prog_addr > 0xFFFFFFFFull) {
    throw std::invalid_argument("the pooling's tensors exceed the core's 32-bit host addresses");
  }
  plan.const_addr = static_cast<std::uint32_t>(const_addr);
  plan.in_addr = static_cast<std::uint32_t>(in_addr);
  plan.out_addr = static_cast<std::uint32_t>(out_addr);
  plan.prog_addr = static_cast<std::uint32_t>(prog_addr);

  const std::uint32_t tiles = plan.tiles;
  isa::ProgramBuilder p(config);
  acc_rows::load(p, 0, constants, plan.const_addr, plan.row_stride);
  const auto region_base = [&](std::size_t b) {
    return static_cast<std::uint32_t>((b % 2) * bank + constants);
  };
  // A band's pixels (of its images, in its rows) and the host address of its first row: the
  // band's tiles of each pixel, the pixel's tiles `tiles` rows apart in host memory.
  const auto transfer = [&](const Band& band, std::uint32_t rows_per_image, std::uint32_t row,
                            std::uint32_t width, std::uint32_t base_addr, std::uint32_t acc,
                            bool load) {
    const std::uint64_t image_pixels = std::uint64_t{rows_per_image} * width;
    const std::uint64_t first_pixel = band.image * image_pixels + std::uint64_t{row} * width;
    const std::uint64_t pixels =
        band.tiles == tiles
            ? 1
            : std::uint64_t{band.images} * (load ? band.in_rows : band.out_rows) * width;
    const std::uint32_t rows =
        band.tiles == tiles ? band.images * (load ? band.in_rows : band.out_rows) * width * tiles
                            : band.tiles;
    const std::uint32_t stride = load ? plan.in_stride : plan.out_stride;
    const std::uint64_t host = base_addr + (first_pixel * tiles + band.tile) * stride;
    const auto step = static_cast<std::uint32_t>(tiles * stride);
    // int8 pixels pass through the unified buffer's rows of the same numbers.
    const acc_rows::Rows kind = spec.int8 ? acc_rows::Rows::UbInt8 : acc_rows::Rows::Acc;
    if (load) {
      acc_rows::load(p, acc, rows, host, stride, static_cast<std::uint32_t>(pixels), step, kind);
    } else {
      acc_rows::store(p, acc, rows, host, stride, static_cast<std::uint32_t>(pixels), step, kind);
    }
  };
  const auto band_in_rows = [&](const Band& band) {
    return band.images * band.in_rows * spec.width * band.tiles;
  };
  const auto load_band = [&](std::size_t b) {
    transfer(bands[b], spec.height, bands[b].in_row, spec.width, plan.in_addr, region_base(b),
             true);
  };
  // Each band's load goes ahead of the band before it's work; the banks alternate.
  load_band(0);
  for (std::size_t b = 0; b < bands.size(); ++b) {
    if (b + 1 < bands.size()) load_band(b + 1);
    const Band& band = bands[b];
    const std::uint32_t in_base = region_base(b);
    const std::uint32_t out_base = in_base + band_in_rows(band);
    const std::uint32_t out_rows = band.images * band.out_rows * spec.out_w * band.tiles;
    acc_rows::seed_rows(p, spec.max ? isa::VectorOp::Max : isa::VectorOp::Add, spec.int8, kSeedRow,
                        out_base, out_rows);
    fold_taps(p, spec, band, in_base, out_base);
    if (spec.int8) {
      if (!spec.max) {
        isa::EltwiseArgs up;
        up.op = isa::VectorOp::Mul;
        up.int32 = up.row = true;
        up.rows = out_rows;
        up.addr_a = up.addr_b = out_base;
        up.bias_addr = kScaleRow;
        p.eltwise(up);
      }
      const num::RequantParams q = int8_requant(spec);
      isa::ActivateArgs req;
      req.req = req.bias = true;
      req.rows = out_rows;
      req.addr_a = req.addr_b = out_base;
      req.bias_addr = kRequantRows;
      req.zero_point = q.zero_point;
      req.clamp_lo = q.lo;
      req.clamp_hi = q.hi;
      p.activate(req);
    } else if (!spec.max && !spec.count_inside) {
      acc_rows::with_row(p, isa::VectorOp::Mul, out_base, out_rows, kScaleRow);
    } else if (!spec.max) {
      scale_by_counts(p, spec, band, out_base, divisors(spec));
    }
    transfer(band, spec.out_h, band.out_row, spec.out_w, plan.out_addr, out_base, false);
  }
  p.halt();
  plan.program = p.instructions();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
  return plan;
}

namespace {

// The caller's values (NCHW) to pixels of C values (NHWC), or back (`to_nchw`), for images of
// `plane` pixels; as they are where the caller's are NHWC already (channels_last).
template <typename T>
std::vector<T> transpose_pixels(const PoolSpec& s, std::uint64_t plane, const std::vector<T>& x,
                                bool to_nchw) {
  if (s.channels_last) return x;
  std::vector<T> y(x.size());
  for (std::uint64_t n = 0; n < s.batch; ++n) {
    for (std::uint64_t c = 0; c < s.channels; ++c) {
      for (std::uint64_t q = 0; q < plane; ++q) {
        const std::uint64_t nchw = (n * s.channels + c) * plane + q;
        const std::uint64_t nhwc = (n * plane + q) * s.channels + c;
        if (to_nchw) {
          y[nchw] = x[nhwc];
        } else {
          y[nhwc] = x[nchw];
        }
      }
    }
  }
  return y;
}

// The constant rows (`constants`, each D lanes whatever C is) and the program; checks that x
// has the spec's values.
void write_pool_constants(const PoolPlan& plan, HostMemory& memory,
                          const std::vector<num::fp32_t>& constants, std::size_t values) {
  const PoolSpec& s = plan.spec;
  if (values != std::uint64_t{s.batch} * s.channels * s.height * s.width) {
    throw std::invalid_argument(
        fmt::format("the pooling's input has {} values, the plan {}x{}x{}x{}", values, s.batch,
                    s.channels, s.height, s.width));
  }
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  acc_rows::write_constants(memory, plan.const_addr, plan.config.dim, plan.row_stride, constants);
  memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
}

}  // namespace

void write_pool_input(const PoolPlan& plan, HostMemory& memory, const std::vector<num::fp32_t>& x) {
  const PoolSpec& s = plan.spec;
  if (s.int8) throw std::invalid_argument("the plan is of an int8 pooling");
  write_pool_constants(plan, memory, float_constants(s), x.size());
  const std::uint64_t plane = std::uint64_t{s.height} * s.width;
  const std::vector<num::fp32_t> pixels = transpose_pixels(s, plane, x, false);
  acc_rows::write(memory, plan.in_addr, acc_rows::Layout::of(plan.config, s.channels),
                  pixels.data(), pixels.size(), 0);
}

std::vector<num::fp32_t> read_pool_output(const PoolPlan& plan, const HostMemory& memory) {
  const PoolSpec& s = plan.spec;
  const std::uint64_t plane = std::uint64_t{s.out_h} * s.out_w;
  const std::vector<num::fp32_t> pixels =
      acc_rows::read(memory, plan.out_addr, acc_rows::Layout::of(plan.config, s.channels),
                     std::uint64_t{s.batch} * plane * s.channels);
  return transpose_pixels(s, plane, pixels, true);
}

void write_pool_int8_input(const PoolPlan& plan, HostMemory& memory,
                           const std::vector<std::int8_t>& x) {
  const PoolSpec& s = plan.spec;
  if (!s.int8) throw std::invalid_argument("the plan is of a float pooling");
  const auto bits = [](std::int32_t v) { return static_cast<num::fp32_t>(v); };
  // The seed (a maximum's INT32_MIN, a sum's 0), an average's 2^up, then the requantisation's
  // bias, multiplier and shift.
  const num::RequantParams requant = int8_requant(s);
  write_pool_constants(plan, memory,
                       {s.max ? 0x80000000u : 0u, s.max ? 1u : bits(1 << s.mean.up),
                        bits(requant.bias), bits(requant.m.multiplier), bits(requant.m.shift)},
                       x.size());
  // Pixels of C int8 values, each a row of D bytes a tile (lanes past C hold 0).
  const std::uint64_t plane = std::uint64_t{s.height} * s.width;
  const std::vector<std::int8_t> pixels = transpose_pixels(s, plane, x, false);
  acc_rows::write(memory, plan.in_addr, acc_rows::Layout::int8(plan.config, s.channels),
                  pixels.data(), pixels.size(), std::int8_t{0});
}

std::vector<std::int8_t> read_pool_int8_output(const PoolPlan& plan, const HostMemory& memory) {
  const PoolSpec& s = plan.spec;
  const std::uint64_t plane = std::uint64_t{s.out_h} * s.out_w;
  const std::vector<std::int8_t> pixels = acc_rows::read<std::int8_t>(
      memory, plan.out_addr, acc_rows::Layout::int8(plan.config, s.channels),
      std::uint64_t{s.batch} * plane * s.channels);
  return transpose_pixels(s, plane, pixels, true);
}

PoolInt8Run execute_pool_int8(const PoolPlan& plan, Backend& backend,
                              const std::vector<std::int8_t>& x) {
  write_pool_int8_input(plan, backend.memory(), x);
  PoolInt8Run run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_pool_int8_output(plan, backend.memory());
  return run;
}

PoolRun execute_pool(const PoolPlan& plan, Backend& backend, const std::vector<num::fp32_t>& x) {
  write_pool_input(plan, backend.memory(), x);
  PoolRun run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read_pool_output(plan, backend.memory());
  return run;
}

namespace {

// The windows' folds in output order (image and channel, then output row, then column): each
// starts at `seed` and takes the window's values inside the image in tap order, ky first, by
// `fold`; `finish` makes the output of it and the window's place (oy, ox).
template <typename T, typename Acc, typename Fold, typename Finish>
auto fold_windows(const PoolSpec& s, const std::vector<T>& x, Acc seed, Fold fold, Finish finish) {
  const std::uint64_t plane = std::uint64_t{s.height} * s.width;
  // Value `pixel` of image n x C + c in the caller's layout.
  const auto at = [&](std::uint64_t image, std::uint64_t pixel) {
    return s.channels_last ? (image / s.channels * plane + pixel) * s.channels + image % s.channels
                           : image * plane + pixel;
  };
  std::vector<decltype(finish(seed, 0, 0))> y;
  y.reserve(std::uint64_t{s.batch} * s.channels * s.out_h * s.out_w);
  for (std::uint64_t image = 0; image < std::uint64_t{s.batch} * s.channels; ++image) {
    for (std::int64_t oy = 0; oy < std::int64_t{s.out_h}; ++oy) {
      for (std::int64_t ox = 0; ox < std::int64_t{s.out_w}; ++ox) {
        Acc acc = seed;
        for (std::int64_t ky = 0; ky < std::int64_t{s.kernel_h}; ++ky) {
          const std::int64_t iy = oy * s.stride_h - s.pad_top + ky;
          if (iy < 0 || iy >= std::int64_t{s.height}) continue;
          for (std::int64_t kx = 0; kx < std::int64_t{s.kernel_w}; ++kx) {
            const std::int64_t ix = ox * s.stride_w - s.pad_left + kx;
            if (ix < 0 || ix >= std::int64_t{s.width}) continue;
            acc = fold(acc, x[at(image, static_cast<std::uint64_t>(iy * s.width + ix))]);
          }
        }
        y.push_back(finish(acc, oy, ox));
      }
    }
  }
  if (!s.channels_last) return y;
  PoolSpec nchw = s;
  nchw.channels_last = false;
  return transpose_pixels(nchw, std::uint64_t{s.out_h} * s.out_w, y, false);
}

}  // namespace

std::vector<std::int8_t> reference_pool_int8(const PoolSpec& s, const std::vector<std::int8_t>& x) {
  if (s.max) {
    return fold_windows(
        s, x, std::int8_t{-128}, [](std::int8_t best, std::int8_t v) { return std::max(best, v); },
        [](std::int8_t best, std::int64_t, std::int64_t) { return best; });
  }
  // The sum wraps, as ELTWISE I32's adds do (Q-MEAN, Q-MAC).
  return fold_windows(
      s, x, std::uint32_t{0},
      [](std::uint32_t sum, std::int8_t v) { return sum + static_cast<std::uint32_t>(v); },
      [&](std::uint32_t sum, std::int64_t, std::int64_t) {
        return num::mean_int8(isa::int32_value(sum), s.mean);
      });
}

std::vector<num::fp32_t> reference_pool(const PoolSpec& s, const std::vector<num::fp32_t>& x) {
  return fold_windows(
      s, x, s.max ? kMinusInfinity : kMinusZero,
      [&](num::fp32_t fold, num::fp32_t v) {
        return s.max ? num::max_fp32(v, fold) : num::add_fp32(v, fold);
      },
      [&](num::fp32_t fold, std::int64_t oy, std::int64_t ox) {
        return s.max ? fold : num::mul_fp32(fold, acc_rows::reciprocal(window_count(s, oy, ox)));
      });
}

}  // namespace tpu
