// `make bench-mxu` and `make bench-sim`: speed of the Verilator model of the
// matrix unit and the utilisation of a long stream of back-to-back weight
// tiles. Results are checked against the reference model so a fast wrong
// answer cannot pass.
#include <fmt/core.h>
#include <fmt/os.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <random>

#include "Vtpu_mxu.h"
#include "harness/mxu_stream.hpp"
#include "tpu/numerics/gemm.hpp"

// The array size is fixed when the model is built (scripts/bench_mxu.sh passes
// it here too), so the driver cannot disagree with the model.
#ifndef MXU_ROWS
#error "build with -DMXU_ROWS=<rows> -DMXU_COLS=<cols>, as scripts/bench_mxu.sh does"
#endif

namespace {

int run(int argc, char** argv) {
  namespace harness = tpu::harness;
  namespace num = tpu::num;
  CLI::App app{"Matrix-unit benchmark"};
  const unsigned rows = MXU_ROWS, cols = MXU_COLS;
  unsigned tiles = 64, rows_per_tile = 0;
  double build_seconds = 0, build_peak_mib = 0;
  unsigned threads = 1;
  bool assertions = false;
  std::string json_path;
  app.add_option("--tiles", tiles, "weight tiles in the stream")->check(CLI::Range(1u, 100000u));
  app.add_option("--rows-per-tile", rows_per_tile, "activation rows per tile (default 16 x rows)")
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--build-seconds", build_seconds, "model build time, to print with the rest")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--build-peak-mib", build_peak_mib,
                 "peak memory of the model build's largest process, MiB, to print with the rest")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option("--threads", threads, "Verilator threads the model was built with, to record")
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--assertions", assertions, "the model was built with --assert, to record");
  app.add_option("--json", json_path, "also write the figures here, as one JSON object");
  // One line per bad option, so a failed sweep's log ends with the reason.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("mxu_bench: {}\n", e.what());
  });
  CLI11_PARSE(app, argc, argv);
  if (rows_per_tile == 0) rows_per_tile = 16 * rows;

  const harness::ArrayConfig config{rows, cols, 0, 0};
  harness::VerilatedMxu<Vtpu_mxu> mxu(config, {});

  // Random finite operands; every tile has its own weights and +0 seeds.
  std::mt19937 rng(1);
  auto value = [&] {
    return static_cast<num::bf16_t>(0x3C00 + (rng() & 0x07FF) + ((rng() & 1) << 15));
  };
  std::vector<harness::TileJob> jobs(tiles);
  for (auto& job : jobs) {
    job.m = rows_per_tile;
    job.weights.resize(std::size_t{rows} * cols);
    job.acts.resize(std::size_t{rows_per_tile} * rows);
    job.seeds.assign(std::size_t{rows_per_tile} * cols, 0);
    for (auto& w : job.weights) w = value();
    for (auto& a : job.acts) a = value();
  }

  const auto start = std::chrono::steady_clock::now();
  const harness::StreamResult out = harness::run_stream(mxu, jobs);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  bool exact = true;
  for (std::size_t t = 0; t < jobs.size() && exact; ++t) {
    num::MatrixBf16 a(rows_per_tile, rows), w(rows, cols);
    a.data = jobs[t].acts;
    w.data = jobs[t].weights;
    exact = num::gemm(a, w).data == out.results[t];
  }

  const double utilisation = out.stats.macs_per_cycle() / (rows * cols);
  // The cost of one cell for one cycle: what stays flat as the array grows if the model's work per
  // cell does.
  const double ns_per_cell_cycle = 1e9 * seconds / (double(out.stats.cycles) * rows * cols);
  const auto expected =
      harness::expected_stream_cycles(config, std::vector<std::size_t>(tiles, rows_per_tile));
  fmt::print("array                       {}x{} (bf16 x bf16 -> fp32, no pipeline registers)\n",
             rows, cols);
  if (build_seconds > 0) fmt::print("model build time            {:.1f} s\n", build_seconds);
  if (build_peak_mib > 0) fmt::print("model build peak memory     {:.0f} MiB\n", build_peak_mib);
  fmt::print("stream                      {} tiles x {} rows, back to back\n", tiles,
             rows_per_tile);
  fmt::print("simulated cycles            {} (formula {})\n", out.stats.cycles, expected);
  fmt::print("MXU utilisation             {:.2f} % of peak ({} MACs/cycle peak)\n",
             100.0 * utilisation, rows * cols);
  fmt::print("simulation speed            {:.0f} cycles/s, {:.3g} MACs/s (wall {:.2f} s)\n",
             double(out.stats.cycles) / seconds, double(out.stats.macs) / seconds, seconds);
  fmt::print("cost per cell and cycle     {:.1f} ns (wall / (cycles x {} cells))\n",
             ns_per_cell_cycle, rows * cols);
  fmt::print("results vs reference model  {}\n", exact ? "bit-exact" : "MISMATCH");
  if (!json_path.empty()) {
    // Written before the verdict below, so a sweep also records a failing run.
    auto json = fmt::output_file(json_path);
    json.print(
        "{{\"rows\": {}, \"cols\": {}, \"threads\": {}, \"assertions\": {}, "
        "\"build_seconds\": {:.1f}, \"build_peak_mib\": {:.0f}, \"cycles\": {}, \"useful_macs\": {}, \"utilisation\": {:.6f}, "
        "\"wall_seconds\": {:.4g}, \"cycles_per_second\": {:.1f}, \"macs_per_second\": {:.4g}, "
        "\"ns_per_cell_cycle\": {:.2f}, \"exact\": {}}}\n",
        rows, cols, threads, assertions, build_seconds, build_peak_mib, out.stats.cycles, out.stats.macs,
        utilisation, seconds, double(out.stats.cycles) / seconds, double(out.stats.macs) / seconds,
        ns_per_cell_cycle, exact);
    json.close();  // a write error throws here; in the destructor it would abort
  }
  // The cycle formula (back to back, only the pipeline's fill and drain lost) pins the timing;
  // the utilisation it implies depends on how many tiles the stream has.
  const bool ok = exact && out.stats.cycles == expected;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mxu_bench: {}\n", e.what());
    return 2;
  }
}
