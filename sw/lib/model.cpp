#include "tpu/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tpu/array_fold.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu {
namespace {

using isa::Instruction;
using isa::Opcode;
using regs::Error;

// -0: the padding activation of lanes k >= k_valid, the identity of N-ADD.
constexpr num::bf16_t kNegativeZero = 0x8000;

constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// n lanes between host memory (little-endian) and the core's rows: a copy on a little-endian
// host, which the row moves of every READ_HOST, WRITE_HOST and weight tile come down to.
template <typename Lane>
void load_lanes(const std::uint8_t* src, Lane* dst, std::size_t n) {
  if constexpr (kLittleEndian) {
    std::memcpy(dst, src, n * sizeof(Lane));
  } else {
    for (std::size_t e = 0; e < n; ++e) {
      Lane value = 0;
      for (unsigned b = 0; b < sizeof(Lane); ++b) {
        value = static_cast<Lane>(value | (Lane{src[e * sizeof(Lane) + b]} << (8 * b)));
      }
      dst[e] = value;
    }
  }
}
template <typename Lane>
void store_lanes(std::uint8_t* dst, const Lane* src, std::size_t n) {
  if constexpr (kLittleEndian) {
    std::memcpy(dst, src, n * sizeof(Lane));
  } else {
    for (std::size_t e = 0; e < n; ++e) {
      for (unsigned b = 0; b < sizeof(Lane); ++b) {
        dst[e * sizeof(Lane) + b] = static_cast<std::uint8_t>(src[e] >> (8 * b));
      }
    }
  }
}

// An int8 in a 16-bit unified-buffer or weight lane: sign-extended (docs/isa.md, int8 mode).
num::bf16_t widen_int8(std::uint8_t byte) {
  return static_cast<num::bf16_t>(static_cast<std::uint16_t>(isa::int8_value(byte)));
}

// n unified-buffer lanes as ELTWISE UB reads them: bf16 widened exactly (num::bf16_to_fp32, a
// shift), or with I32 the 16-bit lanes sign-extended; a loop the compiler vectorises.
void widen_ub_lanes(const num::bf16_t* lanes, std::size_t n, bool int32, num::fp32_t* out) {
  if (int32) {
    for (std::size_t j = 0; j < n; ++j) {
      out[j] =
          static_cast<num::fp32_t>(static_cast<std::int32_t>(static_cast<std::int16_t>(lanes[j])));
    }
  } else {
    for (std::size_t j = 0; j < n; ++j) out[j] = static_cast<num::fp32_t>(lanes[j]) << 16;
  }
}

// One lane of ACTIVATE REQ as the activation unit computes it: Q-REQ (docs/numerics.md) built
// from the numerics library's SRDHM and RDBP, over the whole range the rows can hold, which is
// wider than num::requantize() accepts: the multiplier is used as it is (any int32), the shift
// saturates into [-31, 30], and out = min(max(y + zo, lo), hi), so hi wins when lo > hi. Where
// requantize() accepts the parameters the two agree bit for bit (tests/sw/test_model.cpp).
// rescale_lane is its y, before the zero point and the clamp: ACTIVATE REQ F32.
std::int32_t rescale_lane(std::int32_t sum, std::int32_t bias, std::int32_t multiplier,
                          std::int32_t shift) {
  const int s = static_cast<int>(std::clamp<std::int32_t>(shift, -31, 30));
  // wrap(sum + bias), then wrap(x * 2^max(s, 0)): modulo 2^32 on the bits.
  const std::uint32_t x = (static_cast<std::uint32_t>(sum) + static_cast<std::uint32_t>(bias))
                          << std::max(s, 0);
  return num::rounding_divide_by_pot(
      num::saturating_rounding_doubling_high_mul(isa::int32_value(x), multiplier), std::max(-s, 0));
}

std::int8_t requantize_lane(std::int32_t sum, std::int32_t bias, std::int32_t multiplier,
                            std::int32_t shift, int zero_point, int lo, int hi) {
  const std::int32_t y = rescale_lane(sum, bias, multiplier, shift);
  // y + zo exactly: y may lie within 127 of either end of int32.
  const std::int64_t out =
      std::min<std::int64_t>(std::max<std::int64_t>(std::int64_t{y} + zero_point, lo), hi);
  return static_cast<std::int8_t>(out);
}

// The least work of a MATMUL's task on a thread of its own: about 3 us on the vector paths, a
// few times what handing it to a waiting thread takes (WorkerPool). Twice as many tasks as with
// 2^19 share a MATMUL's rows more evenly between the threads: 4096 x 4096 x 1024 on two threads
// 0.255 and 0.262 s against 0.280 and 0.299 on the 16x16 core, 0.297 and 0.300 against 0.317 and
// 0.349 on the 128x128 (tpu gemm --backend model --time, alternating).
constexpr std::uint64_t kMinTaskMacs = std::uint64_t{1} << 18;

// h(i, r) of docs/isa.md; HOST_RANGE has made sure it fits in 32 bits.
std::uint64_t host_address(const Instruction& in, std::uint64_t i, std::uint64_t r) {
  return in.host_addr() + i * in.host_step() + r * in.host_stride();
}

// The rows a READ_HOST or WRITE_HOST moves, its fields decoded once: iteration i's row r is
// row(i, r) on chip and host(i, r) in host memory.
struct RowMove {
  RowMove(const Instruction& in, std::uint64_t chip_first, std::uint64_t chip_iteration_step)
      : count(in.count()),
        rows(in.rows()),
        chip_addr(chip_first),
        chip_step(chip_iteration_step),
        host_addr(in.host_addr()),
        host_step(in.host_step()),
        host_stride(in.host_stride()) {}
  std::uint64_t row(std::uint64_t i, std::uint64_t r) const {
    return chip_addr + i * chip_step + r;
  }
  std::uint64_t host(std::uint64_t i, std::uint64_t r) const {
    return host_addr + i * host_step + r * host_stride;
  }
  std::uint64_t count, rows, chip_addr, chip_step, host_addr, host_step, host_stride;
};

// The rows an ACTIVATE or ELTWISE reads and writes, its fields decoded once: iteration i's row r
// at a(i, r) and b(i, r), its row of operands (bias, multipliers, B) from bias(i).
struct RowRanges {
  explicit RowRanges(const Instruction& in)
      : count(in.count()),
        rows(in.rows()),
        addr_a(in.addr_a()),
        step_a(in.step_a()),
        addr_b(in.addr_b()),
        step_b(in.step_b()),
        bias_addr(in.bias_addr()),
        bias_step(in.bias_step()) {}
  std::uint64_t a(std::uint64_t i, std::uint64_t r) const { return addr_a + i * step_a + r; }
  std::uint64_t b(std::uint64_t i, std::uint64_t r) const { return addr_b + i * step_b + r; }
  std::uint64_t bias(std::uint64_t i) const { return bias_addr + i * bias_step; }
  std::uint64_t count, rows, addr_a, step_a, addr_b, step_b, bias_addr, bias_step;
};

}  // namespace

FunctionalModel::FunctionalModel(const HardwareConfig& config, std::size_t host_bytes)
    : config_(config),
      dim_(config.dim),
      memory_(host_bytes),
      fold_path_(detail::default_fold_path()),
      fold_threads_(WorkerPool::host_threads()) {
  isa::validate_config(config_);
  if (fold_threads_ > 1) pool_ = std::make_unique<WorkerPool>(fold_threads_);
  ub_.assign(std::size_t{config_.ub_depth} * dim_, 0);
  ub_fold_.assign(ub_.size(), 0.0f);
  if (config_.int8) ub_int8_.assign(ub_.size(), 0);
  acc_.assign(std::size_t{config_.acc_depth} * dim_, 0);
  ub_written_.assign(config_.ub_depth, 0);
  acc_written_.assign(config_.acc_depth, 0);
}

std::vector<num::bf16_t> FunctionalModel::ub_row(std::uint32_t row) const {
  if (row >= config_.ub_depth) {
    throw std::out_of_range(
        fmt::format("unified-buffer row {} is outside its {} rows", row, config_.ub_depth));
  }
  const auto first = ub_.begin() + static_cast<std::ptrdiff_t>(row * dim_);
  return {first, first + static_cast<std::ptrdiff_t>(dim_)};
}

std::vector<num::fp32_t> FunctionalModel::acc_row(std::uint32_t row) const {
  if (row >= config_.acc_depth) {
    throw std::out_of_range(
        fmt::format("accumulator row {} is outside its {} rows", row, config_.acc_depth));
  }
  const auto first = acc_.begin() + static_cast<std::ptrdiff_t>(row * dim_);
  return {first, first + static_cast<std::ptrdiff_t>(dim_)};
}

RunResult FunctionalModel::run(std::uint32_t prog_addr, std::uint32_t count) {
  const auto start = std::chrono::steady_clock::now();
  begin(prog_addr, count);
  while (advance()) {
    if (pod_size_ < 2 || pod_id_ >= pod_size_) {
      fail(Error::PodConfig, fmt::format("POD is position {} of {} chips", pod_id_, pod_size_));
    } else {
      fail(Error::LinkTimeout, "the chip is not in a pod: its neighbours never answer");
    }
  }
  result_.host_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result_;
}

void FunctionalModel::begin(std::uint32_t prog_addr, std::uint32_t count) {
  weight_fifo_.clear();
  error_detail_.clear();
  result_ = RunResult{};
  prog_addr_ = prog_addr;
  prog_count_ = count;
  pc_ = 0;
  stopped_ = false;
  if (prog_addr % isa::kInstrBytes != 0) {
    stop(Error::ProgAlign, 0,
         fmt::format("program address 0x{:x} is not a multiple of {}", prog_addr,
                     isa::kInstrBytes));
  }
}

bool FunctionalModel::stop(Error error, std::uint32_t pc, std::string detail) {
  result_.error = error;
  result_.error_pc = pc;
  error_detail_ = std::move(detail);
  stopped_ = true;
  return false;
}

void FunctionalModel::fail(Error error, std::string detail) {
  // The ALLREDUCE had issued, as on the RTL, where its unit finds the error.
  result_.instructions = pc_ + 1;
  stop(error, pc_, std::move(detail));
}

bool FunctionalModel::advance() {
  for (; !stopped_ && pc_ < prog_count_; ++pc_) {
    const std::uint64_t addr = prog_addr_ + std::uint64_t{pc_} * isa::kInstrBytes;
    if (!memory_.contains(addr, isa::kInstrBytes)) {
      return stop(Error::BusRead, pc_,
                  fmt::format("instruction fetch at 0x{:x} is outside the {}-byte host memory",
                              addr, memory_.size()));
    }
    const Instruction in = isa::decode(memory_.data() + addr);
    isa::CheckResult check = isa::diagnose(in, config_);
    if (!check.ok()) return stop(check.error, pc_, std::move(check.reason));
    isa::CheckResult weights = account_weights(in);
    if (!weights.ok()) return stop(weights.error, pc_, std::move(weights.reason));
    // Steps and strides are unsigned, so every host byte the instruction touches lies below
    // host_end; host memory is [0, size), so checking host_end covers them all.
    const isa::Footprint fp = isa::footprint(in, config_.dim);
    if (fp.uses_host && fp.host_end > memory_.size()) {
      return stop(fp.writes_host ? Error::BusWrite : Error::BusRead, pc_,
                  fmt::format("host bytes up to 0x{:x} are outside the {}-byte host memory",
                              fp.host_end - 1, memory_.size()));
    }
    if (in.opcode() == Opcode::Halt) {
      result_.done = true;
      stopped_ = true;
      return false;
    }
    if (in.opcode() == Opcode::Allreduce) {
      current_ = in;
      return true;
    }
    execute(in);
    result_.instructions = pc_ + 1;
  }
  if (stopped_) return false;
  return stop(Error::ProgramEnd, prog_count_,
              fmt::format("no HALT within the {} instructions of the program", prog_count_));
}

std::vector<num::fp32_t> FunctionalModel::collective_values(
    std::vector<std::uint64_t>* flat) const {
  std::vector<num::fp32_t> values;
  if (flat) flat->clear();
  for_each_collective_lane([&](std::uint64_t index, std::uint64_t element) {
    values.push_back(acc_[element]);
    if (flat) flat->push_back(index);
  });
  return values;
}

void FunctionalModel::finish_collective(const std::vector<num::fp32_t>& sums) {
  std::size_t next = 0;
  for (std::uint64_t i = 0; i < current_.count(); ++i) {
    for (std::uint64_t r = 0; r < current_.rows(); ++r) {
      const std::uint64_t row = current_.addr_a() + i * current_.step_a() + r;
      note_read(acc_written_, row);
      acc_written_[row] = 1;
    }
  }
  for_each_collective_lane(
      [&](std::uint64_t, std::uint64_t element) { acc_[element] = sums.at(next++); });
  result_.instructions = ++pc_;
}

isa::CheckResult FunctionalModel::account_weights(const Instruction& in) const {
  const std::size_t unclaimed = weight_fifo_.size();
  const std::size_t capacity = config_.weight_tiles + 1;
  switch (in.opcode()) {
    case Opcode::ReadWeights:
      if (unclaimed + in.count() > capacity) {
        return {
            Error::WeightOverflow,
            fmt::format("{} more tiles would leave {} unclaimed; the FIFO and the array hold {}",
                        in.count(), unclaimed + in.count(), capacity)};
      }
      break;
    case Opcode::Matmul:
      if (in.flag(isa::kMatmulFlagFetch)) {
        if (unclaimed != 0) {
          return {Error::WeightLeftover,
                  fmt::format("a FETCH matmul found {} unclaimed tiles", unclaimed)};
        }
      } else if (unclaimed < in.count()) {
        return {Error::WeightUnderflow,
                fmt::format("matmul needs {} tiles, {} are loaded", in.count(), unclaimed)};
      }
      break;
    case Opcode::Halt:
      if (unclaimed != 0) {
        return {Error::WeightLeftover, fmt::format("halt found {} unclaimed tiles", unclaimed)};
      }
      break;
    default:
      break;
  }
  return {};
}

void FunctionalModel::execute(const Instruction& in) {
  switch (in.opcode()) {
    case Opcode::ReadHost:
      read_host(in);
      break;
    case Opcode::ReadWeights:
      read_weights(in);
      break;
    case Opcode::Matmul:
      matmul(in);
      break;
    case Opcode::Activate:
      activate(in);
      break;
    case Opcode::WriteHost:
      write_host(in);
      break;
    case Opcode::Eltwise:
      eltwise(in);
      break;
    default:  // SYNC: every earlier instruction has already completed.
      break;
  }
}

void FunctionalModel::read_host(const Instruction& in) {
  const bool to_acc = in.flag(isa::kReadHostFlagAcc);
  const bool int8 = in.flag(isa::kReadHostFlagI8);
  const RowMove move(in, in.addr_b(), in.step_b());
  for (std::uint64_t i = 0; i < move.count; ++i) {
    for (std::uint64_t r = 0; r < move.rows; ++r) {
      const std::uint64_t row = move.row(i, r);
      const std::uint8_t* src = memory_.data() + move.host(i, r);
      if (to_acc) {
        num::fp32_t* dst = acc(row);
        load_lanes(src, dst, dim_);
        acc_written_[row] = 1;
      } else {
        num::bf16_t* dst = ub(row);
        if (int8) {
          for (std::size_t j = 0; j < dim_; ++j) dst[j] = widen_int8(src[j]);
        } else {
          load_lanes(src, dst, dim_);
        }
      }
    }
    if (!to_acc) ub_rows_written(move.row(i, 0), move.rows);
  }
}

void FunctionalModel::load_tile(std::uint64_t host_addr, std::uint32_t stride, std::uint32_t rows,
                                bool int8, bool transposed, num::bf16_t* tile) const {
  // Host row r is the tile's row r, or with `transposed` its column r; rows (columns) past
  // `rows` stay +0. The loops per kind, so that the plain one (every FETCH) vectorises.
  std::fill(tile, tile + dim_ * dim_, num::bf16_t{0});
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* src = memory_.data() + host_addr + r * stride;
    if (transposed) {
      for (std::size_t e = 0; e < dim_; ++e) {
        num::bf16_t lane = 0;
        if (int8) {
          lane = widen_int8(src[e]);
        } else {
          load_lanes(src + 2 * e, &lane, 1);
        }
        tile[e * dim_ + r] = lane;
      }
    } else if (int8) {
      for (std::size_t e = 0; e < dim_; ++e) tile[r * dim_ + e] = widen_int8(src[e]);
    } else {
      load_lanes(src, tile + r * dim_, dim_);
    }
  }
}

void FunctionalModel::read_weights(const Instruction& in) {
  const bool int8 = in.flag(isa::kReadWeightsFlagI8);
  const bool transposed = in.flag(isa::kReadWeightsFlagT);
  for (std::uint64_t i = 0; i < in.count(); ++i) {
    Tile& tile = weight_fifo_.emplace_back(dim_ * dim_);
    load_tile(host_address(in, i, 0), in.host_stride(), in.rows(), int8, transposed, tile.data());
  }
}

void FunctionalModel::matmul(const Instruction& in) {
  const bool fetch = in.flag(isa::kMatmulFlagFetch);
  const bool int8 = in.flag(isa::kMatmulFlagI8);
  const std::uint64_t count = in.count(), row_count = in.rows();
  // Without FETCH the weights are the FIFO's next tiles; with it, read from host memory as the
  // fold takes them (fold_matmul), with no tile kept.
  std::vector<Tile> tiles(fetch ? 0 : count);
  for (Tile& tile : tiles) {
    tile = std::move(weight_fifo_.front());
    weight_fifo_.pop_front();
  }
  // The rows each iteration reads and writes, in order. A K loop over consecutive
  // unified-buffer rows (each iteration the next rows, onto the same accumulator rows) reads
  // them all once, and after its first iteration only accumulator rows that iteration wrote.
  const std::uint64_t step_a = in.step_a(), step_b = in.step_b();
  if (step_a == row_count && step_b == 0) {
    note_reads(ub_written_, in.addr_a(), count * row_count);
    if (in.flag(isa::kMatmulFlagAcc0)) note_reads(acc_written_, in.addr_b(), row_count);
    std::fill_n(acc_written_.begin() + static_cast<std::ptrdiff_t>(in.addr_b()), row_count, 1);
  } else {
    for (std::uint64_t i = 0; i < count; ++i) {
      const bool accumulate = in.flag(i == 0 ? isa::kMatmulFlagAcc0 : isa::kMatmulFlagAccn);
      const std::uint64_t a_first = in.addr_a() + i * step_a;
      const std::uint64_t b_first = in.addr_b() + i * step_b;
      note_reads(ub_written_, a_first, row_count);
      if (accumulate) note_reads(acc_written_, b_first, row_count);
      std::fill_n(acc_written_.begin() + static_cast<std::ptrdiff_t>(b_first), row_count, 1);
    }
  }
  if (int8) {
    // Q-MAC on the low bytes of the activation and weight lanes, whatever loaded the tile; lanes
    // k >= k_valid carry -0, whose low byte is the int8 0.
    fold_matmul<std::int32_t>(
        in, tiles, ub_int8_, 0,
        [](const num::bf16_t* lanes, std::size_t n, std::int32_t* out) {
          for (std::size_t e = 0; e < n; ++e) out[e] = isa::int8_value(lanes[e]);
        },
        [this](const detail::FoldActs<std::int32_t>& acts, auto weights, std::uint64_t tiles_now,
               num::fp32_t* sums, std::uint64_t rows) {
          if constexpr (std::is_same_v<decltype(weights), std::uint8_t*>) {
            detail::fold_rows_int8(fold_path_, acts, detail::HostInt8Weights{weights}, tiles_now,
                                   sums, rows, dim_);
          } else {
            detail::fold_rows_int8(fold_path_, acts, weights, tiles_now, sums, rows, dim_);
          }
        });
    return;
  }
  fold_matmul<float>(in, tiles, ub_fold_, -0.0f, detail::fold_operands,
                     [this](const detail::FoldActs<float>& acts, auto weights,
                            std::uint64_t tiles_now, num::fp32_t* sums, std::uint64_t rows) {
                       if constexpr (std::is_same_v<decltype(weights), std::uint8_t*>) {
                         detail::fold_rows(fold_path_, acts, detail::HostBf16Weights{weights},
                                           tiles_now, sums, rows, dim_);
                       } else {
                         detail::fold_rows(fold_path_, acts, weights, tiles_now, sums, rows, dim_);
                       }
                     });
}

template <typename T, typename Convert, typename Fold>
void FunctionalModel::fold_matmul(const Instruction& in, const std::vector<Tile>& tiles,
                                  const std::vector<T>& shadow, T past_k_valid, Convert convert,
                                  Fold fold) {
  const std::size_t k_valid = in.k_valid();
  const std::uint64_t count = in.count(), row_count = in.rows();
  const std::uint64_t step_a = in.step_a(), step_b = in.step_b();
  // Iterations that go on from the sums the one before wrote (ACCN onto the same rows: a K loop)
  // fold as one, tile after tile, the sums in the fold's registers throughout, in the same order
  // of k; at most kMaxTiles at once. The activations are the unified buffer's rows as the fold
  // takes them (`shadow`), or, where lanes k >= k_valid carry `past_k_valid`, a copy.
  constexpr std::uint64_t kMaxTiles = 256;
  const bool k_loop = step_b == 0 && in.flag(isa::kMatmulFlagAccn);
  const std::uint64_t group = k_loop ? kMaxTiles : 1;
  std::vector<T> weights, copy;
  // A FETCH of whole tiles laid out one after the other (every GEMM's and convolution's): the
  // fold reads them where they lie in host memory, widening each weight vector as it loads it,
  // with AVX-512 (16 sums a weight vector) or for a few rows; AVX2's kernels widen in four
  // instructions for 8 sums, which costs more than converting the tiles once (make bench-model,
  // TPU_FOLD_PATH=avx2: 512^3 27 against 43 GMAC/s).
  constexpr std::uint64_t kLaneBytes = std::is_same_v<T, float> ? 2 : 1;
  const bool in_place = tiles.empty() && kLittleEndian && k_valid == dim_ &&
                        in.host_stride() == kLaneBytes * dim_ &&
                        in.host_step() == kLaneBytes * dim_ * dim_ &&
                        (fold_path_ == detail::FoldPath::Avx512 || row_count < 8);
  for (std::uint64_t i0 = 0; i0 < count; i0 += group) {
    const std::uint64_t tiles_now = std::min(group, count - i0);
    const std::uint64_t a_first = in.addr_a() + i0 * step_a;
    const std::uint64_t b_first = in.addr_b() + i0 * step_b;
    if (!in.flag(i0 == 0 ? isa::kMatmulFlagAcc0 : isa::kMatmulFlagAccn)) {
      std::fill(acc(b_first), acc(b_first) + row_count * dim_, 0u);  // the seeds +0 (int8: 0)
    }
    if (!in_place) {
      weights.resize(tiles_now * dim_ * dim_);
      Tile fetched(tiles.empty() ? dim_ * dim_ : 0);
      for (std::uint64_t t = 0; t < tiles_now; ++t) {
        if (tiles.empty()) {
          load_tile(host_address(in, i0 + t, 0), in.host_stride(), in.k_valid(),
                    in.flag(isa::kMatmulFlagI8), false, fetched.data());
        }
        convert(tiles.empty() ? fetched.data() : tiles[i0 + t].data(), dim_ * dim_,
                &weights[t * dim_ * dim_]);
      }
    }
    detail::FoldActs<T> acts{shadow.data() + a_first * dim_, step_a * dim_};
    if (k_valid < dim_) {
      copy.resize(tiles_now * row_count * dim_);
      for (std::uint64_t t = 0; t < tiles_now; ++t) {
        for (std::uint64_t r = 0; r < row_count; ++r) {
          const T* from = acts.first + t * acts.tile_stride + r * dim_;
          T* to = copy.data() + (t * row_count + r) * dim_;
          std::copy(from, from + k_valid, to);
          std::fill(to + k_valid, to + dim_, past_k_valid);
        }
      }
      acts = {copy.data(), row_count * dim_};
    }
    // Rows split over the pool's threads, each task at least kMinTaskMacs multiply-adds and a
    // multiple of eight rows (whole kernel blocks, or halves of AVX-512's).
    const std::uint64_t macs = row_count * tiles_now * dim_ * dim_;
    const std::uint64_t tasks = std::min<std::uint64_t>(
        {fold_threads_, std::max<std::uint64_t>(1, macs / kMinTaskMacs), (row_count + 7) / 8});
    num::fp32_t* sums = acc(b_first);
    const auto fold_rows = [&](std::uint64_t first, std::uint64_t rows) {
      if (in_place) {
        fold(acts.rows_from(first, dim_), memory_.data() + host_address(in, i0, 0), tiles_now,
             sums + first * dim_, rows);
      } else {
        fold(acts.rows_from(first, dim_), weights.data(), tiles_now, sums + first * dim_, rows);
      }
    };
    if (tasks <= 1) {
      fold_rows(0, row_count);
      continue;
    }
    const std::uint64_t per_task = ((row_count + tasks - 1) / tasks + 7) / 8 * 8;
    pool_->run(tasks, [&](std::size_t task) {
      const std::uint64_t first = task * per_task;
      if (first < row_count) fold_rows(first, std::min(per_task, row_count - first));
    });
  }
}

void FunctionalModel::ub_rows_written(std::uint64_t first, std::uint64_t rows) {
  std::fill_n(ub_written_.begin() + static_cast<std::ptrdiff_t>(first), rows, 1);
  const std::size_t lanes = rows * dim_;
  const num::bf16_t* values = ub(first);
  detail::fold_operands(values, lanes, &ub_fold_[first * dim_]);
  if (!ub_int8_.empty()) {
    std::int32_t* low_bytes = &ub_int8_[first * dim_];
    for (std::size_t j = 0; j < lanes; ++j) low_bytes[j] = isa::int8_value(values[j]);
  }
}

void FunctionalModel::activate(const Instruction& in) {
  if (in.flag(isa::kActivateFlagReq)) {
    requantize(in);
    return;
  }
  const bool to_acc = in.flag(isa::kActivateFlagF32);
  const bool with_bias = in.flag(isa::kActivateFlagBias);
  const unsigned func = in.func();
  const num::bf16_t alpha = in.alpha();
  const auto act = static_cast<num::ActFunc>(func);
  const RowRanges rows(in);
  const std::size_t lanes = rows.rows * dim_;
  // The iteration's values, and its bias row repeated for each of its rows.
  std::vector<num::fp32_t> values(lanes), bias_block(with_bias ? lanes : 0);
  for (std::uint64_t i = 0; i < rows.count; ++i) {
    // ACC_OVERLAP guarantees that no row of this instruction writes the bias rows.
    const num::fp32_t* bias = nullptr;
    if (with_bias) {
      const std::uint64_t bias_row = rows.bias(i);
      note_read(acc_written_, bias_row);
      bias = acc(bias_row);
    }
    // The iteration's rows at once: ACC_OVERLAP guarantees that F32's destination rows are the
    // source rows or apart from them, so no row is written before another reads it.
    const std::uint64_t a_first = rows.a(i, 0), b_first = rows.b(i, 0);
    note_reads(acc_written_, a_first, rows.rows);
    const num::fp32_t* x = acc(a_first);
    if (bias) {
      for (std::uint64_t r = 0; r < rows.rows; ++r) std::copy_n(bias, dim_, &bias_block[r * dim_]);
      detail::add_lanes(x, bias_block.data(), values.data(), lanes);
    } else {
      std::copy_n(x, lanes, values.begin());
    }
    if (act == num::ActFunc::kNone || act == num::ActFunc::kRelu || act == num::ActFunc::kRelu6) {
      detail::relu_lanes(values.data(), lanes, act == num::ActFunc::kRelu,
                         act == num::ActFunc::kRelu6);
    } else {
      for (num::fp32_t& value : values) value = num::act_func(func, value, alpha);
    }
    if (to_acc) {
      std::copy(values.begin(), values.end(), acc(b_first));
      std::fill_n(acc_written_.begin() + static_cast<std::ptrdiff_t>(b_first), rows.rows, 1);
    } else {
      detail::round_to_bf16(values.data(), ub(b_first), lanes);
      ub_rows_written(b_first, rows.rows);
    }
  }
}

num::fp32_t eltwise_lane(isa::VectorOp op, bool int32, num::fp32_t a, num::fp32_t b) {
  constexpr num::fp32_t kSignMask = 0x80000000u;
  const auto sa = static_cast<std::int32_t>(a), sb = static_cast<std::int32_t>(b);
  switch (op) {
    case isa::VectorOp::Add:
      return int32 ? a + b : num::add_fp32(a, b);
    case isa::VectorOp::Sub:
      return int32 ? a - b : num::add_fp32(a, b ^ kSignMask);
    case isa::VectorOp::Mul:
      return int32 ? a * b : num::mul_fp32(a, b);
    case isa::VectorOp::Max:
      return int32 ? (sa >= sb ? a : b) : num::max_fp32(a, b);
    case isa::VectorOp::Min:
      return int32 ? (sa >= sb ? b : a) : num::min_fp32(a, b);
    case isa::VectorOp::Quant:
      return static_cast<num::fp32_t>(
          num::fp32_to_int32(num::mul_fp32(int32 ? num::int32_to_fp32(sa) : a, b)));
    case isa::VectorOp::Dequant:
      return num::mul_fp32(int32 ? num::int32_to_fp32(sa) : a, b);
  }
  throw std::logic_error("eltwise: an operation the checks refuse");
}

// ELTWISE: row r of iteration i = op(A row, B row) lane by lane, or with LANES the fold of op
// along row A from B's lane 0 in every lane; the rows one after another in order, each read after
// every earlier one is written (as the vector unit does them); with ROW, the iteration's one B
// row is read before its first row. With UB, A's rows are unified-buffer rows, widened.
void FunctionalModel::eltwise(const Instruction& in) {
  const auto op = static_cast<isa::VectorOp>(in.vop());
  const bool int32 = in.flag(isa::kEltwiseFlagI32);
  const bool row_operand = in.flag(isa::kEltwiseFlagRow);
  const bool along_row = in.flag(isa::kEltwiseFlagLanes);
  const bool a_in_ub = in.flag(isa::kEltwiseFlagUb);
  std::vector<num::fp32_t> b_row_values(dim_), a_values(dim_), a_block, b_block;
  // On the host's binary32 where the contract's N-ADD and N-MUL allow it, and in integer steps
  // for the comparisons: out = op(a, b) over n lanes.
  const bool host_op =
      !int32 && (op == isa::VectorOp::Add || op == isa::VectorOp::Sub || op == isa::VectorOp::Mul ||
                 op == isa::VectorOp::Max || op == isa::VectorOp::Min);
  const auto host_lanes = [op](const num::fp32_t* a, const num::fp32_t* b, num::fp32_t* out,
                               std::size_t n) {
    if (op == isa::VectorOp::Mul) {
      detail::mul_lanes(a, b, out, n);
    } else if (op == isa::VectorOp::Max || op == isa::VectorOp::Min) {
      detail::max_lanes(a, b, out, n, op == isa::VectorOp::Min);
    } else {
      detail::add_lanes(a, b, out, n, op == isa::VectorOp::Sub);
    }
  };
  const RowRanges rows(in);
  // A's row, widened from a unified-buffer row (bf16 exactly, or with I32 its 16-bit lanes
  // sign-extended), into `to`.
  const auto read_a = [&](std::uint64_t a_row, num::fp32_t* to) {
    note_read(a_in_ub ? ub_written_ : acc_written_, a_row);
    if (!a_in_ub) {
      std::copy_n(acc(a_row), dim_, to);
      return;
    }
    widen_ub_lanes(ub(a_row), dim_, int32, to);
  };
  // Rows [first, first + n) and the destination's: the same rows or none in common, so that the
  // iteration's rows may be read all before any is written.
  const auto apart = [&](std::uint64_t first, std::uint64_t dst) {
    return first == dst || first + rows.rows <= dst || dst + rows.rows <= first;
  };
  for (std::uint64_t i = 0; i < rows.count; ++i) {
    const std::uint64_t b_base = rows.bias(i);
    if (row_operand) {
      note_read(acc_written_, b_base);
      std::copy_n(acc(b_base), dim_, b_row_values.begin());
    }
    const std::uint64_t dst = rows.b(i, 0);
    if (host_op && !along_row && (a_in_ub || apart(rows.a(i, 0), dst)) &&
        (row_operand || apart(b_base, dst))) {
      // The iteration at once. Its rows are consecutive and each operand's are the
      // destination's or none of them. Accumulator rows apart from the destination are read
      // where they lie; the others are copied first (host_lanes' operands and result do not
      // overlap), unified-buffer rows widened and a broadcast row repeated.
      const std::size_t lanes = rows.rows * dim_;
      const std::uint64_t a_first = rows.a(i, 0);
      note_reads(a_in_ub ? ub_written_ : acc_written_, a_first, rows.rows);
      const num::fp32_t* a_lanes = acc(a_first);
      if (a_in_ub || a_first == dst) {
        a_block.resize(lanes);
        if (a_in_ub) {
          widen_ub_lanes(ub(a_first), lanes, int32, a_block.data());
        } else {
          std::copy_n(a_lanes, lanes, a_block.begin());
        }
        a_lanes = a_block.data();
      }
      const num::fp32_t* b_lanes = acc(b_base);
      if (row_operand || b_base == dst) {
        b_block.resize(lanes);
        for (std::uint64_t r = 0; r < rows.rows; ++r) {
          std::copy_n(row_operand ? b_row_values.data() : acc(b_base + r), dim_,
                      &b_block[r * dim_]);
        }
        b_lanes = b_block.data();
      }
      if (!row_operand) note_reads(acc_written_, b_base, rows.rows);
      host_lanes(a_lanes, b_lanes, acc(dst), lanes);
      std::fill_n(acc_written_.begin() + static_cast<std::ptrdiff_t>(dst), rows.rows, 1);
      continue;
    }
    for (std::uint64_t r = 0; r < rows.rows; ++r) {
      const std::uint64_t dst_row = rows.b(i, r);
      read_a(rows.a(i, r), a_values.data());
      if (!row_operand) {
        note_read(acc_written_, b_base + r);
        std::copy_n(acc(b_base + r), dim_, b_row_values.begin());
      }
      num::fp32_t* out = acc(dst_row);
      if (along_row) {
        // The fold along the row, one lane after another in order.
        num::fp32_t fold = b_row_values[0];
        for (std::size_t j = 0; j < dim_; ++j) {
          if (host_op) {
            num::fp32_t next;  // host_lanes' operands and result do not overlap
            host_lanes(&fold, &a_values[j], &next, 1);
            fold = next;
          } else {
            fold = eltwise_lane(op, int32, fold, a_values[j]);
          }
        }
        std::fill_n(out, dim_, fold);
      } else {
        for (std::size_t j = 0; j < dim_; ++j) {
          out[j] = eltwise_lane(op, int32, a_values[j], b_row_values[j]);
        }
      }
      acc_written_[dst_row] = 1;
    }
  }
}

// ACTIVATE REQ: int32 rows to int8 by Q-REQ, each column with its bias, multiplier and shift from
// the iteration's three rows at bias_addr + i * bias_step; int8 results sign-extended into the UB,
// or with F32 the rescaled int32 values (y of Q-REQ) into the accumulators, row by row, so that
// the rows may be rewritten in place.
void FunctionalModel::requantize(const Instruction& in) {
  const bool to_acc = in.flag(isa::kActivateFlagF32);
  const int zero_point = in.zero_point(), lo = in.clamp_lo(), hi = in.clamp_hi();
  const RowRanges rows(in);
  for (std::uint64_t i = 0; i < rows.count; ++i) {
    const std::uint64_t bias_row = rows.bias(i);
    for (std::uint64_t q = 0; q < 3; ++q) note_read(acc_written_, bias_row + q);
    const num::fp32_t* bias = acc(bias_row);
    const num::fp32_t* multiplier = acc(bias_row + 1);
    const num::fp32_t* shift = acc(bias_row + 2);
    for (std::uint64_t r = 0; r < rows.rows; ++r) {
      const std::uint64_t a_row = rows.a(i, r);
      const std::uint64_t b_row = rows.b(i, r);
      note_read(acc_written_, a_row);
      const num::fp32_t* x = acc(a_row);
      if (to_acc) {
        num::fp32_t* out = acc(b_row);
        for (std::size_t j = 0; j < dim_; ++j) {
          out[j] = static_cast<num::fp32_t>(
              rescale_lane(isa::int32_value(x[j]), isa::int32_value(bias[j]),
                           isa::int32_value(multiplier[j]), isa::int32_value(shift[j])));
        }
        acc_written_[b_row] = 1;
        continue;
      }
      num::bf16_t* out = ub(b_row);
      for (std::size_t j = 0; j < dim_; ++j) {
        const std::int8_t y = requantize_lane(isa::int32_value(x[j]), isa::int32_value(bias[j]),
                                              isa::int32_value(multiplier[j]),
                                              isa::int32_value(shift[j]), zero_point, lo, hi);
        out[j] = static_cast<num::bf16_t>(static_cast<std::uint16_t>(y));
      }
    }
    if (!to_acc) ub_rows_written(rows.b(i, 0), rows.rows);
  }
}

void FunctionalModel::write_host(const Instruction& in) {
  const bool from_acc = in.flag(isa::kWriteHostFlagAcc);
  const bool int8 = in.flag(isa::kWriteHostFlagI8);
  const RowMove move(in, in.addr_a(), in.step_a());
  for (std::uint64_t i = 0; i < move.count; ++i) {
    for (std::uint64_t r = 0; r < move.rows; ++r) {
      const std::uint64_t row = move.row(i, r);
      std::uint8_t* dst = memory_.data() + move.host(i, r);
      if (from_acc) {
        note_read(acc_written_, row);
        const num::fp32_t* src = acc(row);
        store_lanes(dst, src, dim_);
      } else {
        note_read(ub_written_, row);
        const num::bf16_t* src = ub(row);
        if (int8) {
          for (std::size_t j = 0; j < dim_; ++j) dst[j] = static_cast<std::uint8_t>(src[j]);
        } else {
          store_lanes(dst, src, dim_);
        }
      }
    }
  }
}

}  // namespace tpu
