// What the subcommands of the `tpu` tool share: exit statuses, the one-line
// errors of bad input, numbers and files, the backends and their options, and
// the statistics a run prints.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "tpu/assembler.hpp"
#include "tpu/isa.hpp"
#include "tpu/link.hpp"
#include "tpu/model.hpp"
#include "tpu/npy.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/serial_backend.hpp"
#include "tpu/serial_port.hpp"
#include "tpu/simulation.hpp"

namespace tpu::tool {

using tpu::HardwareConfig;
using tpu::RunResult;
using tpu::isa::Instruction;

constexpr int kExitCoreError = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitSimulationFailed = 3;
constexpr int kExitLinkFailed = 4;

constexpr const char* kBackendRtl = "rtl";
constexpr const char* kBackendModel = "model";
constexpr const char* kBackendSerial = "serial";
constexpr const char* kBackendMpi = "mpi";
// --port sim[:BOARD]: the board's RTL under Verilator, behind a model of the UART line.
constexpr std::string_view kSimPort = "sim";
// What --backend rtl and --port sim say in a tpu built without the Verilator models.
constexpr const char* kNoSimulation =
    "this tpu was built without the RTL simulation; configure with -DTPU_RTL=ON (make build) "
    "for it";
constexpr std::uint32_t kDefaultBaud = 1'000'000;
// The simulated board answers within microseconds of its time; a real one's USB UART may hold a
// reply back for tens of milliseconds.
constexpr unsigned kSimReplyTimeoutMs = 10;
constexpr const char* kDefaultArray = "16x16";
// The slope of --act leaky without --alpha: the customary one (PyTorch, Keras).
constexpr const char* kDefaultLeakySlope = "0.01";
// Host memory of `tpu run` when the program and its data need less: room for scratch areas.
constexpr std::uint64_t kDefaultRunMemory = 1u << 20;
constexpr std::uint64_t kHostSpace = std::uint64_t{1} << 32;
constexpr std::string_view kBf16Suffix = ":bf16";

// Something wrong with what the user gave (an option, a file, a shape): one line, exit status 2.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Removes `suffix` from the end of `text` if it is there.
inline bool take_suffix(std::string& text, std::string_view suffix) {
  if (!ends_with(text, suffix)) return false;
  text.resize(text.size() - suffix.size());
  return true;
}

// A decimal or 0x-hexadecimal number no larger than `max`; `what` names it in the message.
inline std::uint64_t parse_number(std::string_view text, const std::string& what,
                                  std::uint64_t max) {
  int base = 10;
  std::string_view digits = text;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  std::uint64_t value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value, base);
  if (digits.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    throw BadInput(fmt::format("{}: '{}' is not a decimal or 0x hexadecimal number", what, text));
  }
  if (ec == std::errc::result_out_of_range || value > max) {
    throw BadInput(fmt::format("{}: {} is larger than {}", what, text, max));
  }
  return value;
}

// A finite decimal number rounded to bf16 by N-OUT, as the assembler reads `alpha=`.
inline tpu::num::bf16_t parse_bf16(std::string_view text, const std::string& what) {
  float value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  const tpu::num::fp32_t bits = tpu::num::float_to_fp32(value);
  const bool finite = ((bits >> 23) & 0xFF) != 0xFF;
  if (text.empty() || ec != std::errc() || ptr != end || !finite) {
    throw BadInput(fmt::format("{}: '{}' is not a finite decimal number", what, text));
  }
  return tpu::num::fp32_to_bf16(bits);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  // libstdc++ throws from inside the iterators when read() fails (a directory opens, but
  // reading it fails with EISDIR).
  try {
    std::string contents{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.bad()) return contents;
  } catch (const std::ios_base::failure&) {
  }
  throw BadInput(fmt::format("{}: read error: {}", path, std::strerror(errno)));
}

// Refuses an output path that cannot be written before any work is done for it.
inline void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ignored;
  if (fs::is_directory(path, ignored)) throw BadInput(fmt::format("{}: is a directory", path));
  const fs::path parent = fs::path(path).parent_path();
  const std::string directory = parent.empty() ? "." : parent.string();
  if (::access(directory.c_str(), W_OK) != 0) {
    throw BadInput(
        fmt::format("{}: cannot write in {}: {}", path, directory, std::strerror(errno)));
  }
}

// Writes through a temporary file renamed over `path`, so that a failure never leaves part of a
// file behind.
inline void write_file(const std::string& path, std::string_view contents) {
  const std::string temporary = fmt::format("{}.tmp{}", path, ::getpid());
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    throw BadInput(fmt::format("{}: cannot write: {}", path, std::strerror(error)));
  }
}

// What `load` returns; its std::runtime_error (a reader's one-line reason) as bad input.
template <typename Load>
auto as_bad_input(Load&& load) -> decltype(load()) {
  try {
    return load();
  } catch (const std::runtime_error& error) {
    throw BadInput(error.what());
  }
}

inline tpu::npy::Array read_npy(const std::string& path) {
  return as_bad_input([&] { return tpu::npy::read(path); });
}

inline void write_npy(const std::string& path, const tpu::npy::Array& array) {
  as_bad_input([&] { tpu::npy::write(path, array); });
}

inline tpu::npy::IntArray read_int_npy(const std::string& path, tpu::npy::Dtype dtype) {
  try {
    return tpu::npy::read_int(path, dtype);
  } catch (const std::runtime_error& error) {
    throw BadInput(error.what());
  }
}

inline void write_int_npy(const std::string& path, const tpu::npy::IntArray& array) {
  try {
    tpu::npy::write_int(path, array);
  } catch (const std::runtime_error& error) {
    throw BadInput(error.what());
  }
}

// "(N,)" or "(R, C)": a shape of one or two dimensions as NumPy prints it.
inline std::string shape_text(const std::vector<std::size_t>& shape) {
  return shape.size() == 1 ? fmt::format("({},)", shape[0])
                           : fmt::format("({}, {})", shape[0], shape[1]);
}
inline std::string shape_text(const tpu::npy::Array& array) {
  return shape_text(array.shape);
}

// --- Programs ---

inline std::vector<Instruction> assemble_file(const std::string& path) {
  try {
    return tpu::isa::assemble(read_file(path));
  } catch (const std::invalid_argument& error) {
    throw BadInput(fmt::format("{}:{}", path, error.what()));  // "line N: ..." from the assembler
  }
}

inline std::vector<Instruction> decode_file(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() % tpu::isa::kInstrBytes != 0) {
    throw BadInput(fmt::format("{}: {} bytes is not a whole number of {}-byte instructions", path,
                               bytes.size(), tpu::isa::kInstrBytes));
  }
  return tpu::isa::decode_program(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                  bytes.size());
}

inline std::string_view as_text(const std::vector<std::uint8_t>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// --- Backends ---

inline std::vector<std::string> array_names() {
  std::vector<std::string> names;
  for (const HardwareConfig& config : tpu::model_configs()) names.push_back(config.name());
  return names;
}

// --array has been checked against array_names() by the parser.
inline HardwareConfig config_named(const std::string& name) {
  return *tpu::find_core_config(name);
}

// A core that model_configs() has but core_configs() has not runs on the functional model
// alone.
inline void require_rtl_model(const HardwareConfig& config, const std::string& backend) {
  const std::vector<HardwareConfig>& rtl = tpu::core_configs();
  if (std::find(rtl.begin(), rtl.end(), config) == rtl.end()) {
    throw BadInput(fmt::format(
        "--array {}: no Verilator model of this core in this build (cmake -DTPU_LARGE_CORE=ON "
        "builds it); --backend {} needs one, --backend model runs it",
        config.name(), backend));
  }
}

// The RTL when this tpu has it, the functional model otherwise.
inline std::string default_backend() {
  return tpu::linked_simulation() ? kBackendRtl : kBackendModel;
}

// How `gemm` and `run` execute a program, and what they report.
struct Execution {
  std::string backend = default_backend();
  std::string array = kDefaultArray;
  std::string port;
  std::uint32_t baud = kDefaultBaud;
  std::string trace_path;
  bool stats = false;
  bool time = false;
  // Which of the options the command line gave (filled in after parsing).
  bool array_given = false, baud_given = false;
};

inline void add_execution_options(CLI::App& command, Execution& execution) {
  command
      .add_option("--backend", execution.backend,
                  "rtl: the Verilator model of tpu_top, cycle by cycle\n"
                  "model: the functional model of the instruction set\n"
                  "(the same results, no cycles, much faster)\n"
                  "serial: the core on an FPGA board, over its UART\n"
                  "(docs/fpga.md)\n"
                  "(the default is model in a tpu built without the RTL)")
      ->check(CLI::IsMember({kBackendRtl, kBackendModel, kBackendSerial}))
      ->type_name("KIND")
      ->capture_default_str();
  command
      .add_option("--array", execution.array,
                  "core configuration: the array, then what differs from\n"
                  "the default core (`tpu info` lists the parameters);\n"
                  "a board's core is the one its bitstream holds")
      ->check(CLI::IsMember(array_names()))
      ->type_name("NAME")
      ->capture_default_str();
  command
      .add_option("--port", execution.port,
                  "serial: the board's serial port (/dev/ttyUSB0), or\n"
                  "sim for the board's RTL under Verilator")
      ->type_name("PORT");
  command.add_option("--baud", execution.baud, "serial: the line's bit rate, as the bitstream's")
      ->check(CLI::Range(1u, 100'000'000u))
      ->type_name("N")
      ->capture_default_str();
  command
      .add_option("--trace", execution.trace_path,
                  "write an FST waveform of every cycle (rtl, or serial\n"
                  "with --port sim; kept when the core stops with an\n"
                  "error, to debug it); rtl: a core model built with\n"
                  "tracing (sim/models.cmake, or -DTPU_TRACE=ON)")
      ->type_name("FILE.fst");
  command.add_flag("--stats", execution.stats,
                   "print the cycle counters (rtl, serial), or the\n"
                   "instructions and MACs (model)");
  command.add_flag("--time", execution.time,
                   "model: print the run's wall-clock time on the host\n"
                   "(GMAC/s, the fold path and threads: TPU_FOLD_PATH,\n"
                   "TPU_MODEL_THREADS) and the tool's peak memory; gemm\n"
                   "runs its program three times and gives the best");
}

// After parsing: which options were given.
inline void note_given_options(const CLI::App& command, Execution& execution) {
  execution.array_given = command.count("--array") > 0;
  execution.baud_given = command.count("--baud") > 0;
}

inline bool simulated_port(const std::string& port) {
  return port == kSimPort || port.rfind(std::string(kSimPort) + ":", 0) == 0;
}

// Checks what the parser cannot: the options that only go together, and what this build has.
inline void check_execution(const Execution& execution) {
  const bool serial = execution.backend == kBackendSerial;
  if (!tpu::linked_simulation()) {
    if (execution.backend == kBackendRtl)
      throw BadInput(std::string("--backend rtl: ") + kNoSimulation);
    if (serial && simulated_port(execution.port)) {
      throw BadInput(fmt::format("--port {}: {}", execution.port, kNoSimulation));
    }
  }
  if (serial && execution.port.empty()) {
    throw BadInput("--backend serial needs --port: the board's serial port, or sim");
  }
  if (serial && execution.array_given) {
    throw BadInput(
        "--array does not go with --backend serial: the board's core is the one its "
        "bitstream holds");
  }
  if (!serial && (!execution.port.empty() || execution.baud_given)) {
    throw BadInput("--port and --baud go with --backend serial");
  }
  if (serial && simulated_port(execution.port) && execution.baud_given) {
    throw BadInput(
        "--baud does not go with --port sim: the simulated board's line runs at its "
        "bitstream's rate");
  }
  if (execution.trace_path.empty()) return;
  if (execution.backend != kBackendRtl && !(serial && simulated_port(execution.port))) {
    throw BadInput(
        "--trace needs --backend rtl, or --backend serial --port sim: the functional "
        "model and a real board have no waveform");
  }
  check_output_path(execution.trace_path);
}

// The board on --port: a real one through libserialport, or its simulation. Throws
// link::LinkError when there is none, or std::invalid_argument when its memory is smaller than
// `memory_bytes`.
inline std::unique_ptr<tpu::SerialBackend> open_board(const Execution& execution,
                                                      std::size_t memory_bytes) {
  tpu::link::LinkOptions link_options;
  std::unique_ptr<tpu::link::SerialPort> port;
  if (simulated_port(execution.port)) {
    const std::string board =
        execution.port.size() > kSimPort.size() ? execution.port.substr(kSimPort.size() + 1) : "";
    try {
      tpu::SimulatedBoardPort simulated =
          tpu::linked_simulation()->open_board(board, execution.trace_path);
      link_options.baud = simulated.baud;
      port = std::move(simulated.port);
    } catch (const std::invalid_argument& error) {
      throw BadInput(fmt::format("--port {}: {}", execution.port, error.what()));
    }
    link_options.reply_timeout_ms = kSimReplyTimeoutMs;
  } else {
    port = tpu::link::open_serial_port(execution.port, execution.baud);
    link_options.baud = execution.baud;
  }
  try {
    return std::make_unique<tpu::SerialBackend>(std::move(port), link_options, memory_bytes);
  } catch (const std::invalid_argument& error) {
    throw tpu::link::LinkError(error.what());  // what the board says of itself
  }
}

// The core a command compiles for: the board's (connecting to it) or a compiled configuration.
struct Target {
  HardwareConfig config;
  std::unique_ptr<tpu::SerialBackend> board;  // with --backend serial
};

inline Target open_target(const Execution& execution) {
  Target target;
  if (execution.backend == kBackendSerial) {
    target.board = open_board(execution, 0);
    target.config = target.board->config();
  } else {
    target.config = config_named(execution.array);
  }
  return target;
}

// The backend to run on, with `memory_bytes` of host memory: the board's, or a new one.
inline std::unique_ptr<tpu::Backend> make_backend(const Execution& execution, Target& target,
                                                  std::size_t memory_bytes) {
  if (target.board) {
    const std::uint32_t board_bytes = target.board->board().mem_bytes;
    if (memory_bytes > board_bytes) {
      throw BadInput(
          fmt::format("the program and its data need {} bytes of host memory; the "
                      "board has {}",
                      memory_bytes, board_bytes));
    }
    target.board->memory().resize(memory_bytes);
    return std::move(target.board);
  }
  if (execution.backend == kBackendModel) {
    return std::make_unique<tpu::FunctionalModel>(target.config, memory_bytes);
  }
  require_rtl_model(target.config, execution.backend);
  try {
    return tpu::linked_simulation()->open_core(target.config, memory_bytes, execution.trace_path);
  } catch (const std::invalid_argument& error) {
    // What the model cannot do: a waveform from one built without tracing.
    throw BadInput(fmt::format("--array {}: {}", target.config.name(), error.what()));
  }
}

// A pod of `chips` chips of the core `array` (docs/pod.md), each with `memory_bytes` of host
// memory: functional models (`backend` model), Verilator models in this process (rtl), or this
// rank's chip of one started by mpirun (mpi), which must have started `chips` ranks. `chips_given`
// says where the number came from, for the message when the ranks are not as many.
inline std::unique_ptr<tpu::Pod> open_pod(const std::string& backend, const std::string& array,
                                          unsigned chips, std::size_t memory_bytes,
                                          const tpu::LinkTiming& timing,
                                          const std::string& chips_given) {
  if (backend != kBackendModel && !tpu::linked_simulation()) {
    throw BadInput(fmt::format("--backend {}: {}", backend, kNoSimulation));
  }
  const HardwareConfig config = config_named(array);
  if (config.link_lanes == 0) {
    throw BadInput(fmt::format(
        "--array {} has no inter-chip links; a pod needs a core with them (tpu info)", array));
  }
  if (backend == kBackendModel) return tpu::make_model_pod(config, chips, memory_bytes);
  require_rtl_model(config, backend);
  if (backend == kBackendRtl) {
    return tpu::linked_simulation()->open_pod(config, chips, memory_bytes, timing);
  }
  std::unique_ptr<tpu::Pod> pod;
  try {
    pod = tpu::linked_simulation()->open_mpi_pod(config, memory_bytes, timing);
  } catch (const std::invalid_argument& error) {
    throw BadInput(fmt::format("--backend mpi: {}", error.what()));
  }
  if (pod->size() != chips) {
    throw BadInput(fmt::format("{} but {} MPI ranks run: start it with mpirun -np {}",
                               chips_given, pod->size(), chips));
  }
  return pod;
}

// The multiply-accumulates the first `completed` instructions count as useful: k_valid x n_valid
// per row of each MATMUL iteration, as the USEFUL_MACS counter counts them. A program runs
// straight through, so the completed instructions are the first ones.
inline std::uint64_t useful_macs(const std::vector<Instruction>& program, std::uint64_t completed) {
  std::uint64_t macs = 0;
  for (std::uint64_t pc = 0; pc < std::min<std::uint64_t>(completed, program.size()); ++pc) {
    const Instruction& in = program[pc];
    if (in.opcode() != tpu::isa::Opcode::Matmul) continue;
    macs += std::uint64_t{in.count()} * in.rows() * in.k_valid() * in.n_valid();
  }
  return macs;
}

inline double percent(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

// `ideal_macs` are the multiply-accumulates the work needs; at dim x dim per cycle they give the
// cycles a perfect array would take.
inline void print_rtl_stats(const tpu::Counters& counters, unsigned dim, std::uint64_t ideal_macs) {
  const std::uint64_t cycles = counters[tpu::regs::kCntCyclesIndex];
  const std::uint64_t peak_per_cycle = std::uint64_t{dim} * dim;
  const double ideal_cycles = static_cast<double>(ideal_macs) / static_cast<double>(peak_per_cycle);
  fmt::print("cycles        {}\n", cycles);
  fmt::print("ideal cycles  {:.2f} ({} MACs at {} per cycle)\n", ideal_cycles, ideal_macs,
             peak_per_cycle);
  fmt::print("utilisation   {:.2f} %\n\n", percent(ideal_cycles, static_cast<double>(cycles)));

  std::size_t name_width = std::string_view("counter").size();
  std::size_t value_width = std::string_view("value").size();
  for (std::size_t c = 0; c < counters.size(); ++c) {
    name_width = std::max(name_width, std::strlen(tpu::regs::kCounters[c].name));
    value_width = std::max(value_width, fmt::formatted_size("{}", counters[c]));
  }
  fmt::print("{:<{}}  {:>{}}  {:>8}\n", "counter", name_width, "value", value_width, "share");
  const std::size_t useful = tpu::regs::kCntUsefulMacsIndex;
  for (std::size_t c = 0; c < counters.size(); ++c) {
    // USEFUL_MACS counts MACs, not cycles: its share is of the array's peak.
    const bool macs = c == useful;
    const double whole = static_cast<double>(macs ? cycles * peak_per_cycle : cycles);
    fmt::print("{:<{}}  {:>{}}  {:>6.2f} % of {}\n", tpu::regs::kCounters[c].name, name_width,
               counters[c], value_width, percent(static_cast<double>(counters[c]), whole),
               macs ? "peak MACs" : "cycles");
  }
}

// The most memory this process has held (VmHWM of /proc/self/status), in MiB; 0 where the
// system does not say.
inline double peak_memory_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0.0;
}

inline void print_stats(const RunResult& result, const tpu::Backend& backend,
                        const std::vector<Instruction>& program, std::uint64_t ideal_macs) {
  if (result.counters) {
    print_rtl_stats(*result.counters, backend.config().dim, ideal_macs);
    return;
  }
  fmt::print("instructions  {}\n", result.instructions);
  fmt::print("useful MACs   {}\n", useful_macs(program, result.instructions));
}

// Runs of a program that gives the same results each time (tpu gemm's) for --time on the
// functional model, the first one's result used: a run in a warm cache is the model's speed.
inline constexpr int kTimedRuns = 3;

// --time: the functional model's run on the host (wall-clock, so it differs from run to run),
// and the tool's peak memory; nothing for another backend. With `repeats` (the seconds of the
// same program's later runs), the best of all, the first beside it.
inline void print_model_time(const RunResult& result, const tpu::Backend& backend,
                             const std::vector<Instruction>& program,
                             const std::vector<double>& repeats = {}) {
  const auto* model = dynamic_cast<const tpu::FunctionalModel*>(&backend);
  if (model == nullptr) return;
  const double macs = static_cast<double>(useful_macs(program, result.instructions));
  double seconds = result.host_seconds;
  for (const double later : repeats) seconds = std::min(seconds, later);
  const std::string runs = repeats.empty()
                               ? ""
                               : fmt::format("; the best of {} runs, the first {:.6f} s",
                                             repeats.size() + 1, result.host_seconds);
  fmt::print("run time      {:.6f} s on the host ({:.2f} GMAC/s; {} path, {} thread{}{})\n",
             seconds, seconds > 0 ? macs / seconds / 1e9 : 0.0,
             tpu::detail::fold_path_name(model->fold_path()), model->fold_threads(),
             model->fold_threads() == 1 ? "" : "s", runs);
  fmt::print("peak memory   {:.0f} MiB (the tool's, operands and results included)\n",
             peak_memory_mib());
}

inline int report_core_stop(const RunResult& result, const tpu::Backend& backend) {
  fmt::print(stderr, "tpu: core stopped: {} at instruction {} ({})\n",
             tpu::regs::error_name(result.error), result.error_pc,
             tpu::regs::error_doc(result.error));
  // The functional model also knows which field or row was wrong.
  if (const auto* model = dynamic_cast<const tpu::FunctionalModel*>(&backend)) {
    if (!model->error_detail().empty()) fmt::print(stderr, "tpu: {}\n", model->error_detail());
  }
  return kExitCoreError;
}

inline int report_bad_input(std::string message) {
  // One line, whatever the message: scripts read the first line of stderr.
  std::replace(message.begin(), message.end(), '\n', ' ');
  fmt::print(stderr, "tpu: {}\n", message);
  return kExitBadInput;
}

// Help footers, wrapped by hand: CLI11 prints them as they are.
constexpr const char* kExitStatusHelp =
    "Exit status: 0 success, 1 the core stopped with an error, 2 bad input (one\n"
    "line on stderr, no output file written), 3 the simulation itself failed,\n"
    "4 the board did not answer as it should (serial).";

}  // namespace tpu::tool
