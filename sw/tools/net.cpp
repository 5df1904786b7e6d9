#include "net.hpp"

#include <chrono>

#include "common.hpp"
#include "tpu/graph/compiled.hpp"
#include "tpu/graph/network_graph.hpp"
#include "tpu/nn.hpp"
#include "tpu/npy.hpp"
#include "tpu/onnx/onnx_import.hpp"
#include "tpu/pod.hpp"
#include "tpu/quantize.hpp"
#include "tpu/train.hpp"

namespace tpu::tool {

// Host memory to start with; a backend grows it for larger products.
constexpr std::size_t kNetworkMemory = 8u << 20;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<Backend> network_backend(const std::string& kind, const std::string& array,
                                         const std::string& trace_path) {
  if (kind == kBackendHost) return nullptr;
  Execution execution;
  execution.backend = kind;
  execution.array = array;
  execution.trace_path = trace_path;
  check_execution(execution);
  Target target = open_target(execution);
  return make_backend(execution, target, kNetworkMemory);
}

namespace {

// A network file, or the loader's one-line reason as bad input.
nn::Network load_network(const std::string& path) {
  return as_bad_input([&] { return nn::load_network(path); });
}

idx::Dataset load_data(bool train, const std::string& dir) {
  return as_bad_input([&] { return nn::load_fashion_mnist(train, dir); });
}

// --backend (tpu eval's default) and --array of a command that runs a network.
void add_run_options(CLI::App& command, std::string& backend, std::string& array) {
  backend = default_backend();
  command.add_option("--backend", backend, "rtl, model or host (fp32)")
      ->check(CLI::IsMember({kBackendRtl, kBackendModel, kBackendHost}))
      ->type_name("KIND")
      ->capture_default_str();
  command.add_option("--array", array, "core configuration")
      ->check(CLI::IsMember(array_names()))
      ->capture_default_str();
}

// Refuses an int8 network on a core without the int8 datapath, when one of `backends` is a core.
void check_int8_core(const nn::Network& net, const std::string& net_path,
                     const std::vector<std::string>& backends, const std::string& array) {
  if (!net.int8 || config_named(array).int8) return;
  if (std::any_of(backends.begin(), backends.end(),
                  [](const std::string& b) { return b != kBackendHost; })) {
    throw BadInput(
        fmt::format("{}: an int8 network, but the {} core has no int8 datapath", net_path, array));
  }
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainOptions& options) {
  CLI::App* command = app.add_subcommand(
      "train", "train a Fashion-MNIST network (products on the accelerator, mixed precision)");
  command->add_option("--arch", options.architecture, "mlp (784-256-128-10) or cnn")
      ->check(CLI::IsMember({"mlp", "cnn"}))
      ->capture_default_str();
  command
      ->add_option("--init", options.init_path,
                   "go on training this network (its layers replace --arch)")
      ->type_name("NET.json");
  command->add_option("--out", options.out_path, "the trained network: JSON, with .npy weights")
      ->required()
      ->type_name("NET.json");
  command
      ->add_option("--backend", options.backend,
                   "model: every product on the functional model (bf16 x bf16, fp32 sums)\n"
                   "rtl: the same on the Verilator model (slow; the same bits)\n"
                   "host: everything in host fp32, the reference")
      ->check(CLI::IsMember({kBackendModel, kBackendRtl, kBackendHost, kBackendMpi}))
      ->type_name("KIND")
      ->capture_default_str();
  command->add_option("--array", options.array, "core configuration")
      ->check(CLI::IsMember(array_names()))
      ->capture_default_str();
  command
      ->add_option("--chips", options.chips,
                   "train data-parallel on a pod of N chips: each takes its\n"
                   "share of a batch, the gradients are all-reduced on the\n"
                   "chips (model, rtl, or mpi: one chip per rank of mpirun)")
      ->check(CLI::Range(1u, 16u))
      ->capture_default_str();
  command->add_option("--epochs", options.epochs)
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  command->add_option("--batch", options.batch)
      ->check(CLI::Range(1u, 65535u))
      ->capture_default_str();
  command->add_option("--lr", options.learning_rate, "Adam's learning rate")
      ->check(CLI::Range(1e-7f, 1.0f))
      ->capture_default_str();
  command->add_option("--lr-decay", options.lr_decay, "factor of the learning rate per epoch")
      ->check(CLI::Range(1e-3f, 1.0f))
      ->capture_default_str();
  command->add_option("--seed", options.seed, "initial weights and example order")
      ->capture_default_str();
  command->add_option("--examples", options.examples, "train on the first N examples (0: all)");
  command->add_option("--test-images", options.test_images,
                      "test images to measure accuracy on after each epoch (0: all)");
  command->add_option("--data", options.data_dir,
                      "Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)");
  return command;
}

CLI::App* add_eval_command(CLI::App& app, EvalOptions& options) {
  CLI::App* command = app.add_subcommand(
      "eval", "classify Fashion-MNIST test images with a trained network on a backend");
  command->add_option("--net", options.net_path, "the network")->required()->type_name("NET.json");
  add_run_options(*command, options.backend, options.array);
  command->add_option("--images", options.images, "how many test images (0: all 10,000)")
      ->capture_default_str();
  command->add_option("--first", options.first, "index of the first test image")
      ->capture_default_str();
  command->add_option("--batch", options.batch, "images per run of the core")
      ->check(CLI::Range(1u, 65535u))
      ->capture_default_str();
  command
      ->add_option("--compare", options.compare,
                   "also run on these backends and compare: predictions (model) and "
                   "accuracy (host)")
      ->check(CLI::IsMember({kBackendRtl, kBackendModel, kBackendHost}));
  command->add_option("--clock-mhz", options.clock_mhz, "clock of the images/s figure (rtl)")
      ->check(CLI::Range(1.0, 10000.0))
      ->capture_default_str();
  command->add_flag("--stats", options.stats,
                    "a table per operator of the network's graph (where it ran, MACs,\n"
                    "products, cycles on the RTL, bytes) and totals");
  command->add_option("--trace", options.trace_path,
                      "FST waveform (rtl, a core built with tracing; use few images)");
  command->add_option("--data", options.data_dir, "Fashion-MNIST IDX files");
  return command;
}

CLI::App* add_quantize_command(CLI::App& app, QuantizeOptions& options) {
  CLI::App* command = app.add_subcommand(
      "quantize",
      "quantise a trained network to int8 (TensorFlow Lite's scheme), calibrated on training "
      "images");
  command->add_option("--net", options.net_path, "the float network")
      ->required()
      ->type_name("NET.json");
  command
      ->add_option("--out", options.out_path,
                   "the int8 network: JSON, with .npy files named after it\n"
                   "(all written, or none)")
      ->required()
      ->type_name("NETQ.json");
  command
      ->add_option("--calibration", options.calibration,
                   "calibrate the activation ranges on the first N training images\n"
                   "(host fp32 inference of the float network)")
      ->check(CLI::Range(1u, 60000u))
      ->type_name("N")
      ->capture_default_str();
  command->add_option("--data", options.data_dir,
                      "Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)");
  command->footer(
      "Weights become int8 per output channel (zero point 0, scale max|w| / 127), activations\n"
      "int8 with a zero point from their calibrated [min, max] (0 included), biases int32,\n"
      "and each hidden column's requantisation multiplier M and shift s come from Q-SCALE\n"
      "(docs/numerics.md); the last layer keeps int32 sums, dequantised on the host.\n"
      "tpu eval --net NETQ.json runs the result on any backend (docs/networks.md).");
  return command;
}

namespace {

nn::TrainOptions trainer_options(const TrainOptions& options) {
  nn::TrainOptions train_options;
  train_options.epochs = options.epochs;
  train_options.batch = options.batch;
  train_options.learning_rate = options.learning_rate;
  train_options.lr_decay = options.lr_decay;
  train_options.seed = options.seed;
  train_options.examples = options.examples;
  return train_options;
}

// --chips N: data-parallel on a pod, one copy of the network per chip.
int run_pod_train(const TrainOptions& options, const nn::Network& net, const idx::Dataset& train,
                  const idx::Dataset& test) {
  if (options.backend == kBackendHost) {
    throw BadInput("--chips needs the chips of a pod: --backend model, rtl or mpi");
  }
  const std::unique_ptr<Pod> pod =
      open_pod(options.backend, options.array, options.chips, kNetworkMemory, LinkTiming{},
               fmt::format("--chips {}", options.chips));
  std::unique_ptr<nn::DataParallelTrainer> trainer_owner;
  try {
    trainer_owner = std::make_unique<nn::DataParallelTrainer>(net, *pod, trainer_options(options));
  } catch (const std::invalid_argument& error) {
    throw BadInput(fmt::format("{}: {}", options.init_path, error.what()));
  }
  nn::DataParallelTrainer& trainer = *trainer_owner;
  Backend& first_chip = pod->chip(pod->local_chips().front());
  const bool reports = pod->reports();
  if (reports) {
    fmt::print("training {} data-parallel on {} chips ({}): {} epochs, batch {} ({} to {} a "
               "chip), Adam lr {} (x {} per epoch), seed {}\n",
               net.name, options.chips, options.backend, options.epochs, options.batch,
               options.batch / options.chips,
               (options.batch + options.chips - 1) / options.chips, options.learning_rate,
               options.lr_decay, options.seed);
  }
  const auto start = std::chrono::steady_clock::now();
  for (unsigned e = 0; e < options.epochs; ++e) {
    const float loss = trainer.epoch(train, [&](unsigned done, unsigned all, float mean) {
      if (reports && (done % 100 == 0 || done == all)) {
        fmt::print("\r  epoch {:>3}  batch {:>5} / {}  loss {:.4f}", e + 1, done, all, mean);
        std::fflush(stdout);
      }
    });
    if (!reports) continue;
    const double test_accuracy =
        graph::accuracy(&first_chip, trainer.network(), test, options.test_images, 256);
    fmt::print("\r  epoch {:>3}  loss {:.4f}  test accuracy {:.4f}  ({:.0f} s)          \n",
               e + 1, loss, test_accuracy, seconds_since(start));
  }
  if (!reports) return 0;
  fmt::print("every chip's copy of the network the same bits after every step; {:.3g} "
             "multiply-accumulates in {:.0f} s\n",
             static_cast<double>(trainer.macs()), seconds_since(start));
  nn::save_network(trainer.network(), options.out_path);
  fmt::print("wrote {}\n", options.out_path);
  return 0;
}

}  // namespace

int run_train(const TrainOptions& options) {
  check_output_path(options.out_path);
  const idx::Dataset train = load_data(true, options.data_dir);
  const idx::Dataset test = load_data(false, options.data_dir);
  nn::Network net;
  if (options.init_path.empty()) {
    net = nn::make_network(
        options.architecture == "mlp" ? nn::Architecture::Mlp : nn::Architecture::Cnn,
        options.seed);
  } else {
    net = load_network(options.init_path);
  }
  if (options.chips > 1 || options.backend == kBackendMpi) {
    return run_pod_train(options, net, train, test);
  }
  std::unique_ptr<Backend> backend = network_backend(options.backend, options.array);
  const nn::TrainOptions train_options = trainer_options(options);
  std::unique_ptr<nn::Trainer> trainer_owner;
  try {
    trainer_owner = std::make_unique<nn::Trainer>(net, backend.get(), train_options);
  } catch (const std::invalid_argument& error) {
    throw BadInput(fmt::format("{}: {}", options.init_path, error.what()));
  }
  nn::Trainer& trainer = *trainer_owner;

  fmt::print("training {} on {} ({}): {} epochs, batch {}, Adam lr {} (x {} per epoch), seed {}\n",
             net.name, options.backend,
             options.backend == kBackendHost ? "fp32" : "bf16 x bf16, fp32 sums", options.epochs,
             options.batch, options.learning_rate, options.lr_decay, options.seed);
  const auto start = std::chrono::steady_clock::now();
  for (unsigned e = 0; e < options.epochs; ++e) {
    const float loss = trainer.epoch(train, [&](unsigned done, unsigned all, float mean) {
      if (done % 100 == 0 || done == all) {
        fmt::print("\r  epoch {:>3}  batch {:>5} / {}  loss {:.4f}", e + 1, done, all, mean);
        std::fflush(stdout);
      }
    });
    const double test_accuracy =
        graph::accuracy(backend.get(), net, test, options.test_images, 256);
    fmt::print("\r  epoch {:>3}  loss {:.4f}  test accuracy {:.4f}  ({:.0f} s)          \n", e + 1,
               loss, test_accuracy, seconds_since(start));
  }
  fmt::print("{:.3g} multiply-accumulates in {:.0f} s\n", static_cast<double>(trainer.macs()),
             seconds_since(start));
  nn::save_network(net, options.out_path);
  fmt::print("wrote {}\n", options.out_path);
  return 0;
}

namespace {

std::string range_text(const nn::Range& range) {
  return fmt::format("[{:.4g}, {:.4g}]", range.lo, range.hi);
}

std::string quant_text(double scale, int zero_point) {
  return fmt::format("scale {:.6g}, zero point {}", scale, zero_point);
}

}  // namespace

int run_quantize(const QuantizeOptions& options) {
  check_output_path(options.out_path);
  const nn::Network net = load_network(options.net_path);
  if (net.int8) {
    throw BadInput(fmt::format("{}: already quantised (dtype int8)", options.net_path));
  }
  std::error_code ignored;
  if (std::filesystem::weakly_canonical(options.out_path, ignored) ==
      std::filesystem::weakly_canonical(options.net_path, ignored)) {
    throw BadInput(fmt::format("--out {}: is the network to quantise", options.out_path));
  }
  const idx::Dataset train = load_data(true, options.data_dir);
  if (options.calibration > train.count) {
    throw BadInput(fmt::format("--calibration {}: the training set has {} images",
                               options.calibration, train.count));
  }
  nn::Network quantised;
  nn::Calibration calibration;
  try {
    nn::check_quantizable(net);  // before the calibration runs
    calibration = nn::calibrate(net, train, options.calibration);
    quantised = nn::quantize_network(net, calibration);
  } catch (const std::invalid_argument& error) {
    throw BadInput(fmt::format("{}: {}", options.net_path, error.what()));
  }
  fmt::print("{}: int8 calibration on the first {} training images (host fp32)\n", net.name,
             calibration.images);
  const nn::ActivationQuant input = nn::activation_quant(calibration.input);
  fmt::print("{:<24} range {:<22} {}\n", "input", range_text(calibration.input),
             quant_text(input.scale, input.zero_point));
  for (std::size_t l = 0; l < quantised.layers.size(); ++l) {
    const nn::Layer& layer = quantised.layers[l];
    if (layer.kind != nn::LayerKind::Dense && layer.kind != nn::LayerKind::Conv2d) continue;
    const nn::QuantLayer& q = layer.quant;
    const auto [lo, hi] = std::minmax_element(q.weight_scales.begin(), q.weight_scales.end());
    const std::string name =
        fmt::format("{} {} ({})", layer.kind == nn::LayerKind::Dense ? "dense" : "conv2d", l,
                    isa::kFuncTable[static_cast<unsigned>(layer.activation)].mnemonic);
    if (q.int8_output) {
      fmt::print("{:<24} range {:<22} {}\n", name, range_text(calibration.output[l]),
                 quant_text(q.output_scale, q.output_zero_point));
    } else {
      fmt::print("{:<24} range {:<22} int32 sums, dequantised on the host\n", name,
                 range_text(calibration.output[l]));
    }
    fmt::print("{:<24} weight scales {:.4g} to {:.4g}\n", "", *lo, *hi);
  }
  as_bad_input([&] { nn::save_network(quantised, options.out_path); });
  fmt::print("wrote {}\n", options.out_path);
  return 0;
}

int run_eval(const EvalOptions& options) {
  const nn::Network net = load_network(options.net_path);
  std::vector<std::string> backends = options.compare;
  backends.push_back(options.backend);
  check_int8_core(net, options.net_path, backends, options.array);
  const idx::Dataset test = load_data(false, options.data_dir);
  if (options.first >= test.count) {
    throw BadInput(
        fmt::format("--first {}: the test set has {} images", options.first, test.count));
  }
  const std::uint32_t count = options.images ? std::min(options.images, test.count - options.first)
                                             : test.count - options.first;
  std::unique_ptr<Backend> backend =
      network_backend(options.backend, options.array, options.trace_path);
  // Every backend is opened before any runs, so that one this tpu lacks stops it before output.
  std::vector<std::unique_ptr<Backend>> others;
  for (const std::string& other : options.compare) {
    others.push_back(network_backend(other, options.array));
  }

  // Classifies the images on one backend: the network's graph in a session of its own.
  const graph::Graph model = network_file_graph(net, options.net_path);
  struct Outcome {
    std::vector<std::uint32_t> predictions;
    std::uint32_t correct = 0;
    double seconds = 0;
    std::vector<graph::OpRun> runs;
  };
  auto classify = [&](Backend* accelerator) {
    Outcome out;
    const auto start = std::chrono::steady_clock::now();
    graph::Session session(model, accelerator);
    out.predictions =
        graph::classify(session, net, test, options.first, count, options.batch, &out.runs);
    for (std::uint32_t i = 0; i < count; ++i) {
      out.correct += out.predictions[i] == test.labels[options.first + i];
    }
    out.seconds = seconds_since(start);
    return out;
  };

  const Outcome main = classify(backend.get());
  const char* host_kind = net.int8 ? " (int8 reference)" : " (fp32)";
  fmt::print("{}{}: {} test images from {} on {}{}\n", net.name, net.int8 ? " int8" : "", count,
             options.first, options.backend,
             options.backend == kBackendHost ? host_kind : " (" + options.array + " core)");
  fmt::print("accuracy                 {:.4f} ({} of {})\n", double(main.correct) / count,
             main.correct, count);
  const unsigned dim = config_named(options.array).dim;
  if (options.backend == kBackendRtl) {
    double cycles = 0, macs = 0;
    for (const graph::OpRun& run : main.runs) {
      cycles += static_cast<double>(run.cycles);
      macs += static_cast<double>(run.useful_macs);
    }
    fmt::print("cycles per image         {:.0f}\n", cycles / count);
    fmt::print("MXU utilisation          {:.2f} % (useful MACs / (cycles x {}))\n",
               100.0 * macs / (cycles * dim * dim), dim * dim);
    fmt::print("{:<24} {:.0f} (the simulated chip)\n",
               fmt::format("images/s at {:g} MHz", options.clock_mhz),
               count / (cycles / (options.clock_mhz * 1e6)));
    fmt::print("simulation speed         {:.2f} images/s, {:.0f} cycles/s\n", count / main.seconds,
               cycles / main.seconds);
  } else {
    fmt::print("wall time                {:.1f} s\n", main.seconds);
  }
  if (options.stats) {
    print_stats(main.runs, count, (count + options.batch - 1) / options.batch, backend.get());
  }

  int status = 0;
  for (std::size_t o = 0; o < options.compare.size(); ++o) {
    const std::string& other = options.compare[o];
    const Outcome theirs = classify(others[o].get());
    // fp32 on the host differs from bf16 on the core; int8 is the same bits everywhere.
    const bool host = other == kBackendHost && !net.int8;
    std::uint32_t same = 0;
    for (std::uint32_t i = 0; i < count; ++i) same += main.predictions[i] == theirs.predictions[i];
    fmt::print("{:<24} {:.4f}; {} of {} predictions the same{}\n",
               fmt::format("accuracy on {}", other), double(theirs.correct) / count, same, count,
               host ? " (fp32 host: not expected to be all)" : "");
    // Every accelerator backend computes the same bits, and so does the host in int8.
    if (!host && (options.backend != kBackendHost || net.int8) && same != count) {
      fmt::print(stderr, "tpu: {} and {} disagree on {} predictions\n", options.backend, other,
                 count - same);
      status = kExitCoreError;
    }
  }
  return status;
}

CLI::App* add_import_command(CLI::App& app, ImportOptions& options) {
  CLI::App* command = app.add_subcommand(
      "import", "turn an ONNX model into a network file with its weights as .npy files");
  command->add_option("model", options.model_path, "the ONNX model")
      ->required()
      ->type_name("MODEL.onnx");
  command
      ->add_option("--out", options.out_path,
                   "the network: JSON, with .npy files named after it (all written, or none)")
      ->required()
      ->type_name("NET.json");
  command->add_flag("--force", options.force, "overwrite the network's files if they exist");
  command->footer(fmt::format(
      "Takes opsets {} to {} of the default domain: a chain of Gemm, MatMul, Conv, Add (a bias),\n"
      "BatchNormalization (folded), Relu, Sigmoid, Tanh, LeakyRelu, Clip(0, 6), MaxPool,\n"
      "AveragePool, GlobalAveragePool, Flatten, Reshape (to a flat vector), a final Softmax;\n"
      "Identity, Dropout and Cast to float32 are dropped. A model quantised in QDQ format (int8)\n"
      "becomes an int8 network. Anything else is refused, naming the node (docs/networks.md).",
      nn::kOnnxOpsetOldest, nn::kOnnxOpsetNewest));
  return command;
}

CLI::App* add_infer_command(CLI::App& app, InferOptions& options) {
  CLI::App* command = app.add_subcommand(
      "infer", "run a network or an ONNX model on a batch of inputs from .npy files");
  command
      ->add_option("--net", options.net_path,
                   "the network file, an ONNX model (.onnx), or a model compiled by tpu compile")
      ->required()
      ->type_name("NET.json|MODEL.onnx|MODEL.tpu");
  command
      ->add_option("--in", options.in_paths,
                   "float32 inputs, batch first. A network file takes one, in its input shape:\n"
                   "N x C x H x W (an imported NCHW model), N x features (flat),\n"
                   "N x H x W x C (the project's own networks). An ONNX model takes one\n"
                   "per graph input, in the graph's order, shapes and types (float32, or\n"
                   "int64 for an int64 input such as token ids)")
      ->required()
      ->type_name("X.npy");
  command
      ->add_option("--out", options.out_paths,
                   "float32 outputs: N x outputs for a network file; one file per graph\n"
                   "output, in the graph's order, for an ONNX model (all written, or none;\n"
                   "int64 or int32 for an integer output such as an ArgMax's classes)")
      ->required()
      ->type_name("Y.npy");
  add_run_options(*command, options.backend, options.array);
  command->add_option("--batch", options.batch, "inputs per run of the core")
      ->check(CLI::Range(1u, 65535u))
      ->capture_default_str();
  command->add_flag("--time", options.time,
                    "print the runs' wall-clock time on the host (the first, which writes the\n"
                    "weights into the core's memory, and the later ones' mean and best) and the\n"
                    "tool's peak memory");
  command->add_flag("--stats", options.stats,
                    "a table per operator (where it ran, MACs, products, cycles, bytes)\n"
                    "and totals (host steps, program runs, weights)");
  return command;
}

int run_import(const ImportOptions& options) {
  check_output_path(options.out_path);
  nn::Network net = as_bad_input([&] { return nn::import_onnx(options.model_path); });
  try {
    nn::save_network(net, options.out_path, options.force);
  } catch (const std::runtime_error& error) {
    const std::string what = error.what();
    const bool exists =
        what.size() >= 14 && what.compare(what.size() - 14, 14, "already exists") == 0;
    throw BadInput(exists ? what + " (--force overwrites)" : what);
  }
  const std::vector<std::uint32_t> in = nn::input_file_shape(net);
  fmt::print("{}: {} layers, input [N, {}] ({}), output [N, {}]{}\n", options.model_path,
             net.layers.size(), fmt::join(in, ", "),
             net.layout == nn::InputLayout::Nchw   ? "NCHW"
             : net.layout == nn::InputLayout::Flat ? "flat"
                                                   : "NHWC",
             net.classes, net.softmax_output ? " after a softmax on the host" : "");
  fmt::print("wrote {}\n", options.out_path);
  return 0;
}

}  // namespace tpu::tool
