// The benchmark suite: workloads modelled on the TPU v1 paper's utilisation
// table (Jouppi et al., ISCA 2017, Table 3), run as compiled GEMMs on the
// core's RTL, each checked bit for bit against the functional model. Per
// workload: cycles, ideal cycles, utilisation, the counter breakdown and the
// throughput at a stated clock, with the analytical cycle model's estimate
// beside the measurement. Two sweeps feed the plots: square GEMMs of growing
// size, and host-memory bandwidth (roofline style). Convolutions run both ways
// side by side: from their images (plan_conv) and as the product of their
// im2col matrix.
//
//   bench_suite [--array 16x16] [--clock-mhz 700] [--json FILE] [--markdown FILE]
//   bench_suite --check [--tolerance 0.1]    the cycle model against the RTL, on
//                                            small workloads and every compiled core
//                                            (CTest perf.cycle_model)
#include <fmt/core.h>
#include <fmt/ostream.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/gemm_bench.hpp"
#include "backends/top_model.hpp"
#include "tpu/cycle_model.hpp"
#include "tpu/regs.hpp"

namespace {

using Json = nlohmann::json;
using tpu::GemmSpec;
using tpu::OutType;
using tpu::isa::Func;

struct Workload {
  std::string name;
  std::string group;
  GemmSpec spec;
  bool in_check = false;  // small enough for the cycle-model test on every core
};

GemmSpec gemm(std::uint32_t m, std::uint32_t k, std::uint32_t n, bool bias, Func act,
              OutType out) {
  GemmSpec s;
  s.m = m;
  s.k = k;
  s.n = n;
  s.has_bias = bias;
  s.act = act;
  s.out = out;
  return s;
}

// The networks of sw/nets (docs/networks.md) layer by layer, an LSTM step, a
// transformer layer's projections and a large square GEMM.
std::vector<Workload> workloads() {
  std::vector<Workload> list;
  for (std::uint32_t batch : {1u, 16u, 256u}) {
    const std::string b = "b" + std::to_string(batch);
    const bool small = batch <= 16;
    list.push_back({"mlp.fc1 " + b, "MLP", gemm(batch, 784, 256, true, Func::Relu, OutType::Bf16),
                    batch == 1});
    list.push_back({"mlp.fc2 " + b, "MLP", gemm(batch, 256, 128, true, Func::Relu, OutType::Bf16),
                    small});
    list.push_back({"mlp.fc3 " + b, "MLP", gemm(batch, 128, 10, true, Func::None, OutType::Fp32),
                    small});
  }
  // The CNN at batch 16: im2col rows are images x 28 x 28 and x 14 x 14.
  list.push_back({"cnn.conv1 b16", "CNN", gemm(16 * 784, 9, 16, true, Func::Relu, OutType::Bf16)});
  list.push_back(
      {"cnn.conv2 b16", "CNN", gemm(16 * 196, 144, 32, true, Func::Relu, OutType::Bf16)});
  list.push_back(
      {"cnn.fc1 b16", "CNN", gemm(16, 1568, 64, true, Func::Relu, OutType::Bf16), true});
  list.push_back({"cnn.fc2 b16", "CNN", gemm(16, 64, 10, true, Func::None, OutType::Fp32), true});
  // One step of a 512-cell LSTM: [x, h] (1024) times the four gates' weights.
  list.push_back({"lstm.gates b1", "LSTM", gemm(1, 1024, 2048, false, Func::None, OutType::Fp32)});
  list.push_back({"lstm.gates b8", "LSTM", gemm(8, 1024, 2048, false, Func::None, OutType::Fp32)});
  // A BERT-base layer on 128 tokens: an attention projection and the feed-forward up projection.
  list.push_back({"transformer.proj", "Transformer",
                  gemm(128, 768, 768, true, Func::None, OutType::Bf16)});
  list.push_back({"transformer.ffn", "Transformer",
                  gemm(128, 768, 3072, true, Func::Gelu, OutType::Bf16)});
  list.push_back({"gemm 512^3", "GEMM", gemm(512, 512, 512, false, Func::None, OutType::Fp32)});
  return list;
}

// A convolution layer: run from its images and as its im2col product.
struct ConvWorkload {
  std::string name;
  tpu::ConvGeometry geometry;
  GemmSpec spec;  // N, the epilogue and the output type
  bool in_check = false;
};

tpu::ConvGeometry conv(std::uint32_t batch, std::uint32_t channels, std::uint32_t size,
                       std::uint32_t kernel, std::uint32_t stride) {
  tpu::ConvGeometry g;
  g.batch = batch;
  g.channels = channels;
  g.height = g.width = size;
  g.kernel_h = g.kernel_w = kernel;
  g.stride_h = g.stride_w = stride;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = kernel / 2;
  return g;
}

// The CNN's convolutions (sw/nets), ResNet's 3x3 convolutions at 224 x 224 inputs (a stage's
// first, strided, and its others) and at the zoo's 32 x 32, and a first 7x7 one.
std::vector<ConvWorkload> conv_workloads() {
  const GemmSpec relu = gemm(1, 1, 16, true, Func::Relu, OutType::Bf16);
  const auto with_n = [&](std::uint32_t n) {
    GemmSpec s = relu;
    s.n = n;
    return s;
  };
  return {{"cnn.conv1 b4", conv(4, 1, 28, 3, 1), with_n(16)},
          {"cnn.conv2 b1", conv(1, 16, 14, 3, 1), with_n(32), true},
          {"cnn.conv2 b4", conv(4, 16, 14, 3, 1), with_n(32)},
          {"stride 2 b1", conv(1, 8, 9, 3, 2), with_n(16), true},
          {"resnet.conv1 7x7 b1", conv(1, 3, 112, 7, 2), with_n(64)},
          {"resnet.stage1 b1", conv(1, 64, 56, 3, 1), with_n(64)},
          {"resnet.stage2 in b1", conv(1, 64, 56, 3, 2), with_n(128)},
          {"resnet.stage3 b1", conv(1, 256, 14, 3, 1), with_n(256)},
          {"zoo resnet.layer1 b16", conv(16, 64, 8, 3, 1), with_n(64)}};
}

// The im2col product of a convolution.
GemmSpec im2col_of(const ConvWorkload& w) {
  GemmSpec s = w.spec;
  s.m = w.geometry.batch * w.geometry.out_h() * w.geometry.out_w();
  s.k = w.geometry.taps() * w.geometry.channels;
  return s;
}

std::vector<Workload> size_sweep() {
  std::vector<Workload> list;
  for (std::uint32_t n : {16u, 32u, 64u, 128u, 256u, 512u}) {
    list.push_back({fmt::format("gemm {}^3", n), "GEMM", gemm(n, n, n, false, Func::None,
                                                              OutType::Fp32),
                    n <= 128});
  }
  return list;
}

// The same layer in int8 (Q-MAC, and Q-REQ with relu where the bf16 layer has a function and
// bf16 output; raw int32 sums where it has fp32 output), for the comparison of the two modes.
GemmSpec int8_of(GemmSpec s) {
  s.in = tpu::InType::Int8;
  s.has_bias = false;  // the int8 bias is part of Q-REQ's columns
  s.out = s.out == OutType::Bf16 ? OutType::Int8 : OutType::Int32;
  if (s.act == Func::Relu) s.clamp_lo = s.output_zero_point;
  s.act = Func::None;
  return s;
}

// Layers whose weights outweigh their activations (batch 1 and 16), where int8's one byte a
// weight halves the bytes the DMA moves, and one that computes more than it loads.
std::vector<Workload> int8_workloads() {
  return {{"mlp.fc1 b1", "MLP", gemm(1, 784, 256, true, Func::Relu, OutType::Bf16)},
          {"mlp.fc1 b16", "MLP", gemm(16, 784, 256, true, Func::Relu, OutType::Bf16)},
          {"cnn.fc1 b16", "CNN", gemm(16, 1568, 64, true, Func::Relu, OutType::Bf16)},
          {"lstm.gates b1", "LSTM", gemm(1, 1024, 2048, false, Func::None, OutType::Fp32)},
          {"gemm 256^3", "GEMM", gemm(256, 256, 256, false, Func::None, OutType::Fp32)}};
}

// Workloads of low, middling and high arithmetic intensity.
std::vector<Workload> bandwidth_workloads() {
  return {{"mlp.fc1 b16", "MLP", gemm(16, 784, 256, true, Func::Relu, OutType::Bf16)},
          {"gemm 256^3", "GEMM", gemm(256, 256, 256, false, Func::None, OutType::Fp32)},
          {"cnn.conv2 b4", "CNN", gemm(4 * 196, 144, 32, true, Func::Relu, OutType::Bf16)}};
}
constexpr double kBandwidths[] = {1.0, 0.5, 0.25, 0.125, 0.0625};

std::string counter_name(std::size_t index) {
  return tpu::regs::kCounters[index].name;
}

std::string shape(const GemmSpec& s) {
  return fmt::format("{} x {} x {}", s.m, s.k, s.n);
}

class Suite {
 public:
  Suite(const tpu::HardwareConfig& config, double clock_mhz) : config_(config), clock_(clock_mhz) {}

  // Measures one workload (once per spec and bandwidth) and returns its record.
  Json measure(const Workload& w, double beats_per_cycle) {
    const std::string key = fmt::format("{}/{}/{}/{}/{}/{}", shape(w.spec), w.spec.has_bias,
                                        static_cast<int>(w.spec.act), static_cast<int>(w.spec.out),
                                        static_cast<int>(w.spec.in), beats_per_cycle);
    const auto cached = cache_.find(key);
    if (cached != cache_.end()) return with_name(cached->second, w);
    fmt::print(stderr, "  {:<18} {:>20}  {:.4g} beats/cycle ...", w.name, shape(w.spec),
               beats_per_cycle);
    tpu::sim::AxiTiming timing;
    timing.beats_per_cycle = beats_per_cycle;
    const tpu::harness::GemmMeasurement m = tpu::harness::measure_gemm(config_, w.spec, timing);
    tpu::MemoryTiming memory;
    memory.read_latency = timing.read_latency;
    memory.write_latency = timing.write_latency;
    memory.beats_per_cycle = beats_per_cycle;
    const tpu::CycleEstimate model = tpu::estimate_cycles(m.plan, memory);
    const double cycles = static_cast<double>(m.counters[0]);
    Json r;
    r["m"] = w.spec.m;
    r["k"] = w.spec.k;
    r["n"] = w.spec.n;
    r["in"] = w.spec.int8() ? "int8" : "bf16";
    r["out"] = type_name(w.spec.out);
    r["bias"] = w.spec.has_bias;
    r["function"] = tpu::isa::kFuncTable[static_cast<unsigned>(w.spec.act)].mnemonic;
    r["beats_per_cycle"] = beats_per_cycle;
    r["bytes_per_cycle"] = beats_per_cycle * config_.bus_bytes;
    r["cycles"] = m.counters[0];
    r["ideal_cycles"] = model.ideal;
    r["utilisation"] = model.ideal / cycles;
    r["gflops"] = 2.0 * w.spec.m * w.spec.k * w.spec.n / cycles * clock_ * 1e-3;
    r["model_cycles"] = std::round(model.cycles);
    r["model_error"] = (model.cycles - cycles) / cycles;
    r["model_bound"] = model.bound;
    Json counters;
    for (std::size_t i = 0; i < m.counters.size(); ++i) counters[counter_name(i)] = m.counters[i];
    r["counters"] = counters;
    r["exact"] = m.exact;
    r["sim_seconds"] = m.wall_seconds;
    r["input_bytes"] = m.plan.a_bytes();
    r["bus_bytes"] = bus_bytes(m.counters);
    fmt::print(stderr, " {} cycles, {:.1f} % utilisation, model {:+.1f} %, {:.1f} s{}\n",
               m.counters[0], 100.0 * model.ideal / cycles, 100.0 * (model.cycles - cycles) / cycles,
               m.wall_seconds, m.exact ? "" : "  RESULT MISMATCH");
    if (!m.exact) mismatches_++;
    cache_[key] = r;
    return with_name(r, w);
  }

  // A convolution from its images, as measure() records a GEMM, with the bytes of its input in
  // host memory and those the core moved over its bus.
  Json measure_conv(const ConvWorkload& w) {
    fmt::print(stderr, "  {:<22} from its images ...", w.name);
    const tpu::sim::AxiTiming timing;
    const tpu::harness::GemmMeasurement m =
        tpu::harness::measure_conv(config_, w.spec, w.geometry, timing);
    tpu::MemoryTiming memory;
    memory.read_latency = timing.read_latency;
    memory.write_latency = timing.write_latency;
    const tpu::CycleEstimate model = tpu::estimate_cycles(m.plan, memory);
    const double cycles = static_cast<double>(m.counters[0]);
    fmt::print(stderr, " {} cycles, model {:+.1f} %, {:.1f} s{}\n", m.counters[0],
               100.0 * (model.cycles - cycles) / cycles, m.wall_seconds,
               m.exact ? "" : "  RESULT MISMATCH");
    if (!m.exact) mismatches_++;
    return {{"cycles", m.counters[0]},
            {"model_cycles", std::round(model.cycles)},
            {"model_error", (model.cycles - cycles) / cycles},
            {"input_bytes", m.plan.a_bytes()},
            {"bus_bytes", bus_bytes(m.counters)},
            {"exact", m.exact}};
  }

  // A measured GEMM's bytes over the core's bus, read and written.
  double bus_bytes(const tpu::Counters& counters) const {
    return static_cast<double>(counters[tpu::regs::kCntDmaReadBeatsIndex] +
                               counters[tpu::regs::kCntDmaWriteBeatsIndex]) *
           config_.bus_bytes;
  }

  // The model alone, for the curves between the measured points.
  double model_cycles(const Workload& w, double beats_per_cycle) const {
    tpu::MemoryTiming memory;
    memory.beats_per_cycle = beats_per_cycle;
    return tpu::estimate_cycles(tpu::plan_gemm(config_, w.spec), memory).cycles;
  }

  unsigned mismatches() const { return mismatches_; }

 private:
  static Json with_name(Json r, const Workload& w) {
    r["name"] = w.name;
    r["group"] = w.group;
    return r;
  }

  tpu::HardwareConfig config_;
  double clock_;
  std::map<std::string, Json> cache_;
  unsigned mismatches_ = 0;
};

std::string percent(double part, double whole) {
  return fmt::format("{:.1f}", 100.0 * part / whole);
}

// The int8 against bf16 table of the markdown report.
void int8_table(std::string& md, const Json& pairs) {
  md += "## int8 against bf16\n\n";
  md +=
      "The same layers with int8 operands (one byte a value in host memory, Q-MAC; Q-REQ with "
      "relu for layers with a function, raw int32 sums for those with fp32 output) and with "
      "bf16 ones.\n\n| workload | M x K x N | bf16 cycles | int8 cycles | int8 speed-up |\n"
      "|---|---|---|---|---|\n";
  for (const Json& pair : pairs) {
    const Json& bf16 = pair["bf16"];
    const Json& int8 = pair["int8"];
    md += fmt::format("| {} | {} x {} x {} | {} | {} | **{:.2f}x** |\n",
                      bf16["name"].get<std::string>(), bf16["m"].get<unsigned>(),
                      bf16["k"].get<unsigned>(), bf16["n"].get<unsigned>(),
                      bf16["cycles"].get<std::uint64_t>(), int8["cycles"].get<std::uint64_t>(),
                      pair["speedup"].get<double>());
  }
  md += "\n";
}

// The convolutions from their images against their im2col products.
void conv_table(std::string& md, const Json& records) {
  md += "## Convolutions: from their images against im2col\n\n";
  md +=
      "Each layer (bf16, bias and relu, bf16 results) as the product of its im2col matrix, "
      "which the host builds and writes (a row per output pixel, kh x kw times the image), "
      "and from its images (`plan_conv`: each padded image written once, every tap's rows read "
      "at a shifted address, the sums accumulated tap by tap; the same bits). Input bytes: "
      "A in host memory; bus bytes: what the core read and wrote.\n\n"
      "| layer | N x C x H x W, kernel / stride -> filters | im2col cycles | from images | "
      "model (im2col / images) | input bytes (im2col / images) | bus bytes (im2col / images) "
      "|\n|---|---|---|---|---|---|---|\n";
  for (const Json& r : records) {
    const Json& a = r["im2col"];
    const Json& b = r["images"];
    md += fmt::format(
        "| {} | {} | {} | {} ({:+.1f} %) | {:+.1f} % / {:+.1f} % | {:.0f} / {:.0f} | {:.0f} / "
        "{:.0f} |\n",
        r["name"].get<std::string>(), r["shape"].get<std::string>(),
        a["cycles"].get<std::uint64_t>(), b["cycles"].get<std::uint64_t>(),
        100.0 * (b["cycles"].get<double>() / a["cycles"].get<double>() - 1),
        100.0 * a["model_error"].get<double>(), 100.0 * b["model_error"].get<double>(),
        a["input_bytes"].get<double>(), b["input_bytes"].get<double>(),
        a["bus_bytes"].get<double>(), b["bus_bytes"].get<double>());
  }
  md += "\n";
}

std::string markdown(const Json& doc) {
  std::string md;
  md += "# Benchmark suite\n\n";
  md += fmt::format(
      "Produced by `{}` on the `{}` core ({}-bit AXI, host memory {} cycles read latency); "
      "throughput at {} MHz, where the array's peak is {:.1f} GFLOPS. Every result is checked "
      "bit for bit against the functional model. Counter columns are shares of all cycles "
      "(docs/core.md, \"Performance counters\"); the model column is the analytical cycle "
      "model (`sw/lib/cycle_model.cpp`) and its error against the measurement.\n\n",
      doc["command"].get<std::string>(), doc["array"].get<std::string>(),
      doc["bus_bits"].get<unsigned>(), doc["read_latency"].get<unsigned>(),
      doc["clock_mhz"].get<double>(), doc["peak_gflops"].get<double>());
  auto table = [&](const Json& records, bool with_bandwidth) {
    md += "| workload | M x K x N |";
    if (with_bandwidth) md += " bytes/cycle |";
    md +=
        " cycles | model | ideal | utilisation | weight stall | weight shift | input stall | "
        "RAW stall | non-matrix | GFLOPS |\n|---|---|";
    if (with_bandwidth) md += "---|";
    md += "---|---|---|---|---|---|---|---|---|---|\n";
    for (const Json& r : records) {
      const double cycles = r["cycles"].get<double>();
      const Json& c = r["counters"];
      md += fmt::format("| {} | {} x {} x {} |", r["name"].get<std::string>(), r["m"].get<unsigned>(),
                        r["k"].get<unsigned>(), r["n"].get<unsigned>());
      if (with_bandwidth) md += fmt::format(" {:g} |", r["bytes_per_cycle"].get<double>());
      md += fmt::format(
          " {} | {:.0f} ({:+.1f} %) | {:.0f} | **{:.1f} %** | {} | {} | {} | {} | {} | {:.1f} |\n",
          r["cycles"].get<std::uint64_t>(), r["model_cycles"].get<double>(),
          100.0 * r["model_error"].get<double>(), r["ideal_cycles"].get<double>(),
          100.0 * r["utilisation"].get<double>(),
          percent(c["WEIGHT_STALL"].get<double>(), cycles),
          percent(c["WEIGHT_SHIFT"].get<double>(), cycles),
          percent(c["INPUT_STALL"].get<double>(), cycles),
          percent(c["RAW_STALL"].get<double>(), cycles),
          percent(c["NON_MATRIX"].get<double>(), cycles), r["gflops"].get<double>());
    }
    md += "\n";
  };
  md += "## Workloads\n\n";
  table(doc["workloads"], false);
  md += "## Utilisation against matrix size (square GEMMs)\n\n";
  table(doc["size_sweep"], false);
  md += "## Utilisation against host-memory bandwidth\n\n";
  table(doc["bandwidth_sweep"], true);
  if (doc.contains("int8")) int8_table(md, doc["int8"]);
  if (doc.contains("convolutions")) conv_table(md, doc["convolutions"]);
  md +=
      "Plots: `utilisation.png` (by workload), `size.png` (against matrix size), "
      "`roofline.png` (achieved against peak as the bandwidth varies), `convolutions.png` "
      "(from their images against im2col), made by `scripts/plot_bench.py` from "
      "`bench.json`.\n";
  return md;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error(path + ": cannot write");
}

// The cycle model against the RTL on every compiled array core (the model describes the array's
// overlap, not the sequential core's one step at a time); 1 when any estimate
// is further off than `tolerance` (a fraction) and kSlackCycles, or any result
// mismatches. The slack covers the few hundred cycles of start and end that
// the model rounds off, which dominate only the smallest products.
constexpr double kSlackCycles = 250;

int check(double tolerance) {
  std::vector<Workload> list;
  for (const auto& group : {workloads(), size_sweep()}) {
    for (const Workload& w : group) {
      if (w.in_check) list.push_back(w);
    }
  }
  unsigned failures = 0;
  for (const tpu::HardwareConfig& config : tpu::core_configs()) {
    if (config.sequential) continue;
    Suite suite(config, 1.0);
    fmt::print(stderr, "{}:\n", config.name());
    std::vector<std::pair<Workload, double>> runs;
    for (const Workload& w : list) runs.emplace_back(w, 1.0);
    runs.emplace_back(Workload{"mlp.fc2 b16", "MLP",
                               gemm(16, 256, 128, true, Func::Relu, OutType::Bf16)},
                      0.25);
    const auto off = [&](const Json& r) {
      const double error = r["model_cycles"].get<double>() - r["cycles"].get<double>();
      return std::fabs(error) > std::max(tolerance * r["cycles"].get<double>(), kSlackCycles);
    };
    for (const auto& [w, bandwidth] : runs) {
      const Json r = suite.measure(w, bandwidth);
      if (off(r)) {
        fmt::print("FAIL {} {} at {} beats/cycle: model {} cycles, RTL {} ({:+.1f} %)\n",
                   config.name(), w.name, bandwidth, r["model_cycles"].get<double>(),
                   r["cycles"].get<std::uint64_t>(), 100.0 * r["model_error"].get<double>());
        ++failures;
      }
    }
    for (const ConvWorkload& w : conv_workloads()) {
      if (!w.in_check) continue;
      const Json r = suite.measure_conv(w);
      if (off(r)) {
        fmt::print("FAIL {} {} from its images: model {} cycles, RTL {} ({:+.1f} %)\n",
                   config.name(), w.name, r["model_cycles"].get<double>(),
                   r["cycles"].get<std::uint64_t>(), 100.0 * r["model_error"].get<double>());
        ++failures;
      }
    }
    failures += suite.mismatches();
  }
  fmt::print("cycle model: {} of the estimates outside {:.0f} % (or {:.0f} cycles) of the RTL\n",
             failures, 100.0 * tolerance, kSlackCycles);
  return failures ? 1 : 0;
}

int run(int argc, char** argv) {
  CLI::App app{"TPU benchmark suite on the core's RTL"};
  std::string array = "16x16", json_path, markdown_path;
  double clock_mhz = 700, tolerance = 0.1;
  bool check_only = false;
  app.add_option("--array", array, "compiled tpu_top configuration");
  app.add_option("--clock-mhz", clock_mhz, "clock for the throughput figures (TPU v1: 700)")
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--json", json_path, "write the records here");
  app.add_option("--markdown", markdown_path, "write the tables here");
  app.add_flag("--check", check_only, "only compare the cycle model with the RTL");
  app.add_option("--tolerance", tolerance, "largest model error --check accepts (fraction)")
      ->check(CLI::Range(0.0, 1.0));
  CLI11_PARSE(app, argc, argv);
  if (check_only) return check(tolerance);

  const tpu::HardwareConfig config = tpu::harness::compiled_top_named(array);
  Suite suite(config, clock_mhz);
  Json doc;
  std::string command = "bench_suite";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  doc["command"] = command;
  doc["array"] = config.name();
  doc["dim"] = config.dim;
  doc["bus_bits"] = config.bus_bytes * 8;
  doc["read_latency"] = tpu::sim::AxiTiming{}.read_latency;
  doc["clock_mhz"] = clock_mhz;
  doc["peak_gflops"] = 2.0 * config.dim * config.dim * clock_mhz * 1e-3;
  fmt::print(stderr, "workloads on {}:\n", config.name());
  for (const Workload& w : workloads()) doc["workloads"].push_back(suite.measure(w, 1.0));
  fmt::print(stderr, "matrix sizes:\n");
  for (const Workload& w : size_sweep()) doc["size_sweep"].push_back(suite.measure(w, 1.0));
  if (config.int8) {
    fmt::print(stderr, "int8 against bf16:\n");
    for (const Workload& w : int8_workloads()) {
      const Json bf16 = suite.measure(w, 1.0);
      const Json int8 = suite.measure({w.name, w.group, int8_of(w.spec)}, 1.0);
      doc["int8"].push_back(
          {{"bf16", bf16},
           {"int8", int8},
           {"speedup", bf16["cycles"].get<double>() / int8["cycles"].get<double>()}});
    }
  }
  fmt::print(stderr, "convolutions, from their images and by im2col:\n");
  for (const ConvWorkload& w : conv_workloads()) {
    const tpu::ConvGeometry& g = w.geometry;
    doc["convolutions"].push_back(
        {{"name", w.name},
         {"shape", fmt::format("{} x {} x {} x {}, {}x{} / {} -> {}", g.batch, g.channels, g.height,
                               g.width, g.kernel_h, g.kernel_w, g.stride_h, w.spec.n)},
         {"im2col", suite.measure({w.name, "Convolution", im2col_of(w)}, 1.0)},
         {"images", suite.measure_conv(w)}});
  }
  fmt::print(stderr, "host-memory bandwidth:\n");
  for (const Workload& w : bandwidth_workloads()) {
    for (double bandwidth : kBandwidths) {
      doc["bandwidth_sweep"].push_back(suite.measure(w, bandwidth));
    }
    // The model's curve, finer than the measured points.
    for (double bandwidth = 1.0; bandwidth >= 1.0 / 64; bandwidth /= std::sqrt(2.0)) {
      doc["bandwidth_model"].push_back({{"name", w.name},
                                        {"beats_per_cycle", bandwidth},
                                        {"bytes_per_cycle", bandwidth * config.bus_bytes},
                                        {"model_cycles", suite.model_cycles(w, bandwidth)},
                                        {"ideal_cycles", static_cast<double>(w.spec.m) *
                                                             w.spec.k * w.spec.n /
                                                             (config.dim * config.dim)}});
    }
  }
  const std::string md = markdown(doc);
  fmt::print("{}", md);
  if (!json_path.empty()) write_file(json_path, doc.dump(1) + "\n");
  if (!markdown_path.empty()) write_file(markdown_path, md);
  if (suite.mismatches() > 0) {
    fmt::print(stderr, "bench_suite: {} results differ from the functional model\n",
               suite.mismatches());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_suite: {}\n", e.what());
    return 2;
  }
}
