// `make sim`: the Verilator regression of the matrix unit. Runs directed and
// seeded random GEMMs on every compiled array configuration, checks each result
// bit for bit against the reference model, and prints one table row per case.
#include <fmt/core.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <random>

#include "harness/case_selection.hpp"
#include "harness/mxu_gemm.hpp"
#include "harness/mxu_model.hpp"
#include "harness/tile_jobs.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/numerics/gemm.hpp"

namespace {

using tpu::harness::ArrayConfig;
using tpu::harness::MxuModel;
using tpu::harness::StallProfile;
using tpu::harness::StreamStats;
using tpu::num::MatrixBf16;
using tpu::num::MatrixFp32;
namespace harness = tpu::harness;
namespace oracle = tpu::oracle;
namespace num = tpu::num;

struct CaseResult {
  std::string shape;
  std::size_t tiles = 0;
  std::uint64_t useful_macs = 0;
  StreamStats stats;
  bool pass = false;
  std::string note;
};

struct Case {
  std::string name;
  std::function<CaseResult(MxuModel&, oracle::OperandRng&)> run;
};

CaseResult gemm_case(MxuModel& mxu, const MatrixBf16& a, const MatrixBf16& w,
                     const MatrixFp32* seed, const StallProfile& stalls = {}) {
  CaseResult r;
  const ArrayConfig& cfg = mxu.config();
  r.shape = fmt::format("{}x{}x{}", a.rows, a.cols, w.cols);
  r.tiles = ((a.cols + cfg.rows - 1) / cfg.rows) * ((w.cols + cfg.cols - 1) / cfg.cols);
  r.useful_macs = std::uint64_t{a.rows} * a.cols * w.cols;
  const MatrixFp32 got = harness::run_gemm(mxu, a, w, seed, stalls, &r.stats);
  r.pass = got.data == num::gemm(a, w, seed).data;
  if (stalls.any()) r.note = "random stalls";
  return r;
}

std::vector<Case> cases_for(const ArrayConfig& cfg, unsigned random_cases) {
  const std::size_t R = cfg.rows, C = cfg.cols;
  std::vector<Case> cases;
  cases.push_back({"identity", [=](MxuModel& mxu, oracle::OperandRng& rng) {
                     MatrixBf16 w(R, C, 0);
                     for (std::size_t i = 0; i < std::min(R, C); ++i) w.at(i, i) = 0x3F80;
                     return gemm_case(mxu, oracle::random_bf16_matrix(rng, 2 * R, R, 0), w,
                                      nullptr);
                   }});
  cases.push_back({"special-values", [=](MxuModel& mxu, oracle::OperandRng& rng) {
                     const auto a = oracle::random_bf16_matrix(rng, R + 3, 2 * R + 1, 30, 1, 254);
                     const auto w = oracle::random_bf16_matrix(rng, 2 * R + 1, C + 1, 30, 1, 254);
                     const auto seed = oracle::random_seed_matrix(rng, R + 3, C + 1);
                     return gemm_case(mxu, a, w, &seed);
                   }});
  cases.push_back({"seeded", [=](MxuModel& mxu, oracle::OperandRng& rng) {
                     const auto seed = oracle::random_seed_matrix(rng, 2 * R, 2 * C + 1);
                     return gemm_case(mxu, oracle::random_bf16_matrix(rng, 2 * R, 3 * R - 1, 3),
                                      oracle::random_bf16_matrix(rng, 3 * R - 1, 2 * C + 1, 3),
                                      &seed);
                   }});
  cases.push_back({"back-to-back", [=](MxuModel& mxu, oracle::OperandRng& rng) {
                     // Independent tiles of exactly the minimum period: no bubble allowed.
                     const std::size_t m = cfg.min_tile_period();
                     const auto tiles = harness::random_independent_tiles(rng, cfg, {m, m, m, m});
                     CaseResult r;
                     r.shape = fmt::format("4 tiles x {} rows", m);
                     r.tiles = 4;
                     r.useful_macs = 4 * m * R * C;
                     const auto streamed = harness::run_stream(mxu, tiles.jobs);
                     r.stats = streamed.stats;
                     const auto expected = harness::expected_stream_cycles(cfg, {m, m, m, m});
                     r.pass =
                         streamed.results == tiles.expected && streamed.stats.cycles == expected;
                     r.note = fmt::format("expected {} cycles", expected);
                     return r;
                   }});
  cases.push_back({"long-stream", [=](MxuModel& mxu, oracle::OperandRng& rng) {
                     return gemm_case(mxu, oracle::random_bf16_matrix(rng, 16 * R, R, 2),
                                      oracle::random_bf16_matrix(rng, R, C, 2), nullptr);
                   }});
  for (unsigned i = 0; i < random_cases; ++i) {
    cases.push_back({fmt::format("random-{}", i), [=](MxuModel& mxu, oracle::OperandRng& rng) {
                       const std::size_t m = rng.uniform(1, 3 * std::max(R, C));
                       const std::size_t k = rng.uniform(1, 3 * R), n = rng.uniform(1, 3 * C);
                       const auto a = oracle::random_bf16_matrix(rng, m, k, 3);
                       const auto w = oracle::random_bf16_matrix(rng, k, n, 3);
                       const auto seed = oracle::random_seed_matrix(rng, m, n);
                       StallProfile stalls;
                       if (i % 2) {
                         stalls = {0.2, 0.3, 0.1, 0.25, rng.uniform(1, 1u << 30)};
                       }
                       return gemm_case(mxu, a, w, rng.uniform(0, 99) < 50 ? &seed : nullptr,
                                        stalls);
                     }});
  }
  return cases;
}

int run(int argc, char** argv) {
  CLI::App app{"Verilator regression of the TPU matrix unit"};
  std::uint64_t seed = std::random_device{}();
  unsigned random_cases = 16;
  std::vector<std::string> only;
  std::string wave;
  bool list = false;
  app.add_option("--seed", seed, "seed of the random cases (printed; give it back to repeat)");
  app.add_option("--random-cases", random_cases, "random GEMMs per array configuration")
      ->check(CLI::Range(0u, 1000u));
  app.add_option("--only", only, "run only these cases, named <config>/<case>");
  app.add_option("--wave", wave, "write an FST waveform (needs exactly one --only case)");
  app.add_flag("--list", list, "list the cases and exit");
  CLI11_PARSE(app, argc, argv);

  // Every case, in order; validated before anything is printed.
  struct Planned {
    ArrayConfig config;
    std::size_t index;
    Case test;
    std::string name;
  };
  std::vector<Planned> plan;
  for (const ArrayConfig& cfg : harness::compiled_configs()) {
    auto cases = cases_for(cfg, random_cases);
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      plan.push_back({cfg, ci, cases[ci], cfg.name() + "/" + cases[ci].name});
    }
  }
  if (list) {
    for (const Planned& p : plan) fmt::print("{}\n", p.name);
    return 0;
  }
  if (const int status =
          harness::check_case_selection("mxu_sim", plan, only, wave, harness::compiled_configs(),
                                        harness::model_traces, "wave")) {
    return status;
  }

  fmt::print("mxu_sim: seed {} (repeat with --seed {})\n", seed, seed);
  fmt::print("{:<14} {:<16} {:>18} {:>5} {:>8} {:>10} {:>6}  {:<6} {}\n", "array", "case",
             "shape MxKxN", "tiles", "cycles", "MACs/cyc", "util%", "result", "note");
  unsigned failures = 0, ran = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const Planned& p : plan) {
    if (!only.empty() && std::find(only.begin(), only.end(), p.name) == only.end()) continue;
    const ArrayConfig& cfg = p.config;
    // Each case draws from its own stream so that --only reproduces it alone.
    oracle::OperandRng rng(seed ^ std::hash<std::string>{}(p.name));
    auto mxu = harness::make_model(cfg, {static_cast<std::uint32_t>(seed + p.index + 1)});
    CaseResult r;
    try {
      if (!wave.empty()) mxu->open_trace(wave);
      r = p.test.run(*mxu, rng);
    } catch (const std::exception& e) {
      r.pass = false;
      r.note = e.what();
    }
    ++ran;
    if (!r.pass) ++failures;
    const double macs_per_cycle =
        r.stats.cycles ? double(r.useful_macs) / double(r.stats.cycles) : 0.0;
    fmt::print("{:<14} {:<16} {:>18} {:>5} {:>8} {:>10.2f} {:>6.1f}  {:<6} {}\n", cfg.name(),
               p.test.name, r.shape, r.tiles, r.stats.cycles, macs_per_cycle,
               100.0 * macs_per_cycle / (cfg.rows * cfg.cols), r.pass ? "PASS" : "FAIL", r.note);
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
    fmt::print(stderr, "mxu_sim: {}\n", e.what());
    return 2;
  }
}
