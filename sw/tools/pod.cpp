#include "pod.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "common.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/pod.hpp"

namespace tpu::tool {
namespace {

constexpr unsigned kMaxChipsInProcess = 16;
constexpr unsigned kMaxChipsMpi = 64;

// The inputs, all read and checked on every process: the same verdict everywhere, so that under
// MPI every rank refuses bad input alike instead of some waiting for the others.
struct Inputs {
  std::vector<std::size_t> shape;
  std::vector<std::vector<num::fp32_t>> tensors;
};

Inputs read_inputs(const std::vector<std::string>& paths) {
  Inputs inputs;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    npy::Array array = as_bad_input([&] { return npy::read(paths[i], npy::Dims::Any); });
    if (i == 0) {
      inputs.shape = array.shape;
    } else if (array.shape != inputs.shape) {
      npy::Array first;
      first.shape = inputs.shape;
      throw BadInput(
          fmt::format("{}: shape {} differs from {}'s {}: every chip's tensor has the "
                      "same shape",
                      paths[i], shape_text(array), paths[0], shape_text(first)));
    }
    std::vector<num::fp32_t> bits(array.data.size());
    std::transform(array.data.begin(), array.data.end(), bits.begin(), num::float_to_fp32);
    inputs.tensors.push_back(std::move(bits));
  }
  return inputs;
}

void check_options(const AllreduceOptions& options, unsigned chips) {
  const bool mpi = options.backend == kBackendMpi;
  const unsigned most = mpi ? kMaxChipsMpi : kMaxChipsInProcess;
  if (chips < 2 || chips > most) {
    throw BadInput(
        fmt::format("--in names {} tensors: a pod on --backend {} has 2 to {} chips, "
                    "one tensor each",
                    chips, options.backend, most));
  }
  if (options.backend == kBackendModel && (options.latency != 1 || options.bandwidth != 1.0)) {
    throw BadInput(
        "--latency and --bandwidth describe the simulated wires: they go with "
        "--backend rtl or mpi");
  }
}

void print_stats(const Pod& pod, const AllreduceStats& stats, const LinkTiming& timing) {
  const unsigned n = pod.size();
  fmt::print("chips              {}\n", n);
  fmt::print("values             {} ({} bytes a chip)\n", stats.values, stats.values * 4);
  fmt::print("passes             {}\n", stats.passes);
  if (!stats.has_cycles) return;
  const HardwareConfig& config = pod.config();
  // B bytes per cycle per link, L cycles of latency: 2 (N - 1) steps of ceil(n / N) values.
  const double link_bytes = config.link_lanes * 4.0 * timing.beats_per_cycle;
  const double chunk = std::ceil(double(stats.values) / n);
  const double bound = 2.0 * (n - 1) * (chunk * 4 / link_bytes + timing.latency);
  const std::uint64_t beats = stats.link_beats;
  const double bytes = double(beats) * config.link_lanes * 4;
  fmt::print("cycles             {} (loads, all-reduce and stores)\n", stats.cycles);
  if (stats.reduce_cycles) {
    fmt::print("all-reduce cycles  {}\n", stats.reduce_cycles);
    fmt::print(
        "bound              {:.0f} cycles: 2(N-1) x (ceil(n/N) x 4 / B + L), B = {:.0f} "
        "bytes/cycle, L = {} (the ring's)\n",
        bound, link_bytes, timing.latency);
    fmt::print("against the bound  {:.3f}x\n", double(stats.reduce_cycles) / bound);
  }
  fmt::print("busiest link       {:.0f} bytes ({} beats, headers and partly used rows included)\n",
             bytes, beats);
  const auto busy = static_cast<double>(stats.reduce_cycles ? stats.reduce_cycles : stats.cycles);
  fmt::print("link bandwidth     {:.2f} bytes/cycle of {:.0f} ({:.1f} %)\n", bytes / busy,
             link_bytes, percent(bytes / busy, link_bytes));
  fmt::print("link stalls        {} cycles (the most of any chip)\n", stats.link_stall);
}

}  // namespace

CLI::App* add_allreduce_command(CLI::App& app, AllreduceOptions& options) {
  options.backend = default_backend();
  CLI::App* command =
      app.add_subcommand("allreduce", "sum one tensor per chip across a pod by a ring all-reduce");
  command->footer(fmt::format(
      "Chip i of the ring takes the i-th --in tensor; every chip ends with the sums,\n"
      "which must be the same bits on all of them (N-REDUCE of docs/numerics.md), and\n"
      "OUT gets them once. With --backend mpi, start it under mpirun with one rank per\n"
      "--in (docs/pod.md). Exit status: 0 success, 1 a chip stopped with an error, 2\n"
      "bad input (one line on stderr, no output file written), 3 the chips' results\n"
      "disagree or the simulation itself failed."));
  command
      ->add_option("--in", options.inputs,
                   "one little-endian float32 (<f4) .npy per chip, all of\n"
                   "one shape (any shape)")
      ->required()
      ->type_name("G.npy");
  command->add_option("--out", options.out_path, "the sums, in the inputs' shape")
      ->required()
      ->type_name("R.npy");
  command
      ->add_option("--backend", options.backend,
                   "rtl: Verilator models of tpu_top in this process\n"
                   "model: functional models (no cycles)\n"
                   "mpi: one Verilator model per MPI rank (mpirun -np N)")
      ->check(CLI::IsMember({kBackendRtl, kBackendModel, kBackendMpi}))
      ->type_name("KIND")
      ->capture_default_str();
  command->add_option("--array", options.array, "core configuration of every chip (with links)")
      ->check(CLI::IsMember(array_names()))
      ->type_name("NAME")
      ->capture_default_str();
  command->add_option("--latency", options.latency, "link latency in cycles, each way")
      ->check(CLI::Range(1u, 1000000u))
      ->type_name("CYCLES")
      ->capture_default_str();
  command->add_option("--bandwidth", options.bandwidth, "link beats per cycle, above 0, at most 1")
      ->check(CLI::Range(1e-6, 1.0))
      ->type_name("B")
      ->capture_default_str();
  command
      ->add_option("--algorithm", options.algorithm,
                   "ring: the ring all-reduce (N-REDUCE)\n"
                   "ps: the parameter-server baseline: every tensor to chip\n"
                   "0, which adds them, and the sums back (other bits)")
      ->check(CLI::IsMember({"ring", "ps"}))
      ->type_name("NAME")
      ->capture_default_str();
  command->add_flag("--stats", options.stats,
                    "print cycles, bytes per link and the bandwidth against the bound");
  return command;
}

int run_allreduce_command(const AllreduceOptions& options) {
  const auto chips = static_cast<unsigned>(options.inputs.size());
  check_options(options, chips);
  const Inputs inputs = read_inputs(options.inputs);
  check_output_path(options.out_path);
  const std::uint64_t values = inputs.tensors[0].size();
  const HardwareConfig config = config_named(options.array);
  std::size_t memory_bytes = 0;
  try {
    memory_bytes = allreduce_memory_bytes(config, chips, values);
  } catch (const std::invalid_argument& error) {
    throw BadInput(error.what());
  }
  std::unique_ptr<Pod> pod = open_pod(options.backend, options.array, chips, memory_bytes,
                                      LinkTiming{options.latency, options.bandwidth},
                                      fmt::format("--in names {} tensors", chips));

  std::vector<std::vector<num::fp32_t>> local;
  for (unsigned c : pod->local_chips()) local.push_back(inputs.tensors[c]);
  AllreduceStats stats;
  std::vector<std::vector<num::fp32_t>> sums;
  try {
    sums = pod->gather(run_allreduce(*pod, local, &stats, options.algorithm == "ps"));
  } catch (const PodChipError& error) {
    if (pod->reports()) fmt::print(stderr, "tpu: {}\n", error.what());
    return kExitCoreError;
  }
  if (!pod->reports()) return 0;
  for (unsigned c = 1; c < chips; ++c) {
    if (sums[c] != sums[0]) {
      std::size_t v = 0;
      while (sums[c][v] == sums[0][v]) ++v;
      fmt::print(stderr, "tpu: chip {} and chip 0 disagree on value {}: 0x{:08X} and 0x{:08X}\n", c,
                 v, sums[c][v], sums[0][v]);
      return kExitSimulationFailed;
    }
  }
  npy::Array out;
  out.shape = inputs.shape;
  out.data.resize(values);
  std::transform(sums[0].begin(), sums[0].end(), out.data.begin(), num::fp32_to_float);
  as_bad_input([&] { npy::write(options.out_path, out, npy::Dims::Any); });
  if (options.stats) print_stats(*pod, stats, LinkTiming{options.latency, options.bandwidth});
  return 0;
}

}  // namespace tpu::tool
