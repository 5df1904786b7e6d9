// The `tpu train`, `tpu eval`, `tpu quantize`, `tpu import` and `tpu infer` subcommands:
// training the Fashion-MNIST networks, running them on a backend, quantising them to int8,
// importing ONNX models and running any network on any input (docs/networks.md).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/graph/graph.hpp"
#include "tpu/nn.hpp"

namespace tpu::graph {
struct CompiledModel;  // tpu/graph/compiled.hpp
struct OpRun;          // tpu/graph/executor.hpp
}

namespace tpu::tool {

// --backend host: the network in plain host fp32, no accelerator.
constexpr const char* kBackendHost = "host";

// The accelerator backend a network runs on (rtl, model, serial), or none for host fp32.
std::unique_ptr<Backend> network_backend(const std::string& kind, const std::string& array,
                                         const std::string& trace_path = "");
double seconds_since(std::chrono::steady_clock::time_point start);

struct TrainOptions {
  std::string architecture = "mlp";
  std::string init_path;  // start from this network's weights instead of random ones
  std::string out_path;
  std::string backend = "model";
  std::string array = "16x16";
  std::string data_dir;
  unsigned epochs = 10;
  unsigned batch = 64;
  float learning_rate = 1e-3f;
  float lr_decay = 1.0f;
  std::uint64_t seed = 1;
  std::uint32_t examples = 0;
  std::uint32_t test_images = 0;
  unsigned chips = 1;  // data-parallel on a pod of this many chips (docs/pod.md)
};

struct EvalOptions {
  std::string net_path;
  std::string backend;  // rtl, or model in a tpu built without the RTL
  std::string array = "16x16";
  std::string data_dir;
  std::string trace_path;
  std::vector<std::string> compare;
  std::uint32_t images = 0;
  std::uint32_t first = 0;
  std::uint32_t batch = 64;
  double clock_mhz = 700;
  bool stats = false;
};

// Calibration images of `tpu quantize` without --calibration.
constexpr std::uint32_t kDefaultCalibrationImages = 1000;

struct QuantizeOptions {
  std::string net_path;
  std::string out_path;
  std::string data_dir;
  std::uint32_t calibration = kDefaultCalibrationImages;
};

struct ImportOptions {
  std::string model_path;
  std::string out_path;
  bool force = false;
};

struct InferOptions {
  std::string net_path;                // a network file (NET.json) or an ONNX model
  std::vector<std::string> in_paths;   // one per input of the network or model
  std::vector<std::string> out_paths;  // one per output
  std::string backend;  // as tpu eval's
  std::string array = "16x16";
  std::uint32_t batch = 64;
  bool stats = false;
  bool time = false;  // each run's wall-clock time and the tool's peak memory
  // Given on the command line (a compiled model has its own, which these must equal).
  bool array_given = false, batch_given = false;
};

struct CompileOptions {
  std::string model_path;  // an ONNX model
  std::string out_path;
  std::string array = "16x16";
  std::uint32_t batch = 64;
};

CLI::App* add_train_command(CLI::App& app, TrainOptions& options);
CLI::App* add_eval_command(CLI::App& app, EvalOptions& options);
CLI::App* add_quantize_command(CLI::App& app, QuantizeOptions& options);
int run_train(const TrainOptions& options);
int run_quantize(const QuantizeOptions& options);
// tpu infer of an ONNX model, a network file or a compiled model, as a graph, and tpu compile
// (graph_commands.cpp).
int run_infer(const InferOptions& options);
// A network file's graph (tpu/graph/network_graph.hpp); what it cannot hold is bad input, named
// after `path`.
graph::Graph network_file_graph(const nn::Network& net, const std::string& path);
// --stats: per operator type, the nodes run, where, their multiply-accumulates and products,
// the cycles the cycle model gives those products, the bytes the host wrote into the core's
// memory and read from it (weights once, then the rest) and, where the backend counts them (the
// RTL), cycles, MXU utilisation and bytes over the bus; then the totals, per input too: of
// `runs` over `inputs` inputs in `run_count` runs on `backend` (null: the host).
void print_stats(const std::vector<graph::OpRun>& runs, std::size_t inputs, std::size_t run_count,
                 Backend* backend);
CLI::App* add_compile_command(CLI::App& app, CompileOptions& options);
int run_compile(const CompileOptions& options);
// tpu disasm of a compiled model: its memory plan, then each program (a GEMM's, or a chain's)
// with its GEMMs as comments and its instructions as assembly text.
std::string compiled_listing(const graph::CompiledModel& model, const std::string& name);
int run_eval(const EvalOptions& options);
CLI::App* add_import_command(CLI::App& app, ImportOptions& options);
CLI::App* add_infer_command(CLI::App& app, InferOptions& options);
int run_import(const ImportOptions& options);

}  // namespace tpu::tool
