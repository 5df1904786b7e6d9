#include "tpu/cycle_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace tpu {
namespace {

// Beats of a transfer of `bytes` per row: a row narrower than the bus is one
// narrow beat (docs/core.md, "Data movement").
double beats_per_row(unsigned bytes, unsigned bus_bytes) {
  return std::max(1.0, static_cast<double>(bytes) / bus_bytes);
}

// Cycles the issue stage, the DMA engines and the units take around each
// operation that the resource counts below leave out, measured on the RTL
// (make bench prints model and measurement side by side).
constexpr double kIssueCycles = 6;       // fetch and decode of the first instructions
constexpr double kActivateLatency = 12;  // bias, function and rounding pipeline, and write-back
constexpr double kMatmulOverhead = 2;    // per MATMUL: reader start and the hand-over between ops
constexpr double kSeedTurnaround = 3;    // a result row's write, then its read as the next seed
// A vector program: its fetch before the first instruction issues, and from the last write's
// response to DONE; the decode of each instruction after the first (docs/core.md, "Issue").
constexpr double kSerialStartAndEnd = 44;
constexpr double kDecodeCycles = 8;
// READ_HOST and WRITE_HOST iterations of few beats. A read's iteration takes 7 cycles and half
// its beats, or its beats where they are more: `tpu run --stats` on the RTL (16x16 and 4x4_m1a1,
// fp32 and int8 rows) of 32 iterations against 8 gives 7.5 cycles an iteration of one beat, 8 of
// two, 9 of four, 11 of eight, 13 of twelve and 16 of sixteen. A write's takes at least 2.
constexpr double kReadIterationCycles = 7;
constexpr double kWriteIterationCycles = 2;
// ACTIVATE between iterations: the pipeline drains before the next iteration's bias row is read.
// 32 iterations of one row against one of 32 rows on the RTL, 16x16 and 4x4_m1a1 alike: 10 cycles
// an iteration more without a bias, 11 with one, 15 with REQ's three rows.
constexpr double kActivateIterationGap = 10;
// An ELTWISE whose A is in the unified buffer leaves the vector unit idle a cycle more before the
// next one starts: 450 of them of 2 rows each, back to back, take 1.0 cycle each more on the RTL
// (16x16 and 4x4_m1a1) than their VECTOR_BUSY cycles and the issue's pace give.
constexpr double kUbEltwiseGap = 1;
constexpr double kActivateBiasGap = 1;
constexpr double kActivateRequantGap = 5;

}  // namespace

CycleEstimate estimate_cycles(const GemmPlan& plan, const MemoryTiming& timing) {
  const HardwareConfig& c = plan.config;
  const GemmSpec& s = plan.spec;
  const double d = c.dim, bw = timing.beats_per_cycle;
  const unsigned k_tiles = plan.k_pad / c.dim, n_tiles = plan.n_pad / c.dim;
  // A convolution (plan_conv) runs a K loop per tap over its channels, and loads with each
  // block's rows, per phase and channel tile, the rows its kernel reaches past them.
  const ConvGeometry& conv = plan.conv;
  const double taps = conv.empty() ? 1 : conv.taps();
  const unsigned loop_k = conv.empty() ? s.k : conv.channels;
  const double a_loads = conv.empty() ? k_tiles : conv.phases() * (k_tiles / taps);
  const double halo = conv.empty() ? 0 : conv.tap_offset(conv.taps() - 1);
  const bool partial_k = loop_k % c.dim != 0;
  // A and weight rows: bf16, or int8 at one byte a value.
  const double ub_row_beats = beats_per_row(plan.in_elem_bytes() * c.dim, c.bus_bytes);
  const double acc_row_beats = beats_per_row(4 * c.dim, c.bus_bytes);
  const double out_row_beats = beats_per_row(plan.out_elem_bytes() * c.dim, c.bus_bytes);
  const double act_cycles_per_row = std::ceil(d / c.act_lanes);
  const bool activates = s.int8()
                             ? s.out == OutType::Int8
                             : s.out == OutType::Bf16 || s.has_bias || s.act != isa::Func::None;
  // Per (M block, N tile): the column rows (a bias row, counted whether or not there is one, as
  // the RTL measurements the constants come from did; Q-REQ's three), and the seed rows (C, or
  // the za correction row read once per accumulator row).
  const double column_rows = !s.int8() ? 1 : s.out == OutType::Int8 ? 3 : 0;
  const bool seeded = s.has_c || plan.has_seed_row();
  // Weight rows per (M block, N tile): whole tiles, then the k_valid rows of the last; with B
  // given transposed, the tile's columns of each tile.
  const double weight_beats =
      taps * (s.b_transposed ? k_tiles * std::min<double>(d, s.n) : loop_k) * ub_row_beats;
  // READ_WEIGHTS T's transposer takes a tile's rows, then gives its columns: 2 Dim cycles.
  const double tile_supply = s.b_transposed ? 2 * d : 0;
  const double matmuls =
      taps / (conv.empty() ? 1 : plan.taps_per_matmul()) * (partial_k && loop_k > c.dim ? 2 : 1);
  // The array's pipeline, Dim + MulStages + Dim x (AddStages + 1) cycles
  // (docs/core.md), and the shortest spacing of two tiles' first rows:
  // Rows + 1 + FreeDelay, FreeDelay = (Rows - 1)(Lp - 2) for a partial-sum
  // step of Lp = AddStages + 1 cycles above 2 (docs/architecture.md).
  const double pipeline = d + c.mul_stages + d * (c.add_stages + 1);
  const double step = c.add_stages + 1;
  const double tile_period = d + 1 + (step > 2 ? (d - 1) * (step - 2) : 0);

  CycleEstimate e;
  // A convolution's ideal counts its output pixels, not the wide rows between them.
  e.ideal = conv.empty() ? static_cast<double>(s.m) * s.k * s.n / (d * d)
                         : static_cast<double>(conv.batch) * conv.out_h() * conv.out_w() *
                               conv.taps() * conv.channels * s.n / (d * d);
  const std::size_t blocks = plan.block_first.size() - 1;
  std::array<double, 4> bound_cycles{};  // array, read bus, activation, write bus
  double steady = 0;
  for (std::size_t mb = 0; mb < blocks; ++mb) {
    const double rows = plan.block_first[mb + 1] - plan.block_first[mb];
    const double next_rows =
        mb + 1 < blocks ? plan.block_first[mb + 2] - plan.block_first[mb + 1] : 0;
    // Each iteration streams the block's rows. The next tile commits no
    // sooner than the tile period after this one (docs/architecture.md), and
    // in a bf16 K loop an iteration's seed rows wait for the previous
    // iteration's results to leave the array's pipeline (docs/core.md); int8
    // results add to their rows on the way out instead, so nothing waits.
    const double first = std::max({rows, tile_period, tile_supply});
    const double chained = s.int8() ? first : std::max(first, pipeline + kSeedTurnaround);
    // A convolution's taps are MATMULs of their own: each fetches its first tile only once it
    // issues, after the one before, so the array waits the read latency, and the tile's load
    // and shift where they take longer than the seed's wait (bench_suite --check holds this to
    // the RTL).
    const double restart =
        conv.empty() ? 0
                     : (matmuls - 1) * (timing.read_latency +
                                        std::max(0.0, d * ub_row_beats / bw + d - chained));
    const double array =
        n_tiles * (first + (k_tiles - 1) * chained + matmuls * kMatmulOverhead + restart);
    const double reads = (n_tiles * (weight_beats + column_rows * acc_row_beats +
                                     (seeded ? rows * acc_row_beats : 0)) +
                          (next_rows > 0 ? next_rows + halo : 0) * a_loads * ub_row_beats) /
                         bw;
    const double activation = activates ? n_tiles * rows * act_cycles_per_row : 0;
    const double writes = n_tiles * rows * out_row_beats / bw;
    const std::array<double, 4> need{array, reads, activation, writes};
    const auto busiest = std::max_element(need.begin(), need.end());
    bound_cycles[static_cast<std::size_t>(busiest - need.begin())] += *busiest;
    // A pair's accumulator bank is busy from its MATMUL through its ACTIVATE to its WRITE_HOST
    // (which waits for the ACTIVATE), and the pair after next needs it again: two banks
    // overlap two pairs, so a pair takes at least half of that chain.
    steady += std::max(*busiest, (array + activation + writes) / 2);
    e.array += array;
    e.read_bus += reads;
    e.activation += activation;
    e.write_bus += writes;
  }
  static const char* const kNames[] = {"array", "read bus", "activation", "write bus"};
  e.bound = kNames[std::max_element(bound_cycles.begin(), bound_cycles.end()) -
                   bound_cycles.begin()];

  // Before the first row: the program, the first A block, then (the MATMUL
  // that fetches it waits for that block) the first weight tile, which then
  // shifts into the array.
  const double first_rows = plan.block_first[1];
  e.startup = kIssueCycles + timing.read_latency +
              (first_rows + halo) * a_loads * ub_row_beats / bw + timing.read_latency +
              std::min<double>(loop_k, d) * ub_row_beats / bw + d;
  // After the last row: the array's pipeline, then the last pair's ACTIVATE and WRITE_HOST.
  const double last_rows = plan.block_first[blocks] - plan.block_first[blocks - 1];
  e.drain = pipeline + (activates ? last_rows * act_cycles_per_row + kActivateLatency : 0) +
            last_rows * out_row_beats / bw + timing.write_latency;
  e.cycles = e.startup + steady + e.drain;
  return e;
}

namespace {

// Whether `later` must wait for `earlier` (docs/core.md, "Issue"): it writes what `earlier`
// reads or writes, or reads what `earlier` writes, in the same memory.
bool waits_for(const isa::Footprint& later, const isa::Footprint& earlier,
               const isa::Instruction& later_in, const isa::Instruction& earlier_in) {
  const auto meet = [](const isa::RowSpan& x, const isa::RowSpan& y) {
    return x.used && y.used && x.memory == y.memory && x.overlaps(y);
  };
  const isa::RowSpan* later_reads[] = {&later.source, &later.bias};
  const isa::RowSpan* earlier_reads[] = {&earlier.source, &earlier.bias};
  for (const isa::RowSpan* read : earlier_reads) {
    if (meet(later.destination, *read)) return true;  // WAR
  }
  for (const isa::RowSpan* read : later_reads) {
    if (meet(*read, earlier.destination)) return true;  // RAW
  }
  if (meet(later.destination, earlier.destination)) return true;  // WAW
  if (later.uses_host && earlier.uses_host && (later.writes_host || earlier.writes_host)) {
    const std::uint64_t later_first = later_in.host_addr(), earlier_first = earlier_in.host_addr();
    return later_first < earlier.host_end && earlier_first < later.host_end;
  }
  return false;
}

}  // namespace

double estimate_vector_program_cycles(const HardwareConfig& c,
                                      const std::vector<isa::Instruction>& program,
                                      const MemoryTiming& timing) {
  // Per instruction: when it may issue (in order, a decode after the one before, once nothing
  // it waits for is in flight), then when its unit takes it and how long it runs there.
  enum Unit { kLoad, kStore, kVector, kActivation, kUnits };
  std::array<double, kUnits> unit_free{};
  // The instructions still in flight when the last one issued: one that ended by then can hold
  // up no later one, since issue times never decrease.
  struct InFlight {
    const isa::Instruction* in;
    isa::Footprint fp;
    Unit unit;
    double end;
  };
  std::vector<InFlight> in_flight;
  double issue = 0, last_end = 0;
  bool first = true;
  for (const isa::Instruction& in : program) {
    const double rows = double(in.count()) * in.rows();
    const isa::Footprint fp = isa::footprint(in, c.dim);
    // A host row: fp32 accumulator rows, bf16 unified-buffer rows.
    const double row_beats = beats_per_row(fp.host_row_bytes, c.bus_bytes) / timing.beats_per_cycle;
    Unit unit = kLoad;
    double cycles = 0;
    switch (in.opcode()) {
      case isa::Opcode::ReadHost:
        // Each iteration is a command of its own to the read engine: kReadIterationCycles and
        // half its beats apart, or its beats.
        cycles =
            timing.read_latency +
            in.count() * std::max<double>(
                             in.rows() * row_beats,
                             in.count() > 1 ? kReadIterationCycles + in.rows() * row_beats / 2 : 0);
        break;
      case isa::Opcode::WriteHost:
        unit = kStore;
        // An iteration's burst takes at least kWriteIterationCycles.
        cycles = in.count() * std::max<double>(in.rows() * row_beats,
                                               in.count() > 1 ? kWriteIterationCycles : 0) +
                 timing.write_latency;
        break;
      case isa::Opcode::Eltwise:
        unit = kVector;
        cycles = eltwise_cycles(c, in) + (in.flag(isa::kEltwiseFlagUb) ? kUbEltwiseGap : 0);
        break;
      case isa::Opcode::Activate:
        unit = kActivation;
        cycles = rows * std::ceil(double(c.dim) / c.act_lanes) + kActivateLatency +
                 (in.count() - 1.0) *
                     (kActivateIterationGap + (in.flag(isa::kActivateFlagReq) ? kActivateRequantGap
                                               : in.flag(isa::kActivateFlagBias) ? kActivateBiasGap
                                                                                 : 0));
        break;
      case isa::Opcode::Halt:
        continue;
      default:
        throw std::invalid_argument(
            "a vector program's cycles: an instruction other than "
            "READ_HOST, WRITE_HOST, ELTWISE, ACTIVATE or HALT");
    }
    double start = first ? 0 : issue + kDecodeCycles;
    first = false;
    // A unit's own operations run in order without a check (docs/core.md, "Issue").
    for (const InFlight& earlier : in_flight) {
      if (earlier.unit != unit && waits_for(fp, earlier.fp, in, *earlier.in)) {
        start = std::max(start, earlier.end);
      }
    }
    issue = start;
    start = std::max(start, unit_free[unit]);
    unit_free[unit] = start + cycles;
    in_flight.erase(std::remove_if(in_flight.begin(), in_flight.end(),
                                   [&](const InFlight& f) { return f.end <= issue; }),
                    in_flight.end());
    in_flight.push_back({&in, fp, unit, start + cycles});
    last_end = std::max(last_end, start + cycles);
  }
  return kIssueCycles + kSerialStartAndEnd + last_end;
}

double eltwise_cycles(const HardwareConfig& config, const isa::Instruction& eltwise) {
  const bool row_operand = eltwise.flag(isa::kEltwiseFlagRow);
  const bool along_row = eltwise.flag(isa::kEltwiseFlagLanes);
  const bool a_in_ub = eltwise.flag(isa::kEltwiseFlagUb);
  // Steps of the lanes a row: the groups of lanes, or with LANES one lane a cycle.
  const std::uint32_t steps =
      along_row ? config.dim : config.dim / std::max(config.vector_lanes, 1u);
  const std::uint32_t count = eltwise.count(), rows = eltwise.rows();
  const auto row_at = [](std::uint32_t base, std::uint32_t step, std::uint32_t i, std::uint32_t r) {
    return (base + i * step + r) & 0xFFFFu;
  };
  struct Entry {
    bool valid = false, need_a = false, need_b = false, last = false;
    std::uint32_t dst = 0;
  };
  enum class Reader { kIter, kA, kB, kDrain };
  enum class Arrival { kNone, kA, kB, kAB, kRowB };
  // The registers of tpu_vector_unit, every grant at once.
  Reader reader = Reader::kIter;
  Arrival arrival = Arrival::kNone;
  unsigned arrival_slot = 0, fill = 0, take = 0;
  std::uint32_t iter = 0, row = 0, step = 0;
  constexpr unsigned kEntries = 3;
  std::array<Entry, kEntries> entries{};
  bool w_valid = false, w_last = false;
  std::uint32_t w_dst = 0;
  for (std::uint64_t cycle = 0;; ++cycle) {
    // A read waits while its row is one an entry (but its own, for B) or the result still writes.
    const auto pending = [&](std::uint32_t r, bool skip_own, unsigned own) {
      if (w_valid && w_dst == r) return true;
      for (unsigned e = 0; e < entries.size(); ++e) {
        if (entries[e].valid && entries[e].dst == r && !(skip_own && own == e)) return true;
      }
      return false;
    };
    if (w_valid && w_last) return static_cast<double>(cycle + 1);  // the last write: the pop
    std::array<Entry, kEntries> next = entries;
    // The row read last cycle arrives.
    if (arrival == Arrival::kA || arrival == Arrival::kAB) next[arrival_slot].need_a = false;
    if (arrival == Arrival::kB || arrival == Arrival::kAB) next[arrival_slot].need_b = false;
    arrival = Arrival::kNone;
    const std::uint32_t a_row = row_at(eltwise.addr_a(), eltwise.step_a(), iter, row);
    const std::uint32_t b_row =
        row_at(eltwise.bias_addr(), eltwise.bias_step(), iter, row_operand ? 0 : row);
    const std::uint32_t dst_row = row_at(eltwise.addr_b(), eltwise.step_b(), iter, row);
    const unsigned own = (fill + kEntries - 1) % kEntries;
    bool advance = false;
    Reader reader_next = reader;
    if (reader == Reader::kIter && row_operand) {
      if (!pending(b_row, false, 0)) {
        arrival = Arrival::kRowB;
        reader_next = Reader::kA;
      }
    } else if (reader == Reader::kA || reader == Reader::kIter) {
      if (!entries[fill].valid && (a_in_ub || !pending(a_row, false, 0))) {
        // A unified-buffer row's B comes from the accumulators in the same cycle.
        const bool pair = a_in_ub && !row_operand && !pending(b_row, false, 0);
        arrival = pair ? Arrival::kAB : Arrival::kA;
        arrival_slot = fill;
        next[fill] = {true, true, !row_operand, row + 1 == rows && iter + 1 == count, dst_row};
        fill = (fill + 1) % kEntries;
        reader_next = Reader::kB;
        advance = row_operand || pair;
      }
    } else if (reader == Reader::kB) {
      if (!pending(b_row, true, own)) {
        arrival = Arrival::kB;
        arrival_slot = own;
        advance = true;
      }
    }
    if (advance) {
      reader_next = Reader::kA;
      if (++row == rows) {
        row = 0;
        reader_next = ++iter == count ? Reader::kDrain : Reader::kIter;
      }
    }
    reader = reader_next;
    // The lanes: the oldest full entry, a step a cycle (the result register is written at once).
    w_valid = false;
    const Entry& x = entries[take];
    if (x.valid && !x.need_a && !x.need_b && ++step == steps) {
      step = 0;
      w_valid = true;
      w_dst = x.dst;
      w_last = x.last;
      next[take].valid = false;
      take = (take + 1) % kEntries;
    }
    entries = next;
  }
}

}  // namespace tpu
