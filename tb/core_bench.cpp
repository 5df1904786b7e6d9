// Benchmark of the programmable core: one compiled GEMM on the RTL backend,
// with the utilisation and the counter breakdown of the TPU v1 paper's table.
// The result is checked bit for bit against the functional model.
//
//   core_bench [--m 512 --k 512 --n 512] [--array 16x16] [--latency 8]
//              [--bandwidth 1.0] [--out-dtype fp32|bf16] [--seed N]
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "harness/gemm_bench.hpp"
#include "tpu/cycle_model.hpp"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"Benchmark of one compiled GEMM on the core's RTL"};
  std::uint32_t m = 512, k = 512, n = 512;
  std::string array = "16x16", out_dtype = "fp32";
  unsigned latency = 8;
  double bandwidth = 1.0;
  std::uint64_t seed = 1;
  app.add_option("--m", m, "rows of A")->check(CLI::Range(1u, 65535u));
  app.add_option("--k", k, "columns of A, rows of B")->check(CLI::Range(1u, 65535u));
  app.add_option("--n", n, "columns of B")->check(CLI::Range(1u, 65535u));
  app.add_option("--array", array, "compiled tpu_top configuration");
  app.add_option("--latency", latency, "host memory read latency in cycles")
      ->check(CLI::Range(1u, 10000u));
  app.add_option("--bandwidth", bandwidth, "host memory beats per cycle")
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--out-dtype", out_dtype, "fp32 or bf16")->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--seed", seed, "random operands");
  CLI11_PARSE(app, argc, argv);

  const tpu::HardwareConfig config = tpu::harness::compiled_top_named(array);
  tpu::GemmSpec spec;
  spec.m = m;
  spec.k = k;
  spec.n = n;
  spec.out = out_dtype == "bf16" ? tpu::OutType::Bf16 : tpu::OutType::Fp32;
  tpu::sim::AxiTiming timing;
  timing.read_latency = latency;
  timing.beats_per_cycle = bandwidth;
  const tpu::harness::GemmMeasurement run = tpu::harness::measure_gemm(config, spec, timing, seed);
  const tpu::GemmPlan& plan = run.plan;
  const auto count = plan.program.size();
  const bool exact = run.exact;
  const double seconds = run.wall_seconds;

  const tpu::Counters& c = run.counters;
  const double cycles = static_cast<double>(c[0]);
  const double ideal =
      static_cast<double>(m) * k * n / (static_cast<double>(config.dim) * config.dim);
  fmt::print("GEMM                  {} x {} x {} ({} out), array {}, {}-bit AXI\n", m, k, n,
             out_dtype, config.name(), config.bus_bytes * 8);
  fmt::print("host memory           {} cycles latency, {:.2f} beats/cycle\n", latency, bandwidth);
  std::string blocks;
  for (std::size_t block = 0; block + 1 < plan.block_first.size(); ++block) {
    blocks += fmt::format("{}{}", block ? ", " : "",
                          plan.block_first[block + 1] - plan.block_first[block]);
  }
  fmt::print("program               {} instructions; M blocks of {} rows\n", count, blocks);
  fmt::print("cycles                {}\n", c[0]);
  fmt::print("ideal cycles          {:.0f}  (M*K*N / (rows*cols))\n", ideal);
  fmt::print("utilisation           {:.2f} %\n", 100.0 * ideal / cycles);
  tpu::MemoryTiming memory;
  memory.read_latency = latency;
  memory.beats_per_cycle = bandwidth;
  const tpu::CycleEstimate estimate = tpu::estimate_cycles(plan, memory);
  fmt::print("cycle model           {:.0f} ({:+.1f} %), {} bound\n", estimate.cycles,
             100.0 * (estimate.cycles - cycles) / cycles, estimate.bound);
  // Cycle counters as a share of all cycles (the categories add up to 100 %),
  // useful MACs as a share of the array's peak, DMA beats as bus occupancy.
  const double peak_macs = cycles * config.dim * config.dim;
  fmt::print("counters              {:>14}  {:>8}\n", "value", "share");
  for (std::size_t index = 0; index < tpu::regs::kCounters.size(); ++index) {
    const auto& counter = tpu::regs::kCounters[index];
    const double value = static_cast<double>(c[index]);
    const std::string name = counter.name;
    std::string share;
    if (name == "USEFUL_MACS")
      share = fmt::format("{:.2f} % of peak", 100.0 * value / peak_macs);
    else if (name != "INSTRUCTIONS")
      share = fmt::format("{:.2f} %", 100.0 * value / cycles);
    fmt::print("  {:<19} {:>14.0f}  {}\n", name, value, share);
  }
  fmt::print("simulation            {:.1f} s, {:.0f} cycles/s\n", seconds, cycles / seconds);
  fmt::print("result vs model       {}\n", exact ? "bit-exact" : "MISMATCH");
  return exact ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "core_bench: {}\n", e.what());
    return 2;
  }
}
