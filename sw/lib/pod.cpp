#include "tpu/pod.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "tpu/isa.hpp"
#include "tpu/model.hpp"
#include "tpu/numerics/collective.hpp"
#include "tpu/program.hpp"

namespace tpu {
namespace {

using regs::Error;

class ModelPod final : public Pod {
 public:
  ModelPod(const HardwareConfig& config, unsigned chips, std::size_t host_bytes) : config_(config) {
    check_pod(config, chips);
    for (unsigned i = 0; i < chips; ++i) {
      chips_.push_back(std::make_unique<FunctionalModel>(config, host_bytes));
      chips_.back()->set_pod(i, chips);
    }
  }

  std::string name() const override { return "model"; }
  const HardwareConfig& config() const override { return config_; }
  unsigned size() const override { return static_cast<unsigned>(chips_.size()); }
  std::vector<unsigned> local_chips() const override {
    std::vector<unsigned> all(size());
    std::iota(all.begin(), all.end(), 0u);
    return all;
  }
  Backend& chip(unsigned position) override { return *chips_.at(position); }

  std::vector<RunResult> run(std::uint32_t prog_addr, std::uint32_t count) override {
    const unsigned n = size();
    std::vector<bool> waiting(n, false);
    for (auto& c : chips_) c->begin(prog_addr, count);
    for (;;) {
      for (unsigned i = 0; i < n; ++i) {
        if (!waiting[i]) waiting[i] = chips_[i]->advance();
      }
      const auto at_collective =
          static_cast<unsigned>(std::count(waiting.begin(), waiting.end(), true));
      if (at_collective == 0) break;
      if (at_collective < n) {
        // A chip has stopped: its neighbours wait in vain.
        for (unsigned i = 0; i < n; ++i) {
          if (!waiting[i]) continue;
          chips_[i]->fail(Error::LinkTimeout, "a chip of the pod stopped before this ALLREDUCE");
          waiting[i] = false;
        }
        continue;
      }
      collective();
      std::fill(waiting.begin(), waiting.end(), false);
    }
    std::vector<RunResult> results;
    for (auto& c : chips_) results.push_back(c->result());
    return results;
  }

 private:
  // Whether two chips' ALLREDUCEs are not the same operation (what the RTL's header carries).
  static bool differ(const isa::Instruction& a, const isa::Instruction& b) {
    return a.count() != b.count() || a.rows() != b.rows() || a.total() != b.total() ||
           a.offset() != b.offset() || a.get(isa::kOffsetStep) != b.get(isa::kOffsetStep) ||
           a.flag(isa::kAllreduceFlagPs) != b.flag(isa::kAllreduceFlagPs);
  }

  // Every chip waits at an ALLREDUCE: each checks the one of the chip before it, as the header
  // the RTL sends does; then all sum, or the mismatched stop and the rest time out.
  void collective() {
    const unsigned n = size();
    bool mismatch = false;
    for (unsigned i = 0; i < n; ++i) {
      const isa::Instruction& mine = chips_[i]->collective();
      const isa::Instruction& before = chips_[(i + n - 1) % n]->collective();
      if (differ(mine, before)) mismatch = true;
    }
    if (mismatch) {
      for (unsigned i = 0; i < n; ++i) {
        const isa::Instruction& mine = chips_[i]->collective();
        const isa::Instruction& before = chips_[(i + n - 1) % n]->collective();
        if (differ(mine, before)) {
          chips_[i]->fail(
              Error::PodMismatch,
              fmt::format("chip {} started ALLREDUCE{} with rows {}, total {}, "
                          "offset {}; this chip{} with rows {}, total {}, offset {}",
                          (i + n - 1) % n, before.flag(isa::kAllreduceFlagPs) ? " PS" : "",
                          before.rows(), before.total(), before.offset(),
                          mine.flag(isa::kAllreduceFlagPs) ? " PS" : "", mine.rows(), mine.total(),
                          mine.offset()));
        } else {
          chips_[i]->fail(Error::LinkTimeout, "a chip of the pod stopped in this ALLREDUCE");
        }
      }
      return;
    }
    std::vector<std::vector<num::fp32_t>> values;
    std::vector<std::uint64_t> flat;
    for (auto& c : chips_) values.push_back(c->collective_values(&flat));
    const isa::Instruction& op = chips_[0]->collective();
    const std::vector<num::fp32_t> sums = op.flag(isa::kAllreduceFlagPs)
                                              ? num::ps_allreduce(values)
                                              : num::ring_allreduce(values, op.total(), flat);
    for (auto& c : chips_) c->finish_collective(sums);
  }

  HardwareConfig config_;
  std::vector<std::unique_ptr<FunctionalModel>> chips_;
};

constexpr std::uint32_t kProgramAddr = 0;

// How an all-reduce of n values goes through the accumulators. When they hold the tensor, one
// pass of its rows. Otherwise the tensor is seen as `segments` blocks of block_rows rows (the
// chips' chunks, rounded up to whole rows), and pass k takes rows k * seg_rows .. of every block,
// so that every chunk is in every pass and every ring step moves data on every link. Passes use
// half the accumulators each, so that one half loads while the other sums. In host memory the
// rows lie pass by pass (host_row()), so that a pass's load and store touch bytes of their own:
// the issue stage compares spans, and a pass spread over the whole tensor would wait for every
// other.
struct Plan {
  std::uint32_t segments = 1;    // per pass
  std::uint32_t block_rows = 0;  // rows a segment's block spans in the tensor
  std::uint32_t seg_rows = 0;    // rows of a segment in a full pass
  std::uint32_t passes = 1;
  bool single = false;          // one pass, loaded, summed and stored by separate runs
  std::uint32_t data_addr = 0;  // the tensor in host memory, rows of dim fp32 values
  std::uint32_t data_rows = 0;  // its rows there, padding included

  // Where row t of the tensor lies in host memory, in rows from data_addr.
  std::uint32_t host_row(std::uint32_t t) const {
    if (single) return t;
    const std::uint32_t block = t / block_rows, within = t % block_rows;
    return ((within / seg_rows) * segments + block) * seg_rows + within % seg_rows;
  }
};

Plan plan(const HardwareConfig& config, unsigned chips, std::uint64_t values) {
  if (values == 0 || values > 0xFFFFFFFFu) {
    throw std::invalid_argument(
        fmt::format("an all-reduce takes 1 to 2^32 - 1 values, not {}", values));
  }
  Plan p;
  const std::uint64_t rows = (values + config.dim - 1) / config.dim;
  const std::uint32_t half = config.acc_depth / 2;
  if (rows <= std::min(config.acc_depth, 65535u)) {
    p.single = true;
    p.block_rows = p.seg_rows = p.data_rows = static_cast<std::uint32_t>(rows);
  } else if (chips <= half) {
    p.segments = chips;
    p.block_rows =
        static_cast<std::uint32_t>(((values + chips - 1) / chips + config.dim - 1) / config.dim);
    p.seg_rows = std::min(half / chips, 65535u);
    p.data_rows = p.block_rows * chips;
  } else {
    // More chips than half the accumulators has rows: contiguous passes, each in few chunks.
    p.block_rows = p.data_rows = static_cast<std::uint32_t>(rows);
    p.seg_rows = std::min(half, 65535u);
  }
  p.passes = (p.block_rows + p.seg_rows - 1) / p.seg_rows;
  if (!p.single) p.data_rows = p.passes * p.segments * p.seg_rows;
  const std::uint32_t program_bytes = (3 * p.passes + 1) * isa::kInstrBytes;
  p.data_addr = (program_bytes + 4095) / 4096 * 4096;
  return p;
}

// The programs of an all-reduce: for one pass, load / sum / store apart, so that the sum's cycles
// can be counted alone; for several, one program whose passes overlap.
std::vector<std::vector<std::uint8_t>> programs(const HardwareConfig& config, const Plan& p,
                                                std::uint64_t values, bool parameter_server) {
  const std::uint32_t row_bytes = config.dim * 4;
  const std::uint32_t block_values = p.block_rows * config.dim;
  // Phase 0 loads pass k's segments into the accumulators from acc_row on, 1 sums them across the
  // chips, 2 stores them.
  const auto pass = [&](isa::ProgramBuilder& b, std::uint32_t k, std::uint32_t acc_row, int phase) {
    const std::uint32_t first_row = k * p.seg_rows;
    const std::uint32_t rows = std::min(p.seg_rows, p.block_rows - first_row);
    const std::uint32_t host = p.data_addr + p.host_row(first_row) * row_bytes;
    const std::uint32_t host_step = p.seg_rows * row_bytes;  // from one block's rows to the next
    if (phase == 1) {
      isa::AllreduceArgs sum;
      sum.parameter_server = parameter_server;
      sum.count = p.segments;
      sum.rows = rows;
      sum.addr_a = acc_row;
      sum.step_a = p.seg_rows;
      sum.total = static_cast<std::uint32_t>(values);
      sum.offset = first_row * config.dim;
      sum.offset_step = block_values;
      b.allreduce(sum);
      return;
    }
    // The load and the store move the same fp32 rows, each segment from its place on the host.
    const auto transfer = [&](auto& args) {
      args.acc = true;
      args.count = p.segments;
      args.rows = rows;
      args.host_addr = host;
      args.host_stride = row_bytes;
      args.host_step = host_step;
    };
    if (phase == 0) {
      isa::ReadHostArgs load;
      transfer(load);
      load.addr_b = acc_row;
      load.step_b = p.seg_rows;
      b.read_host(load);
      return;
    }
    isa::WriteHostArgs store;
    transfer(store);
    store.addr_a = acc_row;
    store.step_a = p.seg_rows;
    b.write_host(store);
  };
  std::vector<std::vector<std::uint8_t>> result;
  if (p.single) {
    for (int phase = 0; phase < 3; ++phase) {
      isa::ProgramBuilder b(config);
      pass(b, 0, 0, phase);
      result.push_back(b.halt().bytes());
    }
    return result;
  }
  // Instructions issue in order and wait there for what they depend on, so the next pass's load
  // comes before this pass's store: it then runs while this pass sums, and the store while the
  // next one sums.
  isa::ProgramBuilder b(config);
  const std::uint32_t half = config.acc_depth / 2;
  pass(b, 0, 0, 0);
  for (std::uint32_t k = 0; k < p.passes; ++k) {
    pass(b, k, (k % 2) * half, 1);
    if (k + 1 < p.passes) pass(b, k + 1, ((k + 1) % 2) * half, 0);
    pass(b, k, (k % 2) * half, 2);
  }
  result.push_back(b.halt().bytes());
  return result;
}

}  // namespace

void check_pod(const HardwareConfig& config, unsigned chips) {
  if (config.link_lanes == 0) {
    throw std::invalid_argument("a pod needs chips with inter-chip links; " + config.name() +
                                " has none");
  }
  if (chips < 2 || chips > 255) {
    throw std::invalid_argument(
        fmt::format("a pod has 2 to 255 chips, one per MPI rank under mpirun; not {}", chips));
  }
}

PodChipError::PodChipError(unsigned chip, const RunResult& result)
    : std::runtime_error(fmt::format("chip {} stopped with {} at instruction {} ({})", chip,
                                     regs::error_name(result.error), result.error_pc,
                                     regs::error_doc(result.error))),
      chip_(chip),
      result_(result) {}

std::unique_ptr<Pod> make_model_pod(const HardwareConfig& config, unsigned chips,
                                    std::size_t host_bytes) {
  return std::make_unique<ModelPod>(config, chips, host_bytes);
}

std::size_t allreduce_memory_bytes(const HardwareConfig& config, unsigned chips,
                                   std::uint64_t values) {
  const Plan p = plan(config, chips, values);
  return std::size_t{p.data_addr} + std::size_t{p.data_rows} * config.dim * 4;
}

std::vector<std::vector<num::fp32_t>> run_allreduce(
    Pod& pod, const std::vector<std::vector<num::fp32_t>>& inputs, AllreduceStats* stats,
    bool parameter_server) {
  const HardwareConfig& config = pod.config();
  const std::vector<unsigned> local = pod.local_chips();
  if (inputs.size() != local.size()) {
    throw std::invalid_argument(
        fmt::format("{} tensors for the {} chips of this process", inputs.size(), local.size()));
  }
  const std::uint64_t values = inputs.empty() ? 0 : inputs[0].size();
  for (const auto& input : inputs) {
    if (input.size() != values) {
      throw std::invalid_argument("the chips' tensors differ in length");
    }
  }
  const Plan p = plan(config, pod.size(), values);
  const auto progs = programs(config, p, values, parameter_server);
  const std::size_t padded = std::size_t{p.data_rows} * config.dim;
  for (std::size_t k = 0; k < local.size(); ++k) {
    HostMemory& memory = pod.chip(local[k]).memory();
    const std::size_t needed = allreduce_memory_bytes(config, pod.size(), values);
    if (memory.size() < needed) memory.resize(needed);
    std::vector<num::fp32_t> rows(padded, 0);
    for (std::size_t v = 0; v < inputs[k].size(); ++v) {
      rows[p.host_row(static_cast<std::uint32_t>(v / config.dim)) * config.dim + v % config.dim] =
          inputs[k][v];
    }
    memory.write_array(p.data_addr, rows);
  }
  AllreduceStats totals;
  totals.values = values;
  totals.passes = p.passes;
  for (std::size_t phase = 0; phase < progs.size(); ++phase) {
    for (unsigned c : local) pod.chip(c).memory().write_array(kProgramAddr, progs[phase]);
    const auto count = static_cast<std::uint32_t>(progs[phase].size() / isa::kInstrBytes);
    const std::vector<RunResult> results = pod.run(kProgramAddr, count);
    // Every process learns of a chip that stopped with an error (the last such chip), so that
    // all of them stop here together.
    std::uint64_t failure = 0;
    for (std::size_t k = 0; k < results.size(); ++k) {
      const RunResult& r = results[k];
      if (r.ok()) continue;
      failure = std::max(failure, std::uint64_t{local[k] + 1u} << 32 |
                                      std::uint64_t{static_cast<std::uint8_t>(r.error)} << 24 |
                                      (r.error_pc & 0xFFFFFFu));
    }
    failure = pod.max_over_chips(failure);
    if (failure != 0) {
      RunResult failed;
      failed.error = static_cast<regs::Error>((failure >> 24) & 0xFF);
      failed.error_pc = failure & 0xFFFFFF;
      throw PodChipError(static_cast<unsigned>((failure >> 32) - 1), failed);
    }
    std::uint64_t cycles = 0;
    for (std::size_t k = 0; k < results.size(); ++k) {
      const RunResult& r = results[k];
      if (!r.counters) continue;
      const Counters& c = *r.counters;
      totals.has_cycles = true;
      cycles = std::max(cycles, c[regs::kCntCyclesIndex]);
      totals.link_beats = std::max(totals.link_beats, c[regs::kCntLinkSentBeatsIndex]);
      totals.link_stall = std::max(totals.link_stall, c[regs::kCntLinkStallIndex]);
    }
    cycles = pod.max_over_chips(cycles);
    totals.cycles += cycles;
    if (p.single && phase == 1) totals.reduce_cycles = cycles;
  }
  totals.link_beats = pod.max_over_chips(totals.link_beats);
  totals.link_stall = pod.max_over_chips(totals.link_stall);
  if (stats) *stats = totals;
  std::vector<std::vector<num::fp32_t>> sums;
  for (unsigned c : local) {
    const auto rows = pod.chip(c).memory().read_array<num::fp32_t>(p.data_addr, padded);
    std::vector<num::fp32_t> tensor(values);
    for (std::size_t v = 0; v < values; ++v) {
      tensor[v] = rows[p.host_row(static_cast<std::uint32_t>(v / config.dim)) * config.dim +
                       v % config.dim];
    }
    sums.push_back(std::move(tensor));
  }
  return sums;
}

}  // namespace tpu
