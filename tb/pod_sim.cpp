// The pod regression (make sim): ring all-reduces on pods of Verilator models of tpu_top and of
// functional models, 2 to 8 chips, random and adversarial values, from one value to more than
// the accumulators hold, on row-wide links and on narrow, slow ones. Every chip's result must be
// N-REDUCE bit for bit: the reference model's, which the host FPU's fold must agree with.
// One row per case: the cycles of the RTL pod against the bound 2(N-1) x (ceil(n/N) x 4 / B + L).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "backends/rtl_pod.hpp"
#include "oracle/collective.hpp"
#include "tpu/numerics/collective.hpp"
#include "tpu/pod.hpp"

namespace {

using tpu::HardwareConfig;

struct Case {
  std::string core;
  unsigned chips;
  std::size_t values;
  bool adversarial;
  tpu::LinkTiming link;

  std::string name() const {
    return fmt::format("{}/{}chips_{}_{}_l{}_b{}", core, chips, values,
                       adversarial ? "adversarial" : "random", link.latency, link.beats_per_cycle);
  }
};

std::vector<Case> cases() {
  std::vector<Case> all;
  // 16x16: 1 value (chunks empty), a partial row, 256 KiB (all 4,096 accumulator rows), and
  // more than the accumulators hold (several passes).
  for (unsigned chips : {2u, 3u, 4u, 5u, 8u}) {
    for (std::size_t values : {std::size_t{1}, std::size_t{16 * 3 + 1}, std::size_t{1000}}) {
      for (bool adversarial : {false, true}) {
        all.push_back({"16x16", chips, values, adversarial, {1, 1.0}});
      }
    }
  }
  for (unsigned chips : {2u, 4u, 8u}) all.push_back({"16x16", chips, 16 * 4096, false, {8, 1.0}});
  all.push_back({"16x16", 3, 16 * 4096 + 16 * 700 + 5, true, {8, 1.0}});
  // Links of two lanes, room for 3 rows, pipelined adders; slow and long wires.
  for (unsigned chips : {2u, 3u, 5u}) {
    all.push_back({"4x4_m1a1", chips, 1500, true, {7, 0.5}});
    all.push_back({"4x4_m1a1", chips, 37, false, {20, 0.3}});
  }
  return all;
}

HardwareConfig config_named(const std::string& name) {
  const HardwareConfig* config = tpu::find_core_config(name);
  if (config == nullptr) throw std::invalid_argument("no compiled core " + name);
  return *config;
}

int run(int argc, char** argv) {
  CLI::App app{"Ring all-reduce regression on pods of RTL and functional models"};
  std::uint64_t seed = 1;
  std::string only;
  bool list = false;
  app.add_option("--seed", seed, "seed of the values");
  app.add_option("--case", only, "run only the cases whose name contains this");
  app.add_flag("--list", list, "list the cases");
  CLI11_PARSE(app, argc, argv);
  const std::vector<Case> all = cases();
  if (list) {
    for (const Case& c : all) fmt::print("{}\n", c.name());
    return 0;
  }
  fmt::print("pod_sim: seed {} (repeat with --seed {})\n", seed, seed);
  fmt::print("{:<9} {:>5} {:>7} {:<11} {:>4} {:>5} {:>6} {:>8} {:>8} {:>6}  {}\n", "core", "chips",
             "values", "values are", "L", "B", "passes", "cycles", "bound", "ratio", "result");
  const auto start = std::chrono::steady_clock::now();
  unsigned ran = 0, failures = 0;
  for (std::size_t index = 0; index < all.size(); ++index) {
    const Case& c = all[index];
    if (!only.empty() && c.name().find(only) == std::string::npos) continue;
    const HardwareConfig config = config_named(c.core);
    const std::uint64_t case_seed = seed * 1000003 + index;
    const tpu::oracle::Tensors g =
        c.adversarial ? tpu::oracle::adversarial_tensors(c.chips, c.values, case_seed)
                      : tpu::oracle::random_tensors(c.chips, c.values, case_seed);
    const std::vector<tpu::num::fp32_t> expected = tpu::num::ring_allreduce(g);
    bool ok = expected == tpu::oracle::ring_allreduce(g);

    tpu::sim::RtlPodOptions options;
    options.link = c.link;
    options.memory_bytes = tpu::allreduce_memory_bytes(config, c.chips, c.values);
    tpu::sim::RtlPod rtl(config, c.chips, options);
    tpu::AllreduceStats stats;
    for (const auto& sums : tpu::run_allreduce(rtl, g, &stats)) ok = ok && sums == expected;
    auto model = tpu::make_model_pod(config, c.chips, options.memory_bytes);
    for (const auto& sums : tpu::run_allreduce(*model, g)) ok = ok && sums == expected;

    const double link_bytes = config.link_lanes * 4.0 * c.link.beats_per_cycle;
    const double bound = 2.0 * (c.chips - 1) *
                         (std::ceil(double(c.values) / c.chips) * 4 / link_bytes + c.link.latency);
    const std::uint64_t cycles = stats.reduce_cycles ? stats.reduce_cycles : stats.cycles;
    fmt::print("{:<9} {:>5} {:>7} {:<11} {:>4} {:>5} {:>6} {:>8} {:>8.0f} {:>6.2f}  {}{}\n", c.core,
               c.chips, c.values, c.adversarial ? "adversarial" : "random", c.link.latency,
               c.link.beats_per_cycle, stats.passes, cycles, bound, double(cycles) / bound,
               ok ? "PASS" : "FAIL",
               stats.reduce_cycles ? "" : " (cycles of the loads, passes and stores)");
    ++ran;
    failures += ok ? 0 : 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{} passed, {} failed ({:.1f} s, seed {})\n", ran - failures, failures, seconds, seed);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "pod_sim: {}\n", e.what());
    return 2;
  }
}
