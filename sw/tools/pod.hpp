// The `tpu allreduce` subcommand: the ring all-reduce of one tensor per chip on a pod (docs/pod.md)
// of Verilator models in this process (rtl), of functional models (model), or of one Verilator
// model per MPI rank (mpi, under mpirun).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tpu::tool {

struct AllreduceOptions {
  std::vector<std::string> inputs;
  std::string out_path;
  std::string backend;  // rtl, or model in a tpu built without the RTL
  std::string array = "16x16";
  unsigned latency = 1;
  double bandwidth = 1.0;
  std::string algorithm = "ring";
  bool stats = false;
};

CLI::App* add_allreduce_command(CLI::App& app, AllreduceOptions& options);
int run_allreduce_command(const AllreduceOptions& options);

}  // namespace tpu::tool
