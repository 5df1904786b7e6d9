// What the vector unit's programs (softmax, elementwise, pool, layernorm, depthwise, quant_add,
// quant_convert) and the DMA's moves (move) share: values laid out in host memory as fp32
// accumulator rows or int8 rows, the instructions that move those rows between the host and the
// core's memories, reduce them or apply a function or a constant row to them in place, the
// host's view of those reductions, and where a program's regions of host memory start.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/program.hpp"

namespace tpu::acc_rows {

// Rows of `length` values, each in `tiles` = ceil(length / D) accumulator rows of D lanes, the
// host rows `stride` bytes apart (4 D bytes, aligned to the bus).
struct Layout {
  std::uint32_t dim = 0, length = 0, tiles = 0, stride = 0;

  static Layout of(const HardwareConfig& config, std::uint32_t length) {
    return {config.dim, length, (length + config.dim - 1) / config.dim,
            std::max(4 * config.dim, config.bus_bytes)};
  }
  // Rows of `length` int8 values, D bytes a tile (READ_HOST I8, WRITE_HOST I8).
  static Layout int8(const HardwareConfig& config, std::uint32_t length) {
    return {config.dim, length, (length + config.dim - 1) / config.dim, config.dim};
  }
  std::uint64_t rows_for(std::uint64_t values) const { return (values + length - 1) / length; }
  // Host bytes of `rows` rows.
  std::uint64_t bytes(std::uint64_t rows) const { return rows * tiles * stride; }
};

// values[0 .. count) as consecutive rows from `addr`: value n in row n / length, lane n mod
// length of it; the lanes past a row's length, and past the last value, hold `pad`. fp32 (or
// int32) accumulator rows, or int8 rows of D bytes (Layout::int8); `pad` is of T (not deduced
// from it: a 0 will do).
template <typename T>
void write(HostMemory& memory, std::uint64_t addr, const Layout& layout, const T* values,
           std::uint64_t count, typename std::common_type<T>::type pad) {
  std::vector<T> lanes(layout.dim);
  const std::uint64_t rows = layout.rows_for(count);
  for (std::uint64_t m = 0; m < rows; ++m) {
    for (std::uint32_t t = 0; t < layout.tiles; ++t) {
      for (std::uint32_t j = 0; j < layout.dim; ++j) {
        const std::uint64_t in_row = std::uint64_t{t} * layout.dim + j;
        const std::uint64_t n = m * layout.length + in_row;
        lanes[j] = in_row < layout.length && n < count ? values[n] : pad;
      }
      memory.write_array(addr + (m * layout.tiles + t) * layout.stride, lanes);
    }
  }
}

// The first `count` values of the rows from `addr`, as write() laid them out.
template <typename T = num::fp32_t>
std::vector<T> read(const HostMemory& memory, std::uint64_t addr, const Layout& layout,
                    std::uint64_t count) {
  std::vector<T> values;
  values.reserve(count);
  const std::uint64_t rows = layout.rows_for(count);
  for (std::uint64_t m = 0; m < rows; ++m) {
    for (std::uint32_t t = 0; t < layout.tiles; ++t) {
      const auto lanes =
          memory.read_array<T>(addr + (m * layout.tiles + t) * layout.stride, layout.dim);
      const std::uint64_t first = m * layout.length + std::uint64_t{t} * layout.dim;
      const std::uint64_t in_row =
          std::min<std::uint64_t>(layout.dim, layout.length - t * layout.dim);
      const std::uint64_t used = first >= count ? 0 : std::min(in_row, count - first);
      values.insert(values.end(), lanes.begin(), lanes.begin() + static_cast<std::ptrdiff_t>(used));
    }
  }
  return values;
}

// What load() and store() move: fp32 (or int32) accumulator rows, or int8 rows of the unified
// buffer (READ_HOST I8 and WRITE_HOST I8: D bytes a host row).
enum class Rows { Acc, UbInt8 };

// Accumulator rows from `addr`, `stride` bytes apart, row r holding values[r] in each of its
// `dim` lanes (fp32 bits, or int32 values as their bits): a program's constants.
inline void write_constants(HostMemory& memory, std::uint64_t addr, std::uint32_t dim,
                            std::uint32_t stride, const std::vector<num::fp32_t>& values) {
  for (std::size_t r = 0; r < values.size(); ++r) {
    memory.write_array(addr + r * stride, std::vector<num::fp32_t>(dim, values[r]));
  }
}

// The most a count or rows field holds (16 bits).
inline constexpr std::uint64_t kMaxRowsField = 65535;

// Where a region of a program's host memory starts: the next multiple of 64 bytes from `addr`
// (a burst's alignment on every bus the cores have).
inline std::uint64_t region_start(std::uint64_t addr) {
  return (addr + 63) / 64 * 64;
}

// Throws std::invalid_argument with one line where `config` lacks a vector unit or the int8
// datapath, which `what` (say "an int8 addition") needs.
inline void require_int8_vector_unit(const HardwareConfig& config, const std::string& what) {
  if (config.vector_lanes == 0 || !config.int8) {
    throw std::invalid_argument(what + " on the core needs a vector unit and the int8 datapath; " +
                                config.name() + " lacks " +
                                (config.vector_lanes == 0 ? "the vector unit" : "the latter"));
  }
}

// The most rows a block takes, of `tiles` accumulator rows each, when the result has `rows`:
// more blocks overlap more of the first block's loads and the last one's store with the rest,
// fewer cost fewer instructions. Of a quarter, a sixteenth, sqrt, 2 sqrt and 4 sqrt of the
// result's accumulator rows a block (each at least 16), 2 sqrt ran fastest on the 16x16 core's
// RTL when its vector unit took a row at a time (commit 4052004;
// CoreBasic.ElementwiseGivesTheReferenceBitsInTheModelsCycles prints the cycles).
inline std::uint64_t block_cap(std::uint64_t rows, std::uint64_t tiles) {
  const auto acc_rows = static_cast<double>(rows * tiles);
  const auto cap = std::max<std::uint64_t>(16, static_cast<std::uint64_t>(2 * std::sqrt(acc_rows)));
  return std::max<std::uint64_t>(1, cap / tiles);
}

// READ_HOST of `count` iterations of `rows` rows from `host_addr` (rows `stride` bytes apart,
// iterations `host_step`), into consecutive rows from `first`.
inline void load(isa::ProgramBuilder& p, std::uint32_t first, std::uint32_t rows,
                 std::uint64_t host_addr, std::uint32_t stride, std::uint32_t count = 1,
                 std::uint32_t host_step = 0, Rows kind = Rows::Acc) {
  isa::ReadHostArgs load;
  load.acc = kind == Rows::Acc;
  load.i8 = kind == Rows::UbInt8;
  load.count = count;
  load.rows = rows;
  load.addr_b = first;
  load.step_b = count > 1 ? rows : 0;
  load.host_addr = static_cast<std::uint32_t>(host_addr);
  load.host_stride = stride;
  load.host_step = host_step;
  p.read_host(load);
}

// WRITE_HOST of consecutive rows from `first` likewise.
inline void store(isa::ProgramBuilder& p, std::uint32_t first, std::uint32_t rows,
                  std::uint64_t host_addr, std::uint32_t stride, std::uint32_t count = 1,
                  std::uint32_t host_step = 0, Rows kind = Rows::Acc) {
  isa::WriteHostArgs store;
  store.acc = kind == Rows::Acc;
  store.i8 = kind == Rows::UbInt8;
  store.count = count;
  store.rows = rows;
  store.addr_a = first;
  store.step_a = count > 1 ? rows : 0;
  store.host_addr = static_cast<std::uint32_t>(host_addr);
  store.host_stride = stride;
  store.host_step = host_step;
  p.write_host(store);
}

// ACTIVATE's `func` over accumulator rows from `first`, in place (F32).
inline void activate_in_place(isa::ProgramBuilder& p, isa::Func func, std::uint32_t first,
                              std::uint32_t rows, num::bf16_t alpha = 0) {
  isa::ActivateArgs a;
  a.f32 = true;
  a.func = func;
  a.alpha = alpha;
  a.rows = rows;
  a.addr_a = first;
  a.addr_b = first;
  p.activate(a);
}

// `rows` consecutive rows from `first` set to op(seed, seed) of the row `seed` (the seed of a
// fold: max of -inf, add of -0 or +0; int32 with `int32`), one iteration a row.
inline void seed_rows(isa::ProgramBuilder& p, isa::VectorOp op, bool int32, std::uint32_t seed,
                      std::uint32_t first, std::uint32_t rows) {
  isa::EltwiseArgs e;
  e.op = op;
  e.int32 = int32;
  e.row = true;
  e.count = rows;
  e.addr_a = e.bias_addr = seed;
  e.addr_b = first;
  e.step_b = 1;
  p.eltwise(e);
}

// ELTWISE op lane by lane over the tiles of each of `block` rows into `combined`, then the
// fold along that row from the seed row into `reduced`: in every lane of reduced row m, the fold
// of op over row m's values in the order the reference takes them.
inline void reduce_rows(isa::ProgramBuilder& p, isa::VectorOp op, std::uint32_t seed_row,
                        std::uint32_t x, std::uint32_t combined, std::uint32_t reduced,
                        std::uint32_t block, std::uint32_t tiles) {
  std::uint32_t source = x, source_step = tiles;
  if (tiles > 1) {
    for (std::uint32_t t = 1; t < tiles; ++t) {
      isa::EltwiseArgs e;
      e.op = op;
      e.count = block;
      e.addr_a = x + t;  // tile t of row i
      e.step_a = tiles;
      e.bias_addr = t == 1 ? x : combined;  // tile 0, then what tiles 0 .. t-1 combined to
      e.bias_step = t == 1 ? tiles : 1;
      e.addr_b = combined;
      e.step_b = 1;
      p.eltwise(e);
    }
    source = combined;
    source_step = 1;
  }
  isa::EltwiseArgs fold;
  fold.op = op;
  fold.lanes = true;
  fold.row = true;
  fold.count = block;
  fold.addr_a = source;
  fold.step_a = source_step;
  fold.bias_addr = seed_row;  // the same seed row every iteration
  fold.addr_b = reduced;
  fold.step_b = 1;
  p.eltwise(fold);
}

// Every tile of each of `block` rows, in place, against its row's row of `operand` (ELTWISE op
// with ROW).
inline void against_row(isa::ProgramBuilder& p, isa::VectorOp op, std::uint32_t x,
                        std::uint32_t operand, std::uint32_t block, std::uint32_t tiles) {
  isa::EltwiseArgs e;
  e.op = op;
  e.row = true;
  e.count = block;
  e.rows = tiles;
  e.addr_a = x;
  e.step_a = tiles;
  e.addr_b = x;
  e.step_b = tiles;
  e.bias_addr = operand;
  e.bias_step = 1;
  p.eltwise(e);
}

// ELTWISE op of `rows` consecutive rows from `first`, in place, against one constant row.
inline void with_row(isa::ProgramBuilder& p, isa::VectorOp op, std::uint32_t first,
                     std::uint32_t rows, std::uint32_t constant) {
  isa::EltwiseArgs e;
  e.op = op;
  e.row = true;
  e.rows = rows;
  e.addr_a = e.addr_b = first;
  e.bias_addr = constant;
  p.eltwise(e);
}

// 1 / count rounded to nearest (the IEEE quotient, exact in its operands up to 2^24): the scale of
// a mean.
inline num::fp32_t reciprocal(std::uint32_t count) {
  const float r = 1.0f / static_cast<float>(count);
  num::fp32_t bits = 0;
  std::memcpy(&bits, &r, sizeof bits);
  return bits;
}

// What reduce_rows leaves in every lane, computed on the host from a row's tiles `v` (tiles x d
// lanes): the tiles combined lane by lane (tile t against what tiles 0 .. t-1 gave), then
// folded along the row from the seed.
inline num::fp32_t reduce_values(num::fp32_t (*op)(num::fp32_t, num::fp32_t),
                                 const std::vector<num::fp32_t>& v, std::uint32_t d,
                                 num::fp32_t seed) {
  std::vector<num::fp32_t> combined(v.begin(), v.begin() + d);
  for (std::size_t t = 1; t < v.size() / d; ++t) {
    for (std::uint32_t j = 0; j < d; ++j) combined[j] = op(v[t * d + j], combined[j]);
  }
  num::fp32_t s = seed;
  for (std::uint32_t j = 0; j < d; ++j) s = op(s, combined[j]);
  return s;
}

}  // namespace tpu::acc_rows
