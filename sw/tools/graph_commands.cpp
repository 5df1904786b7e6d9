// tpu infer MODEL.onnx: an ONNX model loaded as a graph (tpu/onnx/load_graph.hpp), or a network
// file as its graph (tpu/graph/network_graph.hpp), and run by
// the graph executor, its matrix products on the chosen backend; tpu compile: the graph compiled
// for one core and batch size into a file (tpu/graph/compiled.hpp) that tpu infer runs too.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "common.hpp"
#include "net.hpp"
#include "tpu/graph/compiled.hpp"
#include "tpu/graph/executor.hpp"
#include "tpu/graph/network_graph.hpp"
#include "tpu/nn.hpp"
#include "tpu/npy.hpp"
#include "tpu/onnx/load_graph.hpp"

namespace tpu::tool {
namespace {

// An ONNX model, or a network file (NET.json) as its graph.
graph::Graph load_model(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".json") {
    return network_file_graph(as_bad_input([&] { return nn::load_network(path); }), path);
  }
  return as_bad_input([&] { return onnx_front::load_graph(path); });
}

// An input of the graph's type: float32, or int64 (token ids, indices).
graph::Tensor read_input(const std::string& path, graph::DType type) {
  if (type == graph::DType::Int64) {
    npy::Int64Array file = as_bad_input([&] { return npy::read_int64(path, npy::Dims::Any); });
    return graph::Tensor::of_ints(graph::Shape(file.shape.begin(), file.shape.end()),
                                  std::move(file.data));
  }
  npy::Array file = as_bad_input([&] { return npy::read(path, npy::Dims::Any); });
  return graph::Tensor::of_floats(graph::Shape(file.shape.begin(), file.shape.end()),
                                  std::move(file.data));
}

// Rows [first, first + count) of a tensor, along its first dimension.
graph::Tensor rows_of(const graph::Tensor& t, std::size_t first, std::size_t count) {
  graph::Shape shape = t.shape;
  const std::size_t per = t.size() / static_cast<std::size_t>(shape[0]);
  shape[0] = static_cast<std::int64_t>(count);
  const auto begin = static_cast<std::ptrdiff_t>(first * per);
  const auto end = begin + static_cast<std::ptrdiff_t>(count * per);
  if (!t.is_float()) {
    return graph::Tensor::of_ints(shape, {t.ints.begin() + begin, t.ints.begin() + end}, t.dtype);
  }
  return graph::Tensor::of_floats(shape, {t.floats.begin() + begin, t.floats.begin() + end});
}

}  // namespace

graph::Graph network_file_graph(const nn::Network& net, const std::string& path) {
  try {
    return graph::network_graph(net);
  } catch (const std::invalid_argument& error) {
    throw BadInput(path + ": " + error.what());
  }
}

// tpu infer --time: the first run (which writes the weights into the core's memory, and plans
// and places what later runs find ready) apart from the later ones.
void print_run_times(const std::vector<double>& run_seconds) {
  if (run_seconds.empty()) return;
  fmt::print("first run     {:.6f} s on the host (its weights written)\n", run_seconds.front());
  if (run_seconds.size() > 1) {
    // The mean, and the best, which a shared machine's other work disturbs least.
    double later = 0;
    for (std::size_t r = 1; r < run_seconds.size(); ++r) later += run_seconds[r];
    const double best = *std::min_element(run_seconds.begin() + 1, run_seconds.end());
    fmt::print("later runs    {:.6f} s a run on the host ({} run{}, the best {:.6f} s)\n",
               later / static_cast<double>(run_seconds.size() - 1), run_seconds.size() - 1,
               run_seconds.size() == 2 ? "" : "s", best);
  }
  fmt::print("peak memory   {:.0f} MiB (the tool's, the model and its tensors included)\n",
             peak_memory_mib());
}

void print_stats(const std::vector<graph::OpRun>& runs, std::size_t inputs, std::size_t run_count,
                 Backend* backend) {
  struct Row {
    std::uint64_t nodes = 0, macs = 0, vector_macs = 0, products = 0, programs = 0, from_images = 0,
                  cycles = 0, useful = 0, vector = 0;
    std::uint64_t bytes = 0;
    std::uint64_t weights = 0, host = 0;
    double estimated = 0, estimated_vector = 0;
    bool counted = false;
  };
  // Rows by operator and where it ran: the core, the host, or nowhere (a view or shape
  // arithmetic, graph::NodeWork).
  const auto where = [](const graph::OpRun& r) {
    switch (r.work) {
      case graph::NodeWork::View:
        return "view";
      case graph::NodeWork::ShapeArithmetic:
        return "shape";
      case graph::NodeWork::Values:
        break;
    }
    return !r.on_accelerator ? "host" : r.host_arithmetic ? "core+host" : "core";
  };
  std::map<std::pair<std::string, std::string>, Row> rows;
  Row total;
  std::uint64_t host_steps = 0, nowhere = 0;
  for (const graph::OpRun& r : runs) {
    host_steps +=
        r.work == graph::NodeWork::Values && (!r.on_accelerator || r.host_arithmetic) ? 1 : 0;
    nowhere += r.work == graph::NodeWork::Values ? 0 : 1;
    for (Row* row : {&rows[{r.op, where(r)}], &total}) {
      ++row->nodes;
      row->macs += r.macs;
      row->vector_macs += r.vector_macs;
      row->products += r.products;
      row->programs += r.programs;
      row->from_images += r.from_images;
      row->cycles += r.cycles;
      row->vector += r.vector_cycles;
      row->estimated_vector += r.estimated_vector_cycles;
      row->useful += r.useful_macs;
      row->bytes += r.bus_bytes;
      row->weights += r.weight_bytes;
      row->host += r.host_bytes;
      row->estimated += r.estimated_cycles;
      row->counted = row->counted || r.counted;
    }
  }
  const double cells = backend ? static_cast<double>(backend->config().dim) *
                                     static_cast<double>(backend->config().dim)
                               : 1.0;
  const auto counted = [&](const Row& row, std::uint64_t value) {
    return row.counted ? fmt::format("{}", value) : std::string("-");
  };
  const auto utilisation = [&](const Row& row) {
    return row.counted && row.cycles
               ? fmt::format("{:.1f} %", 100.0 * static_cast<double>(row.useful) /
                                             (static_cast<double>(row.cycles) * cells))
               : std::string("-");
  };
  const auto estimate = [&](const Row& row, const std::string& place) {
    return place == "core" || place == "core+host" ? fmt::format("{:.0f}", row.estimated)
                                                   : std::string("-");
  };
  fmt::print("{:<20} {:>6} {:>9} {:>14} {:>9} {:>12} {:>12} {:>8} {:>12} {:>10} {:>12}\n",
             "operator", "nodes", "where", "MACs", "products", "est. cycles", "cycles", "MXU use",
             "bus bytes", "weights", "host bytes");
  for (const auto& [key, row] : rows) {
    const auto& [op, place] = key;
    fmt::print("{:<20} {:>6} {:>9} {:>14} {:>9} {:>12} {:>12} {:>8} {:>12} {:>10} {:>12}\n", op,
               row.nodes, place, row.macs, row.products, estimate(row, place),
               counted(row, row.cycles), utilisation(row), counted(row, row.bytes), row.weights,
               row.host);
  }
  const std::uint64_t per = std::max<std::uint64_t>(inputs, 1);
  fmt::print(
      "total: {} nodes run, {} host step{}, {} node{} with no work (views, shape arithmetic), {} "
      "products on the core in {} program run{}; {} MACs ({} per input)",
      total.nodes, host_steps, host_steps == 1 ? "" : "s", nowhere, nowhere == 1 ? "" : "s",
      total.products, total.programs, total.programs == 1 ? "" : "s", total.macs, total.macs / per);
  // The vector unit's busy cycles as a share of all.
  const auto share = [](double part, double whole) {
    return whole > 0 ? 100.0 * part / whole : 0.0;
  };
  if (total.counted) {
    fmt::print(
        "; {} cycles ({} per input), MXU use {}, vector unit busy {:.1f} %, {} bytes over the bus "
        "({} per input)",
        total.cycles, total.cycles / per, utilisation(total),
        share(static_cast<double>(total.vector), static_cast<double>(total.cycles)), total.bytes,
        total.bytes / per);
  }
  if (backend) {
    // The matrix unit's MACs: not the vector unit's.
    const double ideal = static_cast<double>(total.macs - total.vector_macs) / cells;
    fmt::print(
        "; the cycle model: {:.0f} cycles ({:.0f} per input), MXU use {:.1f} %, vector unit busy "
        "{:.1f} %",
        total.estimated, total.estimated / static_cast<double>(per),
        total.estimated > 0 ? 100.0 * ideal / total.estimated : 0.0,
        share(total.estimated_vector, total.estimated));
    fmt::print(
        ";\n  weights written to the core's memory once, resident for all {} run(s): {} bytes; "
        "operands, programs and results: {} bytes ({} per input)",
        run_count, total.weights, total.host, total.host / per);
  }
  if (total.from_images > 0) {
    fmt::print(";\n  convolutions from their images, not their im2col rows: {} of the products",
               total.from_images);
  }
  fmt::print("\n");
}

namespace {

// What tpu infer runs: an ONNX model, loaded as a graph, or a compiled model.
struct LoadedModel {
  std::optional<graph::CompiledModel> compiled;
  graph::Graph onnx;
  const graph::Graph& graph() const { return compiled ? compiled->graph : onnx; }
};

LoadedModel load_any(const std::string& path) {
  LoadedModel model;
  if (!graph::is_compiled_model(path)) {
    model.onnx = load_model(path);
    return model;
  }
  model.compiled = as_bad_input([&] { return graph::read_compiled(path); });
  return model;
}

// A compiled model runs on the core it was compiled for, in runs of its batch: --array and
// --batch, where given, must say the same.
void check_compiled_options(const graph::CompiledModel& model, const InferOptions& options) {
  if (options.backend == kBackendHost) {
    throw BadInput(
        fmt::format("{}: a compiled model runs on its core: --backend rtl or model, not host",
                    options.net_path));
  }
  if (options.array_given && options.array != model.config.name()) {
    throw BadInput(fmt::format("{}: compiled for the {} core, not --array {}", options.net_path,
                               model.config.name(), options.array));
  }
  if (options.batch_given && model.batch != 0 && options.batch != model.batch) {
    throw BadInput(fmt::format("{}: compiled for runs of {} inputs, not --batch {}",
                               options.net_path, model.batch, options.batch));
  }
}

// `count` rows of a run padded with zero rows to `size` (a compiled model's last run).
graph::Tensor padded(graph::Tensor t, std::size_t count, std::size_t size) {
  if (count == size) return t;
  const std::size_t per = t.size() / count;
  t.shape[0] = static_cast<std::int64_t>(size);
  if (t.is_float()) {
    t.floats.resize(per * size, 0.0f);
  } else {
    t.ints.resize(per * size, 0);
  }
  return t;
}

}  // namespace

int run_infer(const InferOptions& options) {
  const LoadedModel loaded = load_any(options.net_path);
  const graph::Graph& model = loaded.graph();
  const graph::CompiledModel* compiled = loaded.compiled ? &*loaded.compiled : nullptr;
  if (compiled) check_compiled_options(*compiled, options);
  if (options.in_paths.size() != model.inputs.size() ||
      options.out_paths.size() != model.outputs.size()) {
    throw BadInput(
        fmt::format("{}: the model takes {} input(s) and gives {} output(s): {} --in "
                    "and {} --out given",
                    options.net_path, model.inputs.size(), model.outputs.size(),
                    options.in_paths.size(), options.out_paths.size()));
  }
  // The inputs whose first dimension is the batch: those the file leaves open (a compiled
  // model's, those it left open before the compiler fixed them to its runs' size), which take
  // any number of inputs.
  std::vector<graph::ValueInfo> accepted = model.inputs;
  std::vector<bool> open(accepted.size(), false);
  for (std::size_t i = 0; i < accepted.size(); ++i) {
    graph::ValueInfo& input = accepted[i];
    open[i] = compiled ? bool(compiled->batched[i])
                       : input.ranked && !input.shape.empty() && input.shape[0] < 0;
    if (open[i]) input.shape[0] = -1;
    if (input.dtype != graph::DType::Float32 && input.dtype != graph::DType::Int64) {
      throw BadInput(fmt::format("{}: input \"{}\" is {}: float32 and int64 inputs only",
                                 options.net_path, input.name, graph::dtype_name(input.dtype)));
    }
  }
  for (const std::string& path : options.out_paths) check_output_path(path);
  std::vector<graph::Tensor> inputs;
  for (std::size_t i = 0; i < options.in_paths.size(); ++i) {
    inputs.push_back(read_input(options.in_paths[i], accepted[i].dtype));
    const std::string mismatch = graph::input_mismatch(accepted[i], inputs.back());
    if (!mismatch.empty()) throw BadInput(fmt::format("{}: {}", options.in_paths[i], mismatch));
  }
  // Runs of --batch inputs where the model leaves the batch open and the open inputs have as
  // many inputs each (a compiled model's must), one run otherwise: the open inputs are cut
  // into runs, the others go whole into every run.
  std::optional<std::size_t> batch_inputs;
  bool batched = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!open[i]) continue;
    const auto count = static_cast<std::size_t>(inputs[i].shape[0]);
    if (batch_inputs && *batch_inputs != count) {
      if (compiled) {
        throw BadInput(
            fmt::format("{}: {} inputs, the model's other batched inputs {}: a "
                        "compiled model takes as many of each",
                        options.in_paths[i], count, *batch_inputs));
      }
      batched = false;
      break;
    }
    batch_inputs = count;
    batched = true;
  }
  const std::size_t n = batched ? *batch_inputs : 1;
  // A compiled model runs every run at its batch, the last padded with zero inputs.
  const std::size_t step = !batched ? 1 : compiled ? compiled->batch : options.batch;
  const std::string array = compiled ? compiled->config.name() : options.array;
  std::unique_ptr<Backend> backend = network_backend(options.backend, array);
  std::vector<std::vector<graph::Tensor>> parts(model.outputs.size());
  std::vector<graph::OpRun> runs;
  std::unique_ptr<graph::Session> session;
  if (compiled) {
    session = std::make_unique<graph::Session>(*compiled, *backend);
  } else {
    session = std::make_unique<graph::Session>(model, backend.get());
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<double> run_seconds;
  for (std::size_t done = 0; done < n; done += step) {
    const std::size_t count = std::min(step, n - done);
    const std::size_t run_size = compiled ? step : count;
    std::vector<graph::Tensor> batch;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      batch.push_back(batched && open[i] ? padded(rows_of(inputs[i], done, count), count, run_size)
                                         : inputs[i]);
    }
    std::vector<graph::Tensor> outputs;
    const auto run_start = std::chrono::steady_clock::now();
    try {
      outputs = session->run(batch, options.stats ? &runs : nullptr);
    } catch (const std::exception& error) {
      throw BadInput(fmt::format("{}: {}", options.net_path, error.what()));
    }
    run_seconds.push_back(seconds_since(run_start));
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      // Runs' outputs are joined along their first dimension, which must then be the batch.
      if ((n > step || run_size > count) &&
          (outputs[o].rank() == 0 || static_cast<std::size_t>(outputs[o].shape[0]) != run_size)) {
        throw BadInput(fmt::format(
            "{}: output \"{}\" of {} inputs is {}, its first dimension not the batch: run "
            "them in one run ({} {})",
            options.net_path, model.outputs[o].name, run_size, graph::shape_text(outputs[o].shape),
            compiled ? "tpu compile --batch" : "--batch", n));
      }
      parts[o].push_back(run_size > count ? rows_of(outputs[o], 0, count) : std::move(outputs[o]));
    }
  }
  // Each output's runs joined along the first dimension, all checked before any file is written.
  std::vector<graph::Tensor> joined;
  for (std::size_t o = 0; o < parts.size(); ++o) {
    graph::Tensor all;
    for (graph::Tensor& part : parts[o]) {
      if ((!part.is_float() && part.dtype != graph::DType::Int64 &&
           part.dtype != graph::DType::Int32) ||
          part.rank() == 0) {
        throw BadInput(fmt::format(
            "{}: output \"{}\" is {} {}: float32, int32 and int64 tensors of rank 1 or more only",
            options.net_path, model.outputs[o].name, graph::dtype_name(part.dtype),
            graph::shape_text(part.shape)));
      }
      if (all.shape.empty()) {
        all.dtype = part.dtype;
        all.shape = part.shape;
      } else {
        all.shape[0] += part.shape[0];
      }
      all.floats.insert(all.floats.end(), part.floats.begin(), part.floats.end());
      all.ints.insert(all.ints.end(), part.ints.begin(), part.ints.end());
    }
    joined.push_back(std::move(all));
  }
  for (std::size_t o = 0; o < joined.size(); ++o) {
    graph::Tensor& t = joined[o];
    const std::vector<std::size_t> shape(t.shape.begin(), t.shape.end());
    if (t.is_float()) {
      npy::write(options.out_paths[o], {shape, std::move(t.floats)}, npy::Dims::Any);
    } else if (t.dtype == graph::DType::Int32) {
      npy::write_int(
          options.out_paths[o],
          {shape, npy::Dtype::Int32, std::vector<std::int32_t>(t.ints.begin(), t.ints.end())},
          npy::Dims::Any);
    } else {
      npy::write_int64(options.out_paths[o], {shape, std::move(t.ints)}, npy::Dims::Any);
    }
  }
  const std::size_t run_count = (n + step - 1) / step;
  fmt::print("{}: {} on {} ({:.1f} s)\n", options.net_path,
             batched ? fmt::format("{} inputs in {} run{}", n, run_count, run_count == 1 ? "" : "s")
                     : std::string("one run"),
             options.backend == kBackendHost ? "host" : options.backend + " (" + array + " core)",
             seconds_since(start));
  for (std::size_t o = 0; o < joined.size(); ++o) {
    fmt::print("  {} -> {} [{}]\n", model.outputs[o].name, options.out_paths[o],
               fmt::join(joined[o].shape, ", "));
  }
  if (options.time) print_run_times(run_seconds);
  if (options.stats) print_stats(runs, n, run_count, backend.get());
  return 0;
}

namespace {

// One GEMM of a compiled model as a comment: its node, shape, types and epilogue, and where its
// operands lie.
std::string gemm_comment(std::size_t index, const graph::CompiledGemm& gemm) {
  const GemmPlan& plan = gemm.plan;
  const GemmSpec& spec = plan.spec;
  std::string epilogue;
  if (spec.has_bias) epilogue += ", bias";
  if (spec.out == OutType::Int8) {
    epilogue += fmt::format(", requantised (zero point {}, clamp {} to {})", spec.output_zero_point,
                            spec.clamp_lo, spec.clamp_hi);
  }
  if (spec.act != isa::Func::None) {
    epilogue += fmt::format(", {}", isa::kFuncTable[static_cast<std::size_t>(spec.act)].mnemonic);
  }
  // A convolution from its images: its images' and kernel's shapes, its wide rows.
  const ConvGeometry& g = plan.conv;
  const std::string conv =
      g.empty() ? ""
                : fmt::format(
                      " (a convolution from its images: {} x {} x {} x {}, kernel {}x{}, "
                      "stride {}x{}, dilation {}x{}; M its wide rows)",
                      g.batch, g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.stride_h,
                      g.stride_w, g.dilation_h, g.dilation_w);
  return fmt::format(
      "#   GEMM {}: node \"{}\", {} x {} x {} {} -> {}{}{}{}\n"
      "#     A at {:#x}{}, B at {:#x} ({}), result at {:#x}{}\n",
      index, gemm.node, spec.m, spec.k, spec.n, type_name(spec.in), type_name(spec.out), conv,
      spec.has_c ? ", onto the sums before it" : "", epilogue, plan.a_addr,
      plan.input_resident ? " (the result of the GEMM before it)" : "", plan.b_addr,
      plan.weights_resident ? "resident weights" : "written each run", plan.out_addr,
      gemm.result_kept ? " (kept for the next GEMM)" : "");
}

}  // namespace

std::string compiled_listing(const graph::CompiledModel& model, const std::string& name) {
  std::uint64_t weights = 0;
  std::size_t programs = 0;
  for (const graph::CompiledGemm& gemm : model.gemms) {
    weights += gemm.weight_bytes;
    programs += gemm.runs_with_next ? 0 : 1;
  }
  std::string text = fmt::format(
      "# {}: compiled for the {} core, {}\n"
      "# core memory: weights from 0x0 ({} bytes), programs from {:#x} to {:#x}, the operands of "
      "each run from {:#x} ({} bytes)\n",
      name, model.config.name(),
      model.batch ? fmt::format("runs of {} inputs", model.batch)
                  : std::string("the inputs' shapes fixed by the file"),
      weights, weights, model.image.size(), model.image.size(), model.scratch_bytes);
  std::size_t program = 0;
  std::size_t first = 0;  // the first GEMM of the program being listed
  for (std::size_t g = 0; g < model.gemms.size(); ++g) {
    if (model.gemms[g].runs_with_next) continue;
    const GemmPlan& plan = model.gemms[g].plan;
    text += fmt::format("\n# program {} of {}, at {:#x}: {} instructions, {}\n", ++program,
                        programs, plan.prog_addr, plan.program.size(),
                        g == first ? fmt::format("GEMM {}", g + 1)
                                   : fmt::format("GEMMs {} to {}", first + 1, g + 1));
    for (std::size_t c = first; c <= g; ++c) text += gemm_comment(c + 1, model.gemms[c]);
    text += isa::disassemble(plan.program);
    first = g + 1;
  }
  return text;
}

CLI::App* add_compile_command(CLI::App& app, CompileOptions& options) {
  CLI::App* command = app.add_subcommand(
      "compile",
      "compile an ONNX model for one core and batch size: its products' programs and weights "
      "laid out once, for tpu infer");
  command->add_option("model", options.model_path, "the ONNX model")
      ->required()
      ->type_name("MODEL.onnx");
  command->add_option("-o,--out", options.out_path, "the compiled model")
      ->required()
      ->type_name("MODEL.tpu");
  command->add_option("--array", options.array, "the core it runs on")
      ->check(CLI::IsMember(array_names()))
      ->capture_default_str();
  command
      ->add_option("--batch", options.batch,
                   "inputs per run, where the model leaves the batch open (tpu infer pads the "
                   "last run)")
      ->check(CLI::Range(1u, 65535u))
      ->capture_default_str();
  command->footer(
      "The file holds the graph as the load passes leave it (constants folded, activations and\n"
      "quantisation fused), the program of every GEMM its products run, and the image of the\n"
      "core's memory: the weights, laid out for the core, then the programs. tpu infer --net\n"
      "MODEL.tpu writes the image once and runs the programs as compiled (docs/graph.md).");
  return command;
}

int run_compile(const CompileOptions& options) {
  check_output_path(options.out_path);
  const graph::Graph model = load_model(options.model_path);
  const auto start = std::chrono::steady_clock::now();
  graph::CompiledModel compiled;
  try {
    compiled = graph::compile(model, config_named(options.array), options.batch);
  } catch (const std::exception& error) {
    throw BadInput(fmt::format("{}: {}", options.model_path, error.what()));
  }
  write_file(options.out_path, graph::compiled_file(compiled));
  std::uint64_t weights = 0;
  std::size_t programs = 0, chained = 0;
  std::set<std::string> on_core;
  for (const graph::CompiledGemm& gemm : compiled.gemms) {
    weights += gemm.weight_bytes;
    on_core.insert(gemm.node);
    programs += gemm.runs_with_next ? 0 : 1;
    chained += gemm.result_kept ? 1 : 0;
  }
  fmt::print("{}: compiled for the {} core, {} ({:.1f} s)\n", options.model_path,
             compiled.config.name(),
             compiled.batch ? fmt::format("runs of {} inputs", compiled.batch)
                            : std::string("the inputs' shapes fixed by the file"),
             seconds_since(start));
  const std::size_t products_on_core = on_core.size();
  on_core.insert(compiled.vector_nodes.begin(), compiled.vector_nodes.end());
  const std::vector<graph::NodeWork> work = graph::node_work(compiled.graph);
  const auto views =
      static_cast<std::size_t>(std::count(work.begin(), work.end(), graph::NodeWork::View));
  // The nodes on the core that compute on the host as well are host steps too.
  const auto also_on_host = static_cast<std::size_t>(
      std::count_if(compiled.host_arithmetic_nodes.begin(), compiled.host_arithmetic_nodes.end(),
                    [&](const std::string& name) { return on_core.count(name) != 0; }));
  const std::size_t host_steps =
      compiled.graph.nodes.size() - on_core.size() - views + also_on_host;
  const std::string vector_nodes =
      compiled.vector_nodes.empty() ? std::string()
                                    : fmt::format(", {} more on the core (its vector unit, moves)",
                                                  compiled.vector_nodes.size());
  fmt::print(
      "  {} nodes: {} with their products on the core ({} GEMM{}){}, {} view{}, {} host step{}\n",
      compiled.graph.nodes.size(), products_on_core, compiled.gemms.size(),
      compiled.gemms.size() == 1 ? "" : "s", vector_nodes, views, views == 1 ? "" : "s", host_steps,
      host_steps == 1 ? "" : "s");
  fmt::print("  {} program{} a run: {} result{} kept in the core's memory for the next product\n",
             programs, programs == 1 ? "" : "s", chained, chained == 1 ? "" : "s");
  fmt::print(
      "  core memory: {} bytes of weights and {} of programs from address 0, {} bytes of "
      "operands above them\n",
      weights, compiled.image.size() - weights, compiled.scratch_bytes);
  fmt::print("wrote {}\n", options.out_path);
  return 0;
}

}  // namespace tpu::tool
