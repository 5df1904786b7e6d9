// `make sim`, second part: the regression of the programmable core. Compiles
// GEMMs of many shapes, with C, bias and every activation function, runs each
// on the RTL (tpu_top under Verilator) and on the functional model, checks
// both bit for bit against the reference computation, and prints one row per
// case with the RTL's cycle counters.
#include <fmt/core.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <random>

#include "backends/rtl_backend.hpp"
#include "backends/top_model.hpp"
#include "harness/case_selection.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/compiler.hpp"
#include "tpu/model.hpp"

namespace {

namespace oracle = tpu::oracle;
namespace num = tpu::num;
using tpu::GemmSpec;
using tpu::HardwareConfig;
using tpu::OutType;

struct Operands {
  num::MatrixBf16 a, b;
  num::MatrixFp32 c;
  std::vector<num::fp32_t> bias;
};

struct Case {
  std::string name;
  // Draws the spec and operands for one array configuration.
  std::function<std::pair<GemmSpec, Operands>(const HardwareConfig&, oracle::OperandRng&)> make;
};

Operands operands_for(oracle::OperandRng& rng, const GemmSpec& s, unsigned special_percent,
                      unsigned min_exp = 115, unsigned max_exp = 135) {
  Operands o;
  o.a = oracle::random_bf16_matrix(rng, s.m, s.k, special_percent, min_exp, max_exp);
  o.b = oracle::random_bf16_matrix(rng, s.k, s.n, special_percent, min_exp, max_exp);
  if (s.has_c) o.c = oracle::random_seed_matrix(rng, s.m, s.n, special_percent);
  if (s.has_bias) o.bias = oracle::random_seed_matrix(rng, 1, s.n, special_percent).data;
  return o;
}

GemmSpec shape(std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  GemmSpec s;
  s.m = m;
  s.k = k;
  s.n = n;
  return s;
}

std::vector<Case> cases(unsigned random_cases) {
  std::vector<Case> list;
  list.push_back({"square", [](const HardwareConfig& c, oracle::OperandRng& rng) {
                    const GemmSpec s = shape(2 * c.dim, 2 * c.dim, 2 * c.dim);
                    return std::pair{s, operands_for(rng, s, 2)};
                  }});
  list.push_back({"ragged", [](const HardwareConfig& c, oracle::OperandRng& rng) {
                    const GemmSpec s = shape(3 * c.dim - 1, 2 * c.dim + 3, c.dim + 1);
                    return std::pair{s, operands_for(rng, s, 2)};
                  }});
  list.push_back({"long-k", [](const HardwareConfig& c, oracle::OperandRng& rng) {
                    const GemmSpec s = shape(c.dim, 8 * c.dim, c.dim);
                    return std::pair{s, operands_for(rng, s, 1)};
                  }});
  list.push_back({"c-and-bias", [](const HardwareConfig& c, oracle::OperandRng& rng) {
                    GemmSpec s = shape(2 * c.dim + 1, c.dim + 2, 2 * c.dim - 1);
                    s.has_c = s.has_bias = true;
                    return std::pair{s, operands_for(rng, s, 5)};
                  }});
  list.push_back({"adversarial", [](const HardwareConfig& c, oracle::OperandRng& rng) {
                    GemmSpec s = shape(c.dim + 3, 2 * c.dim + 1, c.dim + 2);
                    s.has_c = true;
                    return std::pair{s, operands_for(rng, s, 30, 1, 254)};
                  }});
  for (unsigned f = 0; f < tpu::isa::kFuncCount; ++f) {
    const std::string name = tpu::isa::kFuncTable[f].mnemonic;
    list.push_back({"act-" + name, [f](const HardwareConfig& c, oracle::OperandRng& rng) {
                      GemmSpec s = shape(c.dim + 5, c.dim + 1, c.dim);
                      s.has_bias = true;
                      s.act = static_cast<tpu::isa::Func>(f);
                      if (s.act == tpu::isa::Func::Leaky) s.alpha = 0x3C24;  // 0.01
                      s.out = OutType::Bf16;
                      return std::pair{s, operands_for(rng, s, 2, 118, 130)};
                    }});
  }
  for (unsigned i = 0; i < random_cases; ++i) {
    list.push_back(
        {fmt::format("random-{}", i), [](const HardwareConfig& c, oracle::OperandRng& rng) {
           GemmSpec s = shape(static_cast<std::uint32_t>(rng.uniform(1, 3 * c.dim)),
                              static_cast<std::uint32_t>(rng.uniform(1, 3 * c.dim)),
                              static_cast<std::uint32_t>(rng.uniform(1, 3 * c.dim)));
           s.has_c = rng.uniform(0, 1);
           s.has_bias = rng.uniform(0, 1);
           s.act = static_cast<tpu::isa::Func>(rng.uniform(0, tpu::isa::kFuncCount - 1));
           if (s.act == tpu::isa::Func::Leaky) s.alpha = rng.bf16();
           s.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
           return std::pair{s, operands_for(rng, s, 5)};
         }});
  }
  return list;
}

std::string options_of(const GemmSpec& s) {
  std::string o = s.out == OutType::Bf16 ? "bf16" : "fp32";
  if (s.has_c) o += " +C";
  if (s.has_bias) o += " +bias";
  if (s.act != tpu::isa::Func::None) {
    o += std::string(" ") + tpu::isa::kFuncTable[static_cast<unsigned>(s.act)].mnemonic;
  }
  return o;
}

int run(int argc, char** argv) {
  CLI::App app{"Verilator regression of the programmable TPU core"};
  std::uint64_t seed = std::random_device{}();
  unsigned random_cases = 6;
  std::vector<std::string> only;
  std::string wave;
  bool list_only = false;
  app.add_option("--seed", seed, "seed of the operands (printed; give it back to repeat)");
  app.add_option("--random-cases", random_cases, "random GEMMs per core configuration")
      ->check(CLI::Range(0u, 1000u));
  app.add_option("--only", only, "run only these cases, named <config>/<case>");
  app.add_option("--wave", wave, "write the RTL's FST waveform (needs exactly one --only case)");
  app.add_flag("--list", list_only, "list the cases and exit");
  CLI11_PARSE(app, argc, argv);

  struct Planned {
    HardwareConfig config;
    Case test;
    std::string name;
  };
  std::vector<Planned> plan;
  for (const HardwareConfig& config : tpu::core_configs()) {
    for (const Case& c : cases(random_cases))
      plan.push_back({config, c, config.name() + "/" + c.name});
  }
  if (list_only) {
    for (const Planned& p : plan) fmt::print("{}\n", p.name);
    return 0;
  }
  if (const int status =
          tpu::harness::check_case_selection("core_sim", plan, only, wave, tpu::core_configs(),
                                             tpu::sim::top_model_traces, "wave-core")) {
    return status;
  }

  fmt::print("core_sim: seed {} (repeat with --seed {})\n", seed, seed);
  fmt::print("{:<9} {:<12} {:>11} {:<18} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6}  {:<6} {}\n",
             "core", "case", "MxKxN", "options", "cycles", "ideal", "util%", "wgt%", "input%",
             "raw%", "other%", "result", "note");
  unsigned failures = 0, ran = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const Planned& p : plan) {
    if (!only.empty() && std::find(only.begin(), only.end(), p.name) == only.end()) continue;
    ++ran;
    // Each case draws from its own stream so that --only reproduces it alone.
    oracle::OperandRng rng(seed ^ std::hash<std::string>{}(p.name));
    const auto [spec, o] = p.test.make(p.config, rng);
    std::string note;
    bool pass = false;
    tpu::Counters c{};
    try {
      const tpu::GemmPlan gemm = tpu::plan_gemm(p.config, spec);
      const num::MatrixFp32* cmat = spec.has_c ? &o.c : nullptr;
      const std::vector<num::fp32_t>* bias = spec.has_bias ? &o.bias : nullptr;
      const auto want = tpu::reference_gemm(spec, o.a, o.b, cmat, bias).data;
      const auto count = static_cast<std::uint32_t>(gemm.program.size());

      tpu::sim::RtlOptions options;
      options.memory_bytes = gemm.memory_bytes;
      options.random_init_seed = static_cast<std::uint32_t>(seed);
      options.trace_path = wave;
      tpu::sim::RtlBackend rtl(p.config, options);
      tpu::write_gemm_inputs(gemm, rtl.memory(), o.a, o.b, cmat, bias);
      const tpu::RunResult r = rtl.run(gemm.prog_addr, count);
      c = r.counters.value_or(tpu::Counters{});

      tpu::FunctionalModel model(p.config, gemm.memory_bytes);
      tpu::write_gemm_inputs(gemm, model.memory(), o.a, o.b, cmat, bias);
      const tpu::RunResult mr = model.run(gemm.prog_addr, count);

      const bool rtl_ok = r.ok() && tpu::read_gemm_output(gemm, rtl.memory()).data == want;
      const bool model_ok = mr.ok() && tpu::read_gemm_output(gemm, model.memory()).data == want;
      pass = rtl_ok && model_ok;
      note = rtl_ok ? (model_ok ? "rtl = model = reference" : "model differs")
                    : (r.ok() ? "rtl differs" : tpu::regs::error_name(r.error));
    } catch (const std::exception& e) {
      note = e.what();
    }
    if (!pass) ++failures;
    const double cycles = static_cast<double>(std::max<std::uint64_t>(c[0], 1));
    // Dim x Dim multiply-adds a cycle on the array; one on the sequential core.
    const double macs_per_cycle = p.config.sequential ? 1.0 : double(p.config.dim) * p.config.dim;
    const double ideal = double(spec.m) * spec.k * spec.n / macs_per_cycle;
    auto share = [&](std::size_t index) { return 100.0 * double(c[index]) / cycles; };
    fmt::print(
        "{:<9} {:<12} {:>11} {:<18} {:>7} {:>7.0f} {:>6.1f} {:>6.1f} {:>6.1f} {:>6.1f} "
        "{:>6.1f}  {:<6} {}\n",
        p.config.name(), p.test.name, fmt::format("{}x{}x{}", spec.m, spec.k, spec.n),
        options_of(spec), c[0], ideal, 100.0 * ideal / cycles,
        share(tpu::regs::kCntWeightStallIndex) + share(tpu::regs::kCntWeightShiftIndex),
        share(tpu::regs::kCntInputStallIndex), share(tpu::regs::kCntRawStallIndex),
        share(tpu::regs::kCntNonMatrixIndex), pass ? "PASS" : "FAIL", note);
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
    fmt::print(stderr, "core_sim: {}\n", e.what());
    return 2;
  }
}
