// The `tpu` command-line tool: matrix products through the GEMM compiler, the assembler and the
// disassembler, hand-written programs, networks, all-reduce on a pod, and the named core
// configurations. Programs run on the
// Verilator model of tpu_top (backend rtl), on the functional model of the instruction set
// (backend model), or on an FPGA board over its UART (backend serial, docs/fpga.md).
// docs/programming.md shows it at work.
//
// Exit status: 0 success; 1 the core stopped with an error; 2 bad input, reported in one line on
// stderr before any output file is written; 3 the simulation itself failed (an RTL assertion, a
// broken bus protocol, a core that never stops), which is a bug in the RTL or the harness; 4 the
// board did not answer as it should (no board on the port, a broken line, a hang).
#include <fmt/format.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

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
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common.hpp"
#include "net.hpp"
#include "pod.hpp"
#include "tpu/assembler.hpp"
#include "tpu/compiler.hpp"
#include "tpu/graph/compiled.hpp"
#include "tpu/isa.hpp"
#include "tpu/model.hpp"
#include "tpu/npy.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/numerics/gemm.hpp"
#include "tpu/numerics/quant.hpp"

namespace {

using namespace tpu::tool;

// --- tpu gemm ---

struct GemmOptions {
  std::string a_path, b_path, c_path, bias_path, out_path;
  std::string act = "none";
  std::string alpha;
  std::string out_dtype = "fp32";
  std::string dtype = "bf16";
  std::string qmult_path, qshift_path;  // --dtype int8: requantisation
  int zp_a = 0, zp_out = 0;
  Execution execution;
  // Which of the options the command line gave (filled in after parsing).
  bool alpha_given = false, act_given = false, out_dtype_given = false, zp_a_given = false,
       zp_out_given = false;
};

std::vector<std::string> function_names() {
  std::vector<std::string> names;
  for (const tpu::isa::FuncInfo& info : tpu::isa::kFuncTable) names.emplace_back(info.mnemonic);
  return names;
}

// A 2-D operand, named as in OUT = act(A x B + C + bias), with dimensions that fit the compiler.
void check_matrix_shape(const char* name, const std::string& path,
                        const std::vector<std::size_t>& shape) {
  if (shape.size() != 2) {
    throw BadInput(fmt::format("{}: {} must be a matrix (2-D), the file holds shape {}", path, name,
                               shape_text(shape)));
  }
  if (shape[0] > UINT32_MAX || shape[1] > UINT32_MAX) {
    throw BadInput(fmt::format("{}: shape {} is too large", path, shape_text(shape)));
  }
}

tpu::npy::Array read_matrix(const char* name, const std::string& path) {
  tpu::npy::Array array = read_npy(path);
  check_matrix_shape(name, path, array.shape);
  return array;
}

// B must have as many rows as A has columns.
void check_inner_dimension(const GemmOptions& options, const std::vector<std::size_t>& a,
                           const std::vector<std::size_t>& b) {
  if (b[0] != a[1]) {
    throw BadInput(fmt::format("{}: B has shape {}, but A ({}) has shape {}: B needs {} rows",
                               options.b_path, shape_text(b), options.a_path, shape_text(a), a[1]));
  }
}

// C must have the shape of A x B.
void check_c_shape(const std::string& path, const std::vector<std::size_t>& shape,
                   const tpu::GemmSpec& spec) {
  if (shape[0] != spec.m || shape[1] != spec.n) {
    throw BadInput(fmt::format("{}: C has shape {}, A x B has shape ({}, {})", path,
                               shape_text(shape), spec.m, spec.n));
  }
}

// A per-column operand: the n values of a row of the result, as (n,) or (1, n).
void check_columns(const char* name, const std::string& path, const std::vector<std::size_t>& shape,
                   std::size_t values, std::size_t n) {
  const bool row = shape.size() == 1 || shape[0] == 1;
  if (!row || values != n) {
    throw BadInput(
        fmt::format("{}: {} has shape {}; it needs the {} values of a row of the "
                    "result, as ({},) or (1, {})",
                    path, name, shape_text(shape), n, n, n));
  }
}

// float32 values to bf16 with N-OUT, as the matrix unit takes them.
tpu::num::MatrixBf16 to_bf16(const tpu::npy::Array& array) {
  tpu::num::MatrixBf16 matrix(array.rows(), array.cols());
  std::transform(array.data.begin(), array.data.end(), matrix.data.begin(), [](float value) {
    return tpu::num::fp32_to_bf16(tpu::num::float_to_fp32(value));
  });
  return matrix;
}

std::vector<tpu::num::fp32_t> to_fp32_bits(const std::vector<float>& values) {
  std::vector<tpu::num::fp32_t> bits(values.size());
  std::transform(values.begin(), values.end(), bits.begin(), tpu::num::float_to_fp32);
  return bits;
}

tpu::npy::Array to_npy(const tpu::num::MatrixFp32& matrix) {
  tpu::npy::Array array;
  array.shape = {matrix.rows, matrix.cols};
  array.data.resize(matrix.data.size());
  std::transform(matrix.data.begin(), matrix.data.end(), array.data.begin(),
                 tpu::num::fp32_to_float);
  return array;
}

// Compiles the spec for the core the options name, runs it, prints the statistics and, when the
// core reaches HALT, writes OUT with `write`. `execute` places the operands and runs the plan.
template <typename Execute, typename Write>
int compile_and_run(const GemmOptions& options, const tpu::GemmSpec& spec, Execute&& execute,
                    Write&& write) {
  check_output_path(options.out_path);
  Target target = open_target(options.execution);
  tpu::GemmPlan plan;
  try {
    plan = tpu::plan_gemm(target.config, spec);
  } catch (const std::invalid_argument& error) {
    throw BadInput(error.what());
  }
  const std::unique_ptr<tpu::Backend> backend =
      make_backend(options.execution, target, plan.memory_bytes);
  const auto run = execute(plan, *backend);
  if (options.execution.stats) {
    print_stats(run.result, *backend, plan.program, std::uint64_t{spec.m} * spec.k * spec.n);
  }
  if (options.execution.time) {
    // The program again on the functional model: its operands are where the first run read
    // them, and it writes the same results.
    std::vector<double> repeats;
    for (int r = 1; r < kTimedRuns && run.result.ok() &&
                    dynamic_cast<const tpu::FunctionalModel*>(backend.get()) != nullptr;
         ++r) {
      repeats.push_back(
          backend->run(plan.prog_addr, static_cast<std::uint32_t>(plan.program.size()))
              .host_seconds);
    }
    print_model_time(run.result, *backend, plan.program, repeats);
  }
  if (!run.result.ok()) return report_core_stop(run.result, *backend);
  write(run.out);
  return 0;
}

tpu::GemmSpec gemm_spec(const GemmOptions& options) {
  tpu::GemmSpec spec;
  spec.act = tpu::isa::find_func(options.act)->func;  // checked by the parser
  if (options.alpha_given && spec.act != tpu::isa::Func::Leaky) {
    throw BadInput(fmt::format("--alpha is the slope of --act leaky; it means nothing for --act {}",
                               options.act));
  }
  if (spec.act == tpu::isa::Func::Leaky) {
    spec.alpha = parse_bf16(options.alpha_given ? options.alpha : kDefaultLeakySlope, "--alpha");
  }
  spec.out = options.out_dtype == "bf16" ? tpu::OutType::Bf16 : tpu::OutType::Fp32;
  return spec;
}

int run_gemm_bf16(const GemmOptions& options) {
  const std::pair<bool, const char*> int8_only[] = {{!options.qmult_path.empty(), "--qmult"},
                                                    {!options.qshift_path.empty(), "--qshift"},
                                                    {options.zp_a_given, "--zp-a"},
                                                    {options.zp_out_given, "--zp-out"}};
  for (const auto& [given, name] : int8_only) {
    if (given) throw BadInput(fmt::format("{} goes with --dtype int8", name));
  }
  tpu::GemmSpec spec = gemm_spec(options);

  const tpu::npy::Array a = read_matrix("A", options.a_path);
  const tpu::npy::Array b = read_matrix("B", options.b_path);
  check_inner_dimension(options, a.shape, b.shape);
  spec.m = static_cast<std::uint32_t>(a.rows());
  spec.k = static_cast<std::uint32_t>(a.cols());
  spec.n = static_cast<std::uint32_t>(b.cols());
  tpu::num::MatrixFp32 c;
  if (!options.c_path.empty()) {
    const tpu::npy::Array c_array = read_matrix("C", options.c_path);
    check_c_shape(options.c_path, c_array.shape, spec);
    spec.has_c = true;
    c = tpu::num::MatrixFp32(spec.m, spec.n);
    c.data = to_fp32_bits(c_array.data);
  }
  std::vector<tpu::num::fp32_t> bias;
  if (!options.bias_path.empty()) {
    const tpu::npy::Array bias_array = read_npy(options.bias_path);
    check_columns("bias", options.bias_path, bias_array.shape, bias_array.data.size(), spec.n);
    spec.has_bias = true;
    bias = to_fp32_bits(bias_array.data);
  }
  return compile_and_run(
      options, spec,
      [&](const tpu::GemmPlan& plan, tpu::Backend& backend) {
        return tpu::execute_gemm(plan, backend, to_bf16(a), to_bf16(b), spec.has_c ? &c : nullptr,
                                 spec.has_bias ? &bias : nullptr);
      },
      [&](const tpu::num::MatrixFp32& out) { write_npy(options.out_path, to_npy(out)); });
}

// --- tpu gemm --dtype int8 ---

constexpr std::int32_t kMinMultiplier = std::int32_t{1} << 30;  // Q-REQ: M = 0 or >= 2^30

tpu::npy::IntArray read_int_matrix(const char* name, const std::string& path,
                                   tpu::npy::Dtype dtype) {
  tpu::npy::IntArray array = read_int_npy(path, dtype);
  check_matrix_shape(name, path, array.shape);
  return array;
}

template <typename T>
tpu::num::Matrix<T> to_matrix(const tpu::npy::IntArray& array) {
  tpu::num::Matrix<T> matrix(array.rows(), array.cols());
  std::transform(array.data.begin(), array.data.end(), matrix.data.begin(),
                 [](std::int32_t value) { return static_cast<T>(value); });
  return matrix;
}

// An int32 per-column operand of --qmult; every value must pass `valid` (`rule` says what it is
// when one does not).
std::vector<std::int32_t> read_int_columns(const char* option, const std::string& path,
                                           std::size_t n, bool (*valid)(std::int32_t),
                                           const char* rule) {
  const tpu::npy::IntArray array = read_int_npy(path, tpu::npy::Dtype::Int32);
  check_columns(option, path, array.shape, array.data.size(), n);
  for (std::size_t j = 0; j < array.data.size(); ++j) {
    if (!valid(array.data[j])) {
      throw BadInput(fmt::format("{}: {} value {} (column {}) is outside {}", path, option,
                                 array.data[j], j, rule));
    }
  }
  return array.data;
}

// Before any file is read: the options that do not go with --dtype int8, or with each other.
void check_int8_options(const GemmOptions& options) {
  if (options.alpha_given) throw BadInput("--alpha goes with --dtype bf16 (the leaky slope)");
  if (options.out_dtype_given) {
    throw BadInput(
        "--out-dtype goes with --dtype bf16; --dtype int8 writes int32, or int8 "
        "with --qmult");
  }
  if (options.act_given && options.act != "relu") {
    throw BadInput(
        fmt::format("--act {}: --dtype int8 allows only --act relu, with --qmult", options.act));
  }
  const bool requantize = !options.qmult_path.empty();
  if (!requantize) {
    const std::pair<bool, const char*> requant_only[] = {{!options.qshift_path.empty(), "--qshift"},
                                                         {!options.bias_path.empty(), "--bias"},
                                                         {options.act_given, "--act"},
                                                         {options.zp_out_given, "--zp-out"}};
    for (const auto& [given, name] : requant_only) {
      if (given) {
        throw BadInput(fmt::format("{} goes with --qmult (requantisation to int8)", name));
      }
    }
  } else {
    if (options.qshift_path.empty()) throw BadInput("--qmult needs --qshift: a shift a column");
    if (!options.c_path.empty()) {
      throw BadInput("--c does not go with --qmult: the seed C is for int32 results");
    }
  }
}

int run_gemm_int8(const GemmOptions& options) {
  check_int8_options(options);
  using tpu::npy::Dtype;
  const tpu::npy::IntArray a = read_int_matrix("A", options.a_path, Dtype::Int8);
  const tpu::npy::IntArray b = read_int_matrix("B", options.b_path, Dtype::Int8);
  check_inner_dimension(options, a.shape, b.shape);
  tpu::GemmSpec spec;
  spec.in = tpu::InType::Int8;
  spec.m = static_cast<std::uint32_t>(a.rows());
  spec.k = static_cast<std::uint32_t>(a.cols());
  spec.n = static_cast<std::uint32_t>(b.cols());
  spec.input_zero_point = options.zp_a;
  tpu::num::MatrixI32 c;
  if (!options.c_path.empty()) {
    const tpu::npy::IntArray c_array = read_int_matrix("C", options.c_path, Dtype::Int32);
    check_c_shape(options.c_path, c_array.shape, spec);
    spec.has_c = true;
    c = to_matrix<std::int32_t>(c_array);
  }
  tpu::RequantColumns requant;
  const bool requantize = !options.qmult_path.empty();
  if (requantize) {
    spec.out = tpu::OutType::Int8;
    requant.multiplier = read_int_columns(
        "--qmult", options.qmult_path, spec.n,
        [](std::int32_t m) { return m == 0 || m >= kMinMultiplier; }, "0 or [2^30, 2^31 - 1]");
    requant.shift = read_int_columns(
        "--qshift", options.qshift_path, spec.n, [](std::int32_t s) { return s >= -31 && s <= 30; },
        "[-31, 30]");
    requant.bias = options.bias_path.empty() ? std::vector<std::int32_t>(spec.n, 0)
                                             : read_int_columns(
                                                   "--bias", options.bias_path, spec.n,
                                                   [](std::int32_t) { return true; }, "int32");
    spec.output_zero_point = options.zp_out;
    const auto [lo, hi] = tpu::num::clamp_bounds(
        options.act == "relu" ? tpu::num::QuantActivation::kRelu : tpu::num::QuantActivation::kNone,
        options.zp_out, 1.0);  // the scale is only read for relu6
    spec.clamp_lo = lo;
    spec.clamp_hi = hi;
  } else {
    spec.out = tpu::OutType::Int32;
  }
  return compile_and_run(
      options, spec,
      [&](const tpu::GemmPlan& plan, tpu::Backend& backend) {
        return tpu::execute_gemm(plan, backend, to_matrix<std::int8_t>(a),
                                 to_matrix<std::int8_t>(b), spec.has_c ? &c : nullptr,
                                 requantize ? &requant : nullptr);
      },
      [&](const tpu::num::MatrixI32& out) {
        tpu::npy::IntArray array;
        array.shape = {out.rows, out.cols};
        array.dtype = requantize ? Dtype::Int8 : Dtype::Int32;
        array.data = out.data;
        write_int_npy(options.out_path, array);
      });
}

int run_gemm(const GemmOptions& options) {
  check_execution(options.execution);
  return options.dtype == "int8" ? run_gemm_int8(options) : run_gemm_bf16(options);
}

// --- tpu run ---

struct RunOptions {
  std::string program_path;
  std::string prog_addr = "0";
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string memory;
  Execution execution;
};

// Host bytes [begin, end) that something placed in host memory occupies.
struct HostRegion {
  std::string what;
  std::uint64_t begin = 0, end = 0;
};

// --in ADDR=FILE.npy[:bf16]: the values of a float32 .npy, in C order, at ADDR.
struct HostInput {
  HostRegion region;
  std::vector<std::uint8_t> bytes;
};

// --out ADDR=FILE.npy:ROWSxCOLS[:bf16]: ROWS x COLS values read from ADDR after the run.
struct HostOutput {
  HostRegion region;
  std::string path;
  std::size_t rows = 0, cols = 0;
  bool bf16 = false;
};

// Splits "ADDR=REST" of an --in or --out value.
std::pair<std::uint64_t, std::string> split_address(const std::string& spec, const char* option,
                                                    const char* form) {
  const std::size_t equals = spec.find('=');
  if (equals == std::string::npos || equals + 1 == spec.size()) {
    throw BadInput(fmt::format("{} {}: expected {}", option, spec, form));
  }
  const std::uint64_t addr =
      parse_number(std::string_view(spec).substr(0, equals),
                   fmt::format("{} {}: address", option, spec), kHostSpace - 1);
  return {addr, spec.substr(equals + 1)};
}

template <typename T>
void append_le(std::vector<std::uint8_t>& bytes, T value) {
  for (unsigned b = 0; b < sizeof(T); ++b)
    bytes.push_back(static_cast<std::uint8_t>(value >> (8 * b)));
}

HostInput parse_input(const std::string& spec) {
  auto [addr, path] = split_address(spec, "--in", "ADDR=FILE.npy[:bf16]");
  const bool bf16 = take_suffix(path, kBf16Suffix);
  const tpu::npy::Array array = read_npy(path);
  HostInput input;
  for (float value : array.data) {
    const tpu::num::fp32_t bits = tpu::num::float_to_fp32(value);
    if (bf16) {
      append_le(input.bytes, tpu::num::fp32_to_bf16(bits));
    } else {
      append_le(input.bytes, bits);
    }
  }
  input.region = {"--in " + spec, addr, addr + input.bytes.size()};
  return input;
}

HostOutput parse_output(const std::string& spec) {
  constexpr const char* kForm = "ADDR=FILE.npy:ROWSxCOLS[:bf16]";
  auto [addr, rest] = split_address(spec, "--out", kForm);
  HostOutput output;
  output.bf16 = take_suffix(rest, kBf16Suffix);
  const std::size_t colon = rest.rfind(':');
  if (colon == 0 || colon == std::string::npos) {
    throw BadInput(fmt::format("--out {}: expected {}", spec, kForm));
  }
  output.path = rest.substr(0, colon);
  // ROWSxCOLS: the x that separates them is the first one after a 0x prefix of ROWS.
  const std::string_view shape = std::string_view(rest).substr(colon + 1);
  const bool hex_rows = shape.size() > 2 && shape[0] == '0' && (shape[1] == 'x' || shape[1] == 'X');
  const std::size_t times = shape.find_first_of("xX", hex_rows ? 2 : 0);
  if (times == std::string_view::npos) {
    throw BadInput(fmt::format("--out {}: expected {}", spec, kForm));
  }
  const std::string what = fmt::format("--out {}", spec);
  constexpr std::uint64_t kMaxExtent = kHostSpace / 2;
  output.rows = parse_number(shape.substr(0, times), what + ": rows", kMaxExtent);
  output.cols = parse_number(shape.substr(times + 1), what + ": columns", kMaxExtent);
  if (output.rows == 0 || output.cols == 0) {
    throw BadInput(fmt::format("{}: {}x{} is empty", what, output.rows, output.cols));
  }
  const std::uint64_t element_bytes = output.bf16 ? 2 : 4;
  output.region = {what, addr, addr + std::uint64_t{output.rows} * output.cols * element_bytes};
  return output;
}

// Every region must lie in the 32-bit host space, and what the tool writes must not overlap.
void check_regions(const std::vector<HostRegion>& written, const std::vector<HostRegion>& read) {
  for (const std::vector<HostRegion>* regions : {&written, &read}) {
    for (const HostRegion& region : *regions) {
      if (region.end > kHostSpace) {
        throw BadInput(fmt::format("{}: reaches past the 32-bit host address space", region.what));
      }
    }
  }
  for (std::size_t i = 0; i < written.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (written[i].begin < written[j].end && written[j].begin < written[i].end) {
        throw BadInput(fmt::format("{}: bytes 0x{:x}..0x{:x} overlap {} (0x{:x}..0x{:x})",
                                   written[i].what, written[i].begin, written[i].end - 1,
                                   written[j].what, written[j].begin, written[j].end - 1));
      }
    }
  }
}

std::size_t host_memory_size(const RunOptions& options, const std::vector<HostRegion>& written,
                             const std::vector<HostRegion>& read) {
  std::uint64_t needed = 0;
  for (const std::vector<HostRegion>* regions : {&written, &read}) {
    for (const HostRegion& region : *regions) needed = std::max(needed, region.end);
  }
  // A board's memory goes over its line byte by byte: no more than the program needs.
  const bool board = options.execution.backend == kBackendSerial;
  if (options.memory.empty()) return board ? needed : std::max(needed, kDefaultRunMemory);
  const std::uint64_t bytes = parse_number(options.memory, "--memory", kHostSpace);
  if (bytes < needed) {
    throw BadInput(fmt::format("--memory {}: the program, --in and --out need {} bytes",
                               options.memory, needed));
  }
  return bytes;
}

tpu::npy::Array read_output(const HostOutput& output, const tpu::HostMemory& memory) {
  tpu::npy::Array array;
  array.shape = {output.rows, output.cols};
  const std::size_t count = output.rows * output.cols;
  array.data.resize(count);
  if (output.bf16) {
    const auto values = memory.read_array<tpu::num::bf16_t>(output.region.begin, count);
    std::transform(values.begin(), values.end(), array.data.begin(), [](tpu::num::bf16_t value) {
      return tpu::num::fp32_to_float(tpu::num::bf16_to_fp32(value));
    });
  } else {
    const auto values = memory.read_array<tpu::num::fp32_t>(output.region.begin, count);
    std::transform(values.begin(), values.end(), array.data.begin(), tpu::num::fp32_to_float);
  }
  return array;
}

int run_program(const RunOptions& options) {
  check_execution(options.execution);
  const std::vector<Instruction> program = ends_with(options.program_path, ".bin")
                                               ? decode_file(options.program_path)
                                               : assemble_file(options.program_path);
  if (program.empty()) throw BadInput(fmt::format("{}: no instructions", options.program_path));
  const auto prog_addr =
      static_cast<std::uint32_t>(parse_number(options.prog_addr, "--prog-addr", kHostSpace - 1));

  std::vector<HostRegion> written{
      {"the program", prog_addr,
       prog_addr + std::uint64_t{program.size()} * tpu::isa::kInstrBytes}};
  std::vector<HostInput> inputs;
  for (const std::string& spec : options.inputs) {
    inputs.push_back(parse_input(spec));
    written.push_back(inputs.back().region);
  }
  std::vector<HostOutput> outputs;
  std::vector<HostRegion> read;
  for (const std::string& spec : options.outputs) {
    outputs.push_back(parse_output(spec));
    read.push_back(outputs.back().region);
  }
  check_regions(written, read);
  const std::size_t memory_bytes = host_memory_size(options, written, read);
  for (const HostOutput& output : outputs) check_output_path(output.path);

  Target target = open_target(options.execution);
  const std::unique_ptr<tpu::Backend> backend =
      make_backend(options.execution, target, memory_bytes);
  backend->memory().write_array(prog_addr, tpu::isa::encode_program(program));
  for (const HostInput& input : inputs) {
    backend->memory().write_array(input.region.begin, input.bytes);
  }
  const RunResult result = backend->run(prog_addr, static_cast<std::uint32_t>(program.size()));
  if (result.ok()) fmt::print("DONE after {} instructions\n", result.instructions);
  if (options.execution.stats) {
    const std::uint64_t macs = result.counters ? (*result.counters)[tpu::regs::kCntUsefulMacsIndex]
                                               : useful_macs(program, result.instructions);
    print_stats(result, *backend, program, macs);
  }
  if (options.execution.time) print_model_time(result, *backend, program);
  if (!result.ok()) return report_core_stop(result, *backend);
  // Every output is read before any is written, so that nothing is written if one fails.
  std::vector<tpu::npy::Array> arrays;
  for (const HostOutput& output : outputs) arrays.push_back(read_output(output, backend->memory()));
  for (std::size_t o = 0; o < outputs.size(); ++o) write_npy(outputs[o].path, arrays[o]);
  return 0;
}

// --- tpu asm, tpu disasm, tpu info ---

int run_asm(const std::string& source_path, const std::string& output_path) {
  const std::vector<Instruction> program = assemble_file(source_path);
  check_output_path(output_path);
  write_file(output_path, as_text(tpu::isa::encode_program(program)));
  return 0;
}

int run_disasm(const std::string& binary_path, const std::string& output_path) {
  const std::string text =
      tpu::graph::is_compiled_model(binary_path)
          ? compiled_listing(as_bad_input([&] { return tpu::graph::read_compiled(binary_path); }),
                             binary_path)
          : tpu::isa::disassemble(decode_file(binary_path));
  if (output_path.empty()) {
    fmt::print("{}", text);
  } else {
    check_output_path(output_path);
    write_file(output_path, text);
  }
  return 0;
}

struct InfoOptions {
  std::string array;
  Execution execution;  // --port and --baud: describe a board instead
};

// The int8 column of `tpu info`: yes (beside bf16), only (an int8-only core) or -.
const char* int8_text(const HardwareConfig& c) {
  return !c.int8 ? "-" : c.float_datapath ? "yes" : "only";
}

// The vector column of `tpu info`: the vector unit's lanes (ELTWISE; READ_WEIGHTS T too), or -
// for none.
std::string vector_text(const HardwareConfig& c) {
  return c.vector_lanes ? std::to_string(c.vector_lanes) : "-";
}

// The board on --port: its link, its memory and clock, and its core.
int run_board_info(const Execution& execution) {
  const std::unique_ptr<tpu::SerialBackend> board = open_board(execution, 0);
  const tpu::link::BoardInfo& info = board->board();
  const HardwareConfig& c = board->config();
  fmt::print("port          {}\n", board->port().name());
  fmt::print("host link     version {}, payloads of up to {} bytes, {} baud\n", info.version,
             info.max_payload, info.baud);
  fmt::print("clock         {:g} MHz\n", info.clock_hz / 1e6);
  fmt::print("memory        {} bytes\n", info.mem_bytes);
  fmt::print(
      "core          {}: dim {}, mul_stages {}, add_stages {}, act_lanes {}, UB rows {}, "
      "ACC rows {}, bus bytes {}, weight tiles {}, int8 {}, vector lanes {}\n",
      c.name(), c.dim, c.mul_stages, c.add_stages, c.act_lanes, c.ub_depth, c.acc_depth,
      c.bus_bytes, c.weight_tiles, int8_text(c), vector_text(c));
  if (c.sequential) {
    fmt::print(
        "peak          one multiply-add at a time (the sequential core, docs/seq_core.md)\n");
  } else {
    // Two operations (a multiply and an add) per MAC and cycle, in each mode the core has.
    const double peak = 2.0 * c.dim * c.dim * info.clock_hz / 1e9;
    const std::string modes = c.float_datapath && c.int8
                                  ? fmt::format("{:g} GFLOPS bf16, {:g} GOPS int8", peak, peak)
                              : c.float_datapath ? fmt::format("{:g} GFLOPS", peak)
                                                 : fmt::format("{:g} GOPS int8", peak);
    fmt::print("peak          {} ({} MACs a cycle)\n", modes, c.dim * c.dim);
  }
  return 0;
}

int run_info(const InfoOptions& options) {
  if (!options.execution.port.empty()) {
    if (!options.array.empty()) throw BadInput("--array and --port: describe one or the other");
    Execution execution = options.execution;
    execution.backend = kBackendSerial;
    check_execution(execution);
    return run_board_info(execution);
  }
  if (options.execution.baud_given) throw BadInput("--baud goes with --port");
  const std::string& only = options.array;
  // rtl: whether this build has the core's Verilator model (--backend rtl); every core runs on
  // the functional model.
  // vector: the vector unit's lanes (ELTWISE; READ_WEIGHTS T too), - for none.
  fmt::print("{:<13} {:>4} {:>10} {:>10} {:>9} {:>8} {:>8} {:>9} {:>12} {:>10} {:>4} {:>5} {:>6}\n",
             "array", "dim", "mul_stages", "add_stages", "act_lanes", "UB rows", "ACC rows",
             "bus bytes", "weight tiles", "link_lanes", "rtl", "int8", "vector");
  const std::vector<HardwareConfig>& rtl = tpu::core_configs();
  for (const HardwareConfig& c : tpu::model_configs()) {
    if (!only.empty() && c.name() != only) continue;
    const bool has_rtl = tpu::linked_simulation() && std::find(rtl.begin(), rtl.end(), c) != rtl.end();
    fmt::print(
        "{:<13} {:>4} {:>10} {:>10} {:>9} {:>8} {:>8} {:>9} {:>12} {:>10} {:>4} {:>5} {:>6}\n",
        c.name(), c.dim, c.mul_stages, c.add_stages, c.act_lanes, c.ub_depth, c.acc_depth,
        c.bus_bytes, c.weight_tiles, c.link_lanes ? std::to_string(c.link_lanes) : "-",
        has_rtl ? "yes" : "-", int8_text(c), vector_text(c));
  }
  return 0;
}

// asm and disasm run nothing.
constexpr const char* kTranslationExitStatusHelp =
    "Exit status: 0 success, 2 bad input (one line on stderr, no output file\n"
    "written).";

CLI::App* add_gemm_command(CLI::App& app, GemmOptions& gemm) {
  CLI::App* command = app.add_subcommand(
      "gemm", "OUT = act(A x B + C + bias), compiled for the core and run on it");
  command->footer(fmt::format(
      "--dtype bf16: A and B enter the array as bf16 (float32 rounded to nearest\n"
      "even); the sum starts from C (or +0), adds the products in order of k, then\n"
      "the bias, all in fp32 (docs/numerics.md).\n\n"
      "--dtype int8 (a core with the int8 datapath, tpu info): A and B are int8\n"
      "(|i1) .npy files, products exact, sums int32, wrapping (Q-MAC). Without\n"
      "--qmult, OUT is the int32 (<i4) A x B + C - za * colsum(B). With --qmult,\n"
      "OUT is int8 (|i1): each column j requantised (Q-REQ, TensorFlow Lite's\n"
      "rounding) as clamp(y + zo, lo, hi), y = M(j) x (sum + bias(j)) x 2^(s(j) - 31)\n"
      "with za folded into the bias (Q-ZP); lo = -128, or zo with --act relu, and\n"
      "hi = 127. --c, --alpha and --out-dtype are bf16's, or (--c) int32 results'.\n\n{}",
      kExitStatusHelp));
  command->add_option("--a", gemm.a_path, "A, M x K float32 (int8 with --dtype int8)")
      ->required()
      ->type_name("A.npy");
  command->add_option("--b", gemm.b_path, "B, K x N float32 (int8 with --dtype int8)")
      ->required()
      ->type_name("B.npy");
  command
      ->add_option("--out", gemm.out_path,
                   "the result, M x N float32 (--dtype int8: int32, or\n"
                   "int8 with --qmult)")
      ->required()
      ->type_name("OUT.npy");
  command->add_option("--c", gemm.c_path, "C, M x N float32 (int32 with --dtype int8)")
      ->type_name("C.npy");
  command
      ->add_option("--bias", gemm.bias_path,
                   "N float32 values, shape (N,) or (1, N) (--dtype int8:\n"
                   "int32, with --qmult)")
      ->type_name("BIAS.npy");
  command->add_option("--act", gemm.act, "activation function, applied after the bias")
      ->check(CLI::IsMember(function_names()))
      ->type_name("NAME")
      ->capture_default_str();
  command
      ->add_option("--alpha", gemm.alpha,
                   fmt::format("slope of --act leaky below zero, a decimal number\n"
                               "rounded to bf16 (default {})",
                               kDefaultLeakySlope))
      ->type_name("X");
  command
      ->add_option("--out-dtype", gemm.out_dtype,
                   "bf16: the core rounds the results to bf16; OUT holds\n"
                   "them widened to float32")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->type_name("TYPE")
      ->capture_default_str();
  command
      ->add_option("--dtype", gemm.dtype,
                   "the operands: bf16 (float32 files), or int8 (|i1 files,\n"
                   "int32 sums)")
      ->check(CLI::IsMember({"bf16", "int8"}))
      ->type_name("TYPE")
      ->capture_default_str();
  command
      ->add_option("--qmult", gemm.qmult_path,
                   "--dtype int8: requantise to int8 with these N int32\n"
                   "multipliers M, each 0 or in [2^30, 2^31 - 1]")
      ->type_name("M.npy");
  command
      ->add_option("--qshift", gemm.qshift_path,
                   "with --qmult: N int32 shifts s, each in [-31, 30]")
      ->type_name("S.npy");
  command
      ->add_option("--zp-a", gemm.zp_a,
                   "--dtype int8: A's zero point za, in [-128, 127]\n"
                   "(default 0)")
      ->check(CLI::Range(-128, 127))
      ->type_name("ZA");
  command
      ->add_option("--zp-out", gemm.zp_out,
                   "with --qmult: OUT's zero point zo, in [-128, 127]\n"
                   "(default 0)")
      ->check(CLI::Range(-128, 127))
      ->type_name("ZO");
  add_execution_options(*command, gemm.execution);
  return command;
}

CLI::App* add_asm_command(CLI::App& app, std::string& source_path, std::string& output_path) {
  CLI::App* command =
      app.add_subcommand("asm", "assemble a program's text into 32-byte instructions");
  command->footer(fmt::format("The text form is described in sw/include/tpu/assembler.hpp.\n\n{}",
                              kTranslationExitStatusHelp));
  command->add_option("PROGRAM", source_path, "assembly text")->required()->type_name("PROGRAM.s");
  command->add_option("-o,--output", output_path, "the binary program")
      ->required()
      ->type_name("PROGRAM.bin");
  return command;
}

CLI::App* add_disasm_command(CLI::App& app, std::string& binary_path, std::string& output_path) {
  CLI::App* command =
      app.add_subcommand("disasm", "turn 32-byte instructions back into assembly text");
  command->footer(kTranslationExitStatusHelp);
  command
      ->add_option("PROGRAM", binary_path,
                   "binary program, or a compiled model (tpu compile): its memory plan and "
                   "every program, its GEMMs as comments")
      ->required()
      ->type_name("PROGRAM.bin|MODEL.tpu");
  command->add_option("-o,--output", output_path, "the text (default: stdout)")
      ->type_name("PROGRAM.s");
  return command;
}

CLI::App* add_run_command(CLI::App& app, RunOptions& run) {
  CLI::App* command = app.add_subcommand("run", "run a hand-written program");
  command->footer(
      fmt::format("Numbers are decimal or 0x hex. Values go to and come from host memory in C\n"
                  "order, back to back, little-endian: fp32 4 bytes each, bf16 2 bytes each.\n"
                  "Prints DONE and the number of instructions, or how the core stopped; the\n"
                  "--out files are written only after DONE.\n\n{}",
                  kExitStatusHelp));
  command
      ->add_option("PROGRAM", run.program_path,
                   "32-byte instructions if the name ends in .bin,\n"
                   "assembly text otherwise")
      ->required()
      ->type_name("FILE");
  command->add_option("--prog-addr", run.prog_addr, "host address of the program")
      ->type_name("ADDR")
      ->capture_default_str();
  // allow_extra_args(false): one value per --in or --out, so that PROGRAM may follow them.
  command
      ->add_option("--in", run.inputs,
                   "before the run, write the values of a float32 .npy\n"
                   "at ADDR as fp32, or rounded to bf16 (repeatable)")
      ->type_name("ADDR=FILE.npy[:bf16]")
      ->allow_extra_args(false);
  command
      ->add_option("--out", run.outputs,
                   "after the run, read ROWS x COLS fp32 (or bf16) values\n"
                   "at ADDR into a float32 .npy (repeatable)")
      ->type_name("ADDR=FILE.npy:ROWSxCOLS[:bf16]")
      ->allow_extra_args(false);
  command
      ->add_option("--memory", run.memory,
                   fmt::format("host memory size (default: what the program, --in\n"
                               "and --out need, at least {}; with --backend\n"
                               "serial, what they need)",
                               kDefaultRunMemory))
      ->type_name("BYTES");
  add_execution_options(*command, run.execution);
  return command;
}

CLI::App* add_info_command(CLI::App& app, InfoOptions& info) {
  CLI::App* command = app.add_subcommand(
      "info", "list the core configurations, or describe the board on --port");
  command->add_option("--array", info.array, "only this configuration")
      ->check(CLI::IsMember(array_names()))
      ->type_name("NAME");
  command
      ->add_option("--port", info.execution.port,
                   "the board's serial port (/dev/ttyUSB0), or sim for the\n"
                   "board's RTL under Verilator")
      ->type_name("PORT");
  command->add_option("--baud", info.execution.baud, "the line's bit rate, as the bitstream's")
      ->check(CLI::Range(1u, 100'000'000u))
      ->type_name("N")
      ->capture_default_str();
  return command;
}

// CLI11 reports an unknown subcommand as a missing one; this names it.
int report_missing_subcommand(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(command->get_name());
  }
  const std::string expected =
      fmt::format("expected a subcommand: {} (tpu --help)", fmt::join(names, ", "));
  if (argc == 1) return report_bad_input(expected);
  const bool option = argv[1][0] == '-';
  return report_bad_input(
      fmt::format("unknown {} '{}'; {}", option ? "option" : "subcommand", argv[1], expected));
}

int run_tool(int argc, char** argv) {
  CLI::App app{
      "Runs matrix products and programs on the TPU core: on the Verilator model\n"
      "of its RTL, on the functional model of its instruction set, or on an FPGA\n"
      "board.",
      "tpu"};
  app.require_subcommand(1);
  GemmOptions gemm;
  CLI::App* gemm_command = add_gemm_command(app, gemm);
  std::string asm_source, asm_output;
  CLI::App* asm_command = add_asm_command(app, asm_source, asm_output);
  std::string disasm_binary, disasm_output;
  CLI::App* disasm_command = add_disasm_command(app, disasm_binary, disasm_output);
  RunOptions run;
  CLI::App* run_command = add_run_command(app, run);
  InfoOptions info;
  CLI::App* info_command = add_info_command(app, info);
  tpu::tool::TrainOptions train;
  CLI::App* train_command = add_train_command(app, train);
  tpu::tool::EvalOptions eval;
  CLI::App* eval_command = add_eval_command(app, eval);
  tpu::tool::QuantizeOptions quantize;
  CLI::App* quantize_command = add_quantize_command(app, quantize);
  tpu::tool::ImportOptions import_options;
  CLI::App* import_command = add_import_command(app, import_options);
  tpu::tool::InferOptions infer;
  CLI::App* infer_command = add_infer_command(app, infer);
  tpu::tool::CompileOptions compile;
  CLI::App* compile_command = add_compile_command(app, compile);
  tpu::tool::AllreduceOptions allreduce;
  CLI::App* allreduce_command = add_allreduce_command(app, allreduce);
  app.footer(
      fmt::format("`tpu SUBCOMMAND --help` describes each subcommand; docs/programming.md\n"
                  "shows them at work.\n\n{}",
                  kExitStatusHelp));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help
    if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&error)) {
      return report_missing_subcommand(app, argc, argv);
    }
    return report_bad_input(error.what());
  }

  note_given_options(*gemm_command, gemm.execution);
  gemm.alpha_given = gemm_command->count("--alpha") > 0;
  gemm.act_given = gemm_command->count("--act") > 0;
  gemm.out_dtype_given = gemm_command->count("--out-dtype") > 0;
  gemm.zp_a_given = gemm_command->count("--zp-a") > 0;
  gemm.zp_out_given = gemm_command->count("--zp-out") > 0;
  note_given_options(*run_command, run.execution);
  info.execution.baud_given = info_command->count("--baud") > 0;
  infer.array_given = infer_command->count("--array") > 0;
  infer.batch_given = infer_command->count("--batch") > 0;
  try {
    if (gemm_command->parsed()) return run_gemm(gemm);
    if (asm_command->parsed()) return run_asm(asm_source, asm_output);
    if (disasm_command->parsed()) return run_disasm(disasm_binary, disasm_output);
    if (run_command->parsed()) return run_program(run);
    if (train_command->parsed()) return run_train(train);
    if (eval_command->parsed()) return run_eval(eval);
    if (quantize_command->parsed()) return run_quantize(quantize);
    if (import_command->parsed()) return run_import(import_options);
    if (infer_command->parsed()) return run_infer(infer);
    if (compile_command->parsed()) return run_compile(compile);
    if (allreduce_command->parsed()) return run_allreduce_command(allreduce);
    return run_info(info);
  } catch (const BadInput& error) {
    return report_bad_input(error.what());
  } catch (const tpu::link::LinkError& error) {
    fmt::print(stderr, "tpu: {}\n", error.what());
    return kExitLinkFailed;
  }
}

}  // namespace

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // A network's tensors, its im2col rows and its operands come and go at every node, many far
  // larger than glibc's threshold for mapping a block of its own; mapped afresh each time, every
  // page is a fault the kernel zeroes (40 % of a VGG-19 run on the model backend). From the
  // heap, and the heap not trimmed, they reuse the same pages: 5.9 against 4.0 s a run of four
  // 224 x 224 images, 2.2 against 2.6 GiB at the peak (docs/perf/README.md).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
  try {
    return run_tool(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "tpu: simulation failed: {}\n", error.what());
    return kExitSimulationFailed;
  }
}
