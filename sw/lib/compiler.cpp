#include "tpu/compiler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tpu/numerics/activation.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

std::uint64_t align_up(std::uint64_t value, std::uint64_t to) {
  return (value + to - 1) / to * to;
}

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return (a + b - 1) / b;
}

// Accumulator rows a pair's column rows take at the end of its bank: the bias, or Q-REQ's three
// (bias', M, s).
std::uint32_t column_rows(const GemmSpec& spec) {
  return spec.out == OutType::Int8 ? 3 : 1;
}

// Results that stay in the accumulators (written from there) rather than going through the UB.
bool results_in_acc(const GemmSpec& spec) {
  return spec.out == OutType::Fp32 || spec.out == OutType::Int32;
}

// Emits the program of a plan whose sizes and addresses are fixed.
class GemmEmitter {
 public:
  explicit GemmEmitter(GemmPlan& plan)
      : plan_(plan),
        spec_(plan.spec),
        d_(plan.config.dim),
        k_tiles_(plan.k_pad / d_),
        n_tiles_(plan.n_pad / d_),
        c_tiles_(plan.conv.empty() ? 0 : k_tiles_ / plan.conv.taps()),
        a_rows_(plan.conv.empty() ? plan.block_rows * k_tiles_
                                  : plan.conv.phases() * c_tiles_ * plan.a_span),
        m_blocks_(static_cast<std::uint32_t>(plan.block_first.size() - 1)),
        ub_half_(plan.config.ub_depth / 2),
        acc_half_(plan.config.acc_depth / 2),
        esize_(plan.in_elem_bytes()),
        builder_(plan.config) {}

  void emit() {
    const std::uint32_t blocks = m_blocks_ * n_tiles_;
    load_a(0);
    for (std::uint32_t b = 0; b < blocks; ++b) {
      compute(b);
      // The next A block loads into the other bank while this one computes.
      // It goes before the previous pair's ACTIVATE and WRITE_HOST: issue is
      // in order, and that WRITE_HOST waits until the ACTIVATE has finished.
      const std::uint32_t mb = b / n_tiles_, nt = b % n_tiles_;
      if (nt == std::min(1u, n_tiles_ - 1) && mb + 1 < m_blocks_) load_a(mb + 1);
      if (b > 0) finish(b - 1);
    }
    finish(blocks - 1);
    builder_.halt();
    plan_.program = builder_.instructions();
  }

 private:
  std::uint32_t block_rows(std::uint32_t mb) const {
    return plan_.block_first[mb + 1] - plan_.block_first[mb];
  }
  std::uint32_t a_base(std::uint32_t mb) const { return (mb % 2) * ub_half_; }
  std::uint32_t acc_region(std::uint32_t b) const { return (b % 2) * acc_half_; }
  // The first of the pair's column rows.
  std::uint32_t bias_row(std::uint32_t b) const {
    return (b % 2) * acc_half_ + acc_half_ - column_rows(spec_);
  }
  // bf16 results wait in the bank the block's A does not use, after the room
  // the next block's A takes there; N tiles alternate between two areas.
  std::uint32_t staging(std::uint32_t mb, std::uint32_t nt) const {
    return ((mb + 1) % 2) * ub_half_ + a_rows_ + (nt % 2) * plan_.block_rows;
  }
  // Byte offset of element (row, col) of an M x n_pad matrix of `esize` bytes.
  std::uint32_t at(std::uint32_t row, std::uint32_t col, std::uint32_t esize) const {
    return (row * plan_.n_pad + col) * esize;
  }

  void load_a(std::uint32_t mb) {
    if (!plan_.conv.empty()) {
      load_image_rows(mb);
      return;
    }
    isa::ReadHostArgs a;
    a.i8 = spec_.int8();
    a.count = k_tiles_;
    a.rows = block_rows(mb);
    a.addr_b = a_base(mb);
    a.step_b = plan_.block_rows;
    a.host_addr = plan_.a_addr + plan_.block_first[mb] * plan_.k_pad * esize_;
    a.host_stride = plan_.k_pad * esize_;
    a.host_step = d_ * esize_;
    builder_.read_host(a);
  }

  // A convolution's block: per phase, the rows its taps read (the block's, and as many after
  // as the last tap's offset), channel tile by channel tile, a_span rows apart.
  void load_image_rows(std::uint32_t mb) {
    const ConvGeometry& conv = plan_.conv;
    const std::uint32_t first = plan_.block_first[mb];
    const std::uint32_t end = plan_.block_first[mb + 1] + conv.tap_offset(conv.taps() - 1);
    const std::uint32_t c_pad = c_tiles_ * d_;
    for (std::uint32_t phase = 0; phase < conv.phases(); ++phase) {
      isa::ReadHostArgs a;
      a.i8 = spec_.int8();
      a.count = c_tiles_;
      a.rows = end - first;
      a.addr_b = a_base(mb) + phase * c_tiles_ * plan_.a_span;
      a.step_b = plan_.a_span;
      a.host_addr = static_cast<std::uint32_t>(plan_.a_addr + (phase * conv.phase_rows() + first) *
                                                                  c_pad * esize_);
      a.host_stride = c_pad * esize_;
      a.host_step = d_ * esize_;
      builder_.read_host(a);
    }
  }

  void compute(std::uint32_t b) {
    const std::uint32_t mb = b / n_tiles_, nt = b % n_tiles_;
    const std::uint32_t rows = block_rows(mb);
    const std::uint32_t row0 = plan_.block_first[mb], col0 = nt * d_;
    if (spec_.has_c) {
      isa::ReadHostArgs c;
      c.acc = true;
      c.rows = rows;
      c.addr_b = acc_region(b);
      c.host_addr = plan_.c_addr + at(row0, col0, 4);
      c.host_stride = plan_.n_pad * 4;
      builder_.read_host(c);
    }
    if (plan_.has_seed_row()) {
      // The same row into every accumulator row of the pair: host_stride 0.
      isa::ReadHostArgs seed;
      seed.acc = true;
      seed.rows = rows;
      seed.addr_b = acc_region(b);
      seed.host_addr = plan_.bias_addr + col0 * 4;
      builder_.read_host(seed);
    }
    if (spec_.has_bias || spec_.out == OutType::Int8) {
      isa::ReadHostArgs bias;
      bias.acc = true;
      bias.rows = column_rows(spec_);
      bias.addr_b = bias_row(b);
      bias.host_addr = plan_.bias_addr + col0 * 4;
      bias.host_stride = bias.rows > 1 ? plan_.n_pad * 4 : 0;
      builder_.read_host(bias);
    }
    isa::MatmulArgs mm;
    const bool seeded = spec_.has_c || plan_.has_seed_row();
    mm.fetch = true;
    mm.i8 = spec_.int8();
    mm.accn = true;
    mm.acc0 = seeded;
    mm.rows = rows;
    mm.addr_a = a_base(mb);
    mm.step_a = plan_.block_rows;
    mm.addr_b = acc_region(b);
    // B is stored tile by tile (write_tiles): a tile's rows follow each other.
    const std::uint32_t tile_bytes = d_ * d_ * esize_;
    mm.host_stride = d_ * esize_;
    mm.host_step = tile_bytes;
    mm.n_valid = std::min(d_, spec_.n - col0);
    if (spec_.b_transposed) {
      transposed_k_loop(mm, col0);
      return;
    }
    if (plan_.conv.empty()) {
      k_loop(mm, spec_.k, nt * k_tiles_ * tile_bytes);
      return;
    }
    // A convolution's: tap after tap, each over the channels of its phase's rows at its offset
    // (a row of taps in one MATMUL where taps_per_matmul says so).
    const ConvGeometry& conv = plan_.conv;
    const std::uint32_t per_matmul = plan_.taps_per_matmul();
    for (std::uint32_t tap = 0; tap < conv.taps(); tap += per_matmul) {
      mm.addr_a = a_base(mb) + conv.tap_phase(tap) * c_tiles_ * plan_.a_span + conv.tap_offset(tap);
      mm.acc0 = seeded || tap > 0;
      const std::uint32_t tile = (nt * k_tiles_ + tap * c_tiles_) * tile_bytes;
      if (per_matmul == 1) {
        mm.step_a = plan_.a_span;
        k_loop(mm, conv.channels, tile);
        continue;
      }
      mm.count = per_matmul;
      mm.step_a = conv.dilation_w;
      mm.k_valid = conv.channels;
      mm.host_addr = plan_.b_addr + tile;
      builder_.matmul(mm);
    }
  }

  // The MATMULs of a K loop of k values from mm's first A row and the tile at b_addr + `tile`
  // bytes: whole tiles, then the partial last one (k_valid < D), which adds onto the first.
  void k_loop(isa::MatmulArgs mm, std::uint32_t k, std::uint32_t tile) {
    const std::uint32_t whole = k / d_, rest = k % d_;
    mm.host_addr = plan_.b_addr + tile;
    if (whole > 0) {
      mm.count = whole;
      mm.k_valid = d_;
      builder_.matmul(mm);
    }
    if (rest > 0) {
      mm.count = 1;
      mm.k_valid = rest;
      mm.acc0 = mm.acc0 || whole > 0;
      mm.addr_a += whole * mm.step_a;
      mm.host_addr += whole * d_ * d_ * esize_;
      builder_.matmul(mm);
    }
  }

  // The K loop of B given transposed (write_b): READ_WEIGHTS T takes, of the rows of B's
  // transpose from col0 (this tile's columns), D values each a tile, as many tiles as the weight
  // FIFO and the array's second buffer hold; MATMULs claim them, the partial last tile
  // (k_valid < D) in one of its own, which adds onto the first.
  void transposed_k_loop(isa::MatmulArgs mm, std::uint32_t col0) {
    const std::uint32_t capacity = plan_.config.weight_tiles + 1, rest = spec_.k % d_;
    const std::uint32_t first_a = mm.addr_a;
    const bool seeded = mm.acc0;
    mm.fetch = false;
    mm.host_stride = 0;
    mm.host_step = 0;
    isa::ReadWeightsArgs w;
    w.i8 = spec_.int8();
    w.transposed = true;
    w.rows = *mm.n_valid;
    w.host_stride = plan_.k_pad * esize_;
    w.host_step = d_ * esize_;
    for (std::uint32_t kt = 0; kt < k_tiles_;) {
      const std::uint32_t count = std::min(capacity, k_tiles_ - kt);
      w.count = count;
      w.host_addr = plan_.b_addr + (col0 * plan_.k_pad + kt * d_) * esize_;
      builder_.read_weights(w);
      const std::uint32_t end = kt + count;
      const std::uint32_t whole = end == k_tiles_ && rest > 0 ? count - 1 : count;
      const auto claim = [&](std::uint32_t tiles, std::uint32_t k_valid) {
        mm.count = tiles;
        mm.k_valid = k_valid;
        mm.addr_a = first_a + kt * mm.step_a;
        mm.acc0 = seeded || kt > 0;
        builder_.matmul(mm);
        kt += tiles;
      };
      if (whole > 0) claim(whole, d_);
      if (whole < count) claim(1, rest);
    }
  }

  void finish(std::uint32_t b) {
    const std::uint32_t mb = b / n_tiles_, nt = b % n_tiles_;
    const std::uint32_t rows = block_rows(mb);
    const std::uint32_t row0 = plan_.block_first[mb], col0 = nt * d_;
    const bool f32 = results_in_acc(spec_);
    const bool requantize = spec_.out == OutType::Int8;
    const bool activate =
        spec_.int8() ? requantize : !f32 || spec_.has_bias || spec_.act != isa::Func::None;
    if (activate) {
      isa::ActivateArgs act;
      act.f32 = f32;
      act.func = spec_.act;
      act.alpha = spec_.alpha;
      act.bias = spec_.has_bias || requantize;
      act.bias_addr = act.bias ? bias_row(b) : 0;
      act.req = requantize;
      if (requantize) {
        act.zero_point = spec_.output_zero_point;
        act.clamp_lo = spec_.clamp_lo;
        act.clamp_hi = spec_.clamp_hi;
      }
      act.rows = rows;
      act.addr_a = acc_region(b);
      act.addr_b = f32 ? acc_region(b) : staging(mb, nt);
      builder_.activate(act);
    }
    isa::WriteHostArgs wh;
    wh.acc = f32;
    wh.i8 = requantize;
    wh.rows = rows;
    wh.addr_a = f32 ? acc_region(b) : staging(mb, nt);
    wh.host_addr = plan_.out_addr + at(row0, col0, plan_.out_elem_bytes());
    wh.host_stride = plan_.n_pad * plan_.out_elem_bytes();
    builder_.write_host(wh);
  }

  GemmPlan& plan_;
  const GemmSpec& spec_;
  std::uint32_t d_, k_tiles_, n_tiles_;
  std::uint32_t c_tiles_;  // a convolution's channel tiles (K tiles per tap)
  std::uint32_t a_rows_;   // unified-buffer rows an A block takes
  std::uint32_t m_blocks_, ub_half_, acc_half_;
  std::uint32_t esize_;  // bytes of an A or B value in host memory: 2 (bf16), 1 (int8)
  isa::ProgramBuilder builder_;
};

// The spec's options that the core lacks, or that do not go together: std::invalid_argument.
void check_spec(const HardwareConfig& config, const GemmSpec& spec) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  const auto int8_range = [&](int value, const char* what) {
    if (value < -128 || value > 127) {
      fail(std::string(what) + " " + std::to_string(value) + " is outside [-128, 127]");
    }
  };
  if (spec.int8()) {
    if (!config.int8) fail("the " + config.name() + " core has no int8 datapath");
    if (spec.out != OutType::Int32 && spec.out != OutType::Int8) {
      fail("an int8 product has int32 or int8 results");
    }
    if (spec.has_bias) fail("an int8 product's bias goes with requantisation (RequantColumns)");
    if (spec.act != isa::Func::None || spec.alpha != 0) {
      fail("an int8 product has no activation function: its clamp bounds do relu");
    }
    int8_range(spec.input_zero_point, "the input zero point");
    int8_range(spec.output_zero_point, "the output zero point");
    int8_range(spec.clamp_lo, "clamp_lo");
    int8_range(spec.clamp_hi, "clamp_hi");
    if (spec.out == OutType::Int32 &&
        (spec.output_zero_point != 0 || spec.clamp_lo != -128 || spec.clamp_hi != 127)) {
      fail("an output zero point and clamp bounds go with int8 results");
    }
  } else {
    if (!config.float_datapath) fail("the " + config.name() + " core is int8-only");
    if (spec.out == OutType::Int32 || spec.out == OutType::Int8) {
      fail("int32 and int8 results need int8 operands");
    }
    if (spec.input_zero_point != 0 || spec.output_zero_point != 0 || spec.clamp_lo != -128 ||
        spec.clamp_hi != 127) {
      fail("zero points and clamp bounds go with int8 operands");
    }
    const auto func = static_cast<unsigned>(spec.act);
    if (func >= isa::kFuncCount)
      fail("activation function code " + std::to_string(func) + " is unknown");
    if (func >= isa::func_count(config)) {
      fail(std::string("the activation ") + isa::kFuncTable[func].mnemonic +
           " needs a core with a vector unit; " + config.name() + " has none");
    }
  }
  if (spec.b_transposed && config.vector_lanes == 0) {
    fail("B given transposed (READ_WEIGHTS T) needs a core with a vector unit; " + config.name() +
         " has none");
  }
}

void check_matrix(const char* name, std::size_t rows, std::size_t cols, std::size_t want_rows,
                  std::size_t want_cols, std::size_t elements) {
  if (rows != want_rows || cols != want_cols || elements != rows * cols) {
    throw std::invalid_argument(std::string(name) + " is " + std::to_string(rows) + " x " +
                                std::to_string(cols) + ", the plan needs " +
                                std::to_string(want_rows) + " x " + std::to_string(want_cols));
  }
}

// B left out (0 x 0) of a bf16 product whose weights are resident. An int8 product needs B
// even then: its input zero point's fold takes B's column sums.
template <typename In>
bool resident_without_b(const GemmPlan& plan, const num::Matrix<In>& b) {
  return plan.weights_resident && !plan.spec.int8() && b.rows == 0 && b.cols == 0;
}

// A, B and C (optional) against the plan's shapes.
template <typename In, typename Acc>
void check_operands(const GemmPlan& plan, const num::Matrix<In>& a, const num::Matrix<In>& b,
                    const num::Matrix<Acc>* c) {
  const GemmSpec& s = plan.spec;
  check_matrix("A", a.rows, a.cols, s.m, s.k, a.data.size());
  if (resident_without_b(plan, b)) {
    // Not written: the caller need not make it.
  } else if (s.b_transposed) {
    check_matrix("B's transpose", b.rows, b.cols, s.n, s.k, b.data.size());
  } else {
    check_matrix("B", b.rows, b.cols, s.k, s.n, b.data.size());
  }
  if (s.has_c != (c != nullptr)) throw std::invalid_argument("C given or missing against the plan");
  if (c) check_matrix("C", c->rows, c->cols, s.m, s.n, c->data.size());
}

// N values, one a column, when given.
template <typename T>
void check_columns(const char* name, const std::vector<T>* values, std::size_t n) {
  if (values && values->size() != n) {
    throw std::invalid_argument(std::string(name) + " has " + std::to_string(values->size()) +
                                " values, the plan needs " + std::to_string(n));
  }
}

// One row of values at `addr`, padded with zeros to `padded` values.
template <typename T>
void write_row(HostMemory& memory, std::uint64_t addr, const std::vector<T>& values,
               std::size_t padded) {
  std::vector<T> row(padded, T{});
  std::copy(values.begin(), values.end(), row.begin());
  memory.write_array(addr, row);
}

// A matrix's rows at `addr`, each padded with zeros to `padded` values, back to back.
template <typename T>
void write_rows(HostMemory& memory, std::uint64_t addr, const num::Matrix<T>& m,
                std::size_t padded) {
  if (m.cols == padded) {
    memory.write_array(addr, m.data);
    return;
  }
  // Each row where it goes, its padding zeroed there: no copy of the matrix on the way.
  const std::vector<T> zeros(padded - m.cols, T{});
  for (std::size_t i = 0; i < m.rows; ++i) {
    const std::uint64_t row = addr + i * padded * sizeof(T);
    memory.write(row, &m.data[i * m.cols], m.cols * sizeof(T));
    memory.write_array(row + m.cols * sizeof(T), zeros);
  }
}

// Writes B tile by tile: tile (kt, nt) at `addr` + (nt * k_tiles + kt) * d * d values, its row r
// d values further per row, zeros past B's edges (the layout GemmEmitter fetches).
template <typename T>
void write_tiles(HostMemory& memory, std::uint64_t addr, const num::Matrix<T>& m, std::uint32_t d,
                 std::uint32_t k_tiles, std::uint32_t n_tiles) {
  std::vector<T> tiles(std::size_t{k_tiles} * n_tiles * d * d, T{});
  for (std::size_t i = 0; i < m.rows; ++i) {
    for (std::size_t j = 0; j < m.cols; ++j) {
      const std::size_t tile = (j / d) * k_tiles + i / d;
      tiles[(tile * d + i % d) * d + j % d] = m.data[i * m.cols + j];
    }
  }
  memory.write_array(addr, tiles);
}

// B as the plan reads it: tile by tile, or with b_transposed the rows of B's transpose as they
// come, each padded to k_pad values (READ_WEIGHTS T takes D values of D of them a tile).
template <typename T>
void write_b(const GemmPlan& plan, HostMemory& memory, const num::Matrix<T>& b) {
  if (plan.spec.b_transposed) {
    write_rows(memory, plan.b_addr, b, plan.k_pad);
    return;
  }
  write_tiles(memory, plan.b_addr, b, plan.config.dim, plan.k_pad / plan.config.dim,
              plan.n_pad / plan.config.dim);
}

// Writes the inputs, runs the plan's program and, when the core reached HALT, reads the result.
template <typename Run, typename Write, typename Read>
Run execute_plan(const GemmPlan& plan, Backend& backend, Write&& write, Read&& read) {
  write(backend.memory());
  Run run;
  run.result = backend.run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()));
  if (run.result.ok()) run.out = read(backend.memory());
  return run;
}

// The result of a run that must succeed: std::runtime_error when the core stopped.
template <typename Run>
auto take_result(Run run, RunResult* result) {
  require_halt(run.result);
  if (result) *result = run.result;
  return std::move(run.out);
}

}  // namespace

const char* type_name(OutType out) {
  switch (out) {
    case OutType::Fp32:
      return "fp32";
    case OutType::Bf16:
      return "bf16";
    case OutType::Int32:
      return "int32";
    case OutType::Int8:
      return "int8";
  }
  return "?";
}

const char* type_name(InType in) {
  return in == InType::Int8 ? "int8" : "bf16";
}

void require_halt(const RunResult& result) {
  if (!result.ok()) {
    throw std::runtime_error(std::string("the core stopped: ") + regs::error_name(result.error) +
                             " at instruction " + std::to_string(result.error_pc));
  }
}

namespace {

// A plan of the spec with its K and N padded to whole tiles (after the checks common to GEMMs
// and convolutions).
GemmPlan padded_plan(const HardwareConfig& config, const GemmSpec& spec) {
  isa::validate_config(config);
  if (spec.m == 0 || spec.k == 0 || spec.n == 0) {
    throw std::invalid_argument("empty matrix product: M, K and N must be at least 1");
  }
  if (spec.alpha != 0 && spec.act != isa::Func::Leaky) {
    throw std::invalid_argument("a slope (alpha) only goes with the leaky activation");
  }
  check_spec(config, spec);
  GemmPlan plan;
  plan.spec = spec;
  plan.config = config;
  plan.k_pad = ceil_div(spec.k, config.dim) * config.dim;
  plan.n_pad = ceil_div(spec.n, config.dim) * config.dim;
  return plan;
}

// Places the operands of a plan whose blocks are set (GemmPlacement), then emits its program.
void place_and_emit(GemmPlan& plan, const GemmPlacement& placement);

// Cuts M into blocks of at most max_block rows (plan.block_rows): a first, smaller one where the
// array's work on it covers what the bus must bring meanwhile, then equal ones. While the array
// works on the first block (b rows, a cycle each for each of its k_tiles x n_tiles tiles), the
// bus brings that block's weights (as many tiles of d rows) and the next block's A,
// `next_a_rows` unified-buffer rows (a GEMM's MB per K tile; a convolution's MB and its halo per
// phase and channel tile), at one beat per cycle and beats_per_row beats a row: b >= d *
// beats_per_row + next_a_rows * beats_per_row / (k_tiles * n_tiles), with a quarter to spare, in
// whole tiles.
void split_blocks(GemmPlan& plan, std::uint64_t max_block, std::uint64_t next_a_rows) {
  const std::uint32_t d = plan.config.dim, m = plan.spec.m;
  const std::uint64_t tiles = std::uint64_t{plan.k_pad / d} * (plan.n_pad / d);
  plan.block_rows = static_cast<std::uint32_t>(max_block);
  const std::uint32_t beats_per_row =
      std::max(1u, plan.in_elem_bytes() * d / plan.config.bus_bytes);
  const std::uint64_t needed =
      std::uint64_t{d} * beats_per_row + (next_a_rows * beats_per_row + tiles - 1) / tiles;
  const std::uint64_t ramp =
      std::clamp<std::uint64_t>(align_up((needed * 5 + 3) / 4, d), d, plan.block_rows);
  std::uint32_t first_block = plan.block_rows;
  if (2 * ramp < m) first_block = static_cast<std::uint32_t>(ramp);
  first_block = std::min(first_block, m);
  plan.block_first = {0, first_block};
  const std::uint32_t rest = m - first_block;
  if (rest > 0) {
    const std::uint32_t blocks = ceil_div(rest, plan.block_rows);
    const std::uint32_t rows = ceil_div(rest, blocks);
    for (std::uint32_t row = first_block + rows; row < m; row += rows) {
      plan.block_first.push_back(row);
    }
    plan.block_first.push_back(m);
  }
}

}  // namespace

GemmPlan plan_gemm(const HardwareConfig& config, const GemmSpec& spec,
                   const GemmPlacement& placement) {
  GemmPlan plan = padded_plan(config, spec);
  const std::uint32_t d = config.dim;
  const std::uint32_t k_tiles = plan.k_pad / d;

  // Rows per M block: its A block (and, for bf16 or int8 results, two staging
  // areas) must fit half the unified buffer, its accumulators half the
  // accumulator memory (less the column rows).
  const std::uint64_t ub_half = config.ub_depth / 2, acc_half = config.acc_depth / 2;
  const std::uint64_t ub_rows_per_m = k_tiles + (results_in_acc(spec) ? 0 : 2);
  std::uint64_t max_block =
      std::min<std::uint64_t>(ub_half / ub_rows_per_m, acc_half - column_rows(spec));
  max_block = std::min<std::uint64_t>({max_block, spec.m, 0xFFFF});
  if (max_block == 0) {
    throw std::invalid_argument(
        "K = " + std::to_string(spec.k) + " is too large for this core: " + "a row of A takes " +
        std::to_string(k_tiles) + " unified-buffer rows, and half the buffer holds " +
        std::to_string(ub_half));
  }
  split_blocks(plan, max_block, max_block * k_tiles);
  place_and_emit(plan, placement);
  return plan;
}

namespace {

void place_and_emit(GemmPlan& plan, const GemmPlacement& placement) {
  const GemmSpec& spec = plan.spec;
  const std::uint32_t m_blocks = static_cast<std::uint32_t>(plan.block_first.size() - 1);
  const std::uint32_t n_tiles = plan.n_pad / plan.config.dim;
  std::uint64_t top = align_up(placement.base, kOperandAlign);
  auto place = [&](std::uint64_t bytes) {
    const std::uint64_t addr = top;
    top = align_up(top + bytes, kOperandAlign);
    return addr;
  };
  // An operand already in place (resident weights: a session keeps them under its scratch
  // space; an earlier GEMM's result as A) lies below the operands placed here, aligned.
  const auto in_place_or_placed = [&](const std::optional<std::uint32_t>& given,
                                      std::uint64_t bytes, const char* what) {
    if (!given) return place(bytes);
    if (*given % kOperandAlign != 0 || *given + bytes > placement.base) {
      throw std::invalid_argument(std::string(what) + " at " + std::to_string(*given) +
                                  ": unaligned, or reaching the operands placed from " +
                                  std::to_string(placement.base));
    }
    return std::uint64_t{*given};
  };
  plan.input_resident = placement.input_addr.has_value();
  if (!plan.conv.empty() && placement.input_addr) {
    throw std::invalid_argument("a convolution's input is written by the host");
  }
  const std::uint64_t a_addr =
      in_place_or_placed(placement.input_addr, plan.a_bytes(), "the input");
  plan.weights_resident = placement.weights_addr.has_value();
  const std::uint64_t b_addr = in_place_or_placed(
      placement.weights_addr, std::uint64_t{plan.k_pad} * plan.n_pad * plan.in_elem_bytes(),
      "resident weights");
  const std::uint64_t c_addr = spec.has_c ? place(std::uint64_t{spec.m} * plan.n_pad * 4) : 0;
  const bool column_data = spec.has_bias || spec.out == OutType::Int8 || plan.has_seed_row();
  const std::uint64_t bias_addr =
      column_data ? place(std::uint64_t{column_rows(spec)} * plan.n_pad * 4) : 0;
  const std::uint64_t out_addr = place(plan.out_bytes());
  // The program goes last; a generous bound on its size keeps the check simple: per block its
  // loads (one per phase), per pair up to three loads, two MATMULs per tap, ACTIVATE, WRITE_HOST.
  const std::uint64_t taps = plan.conv.empty() ? 1 : plan.conv.taps();
  const std::uint64_t loads = plan.conv.empty() ? 1 : plan.conv.phases();
  // B given transposed: a READ_WEIGHTS and up to two MATMULs per weight FIFO's worth of tiles.
  const std::uint64_t transposed_loads =
      spec.b_transposed ? 3 * ceil_div(plan.k_pad / plan.config.dim, plan.config.weight_tiles + 1)
                        : 0;
  const std::uint64_t program_bound =
      (std::uint64_t{m_blocks} * n_tiles * (5 + 2 * taps + transposed_loads) + m_blocks * loads +
       2) *
      isa::kInstrBytes;
  if (top + program_bound > (std::uint64_t{1} << 32)) {
    throw std::invalid_argument("the operands of a " + std::to_string(spec.m) + " x " +
                                std::to_string(spec.k) + " x " + std::to_string(spec.n) +
                                " product do not fit in 32-bit host memory");
  }
  plan.a_addr = static_cast<std::uint32_t>(a_addr);
  plan.b_addr = static_cast<std::uint32_t>(b_addr);
  plan.c_addr = static_cast<std::uint32_t>(c_addr);
  plan.bias_addr = static_cast<std::uint32_t>(bias_addr);
  plan.out_addr = static_cast<std::uint32_t>(out_addr);
  plan.prog_addr = static_cast<std::uint32_t>(top);

  GemmEmitter(plan).emit();
  plan.memory_bytes = plan.prog_addr + plan.program.size() * isa::kInstrBytes;
}

}  // namespace

std::uint32_t ConvGeometry::out_h() const {
  const std::uint64_t padded = std::uint64_t{height} + pad_top + pad_bottom;
  const std::uint64_t span = std::uint64_t{kernel_h - 1} * dilation_h + 1;
  return padded < span ? 0 : static_cast<std::uint32_t>((padded - span) / stride_h + 1);
}

std::uint32_t ConvGeometry::out_w() const {
  const std::uint64_t padded = std::uint64_t{width} + pad_left + pad_right;
  const std::uint64_t span = std::uint64_t{kernel_w - 1} * dilation_w + 1;
  return padded < span ? 0 : static_cast<std::uint32_t>((padded - span) / stride_w + 1);
}

std::uint32_t ConvGeometry::phase_h() const {
  return ceil_div(height + std::max(pad_top, pad_bottom), stride_h);
}

std::uint32_t ConvGeometry::phase_w() const {
  return ceil_div(width + std::max(pad_left, pad_right), stride_w);
}

std::uint64_t ConvGeometry::phase_rows() const {
  return std::max(wide_rows() + tap_offset(taps() - 1),
                  std::uint64_t{batch} * phase_h() * phase_w());
}

std::uint64_t ConvGeometry::wide_row(std::uint32_t n, std::uint32_t oy, std::uint32_t ox) const {
  return (std::uint64_t{n} * phase_h() + oy) * phase_w() + ox;
}

std::uint32_t ConvGeometry::tap_phase(std::uint32_t tap) const {
  const std::uint32_t ky = tap / kernel_w, kx = tap % kernel_w;
  return (ky * dilation_h % stride_h) * stride_w + kx * dilation_w % stride_w;
}

std::uint32_t ConvGeometry::tap_offset(std::uint32_t tap) const {
  const std::uint32_t ky = tap / kernel_w, kx = tap % kernel_w;
  return ky * dilation_h / stride_h * phase_w() + kx * dilation_w / stride_w;
}

std::uint64_t GemmPlan::a_bytes() const {
  if (conv.empty()) return std::uint64_t{spec.m} * k_pad * in_elem_bytes();
  return std::uint64_t{conv.phases()} * conv.phase_rows() * (k_pad / conv.taps()) * in_elem_bytes();
}

std::uint64_t GemmPlan::result_bytes() const {
  if (conv.empty()) return out_bytes();
  return std::uint64_t{conv.batch} * conv.out_h() * conv.out_w() * n_pad * out_elem_bytes();
}

GemmPlan plan_conv(const HardwareConfig& config, GemmSpec spec, const ConvGeometry& geometry,
                   const GemmPlacement& placement) {
  const ConvGeometry& g = geometry;
  if (g.batch == 0 || g.channels == 0 || g.height == 0 || g.width == 0 || g.kernel_h == 0 ||
      g.kernel_w == 0 || g.stride_h == 0 || g.stride_w == 0 || g.dilation_h == 0 ||
      g.dilation_w == 0) {
    throw std::invalid_argument(
        "a convolution with an empty image or kernel, or a stride or "
        "dilation of 0");
  }
  if (g.out_h() == 0 || g.out_w() == 0) {
    throw std::invalid_argument("the kernel does not fit the padded image");
  }
  // Every row count below must fit 32 bits, and a row offset the 16-bit address fields.
  const std::uint64_t padded_pixels = (std::uint64_t{g.height} + g.pad_top + g.pad_bottom) *
                                      (std::uint64_t{g.width} + g.pad_left + g.pad_right);
  if (padded_pixels * g.batch >= (std::uint64_t{1} << 30) || g.taps() > 0xFFFF ||
      std::uint64_t{g.kernel_h} * g.dilation_h * (g.width + g.pad_left + g.pad_right) >= 0x10000) {
    throw std::invalid_argument("the padded images are too large for a convolution plan");
  }
  spec.m = static_cast<std::uint32_t>(g.wide_rows());
  spec.k = g.taps() * ceil_div(g.channels, config.dim) * config.dim;
  if (spec.has_c) throw std::invalid_argument("a convolution starts from +0, not from C");
  if (spec.b_transposed) throw std::invalid_argument("a convolution's B is its filters' tiles");
  GemmPlan plan = padded_plan(config, spec);
  plan.conv = g;
  const std::uint32_t c_tiles = ceil_div(g.channels, config.dim);
  const std::uint64_t halo = g.tap_offset(g.taps() - 1);
  // Rows per M block: per phase and channel tile, the block's rows and the halo after them, and
  // (bf16 or int8 results) two staging areas must fit half the unified buffer; the block's
  // accumulators half the accumulator memory (less the column rows).
  const std::uint64_t ub_half = config.ub_depth / 2, acc_half = config.acc_depth / 2;
  const std::uint64_t a_blocks = std::uint64_t{g.phases()} * c_tiles;
  const std::uint64_t staging = results_in_acc(spec) ? 0 : 2;
  std::uint64_t max_block =
      ub_half > a_blocks * halo ? (ub_half - a_blocks * halo) / (a_blocks + staging) : 0;
  max_block = std::min<std::uint64_t>({max_block, acc_half - column_rows(spec), spec.m,
                                       0xFFFF - std::min<std::uint64_t>(halo, 0xFFFF)});
  if (max_block == 0) {
    throw std::invalid_argument(
        "the image is too wide for this core: a block of its rows and the " + std::to_string(halo) +
        " rows its kernel reaches past it take " + std::to_string(a_blocks) +
        " times that in the unified buffer, whose half holds " + std::to_string(ub_half) + " rows");
  }
  split_blocks(plan, max_block, (max_block + halo) * a_blocks);
  plan.a_span = static_cast<std::uint32_t>(plan.block_rows + halo);
  place_and_emit(plan, placement);
  return plan;
}

std::uint32_t max_gemm_k(const HardwareConfig& config, const GemmSpec& spec) {
  const std::uint32_t rows = std::max(1u, std::min(spec.m, config.dim));
  const std::uint32_t staging = results_in_acc(spec) ? 0 : 2;
  const std::uint32_t per_row = config.ub_depth / 2 / rows;
  return std::max(1u, per_row > staging ? per_row - staging : 1u) * config.dim;
}

std::uint64_t weights_bytes(const HardwareConfig& config, const GemmSpec& spec) {
  const std::uint64_t d = config.dim;
  return ceil_div(spec.k, config.dim) * d * ceil_div(spec.n, config.dim) * d *
         (spec.int8() ? 1 : 2);
}

namespace {

template <typename T>
void write_weight_tiles(const HardwareConfig& config, HostMemory& memory, std::uint32_t addr,
                        const num::Matrix<T>& b, InType in) {
  GemmSpec spec;
  spec.k = static_cast<std::uint32_t>(b.rows);
  spec.n = static_cast<std::uint32_t>(b.cols);
  spec.in = in;
  const std::uint64_t end = addr + weights_bytes(config, spec);
  if (memory.size() < end) memory.resize(end);
  write_tiles(memory, addr, b, config.dim, ceil_div(spec.k, config.dim),
              ceil_div(spec.n, config.dim));
}

}  // namespace

void write_weights(const HardwareConfig& config, HostMemory& memory, std::uint32_t addr,
                   const num::MatrixBf16& b) {
  write_weight_tiles(config, memory, addr, b, InType::Bf16);
}

void write_weights(const HardwareConfig& config, HostMemory& memory, std::uint32_t addr,
                   const num::MatrixI8& b) {
  write_weight_tiles(config, memory, addr, b, InType::Int8);
}

namespace {

// The plan against the operands T (bf16 or int8) and their kind (a convolution's plan takes
// images, a GEMM's A).
template <typename T>
void check_plan(const GemmPlan& plan, bool conv) {
  if (plan.spec.int8() != std::is_same_v<T, std::int8_t>) {
    throw std::invalid_argument(plan.spec.int8() ? "the plan is of an int8 product: int8 operands"
                                                 : "the plan is of a bf16 product: bf16 operands");
  }
  if (plan.conv.empty() == conv) {
    throw std::invalid_argument(conv ? "the plan is of a GEMM: write_gemm_inputs"
                                     : "the plan is of a convolution: write_conv_inputs");
  }
}

// The column rows given against the plan: a bf16 product's bias; an int8 product's Q-REQ
// parameters.
void check_columns_of(const GemmPlan& plan, const std::vector<num::fp32_t>* bias) {
  if (plan.spec.has_bias != (bias != nullptr)) {
    throw std::invalid_argument("bias given or missing against the plan");
  }
  check_columns("bias", bias, plan.spec.n);
}

void check_columns_of(const GemmPlan& plan, const RequantColumns* requant) {
  const std::uint32_t n = plan.spec.n;
  if ((plan.spec.out == OutType::Int8) != (requant != nullptr)) {
    throw std::invalid_argument("requantisation parameters given or missing against the plan");
  }
  if (requant) {
    check_columns("bias", &requant->bias, n);
    check_columns("multiplier", &requant->multiplier, n);
    check_columns("shift", &requant->shift, n);
  }
}

// What a GEMM's and a convolution's operands share after A, checked: B (unless resident), C, the
// bias and the program (unless resident).
void write_operands(const GemmPlan& plan, HostMemory& memory, const num::MatrixBf16& b,
                    const num::MatrixFp32* c, const std::vector<num::fp32_t>* bias) {
  if (!plan.weights_resident) write_b(plan, memory, b);
  if (c) write_rows(memory, plan.c_addr, *c, plan.n_pad);
  if (bias) write_row(memory, plan.bias_addr, *bias, plan.n_pad);
  if (!plan.program_resident) {
    memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
  }
}

void write_operands(const GemmPlan& plan, HostMemory& memory, const num::MatrixI8& b,
                    const num::MatrixI32* c, const RequantColumns* requant) {
  const GemmSpec& s = plan.spec;
  const bool requantize = s.out == OutType::Int8;
  if (!plan.weights_resident) write_b(plan, memory, b);
  // Q-ZP: -za * colsum(B), modulo 2^32, folded into the bias of Q-REQ or the seed of the sums.
  const std::vector<std::int32_t> zeros(s.n, 0);
  const std::vector<std::int32_t> fold = num::fold_input_zero_point(
      requant ? requant->bias : zeros, s.input_zero_point, s.b_transposed ? num::transposed(b) : b);
  if (c) {
    num::MatrixI32 seed = *c;
    if (!requantize) {
      for (std::size_t e = 0; e < seed.data.size(); ++e) {
        seed.data[e] = isa::int32_value(static_cast<std::uint32_t>(seed.data[e]) +
                                        static_cast<std::uint32_t>(fold[e % s.n]));
      }
    }
    write_rows(memory, plan.c_addr, seed, plan.n_pad);
  }
  if (plan.has_seed_row() || requantize) write_row(memory, plan.bias_addr, fold, plan.n_pad);
  if (requant) {
    write_row(memory, plan.bias_addr + plan.n_pad * 4, requant->multiplier, plan.n_pad);
    write_row(memory, plan.bias_addr + plan.n_pad * 8, requant->shift, plan.n_pad);
  }
  if (!plan.program_resident) {
    memory.write_array(plan.prog_addr, isa::encode_program(plan.program));
  }
}

template <typename T, typename Acc, typename Columns>
void write_gemm_operands(const GemmPlan& plan, HostMemory& memory, const num::Matrix<T>& a,
                         const num::Matrix<T>& b, const num::Matrix<Acc>* c,
                         const Columns* columns) {
  check_plan<T>(plan, false);
  check_operands(plan, a, b, c);
  check_columns_of(plan, columns);
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  if (!plan.input_resident) write_rows(memory, plan.a_addr, a, plan.k_pad);
  write_operands(plan, memory, b, c, columns);
}

// A convolution's images as its plan reads them (ConvGeometry): per phase, its rows, each an
// image pixel's channels padded to whole tiles, or `pad`.
template <typename T, typename Columns>
void write_conv_operands(const GemmPlan& plan, HostMemory& memory, const T* x,
                         const ImageStrides& strides, const num::Matrix<T>& b, T pad,
                         const Columns* columns) {
  check_plan<T>(plan, true);
  const ConvGeometry& g = plan.conv;
  if (!resident_without_b(plan, b)) {
    check_matrix("B", b.rows, b.cols, plan.spec.k, plan.spec.n, b.data.size());
  }
  check_columns_of(plan, columns);
  if (memory.size() < plan.memory_bytes) memory.resize(plan.memory_bytes);
  const std::size_t c_pad = plan.k_pad / g.taps();
  const std::size_t qh = g.phase_h(), qw = g.phase_w(), phase_rows = g.phase_rows();
  std::vector<T> rows(g.phases() * phase_rows * c_pad, pad);
  for (std::size_t n = 0; n < g.batch; ++n) {
    for (std::size_t y = 0; y < g.height; ++y) {
      for (std::size_t xx = 0; xx < g.width; ++xx) {
        // The pixel's place in its image's padded rows, then in its phase.
        const std::size_t py = g.pad_top + y, px = g.pad_left + xx;
        const std::size_t phase = (py % g.stride_h) * g.stride_w + px % g.stride_w;
        const std::size_t at = n * qh * qw + py / g.stride_h * qw + px / g.stride_w;
        T* row = &rows[(phase * phase_rows + at) * c_pad];
        const T* pixel = x + n * strides.image + (y * g.width + xx) * strides.pixel;
        for (std::uint32_t ch = 0; ch < g.channels; ++ch) row[ch] = pixel[ch * strides.channel];
      }
    }
  }
  memory.write_array(plan.a_addr, rows);
  write_operands(plan, memory, b, nullptr, columns);
}

}  // namespace

void write_gemm_inputs(const GemmPlan& plan, HostMemory& memory, const num::MatrixBf16& a,
                       const num::MatrixBf16& b, const num::MatrixFp32* c,
                       const std::vector<num::fp32_t>* bias) {
  write_gemm_operands(plan, memory, a, b, c, bias);
}

void write_gemm_inputs(const GemmPlan& plan, HostMemory& memory, const num::MatrixI8& a,
                       const num::MatrixI8& b, const num::MatrixI32* c,
                       const RequantColumns* requant) {
  write_gemm_operands(plan, memory, a, b, c, requant);
}

ImageStrides nchw_images(const ConvGeometry& geometry, std::size_t image_stride) {
  return {image_stride, std::size_t{geometry.height} * geometry.width, 1};
}

void write_conv_inputs(const GemmPlan& plan, HostMemory& memory, const num::bf16_t* x,
                       const ImageStrides& strides, const num::MatrixBf16& b,
                       const std::vector<num::fp32_t>* bias) {
  write_conv_operands(plan, memory, x, strides, b, num::bf16_t{}, bias);
}

void write_conv_inputs(const GemmPlan& plan, HostMemory& memory, const std::int8_t* x,
                       const ImageStrides& strides, const num::MatrixI8& b,
                       const RequantColumns* requant) {
  write_conv_operands(plan, memory, x, strides, b,
                      static_cast<std::int8_t>(plan.spec.input_zero_point), requant);
}

namespace {

// The rows of the plan's result, in order: a GEMM's M rows; a convolution's rows of its output
// pixels (ConvGeometry::wide_row), n, oy, ox.
std::vector<std::uint64_t> result_rows(const GemmPlan& plan) {
  std::vector<std::uint64_t> rows;
  const ConvGeometry& g = plan.conv;
  if (g.empty()) {
    rows.resize(plan.spec.m);
    for (std::uint32_t i = 0; i < plan.spec.m; ++i) rows[i] = i;
    return rows;
  }
  rows.reserve(std::size_t{g.batch} * g.out_h() * g.out_w());
  for (std::uint32_t n = 0; n < g.batch; ++n) {
    for (std::uint32_t oy = 0; oy < g.out_h(); ++oy) {
      for (std::uint32_t ox = 0; ox < g.out_w(); ++ox) rows.push_back(g.wide_row(n, oy, ox));
    }
  }
  return rows;
}

// The result's rows (result_rows) into `out`, a row of N values each: read as Lane values (as
// read_array reads them), each `widen`ed, through one buffer.
template <typename Lane, typename Value, typename Widen>
void read_result_rows(const GemmPlan& plan, const HostMemory& memory, num::Matrix<Value>& out,
                      Widen widen) {
  const std::vector<std::uint64_t> rows = result_rows(plan);
  const std::uint32_t n = plan.spec.n;
  out = num::Matrix<Value>(rows.size(), n);
  std::vector<Lane> lanes(n);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::uint64_t at = plan.out_addr + rows[i] * plan.n_pad * plan.out_elem_bytes();
    if constexpr (std::is_same_v<Lane, Value>) {
      // Values as they lie: read into the row where they go.
      memory.read(at, &out.at(i, 0), n * sizeof(Lane));
      std::transform(&out.at(i, 0), &out.at(i, 0) + n, &out.at(i, 0), widen);
    } else {
      memory.read(at, lanes.data(), n * sizeof(Lane));
      std::transform(lanes.begin(), lanes.end(), &out.at(i, 0), widen);
    }
  }
}

}  // namespace

num::MatrixFp32 read_gemm_output(const GemmPlan& plan, const HostMemory& memory) {
  const GemmSpec& s = plan.spec;
  if (s.int8()) throw std::invalid_argument("the plan is of an int8 product: read_gemm_output_int");
  num::MatrixFp32 out;
  if (s.out == OutType::Fp32) {
    read_result_rows<num::fp32_t>(plan, memory, out, [](num::fp32_t v) { return v; });
  } else {
    read_result_rows<num::bf16_t>(plan, memory, out, num::bf16_to_fp32);
  }
  return out;
}

GemmRun execute_gemm(const GemmPlan& plan, Backend& backend, const num::MatrixBf16& a,
                     const num::MatrixBf16& b, const num::MatrixFp32* c,
                     const std::vector<num::fp32_t>* bias) {
  return execute_plan<GemmRun>(
      plan, backend, [&](HostMemory& memory) { write_gemm_inputs(plan, memory, a, b, c, bias); },
      [&](const HostMemory& memory) { return read_gemm_output(plan, memory); });
}

GemmRun execute_conv(const GemmPlan& plan, Backend& backend, const num::bf16_t* x,
                     const ImageStrides& strides, const num::MatrixBf16& b,
                     const std::vector<num::fp32_t>* bias) {
  return execute_plan<GemmRun>(
      plan, backend,
      [&](HostMemory& memory) { write_conv_inputs(plan, memory, x, strides, b, bias); },
      [&](const HostMemory& memory) { return read_gemm_output(plan, memory); });
}

num::MatrixFp32 run_gemm(Backend& backend, const GemmSpec& spec, const num::MatrixBf16& a,
                         const num::MatrixBf16& b, const num::MatrixFp32* c,
                         const std::vector<num::fp32_t>* bias, RunResult* result) {
  return take_result(execute_gemm(plan_gemm(backend.config(), spec), backend, a, b, c, bias),
                     result);
}

num::MatrixI32 read_gemm_output_int(const GemmPlan& plan, const HostMemory& memory) {
  const GemmSpec& s = plan.spec;
  if (!s.int8()) throw std::invalid_argument("the plan is of a bf16 product: read_gemm_output");
  num::MatrixI32 out;
  if (s.out == OutType::Int32) {
    read_result_rows<std::int32_t>(plan, memory, out, [](std::int32_t v) { return v; });
  } else {
    read_result_rows<std::int8_t>(plan, memory, out,
                                  [](std::int8_t v) { return static_cast<std::int32_t>(v); });
  }
  return out;
}

GemmRunInt execute_gemm(const GemmPlan& plan, Backend& backend, const num::MatrixI8& a,
                        const num::MatrixI8& b, const num::MatrixI32* c,
                        const RequantColumns* requant) {
  return execute_plan<GemmRunInt>(
      plan, backend, [&](HostMemory& memory) { write_gemm_inputs(plan, memory, a, b, c, requant); },
      [&](const HostMemory& memory) { return read_gemm_output_int(plan, memory); });
}

GemmRunInt execute_conv(const GemmPlan& plan, Backend& backend, const std::int8_t* x,
                        const ImageStrides& strides, const num::MatrixI8& b,
                        const RequantColumns* requant) {
  return execute_plan<GemmRunInt>(
      plan, backend,
      [&](HostMemory& memory) { write_conv_inputs(plan, memory, x, strides, b, requant); },
      [&](const HostMemory& memory) { return read_gemm_output_int(plan, memory); });
}

num::MatrixI32 run_gemm(Backend& backend, const GemmSpec& spec, const num::MatrixI8& a,
                        const num::MatrixI8& b, const num::MatrixI32* c,
                        const RequantColumns* requant, RunResult* result) {
  return take_result(execute_gemm(plan_gemm(backend.config(), spec), backend, a, b, c, requant),
                     result);
}

num::MatrixFp32 reference_gemm(const GemmSpec& spec, const num::MatrixBf16& a,
                               const num::MatrixBf16& b, const num::MatrixFp32* c,
                               const std::vector<num::fp32_t>* bias) {
  num::MatrixFp32 out = num::gemm(a, b, c);
  for (std::size_t i = 0; i < out.rows; ++i) {
    for (std::size_t j = 0; j < out.cols; ++j) {
      num::fp32_t x = out.at(i, j);
      if (bias) x = num::add_fp32(x, (*bias)[j]);
      x = num::act_func(static_cast<unsigned>(spec.act), x, spec.alpha);
      if (spec.out == OutType::Bf16) x = num::bf16_to_fp32(num::fp32_to_bf16(x));
      out.at(i, j) = x;
    }
  }
  return out;
}

num::MatrixI32 reference_gemm(const GemmSpec& spec, const num::MatrixI8& a, const num::MatrixI8& b,
                              const num::MatrixI32* c, const RequantColumns* requant) {
  num::MatrixI32 out = num::gemm_int8(a, b, c);
  const std::vector<std::int32_t> zeros(out.cols, 0);
  const std::vector<std::int32_t> fold =
      num::fold_input_zero_point(requant ? requant->bias : zeros, spec.input_zero_point, b);
  for (std::size_t i = 0; i < out.rows; ++i) {
    for (std::size_t j = 0; j < out.cols; ++j) {
      std::int32_t& x = out.at(i, j);
      if (spec.out == OutType::Int32) {
        x = isa::int32_value(static_cast<std::uint32_t>(x) + static_cast<std::uint32_t>(fold[j]));
      } else {
        num::RequantParams p;
        p.bias = fold[j];
        p.m = {requant->multiplier.at(j), static_cast<int>(requant->shift.at(j))};
        p.zero_point = spec.output_zero_point;
        p.lo = spec.clamp_lo;
        p.hi = spec.clamp_hi;
        x = num::requantize(x, p);
      }
    }
  }
  return out;
}

}  // namespace tpu
