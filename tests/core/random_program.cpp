#include "random_program.hpp"

#include <algorithm>

#include "oracle/operand_sets.hpp"
#include "tpu/program.hpp"

namespace tpu::testing {
namespace {

constexpr std::uint32_t kDataAddr = 0x10000;      // after the program
constexpr std::uint32_t kWindowBytes = 96 << 10;  // random data; the last third is scratch
constexpr std::uint32_t kScratchBytes = 32 << 10;

// A region of on-chip rows: the first `rows` rows of one bank.
struct Region {
  isa::Memory memory;
  std::uint32_t first;
  std::uint32_t rows;
};

class Generator {
 public:
  Generator(const HardwareConfig& config, const RandomProgramShape& shape, std::uint64_t seed)
      : config_(config), shape_(shape), rng_(seed), builder_(config) {
    const unsigned d = config.dim;
    ub_[0] = {isa::Memory::Ub, 0, shape.ub_rows};
    ub_[1] = {isa::Memory::Ub, config.ub_depth / 2, shape.ub_rows};
    acc_[0] = {isa::Memory::Acc, 0, shape.acc_rows};
    acc_[1] = {isa::Memory::Acc, config.acc_depth / 2, shape.acc_rows};
    dump_addr_ = kDataAddr + kWindowBytes;
    dump_bytes_ = 2 * shape.ub_rows * 2 * d + 2 * shape.acc_rows * 4 * d;
  }

  RandomProgram make() {
    RandomProgram out;
    out.data_addr = kDataAddr;
    out.dump_addr = dump_addr_;
    out.memory_bytes = dump_addr_ + dump_bytes_;
    out.host_data.resize(kWindowBytes);
    for (std::size_t i = 0; i + 1 < out.host_data.size(); i += 2) {
      const std::uint16_t v = rng_.bf16();
      out.host_data[i] = static_cast<std::uint8_t>(v);
      out.host_data[i + 1] = static_cast<std::uint8_t>(v >> 8);
    }

    // Every row a later instruction may read holds data from the start.
    for (const Region& r : {ub_[0], ub_[1], acc_[0], acc_[1]}) fill(r);
    for (unsigned i = 0; i < shape_.instructions; ++i) random_instruction();
    if (unclaimed_ > 0) use_loaded_tiles();
    std::uint32_t at = dump_addr_;
    for (const Region& r : {ub_[0], ub_[1], acc_[0], acc_[1]}) at = dump(r, at);
    builder_.halt();
    out.program = builder_.instructions();
    return out;
  }

 private:
  unsigned row_bytes(isa::Memory m) const { return (m == isa::Memory::Acc ? 4 : 2) * config_.dim; }
  unsigned align(unsigned row_bytes) const { return std::min(row_bytes, config_.bus_bytes); }
  std::uint32_t pick(std::uint32_t lo, std::uint32_t hi) {
    return static_cast<std::uint32_t>(rng_.uniform(lo, hi));
  }
  bool coin(unsigned percent) { return pick(1, 100) <= percent; }
  // On a core with the int8 datapath, an instruction uses its int8 form this often.
  bool int8_coin() { return config_.int8 && coin(35); }
  // Host bytes of a row: bf16 or int8 (one byte a lane) unified-buffer rows.
  unsigned ub_host_bytes(bool i8) const { return (i8 ? 1 : 2) * config_.dim; }

  // count, rows and step of an iteration space that fits `region`, placed at a
  // random first row.
  struct Span {
    std::uint32_t count, rows, step, first;
  };
  Span span_in(const Region& region, std::uint32_t count, std::uint32_t rows) {
    rows = std::min(rows, region.rows);
    std::uint32_t step = 0;
    if (count > 1) {
      const std::uint32_t room = region.rows - rows;
      step = coin(25) ? 0 : pick(0, room / (count - 1));
    }
    const std::uint32_t extent = (count - 1) * step + rows;
    return {count, rows, step, region.first + pick(0, region.rows - extent)};
  }
  Span random_span(const Region& region) {
    return span_in(region, pick(1, shape_.max_count), pick(1, shape_.max_rows));
  }

  // Host addressing for `count` iterations of `rows` rows of `rb` bytes, inside
  // [lo, lo + bytes).
  struct HostSpan {
    std::uint32_t addr, stride, step;
  };
  HostSpan host_span(std::uint32_t count, std::uint32_t rows, unsigned rb, std::uint32_t lo,
                     std::uint32_t bytes) {
    const unsigned a = align(rb);
    for (;;) {
      std::uint32_t stride = rb;
      if (rows > 1 && coin(50)) stride = rb + a * pick(0, 8);
      if (rows > 1 && coin(5)) stride = 0;  // the same row again
      std::uint32_t step = (rows - 1) * stride + rb;
      if (count > 1 && coin(50)) step = a * pick(0, 64);
      const std::uint64_t extent =
          std::uint64_t{count - 1} * step + std::uint64_t{rows - 1} * stride + rb;
      if (extent > bytes) continue;
      const std::uint32_t slots = static_cast<std::uint32_t>((bytes - extent) / a);
      return {lo + a * pick(0, slots), stride, step};
    }
  }
  HostSpan readable(std::uint32_t count, std::uint32_t rows, unsigned rb) {
    return host_span(count, rows, rb, kDataAddr, kWindowBytes);
  }
  HostSpan writable(std::uint32_t count, std::uint32_t rows, unsigned rb) {
    return host_span(count, rows, rb, kDataAddr + kWindowBytes - kScratchBytes, kScratchBytes);
  }

  void fill(const Region& r) {
    isa::ReadHostArgs a;
    a.acc = r.memory == isa::Memory::Acc;
    a.rows = r.rows;
    a.addr_b = r.first;
    const HostSpan h = readable(1, r.rows, row_bytes(r.memory));
    a.host_addr = h.addr;
    a.host_stride = h.stride;
    builder_.read_host(a);
  }

  std::uint32_t dump(const Region& r, std::uint32_t at) {
    isa::WriteHostArgs a;
    a.acc = r.memory == isa::Memory::Acc;
    a.rows = r.rows;
    a.addr_a = r.first;
    a.host_addr = at;
    a.host_stride = row_bytes(r.memory);
    builder_.write_host(a);
    return at + r.rows * row_bytes(r.memory);
  }

  void use_loaded_tiles() {
    isa::MatmulArgs a;
    a.count = unclaimed_;
    const Span s = span_in(ub_[0], unclaimed_, pick(1, shape_.max_rows));
    a.rows = s.rows;
    a.addr_a = s.first;
    a.step_a = s.step;
    a.addr_b = acc_[1].first;
    builder_.matmul(a);
    unclaimed_ = 0;
  }

  void random_instruction() {
    switch (pick(0, 11)) {
      case 0:
      case 1:
        read_host();
        break;
      case 2:
        read_weights();
        break;
      case 3:
      case 4:
      case 5:
        matmul();
        break;
      case 6:
      case 7:
        activate();
        break;
      case 8:
      case 9:
        write_host();
        break;
      case 10:
        if (config_.vector_lanes > 0) {
          eltwise();
          break;
        }
        [[fallthrough]];
      default:
        builder_.sync();
        break;
    }
  }

  void read_host() {
    const bool acc = coin(40);
    const bool i8 = !acc && int8_coin();
    const Region& r = acc ? acc_[pick(0, 1)] : ub_[pick(0, 1)];
    const Span s = random_span(r);
    const HostSpan h = readable(s.count, s.rows, acc ? row_bytes(r.memory) : ub_host_bytes(i8));
    isa::ReadHostArgs a;
    a.acc = acc;
    a.i8 = i8;
    a.count = s.count;
    a.rows = s.rows;
    a.addr_b = s.first;
    a.step_b = s.step;
    a.host_addr = h.addr;
    a.host_stride = h.stride;
    a.host_step = h.step;
    builder_.read_host(a);
  }

  void read_weights() {
    const std::uint32_t capacity = config_.weight_tiles + 1;
    if (unclaimed_ >= capacity) return matmul();
    isa::ReadWeightsArgs a;
    a.count = pick(1, capacity - unclaimed_);
    a.rows = pick(1, config_.dim);
    a.i8 = int8_coin();
    a.transposed = config_.vector_lanes > 0 && coin(40);
    const HostSpan h = readable(a.count, a.rows, ub_host_bytes(a.i8));
    a.host_addr = h.addr;
    a.host_stride = h.stride;
    a.host_step = h.step;
    builder_.read_weights(a);
    unclaimed_ += a.count;
  }

  void matmul() {
    isa::MatmulArgs a;
    a.acc0 = coin(50);
    a.accn = coin(70);
    a.i8 = int8_coin();
    a.k_valid = pick(1, config_.dim);
    a.n_valid = pick(1, config_.dim);
    const std::uint32_t count = unclaimed_ > 0 ? pick(1, unclaimed_) : pick(1, shape_.max_count);
    const Span src = span_in(ub_[pick(0, 1)], count, pick(1, shape_.max_rows));
    const Span dst = span_in(acc_[pick(0, 1)], count, src.rows);
    a.count = count;
    a.rows = src.rows;
    a.addr_a = src.first;
    a.step_a = src.step;
    a.addr_b = dst.first;
    a.step_b = coin(40) ? 0 : dst.step;  // a K loop into the same rows
    if (unclaimed_ > 0) {
      unclaimed_ -= count;
    } else {
      a.fetch = true;
      const HostSpan h = readable(count, *a.k_valid, ub_host_bytes(a.i8));
      a.host_addr = h.addr;
      a.host_stride = h.stride;
      a.host_step = h.step;
    }
    builder_.matmul(a);
  }

  void activate() {
    if (int8_coin()) return requantise();
    isa::ActivateArgs a;
    a.func = static_cast<isa::Func>(pick(0, isa::func_count(config_) - 1));
    if (a.func == isa::Func::Leaky) a.alpha = rng_.bf16();
    a.f32 = coin(40);
    a.bias = coin(50);
    const unsigned src_bank = pick(0, 1);
    const Span src = random_span(acc_[src_bank]);
    a.count = src.count;
    a.rows = src.rows;
    a.addr_a = src.first;
    a.step_a = src.step;
    unsigned bias_bank = pick(0, 1);
    if (a.f32 && coin(50)) {
      // In place, row for row; the bias must then come from the other bank.
      a.addr_b = a.addr_a;
      a.step_b = a.step_a;
      bias_bank = 1 - src_bank;
    } else if (a.f32) {
      const Span dst = span_in(acc_[1 - src_bank], src.count, src.rows);
      a.addr_b = dst.first;
      a.step_b = dst.step;
      bias_bank = src_bank;
    } else {
      const Span dst = span_in(ub_[pick(0, 1)], src.count, src.rows);
      a.addr_b = dst.first;
      a.step_b = dst.step;
    }
    if (a.bias) {
      const Span bias = span_in(acc_[bias_bank], src.count, 1);
      a.bias_addr = bias.first;
      a.bias_step = bias.step;
    }
    builder_.activate(a);
  }

  // ELTWISE over any accumulator rows, or unified-buffer rows as A, fp32 or int32 (the bits are
  // the bits): either bank, the destination anywhere, so that it may overwrite its own operands
  // (rows are done in order).
  void eltwise() {
    isa::EltwiseArgs a;
    a.op = static_cast<isa::VectorOp>(pick(0, isa::kVectorOpCount - 1));
    a.row = coin(40);
    a.int32 = !config_.float_datapath || coin(30);
    a.lanes = coin(25);
    a.ub = coin(30);
    const Span src = random_span(a.ub ? ub_[pick(0, 1)] : acc_[pick(0, 1)]);
    a.count = src.count;
    a.rows = src.rows;
    a.addr_a = src.first;
    a.step_a = src.step;
    const Span dst = span_in(acc_[pick(0, 1)], src.count, src.rows);
    a.addr_b = dst.first;
    a.step_b = dst.step;
    const Span b = span_in(acc_[pick(0, 1)], src.count, a.row ? 1 : src.rows);
    a.bias_addr = b.first;
    a.bias_step = b.step;
    builder_.eltwise(a);
  }

  // ACTIVATE REQ: whatever the accumulators hold as sums, biases, multipliers and shifts (the
  // hardware takes any, docs/isa.md), to int8 unified-buffer rows, or with F32 (a rescaling) to
  // int32 accumulator rows: in place, or into the other bank, the blocks then in the source's.
  void requantise() {
    isa::ActivateArgs a;
    a.req = true;
    a.bias = true;
    a.f32 = coin(40);
    const unsigned src_bank = pick(0, 1);
    const Span src = random_span(acc_[src_bank]);
    a.count = src.count;
    a.rows = src.rows;
    a.addr_a = src.first;
    a.step_a = src.step;
    unsigned block_bank = pick(0, 1);
    if (a.f32 && coin(50)) {
      a.addr_b = a.addr_a;
      a.step_b = a.step_a;
      block_bank = 1 - src_bank;
    } else {
      const Span dst = a.f32 ? span_in(acc_[1 - src_bank], src.count, src.rows)
                             : span_in(ub_[pick(0, 1)], src.count, src.rows);
      a.addr_b = dst.first;
      a.step_b = dst.step;
      if (a.f32) block_bank = src_bank;
    }
    const Span block = span_in(acc_[block_bank], src.count, 3);
    a.bias_addr = block.first;
    a.bias_step = block.step;
    if (!a.f32) {
      a.zero_point = static_cast<int>(pick(0, 255)) - 128;
      a.clamp_lo = static_cast<int>(pick(0, 255)) - 128;
      a.clamp_hi = static_cast<int>(pick(0, 255)) - 128;
    }
    builder_.activate(a);
  }

  void write_host() {
    const bool acc = coin(40);
    const bool i8 = !acc && int8_coin();
    const Region& r = acc ? acc_[pick(0, 1)] : ub_[pick(0, 1)];
    const Span s = random_span(r);
    const HostSpan h = writable(s.count, s.rows, acc ? row_bytes(r.memory) : ub_host_bytes(i8));
    isa::WriteHostArgs a;
    a.acc = acc;
    a.i8 = i8;
    a.count = s.count;
    a.rows = s.rows;
    a.addr_a = s.first;
    a.step_a = s.step;
    a.host_addr = h.addr;
    a.host_stride = h.stride;
    a.host_step = h.step;
    builder_.write_host(a);
  }

  HardwareConfig config_;
  RandomProgramShape shape_;
  oracle::OperandRng rng_;
  isa::ProgramBuilder builder_;
  Region ub_[2], acc_[2];
  std::uint32_t dump_addr_ = 0, dump_bytes_ = 0;
  std::uint32_t unclaimed_ = 0;  // weight tiles loaded and not yet used
};

}  // namespace

RandomProgram make_random_program(const HardwareConfig& config, const RandomProgramShape& shape,
                                  std::uint64_t seed) {
  return Generator(config, shape, seed).make();
}

}  // namespace tpu::testing
