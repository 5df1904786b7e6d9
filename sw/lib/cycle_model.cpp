#include "tpu/cycle_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>

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
// A program that runs one instruction after another: its fetch before the first issues, and
// from the last write's response to DONE.
constexpr double kSerialStartAndEnd = 44;

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
  // Weight rows per (M block, N tile): whole tiles, then the k_valid rows of the last.
  const double weight_beats = taps * loop_k * ub_row_beats;
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
    const double first = std::max(rows, tile_period);
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

double estimate_softmax_cycles(const SoftmaxPlan& plan, const MemoryTiming& timing) {
  const HardwareConfig& c = plan.config;
  const double row_beats = beats_per_row(4 * c.dim, c.bus_bytes) / timing.beats_per_cycle;
  double cycles = kIssueCycles + kSerialStartAndEnd;
  for (const isa::Instruction& in : plan.program) {
    const double rows = double(in.count()) * in.rows();
    switch (in.opcode()) {
      case isa::Opcode::ReadHost:
        cycles += timing.read_latency + rows * row_beats;
        break;
      case isa::Opcode::WriteHost:
        cycles += rows * row_beats + timing.write_latency;
        break;
      case isa::Opcode::Eltwise:
        cycles += eltwise_cycles(c, in);
        break;
      case isa::Opcode::Activate:
        cycles += rows * std::ceil(double(c.dim) / c.act_lanes) + kActivateLatency;
        break;
      default:
        break;
    }
  }
  return cycles;
}

double eltwise_cycles(const HardwareConfig& config, const isa::Instruction& eltwise) {
  const bool row_operand = eltwise.flag(isa::kEltwiseFlagRow);
  // The groups of lanes, or with LANES one lane a cycle.
  const double lanes = eltwise.flag(isa::kEltwiseFlagLanes)
                           ? config.dim
                           : std::ceil(double(config.dim) / std::max(config.vector_lanes, 1u));
  // Reading A, then B without ROW; a cycle for the last read row to arrive; the lanes; the write.
  const double per_row = (row_operand ? 1 : 2) + 1 + lanes + 1;
  return double(eltwise.count()) * (1 + eltwise.rows() * per_row);
}

}  // namespace tpu
