// `make sim`, second part: the regression of the programmable core. Compiles
// GEMMs of many shapes, with C, bias and every activation function, and on
// cores with the int8 datapath int8 GEMMs raw (Q-MAC) and requantised (Q-REQ);
// on cores with a vector unit, programs of ELTWISE in each of its forms. Runs
// each on the RTL (tpu_top under Verilator) and on the functional model,
// checks both bit for bit against the reference computation (the host's own
// for ELTWISE), and prints one row per case with the RTL's cycle counters.
#include <fmt/core.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>

#include "backends/rtl_backend.hpp"
#include "backends/top_model.hpp"
#include "harness/case_selection.hpp"
#include "oracle/eltwise.hpp"
#include "oracle/expression.hpp"
#include "oracle/random_matrices.hpp"
#include "tpu/compiler.hpp"
#include "tpu/cycle_model.hpp"
#include "tpu/depthwise.hpp"
#include "tpu/elementwise.hpp"
#include "tpu/layernorm.hpp"
#include "tpu/model.hpp"
#include "tpu/move.hpp"
#include "tpu/numerics/quant.hpp"
#include "tpu/pool.hpp"
#include "tpu/program.hpp"
#include "tpu/quant_add.hpp"
#include "tpu/quant_convert.hpp"
#include "tpu/softmax.hpp"
#include "tpu/vector_expression.hpp"

namespace {

namespace isa = tpu::isa;
namespace oracle = tpu::oracle;
namespace num = tpu::num;
using tpu::GemmSpec;
using tpu::HardwareConfig;
using tpu::OutType;

struct Operands {
  num::MatrixBf16 a, b;
  num::MatrixFp32 c;
  std::vector<num::fp32_t> bias;
  // int8 mode (GemmSpec::in == InType::Int8).
  num::MatrixI8 a8, b8;
  num::MatrixI32 c32;
  tpu::RequantColumns requant;
};

// One case as it runs: its inputs (the program among them) into a backend's host memory, the
// 32-bit patterns of its results read back, and what they must be.
struct Job {
  std::uint32_t prog_addr = 0, count = 0;
  std::size_t memory_bytes = 0;
  std::function<void(tpu::HostMemory&)> write_inputs;
  std::function<std::vector<num::fp32_t>(const tpu::HostMemory&)> results;
  std::vector<num::fp32_t> want;
  std::string shape, options;  // for the table
  // The cycles of the work at full use of the array; for the vector unit's cases, its busy
  // cycles as the cycle model has them (which the RTL's VECTOR_BUSY equals).
  double ideal_cycles = 0;
};

double vector_busy_cycles(const HardwareConfig& config,
                          const std::vector<isa::Instruction>& program) {
  double cycles = 0;
  for (const isa::Instruction& in : program) {
    if (in.opcode() == isa::Opcode::Eltwise) cycles += tpu::eltwise_cycles(config, in);
  }
  return cycles;
}

// The job of a planned vector program (softmax, elementwise, pooling, depthwise, layer norm):
// where its program lies, the memory it takes, and the vector unit's busy cycles as the ideal.
template <typename Plan>
Job vector_plan_job(const HardwareConfig& config, const Plan& plan) {
  Job job;
  job.prog_addr = plan.prog_addr;
  job.count = static_cast<std::uint32_t>(plan.program.size());
  job.memory_bytes = plan.memory_bytes;
  job.ideal_cycles = vector_busy_cycles(config, plan.program);
  return job;
}

struct Case {
  std::string name;
  // Draws the operands for one array configuration and plans the case.
  std::function<Job(const HardwareConfig&, oracle::OperandRng&)> make;
  bool vector = false;  // needs the vector unit (ELTWISE, its functions): only on cores with one
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

// int8 operands: values uniform in [lo, hi]; C (if any) uniform over int32.
Operands int8_operands(oracle::OperandRng& rng, const GemmSpec& s, int lo = -128, int hi = 127) {
  Operands o;
  const auto fill = [&](num::MatrixI8& m, std::uint32_t rows, std::uint32_t cols) {
    m = num::MatrixI8(rows, cols);
    for (auto& v : m.data) v = static_cast<std::int8_t>(rng.uniform(0, hi - lo) + lo);
  };
  fill(o.a8, s.m, s.k);
  fill(o.b8, s.k, s.n);
  if (s.has_c) {
    o.c32 = num::MatrixI32(s.m, s.n);
    for (auto& v : o.c32.data) v = static_cast<std::int32_t>(rng.uniform(0, 0xFFFFFFFFu));
  }
  return o;
}

// Q-REQ's columns: multipliers over their whole range (0 and both ends included), shifts of
// both signs (the extremes included), biases anywhere in int32.
void random_requant(oracle::OperandRng& rng, std::uint32_t n, tpu::RequantColumns& q) {
  constexpr std::int64_t kMinMultiplier = std::int64_t{1} << 30;
  constexpr std::int64_t kMaxMultiplier = (std::int64_t{1} << 31) - 1;
  for (std::uint32_t j = 0; j < n; ++j) {
    const std::uint64_t pick = rng.uniform(0, 9);
    const std::int64_t m =
        pick == 0   ? 0
        : pick == 1 ? kMinMultiplier
        : pick == 2 ? kMaxMultiplier
                    : static_cast<std::int64_t>(rng.uniform(kMinMultiplier, kMaxMultiplier));
    const std::uint64_t shift_pick = rng.uniform(0, 5);
    const int shift = shift_pick == 0   ? -31
                      : shift_pick == 1 ? 30
                                        : static_cast<int>(rng.uniform(0, 61)) - 31;
    q.multiplier.push_back(static_cast<std::int32_t>(m));
    q.shift.push_back(shift);
    q.bias.push_back(static_cast<std::int32_t>(rng.uniform(0, 0xFFFFFFFFu)));
  }
}

GemmSpec shape(std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  GemmSpec s;
  s.m = m;
  s.k = k;
  s.n = n;
  return s;
}

std::string options_of(const GemmSpec& s);

// A GEMM case: compiled by plan_gemm, expected from the reference GEMM.
Job gemm_job(const HardwareConfig& config, const GemmSpec& spec, const Operands& o) {
  const tpu::GemmPlan gemm = tpu::plan_gemm(config, spec);
  Job job;
  job.prog_addr = gemm.prog_addr;
  job.count = static_cast<std::uint32_t>(gemm.program.size());
  job.memory_bytes = gemm.memory_bytes;
  // The same inputs into either backend's memory, and its results, in either mode, as the
  // 32-bit patterns the reference gives.
  // B given transposed (READ_WEIGHTS T) goes in as its transpose's rows.
  const num::MatrixI8 b8 = spec.b_transposed ? num::transposed(o.b8) : o.b8;
  const num::MatrixBf16 b = spec.b_transposed ? num::transposed(o.b) : o.b;
  job.write_inputs = [gemm, spec, o, b8, b](tpu::HostMemory& memory) {
    if (spec.int8()) {
      tpu::write_gemm_inputs(gemm, memory, o.a8, b8, spec.has_c ? &o.c32 : nullptr,
                             spec.out == OutType::Int8 ? &o.requant : nullptr);
    } else {
      tpu::write_gemm_inputs(gemm, memory, o.a, b, spec.has_c ? &o.c : nullptr,
                             spec.has_bias ? &o.bias : nullptr);
    }
  };
  job.results = [gemm, spec](const tpu::HostMemory& memory) {
    if (!spec.int8()) return tpu::read_gemm_output(gemm, memory).data;
    const auto ints = tpu::read_gemm_output_int(gemm, memory).data;
    return std::vector<num::fp32_t>(ints.begin(), ints.end());
  };
  if (spec.int8()) {
    const auto ints = tpu::reference_gemm(spec, o.a8, o.b8, spec.has_c ? &o.c32 : nullptr,
                                          spec.out == OutType::Int8 ? &o.requant : nullptr)
                          .data;
    job.want.assign(ints.begin(), ints.end());
  } else {
    job.want = tpu::reference_gemm(spec, o.a, o.b, spec.has_c ? &o.c : nullptr,
                                   spec.has_bias ? &o.bias : nullptr)
                   .data;
  }
  job.shape = fmt::format("{}x{}x{}", spec.m, spec.k, spec.n);
  job.options = options_of(spec);
  // Dim x Dim multiply-adds a cycle on the array; one on the sequential core.
  const double macs_per_cycle = config.sequential ? 1.0 : double(config.dim) * config.dim;
  job.ideal_cycles = double(spec.m) * spec.k * spec.n / macs_per_cycle;
  return job;
}

// A GEMM case from a function that draws its spec and operands.
Case gemm_case(
    std::string name,
    std::function<std::pair<GemmSpec, Operands>(const HardwareConfig&, oracle::OperandRng&)> draw,
    bool vector = false) {
  return {std::move(name),
          [draw](const HardwareConfig& c, oracle::OperandRng& rng) {
            const auto [spec, o] = draw(c, rng);
            return gemm_job(c, spec, o);
          },
          vector};
}

// ELTWISE in each of its forms on random and special values: every operation lane by lane
// against a row per row and against a broadcast row, and folded along the row, fp32 (A from the
// accumulators or, widened from bf16, the unified buffer) or int32 (I32). Each result row is
// written to the host and checked against the host's own arithmetic (oracle::eltwise_lane).
Job vector_job(const HardwareConfig& config, oracle::OperandRng& rng, bool int32) {
  const unsigned d = config.dim;
  const std::uint32_t rows = 2 * d + 1;  // rows of A and of B
  const std::uint32_t row_bytes = 4 * d;
  std::vector<num::fp32_t> a(rows * d), b(rows * d);
  std::vector<num::bf16_t> a_ub(rows * d);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a_ub[i] = rng.bf16();
    a[i] = int32 ? static_cast<num::fp32_t>(rng.uniform(0, 0xFFFFFFFFu)) : rng.fp32();
    b[i] = int32 ? static_cast<num::fp32_t>(rng.uniform(0, 0xFFFFFFFFu)) : rng.fp32();
  }
  // Host memory: A, B, A's bf16 rows (each padded to the bus's alignment), then the results,
  // then the program.
  const std::uint32_t ub_stride = std::max(2 * d, config.bus_bytes);
  std::vector<num::bf16_t> a_ub_rows(rows * ub_stride / 2);
  for (std::uint32_t r = 0; r < rows; ++r) {
    std::copy_n(&a_ub[r * d], d, &a_ub_rows[r * ub_stride / 2]);
  }
  constexpr std::uint32_t a_addr = 0;
  const std::uint32_t b_addr = rows * row_bytes, ub_addr = 2 * rows * row_bytes;
  const std::uint32_t out_addr = ub_addr + rows * ub_stride;

  struct Form {
    isa::VectorOp op;
    bool row, lanes, ub;
  };
  std::vector<Form> forms;
  for (unsigned op = 0; op < isa::kVectorOpCount; ++op) {
    const auto vop = static_cast<isa::VectorOp>(op);
    forms.push_back({vop, false, false, false});
    forms.push_back({vop, true, false, false});
    forms.push_back({vop, false, true, false});
    if (!int32) forms.push_back({vop, false, false, true});
  }

  isa::ProgramBuilder p(config);
  isa::ReadHostArgs load;
  load.acc = true;
  load.rows = rows;
  load.host_addr = a_addr;
  load.host_stride = row_bytes;
  p.read_host(load);
  load.addr_b = rows;
  load.host_addr = b_addr;
  p.read_host(load);
  isa::ReadHostArgs load_ub;
  load_ub.rows = rows;
  load_ub.host_addr = ub_addr;
  load_ub.host_stride = ub_stride;
  p.read_host(load_ub);
  std::vector<num::fp32_t> a_widened(a_ub.size());  // A's bf16 values as the lanes read them
  std::transform(a_ub.begin(), a_ub.end(), a_widened.begin(), num::bf16_to_fp32);
  std::vector<num::fp32_t> want;
  for (std::size_t f = 0; f < forms.size(); ++f) {
    const Form& form = forms[f];
    // Two result regions in turn after A and B: every form's rows within the smallest core's
    // accumulators, each region written again once its rows are stored.
    const std::uint32_t out_row = (2 + static_cast<std::uint32_t>(f % 2)) * rows;
    isa::EltwiseArgs e;
    e.op = form.op;
    e.int32 = int32;
    e.row = form.row;
    e.lanes = form.lanes;
    e.ub = form.ub;
    e.rows = rows;
    e.addr_b = out_row;
    e.bias_addr = rows;
    p.eltwise(e);
    const std::vector<num::fp32_t> rows_want = oracle::eltwise_rows(
        form.op, int32, form.lanes, form.row, form.ub ? a_widened : a, b, rows, d);
    want.insert(want.end(), rows_want.begin(), rows_want.end());
    isa::WriteHostArgs store;
    store.acc = true;
    store.rows = rows;
    store.addr_a = out_row;
    store.host_addr = static_cast<std::uint32_t>(out_addr + f * rows * row_bytes);
    store.host_stride = row_bytes;
    p.write_host(store);
  }
  p.halt();

  Job job;
  const std::uint32_t results_bytes = static_cast<std::uint32_t>(forms.size()) * rows * row_bytes;
  const std::uint32_t prog_addr = (out_addr + results_bytes + 63) / 64 * 64;  // instructions align
  job.prog_addr = prog_addr;
  job.count = static_cast<std::uint32_t>(p.size());
  job.memory_bytes = prog_addr + p.size() * isa::kInstrBytes;
  job.write_inputs = [a, b, a_ub_rows, b_addr, ub_addr, prog_addr,
                      program = p.bytes()](tpu::HostMemory& memory) {
    memory.write_array(a_addr, a);
    memory.write_array(b_addr, b);
    memory.write_array(ub_addr, a_ub_rows);
    memory.write_array(prog_addr, program);
  };
  job.results = [out_addr, results_bytes](const tpu::HostMemory& memory) {
    return memory.read_array<num::fp32_t>(out_addr, results_bytes / 4);
  };
  job.want = std::move(want);
  job.shape = fmt::format("{}x{}", rows, d);
  job.options = fmt::format("eltwise {} x{}", int32 ? "int32" : "fp32", forms.size());
  job.ideal_cycles = vector_busy_cycles(config, p.instructions());
  return job;
}

// Softmax along rows (plan_softmax: ELTWISE folds and row operations, ACTIVATE exp and recip)
// of rows of 2.5 array rows, against reference_softmax.
Job softmax_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  const std::uint32_t rows = config.dim + 3, length = 5 * config.dim / 2;
  const tpu::SoftmaxPlan plan = tpu::plan_softmax(config, rows, length);
  std::vector<num::fp32_t> x(std::size_t{rows} * length);
  for (num::fp32_t& v : x) v = rng.fp32();
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, x](tpu::HostMemory& memory) {
    tpu::write_softmax_inputs(plan, memory, x);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return tpu::read_softmax_output(plan, memory);
  };
  job.want = tpu::reference_softmax(config, rows, length, x);
  job.shape = fmt::format("{}x{}", rows, length);
  job.options = "softmax";
  return job;
}

// Elementwise operators (plan_elementwise): a residual add and its relu over rows of the array's
// width in overlapping blocks, against oracle::elementwise_values.
Job residual_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::ElementwiseSpec spec;
  spec.op = tpu::isa::VectorOp::Add;
  spec.func = tpu::isa::Func::Relu;
  spec.size = spec.a_period = spec.b_period = std::uint64_t{config.dim} * 8 * config.dim;
  const tpu::ElementwisePlan plan = tpu::plan_elementwise(config, spec);
  std::vector<num::fp32_t> a(spec.size), b(spec.size);
  for (num::fp32_t& v : a) v = rng.fp32();
  for (num::fp32_t& v : b) v = rng.fp32();
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, a, b](tpu::HostMemory& memory) {
    tpu::write_elementwise_inputs(plan, memory, a, b);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return tpu::read_elementwise_output(plan, memory);
  };
  job.want = oracle::elementwise_values(spec, a, b);
  job.shape = fmt::format("{}x{}", plan.rows, config.dim);
  job.options = "add relu";
  return job;
}

// An expression of the vector unit (plan_expression): an LSTM cell's gates, with peepholes and a
// clip, over 64 rows of 2.5 array rows, against oracle::expression_values (H, then C).
Job lstm_cell_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  const std::uint32_t length = 5 * config.dim / 2;
  const tpu::ExpressionBuilder e = oracle::lstm_cell_expression(rng, 64, length, 3.0f);
  const tpu::ExpressionPlan plan = tpu::plan_expression(config, e.spec());
  Job job = vector_plan_job(config, plan);
  const auto joined = [](const std::vector<std::vector<num::fp32_t>>& outputs) {
    std::vector<num::fp32_t> values;
    for (const auto& output : outputs) values.insert(values.end(), output.begin(), output.end());
    return values;
  };
  job.write_inputs = [plan, e](tpu::HostMemory& memory) {
    tpu::write_expression_inputs(plan, memory, e.tensors(), e.constants());
  };
  job.results = [plan, joined](const tpu::HostMemory& memory) {
    return joined(tpu::read_expression_outputs(plan, memory));
  };
  job.want = joined(oracle::expression_values(e.spec(), e.tensors(), e.constants()));
  job.shape = fmt::format("64x{}", length);
  job.options = "lstm cell";
  return job;
}

// Pooling (plan_pool) of two images whose channels take one and a half rows of the array,
// against oracle::pool_values: ResNet's max pooling (3 x 3, stride 2, padding 1), or an average
// of 3 x 3 windows at stride 1 that does not count the padding (4, 6 or 9 values a window).
Job pool_job(const HardwareConfig& config, oracle::OperandRng& rng, bool max) {
  tpu::PoolSpec spec;
  spec.max = max;
  spec.batch = 2;
  spec.channels = 3 * config.dim / 2;
  spec.height = spec.width = 8;
  spec.kernel_h = spec.kernel_w = 3;
  spec.stride_h = spec.stride_w = max ? 2 : 1;
  spec.pad_top = spec.pad_left = 1;
  spec.out_h = spec.out_w = max ? 4 : 8;
  spec.count_inside = !max;
  const tpu::PoolPlan plan = tpu::plan_pool(config, spec);
  std::vector<num::fp32_t> x(std::size_t{spec.batch} * spec.channels * spec.height * spec.width);
  for (num::fp32_t& v : x) v = rng.fp32();
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, x](tpu::HostMemory& memory) { tpu::write_pool_input(plan, memory, x); };
  job.results = [plan](const tpu::HostMemory& memory) {
    return tpu::read_pool_output(plan, memory);
  };
  job.want = oracle::pool_values(spec, x);
  job.shape = fmt::format("{}x{}x{}", spec.batch * spec.out_h * spec.out_w, spec.channels, 9);
  job.options = max ? "maxpool" : "avgpool, padding not counted";
  return job;
}

// MobileNet's depthwise convolution, 3 x 3, stride 1, padding 1, with a bias, over two images
// whose channels take one and a half rows of the array.
tpu::DepthwiseSpec mobilenet_depthwise(const HardwareConfig& config) {
  tpu::DepthwiseSpec spec;
  spec.batch = 2;
  spec.channels = 3 * config.dim / 2;
  spec.height = spec.width = spec.out_h = spec.out_w = 6;
  spec.kernel_h = spec.kernel_w = 3;
  spec.pad_top = spec.pad_left = 1;
  spec.bias = true;
  return spec;
}

// Depthwise convolution (plan_depthwise): MobileNet's with its relu6, against
// oracle::depthwise_values (the matrix unit's bits).
Job depthwise_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::DepthwiseSpec spec = mobilenet_depthwise(config);
  spec.func = isa::Func::Relu6;
  const tpu::DepthwisePlan plan = tpu::plan_depthwise(config, spec);
  std::vector<num::fp32_t> x(std::size_t{spec.batch} * spec.channels * spec.height * spec.width),
      w(std::size_t{spec.channels} * spec.taps()), bias(spec.channels);
  for (std::vector<num::fp32_t>* v : {&x, &w, &bias}) {
    for (num::fp32_t& value : *v) value = rng.fp32();
  }
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, x, w, bias](tpu::HostMemory& memory) {
    tpu::write_depthwise_inputs(plan, memory, x, w, bias);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return tpu::read_depthwise_output(plan, memory);
  };
  job.want = oracle::depthwise_values(spec, x, w, bias);
  job.shape = fmt::format("{}x{}x{}", spec.batch * spec.out_h * spec.out_w, spec.channels, 9);
  job.options = "depthwise relu6";
  return job;
}

// int8 values as the 32-bit patterns of their int32 values, as the jobs compare results.
std::vector<num::fp32_t> int8_patterns(const std::vector<std::int8_t>& values) {
  std::vector<num::fp32_t> out;
  for (const std::int8_t v : values) out.push_back(static_cast<num::fp32_t>(std::int32_t{v}));
  return out;
}

// The int8 depthwise convolution (a QLinearConv's): MobileNet's with an input zero point in the
// padding, per-channel multipliers and relu's clamp, against reference_depthwise_int8 (the
// int8 products' bits, tests/sw/test_depthwise.cpp).
Job int8_depthwise_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::DepthwiseSpec spec = mobilenet_depthwise(config);
  spec.int8 = true;
  spec.input_zero_point = -5;
  spec.output_zero_point = spec.clamp_lo = 10;
  const tpu::DepthwisePlan plan = tpu::plan_depthwise(config, spec);
  const oracle::DepthwiseInt8Operands o = oracle::depthwise_int8_operands(rng, spec);
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, o](tpu::HostMemory& memory) {
    tpu::write_depthwise_int8_inputs(plan, memory, o.x, o.w, o.bias, o.multipliers);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return int8_patterns(tpu::read_depthwise_int8_output(plan, memory));
  };
  job.want = int8_patterns(tpu::reference_depthwise_int8(spec, o.x, o.w, o.bias, o.multipliers));
  job.shape = fmt::format("{}x{}x{}", spec.batch * spec.out_h * spec.out_w, spec.channels, 9);
  job.options = "depthwise int8 relu";
  return job;
}

// The int8 addition (plan_quant_add, a residual add of a QDQ model): two tensors of 5.5 array
// rows with zero points and scales of their own and relu's clamp, against reference_quant_add
// (Q-ADD, checked against the exact oracle in tests/ref/test_ref_quant.cpp).
Job int8_add_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::QuantAddSpec spec;
  spec.size = 11 * config.dim / 2;
  spec.params = num::quant_add_params(0.03, -7, 0.05, 12, 0.06, -30, num::QuantActivation::kRelu);
  const tpu::QuantAddPlan plan = tpu::plan_quant_add(config, spec);
  std::vector<std::int8_t> a(spec.size), b(spec.size);
  for (std::vector<std::int8_t>* v : {&a, &b}) {
    for (std::int8_t& value : *v) value = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
  }
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, a, b](tpu::HostMemory& memory) {
    tpu::write_quant_add_inputs(plan, memory, a, b);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return int8_patterns(tpu::read_quant_add_output(plan, memory));
  };
  job.want = int8_patterns(tpu::reference_quant_add(spec, a, b));
  job.shape = fmt::format("{}", spec.size);
  job.options = "int8 add relu";
  return job;
}

// QuantizeLinear on the core (plan_quant_convert, Q-QUANT): 5.5 array rows of values across the
// int8 range and past it, against reference_quantize (checked against the host's product and
// rounding in tests/sw/test_quant_convert.cpp).
Job quantize_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::QuantConvertSpec spec;
  spec.size = 11 * config.dim / 2;
  spec.scale = 0.04f;
  spec.zero_point = -9;
  const tpu::QuantConvertPlan plan = tpu::plan_quant_convert(config, spec);
  std::vector<num::fp32_t> x(spec.size);
  for (num::fp32_t& v : x) {
    v = oracle::as_bits((static_cast<float>(rng.uniform(0, 1200)) - 600.0f) / 64.0f);
  }
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, x](tpu::HostMemory& memory) {
    tpu::write_quant_convert_input(plan, memory, x);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return int8_patterns(tpu::read_quantize_output(plan, memory));
  };
  job.want = int8_patterns(tpu::reference_quantize(spec, x));
  job.shape = fmt::format("{}", spec.size);
  job.options = "quantize";
  return job;
}

// DequantizeLinear on the core (Q-DEQUANT): every int8 value and more, against
// reference_dequantize.
Job dequantize_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::QuantConvertSpec spec;
  spec.direction = tpu::QuantDirection::Dequantize;
  spec.size = std::max<std::uint64_t>(256, 11 * config.dim / 2);
  spec.scale = 0.3f / 7;
  spec.zero_point = static_cast<int>(rng.uniform(0, 255)) - 128;
  const tpu::QuantConvertPlan plan = tpu::plan_quant_convert(config, spec);
  std::vector<std::int8_t> q(spec.size);
  for (std::size_t n = 0; n < q.size(); ++n) q[n] = static_cast<std::int8_t>(n);
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, q](tpu::HostMemory& memory) {
    tpu::write_quant_convert_input(plan, memory, q);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return tpu::read_dequantize_output(plan, memory);
  };
  job.want = tpu::reference_dequantize(spec, q);
  job.shape = fmt::format("{}", spec.size);
  job.options = "dequantize";
  return job;
}

// A move of values (plan_move): a transformer's heads transposed, [tokens, heads, 2 rows] to
// [heads, tokens, 2 rows], against reference_move (the runs as the spec names them).
Job move_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::MoveSpec spec;
  spec.run = 2 * config.dim;
  spec.source_runs = 7 * 3;
  for (std::uint64_t head = 0; head < 3; ++head) {
    for (std::uint64_t token = 0; token < 7; ++token) spec.from.push_back(token * 3 + head);
  }
  const tpu::MovePlan plan = tpu::plan_move(config, spec);
  std::vector<std::uint32_t> x(spec.source_runs * spec.run);
  for (std::uint32_t& v : x) v = rng.fp32();
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, x](tpu::HostMemory& memory) { tpu::write_move_input(plan, memory, x); };
  job.results = [plan](const tpu::HostMemory& memory) {
    return tpu::read_move_output(plan, memory);
  };
  job.want = tpu::reference_move(spec, x);
  job.shape = fmt::format("{}x{}", spec.from.size(), spec.run);
  job.options = "transpose";
  return job;
}

// The int8 average (plan_pool with int8, Q-MEAN): a QDQ model's global mean before its
// classifier, over two images whose channels take one and a half rows of the array, against
// reference_pool_int8 (checked against the exact oracle in tests/sw/test_pool.cpp).
Job int8_mean_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::PoolSpec spec;
  spec.max = false;
  spec.batch = 2;
  spec.channels = 3 * config.dim / 2;
  spec.height = spec.width = spec.kernel_h = spec.kernel_w = 4;
  spec.out_h = spec.out_w = 1;
  spec.count = 16;
  spec.int8 = true;
  spec.mean = num::quant_mean_params(0.04, 9, 0.02, -3, 16, num::QuantActivation::kNone);
  const tpu::PoolPlan plan = tpu::plan_pool(config, spec);
  std::vector<std::int8_t> x(std::size_t{spec.batch} * spec.channels * 16);
  for (std::int8_t& v : x) v = static_cast<std::int8_t>(rng.uniform(0, 255) - 128);
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, x](tpu::HostMemory& memory) {
    tpu::write_pool_int8_input(plan, memory, x);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return int8_patterns(tpu::read_pool_int8_output(plan, memory));
  };
  job.want = int8_patterns(tpu::reference_pool_int8(spec, x));
  job.shape = fmt::format("{}x{}x{}", spec.batch, spec.channels, 16);
  job.options = "int8 mean";
  return job;
}

// Layer normalisation (plan_layernorm) of rows of 2.5 array rows with gamma and beta, against
// reference_layernorm.
Job layernorm_job(const HardwareConfig& config, oracle::OperandRng& rng) {
  tpu::LayerNormSpec spec;
  spec.rows = config.dim + 3;
  spec.length = 5 * config.dim / 2;
  spec.epsilon = 0x3727C5ACu;  // 1e-5
  spec.has_beta = true;
  const tpu::LayerNormPlan plan = tpu::plan_layernorm(config, spec);
  std::vector<num::fp32_t> x(std::size_t{spec.rows} * spec.length), gamma(spec.length),
      beta(spec.length);
  for (num::fp32_t& v : x) v = rng.fp32();
  for (num::fp32_t& v : gamma) v = rng.fp32();
  for (num::fp32_t& v : beta) v = rng.fp32();
  Job job = vector_plan_job(config, plan);
  job.write_inputs = [plan, x, gamma, beta](tpu::HostMemory& memory) {
    tpu::write_layernorm_inputs(plan, memory, x, gamma, beta);
  };
  job.results = [plan](const tpu::HostMemory& memory) {
    return tpu::read_layernorm_output(plan, memory);
  };
  job.want = tpu::reference_layernorm(config, spec, x, gamma, beta);
  job.shape = fmt::format("{}x{}", spec.rows, spec.length);
  job.options = "layernorm";
  return job;
}

std::vector<Case> cases(unsigned random_cases) {
  std::vector<Case> list;
  list.push_back(gemm_case("square", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    const GemmSpec s = shape(2 * c.dim, 2 * c.dim, 2 * c.dim);
    return std::pair{s, operands_for(rng, s, 2)};
  }));
  list.push_back(gemm_case("ragged", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    const GemmSpec s = shape(3 * c.dim - 1, 2 * c.dim + 3, c.dim + 1);
    return std::pair{s, operands_for(rng, s, 2)};
  }));
  list.push_back(gemm_case("long-k", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    const GemmSpec s = shape(c.dim, 8 * c.dim, c.dim);
    return std::pair{s, operands_for(rng, s, 1)};
  }));
  list.push_back(gemm_case("c-and-bias", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    GemmSpec s = shape(2 * c.dim + 1, c.dim + 2, 2 * c.dim - 1);
    s.has_c = s.has_bias = true;
    return std::pair{s, operands_for(rng, s, 5)};
  }));
  list.push_back(gemm_case("adversarial", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    GemmSpec s = shape(c.dim + 3, 2 * c.dim + 1, c.dim + 2);
    s.has_c = true;
    return std::pair{s, operands_for(rng, s, 30, 1, 254)};
  }));
  for (unsigned f = 0; f < tpu::isa::kFuncCount; ++f) {
    const std::string name = tpu::isa::kFuncTable[f].mnemonic;
    list.push_back(gemm_case(
        "act-" + name,
        [f](const HardwareConfig& c, oracle::OperandRng& rng) {
          GemmSpec s = shape(c.dim + 5, c.dim + 1, c.dim);
          s.has_bias = true;
          s.act = static_cast<tpu::isa::Func>(f);
          if (s.act == tpu::isa::Func::Leaky) s.alpha = 0x3C24;  // 0.01
          s.out = OutType::Bf16;
          return std::pair{s, operands_for(rng, s, 2, 118, 130)};
        },
        f >= tpu::isa::kFuncBaseCount));
  }
  // int8 mode, on the cores that have it.
  list.push_back(gemm_case("int8-raw", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    GemmSpec s = shape(3 * c.dim - 1, 2 * c.dim + 3, c.dim + 1);
    s.in = tpu::InType::Int8;
    s.out = OutType::Int32;
    return std::pair{s, int8_operands(rng, s)};
  }));
  list.push_back(gemm_case("int8-c-zp", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    // C over all of int32: sums that wrap both ways.
    GemmSpec s = shape(2 * c.dim + 1, c.dim + 2, 2 * c.dim - 1);
    s.in = tpu::InType::Int8;
    s.out = OutType::Int32;
    s.has_c = true;
    s.input_zero_point = static_cast<int>(rng.uniform(0, 255)) - 128;
    return std::pair{s, int8_operands(rng, s)};
  }));
  list.push_back(gemm_case("int8-min", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    // -128 everywhere: the largest product, 2^14, in every cell.
    GemmSpec s = shape(c.dim + 3, 8 * c.dim, c.dim + 2);
    s.in = tpu::InType::Int8;
    s.out = OutType::Int32;
    s.input_zero_point = 127;
    return std::pair{s, int8_operands(rng, s, -128, -128)};
  }));
  list.push_back(gemm_case("int8-req", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    GemmSpec s = shape(2 * c.dim + 3, 3 * c.dim + 1, 2 * c.dim + 1);
    s.in = tpu::InType::Int8;
    s.out = OutType::Int8;
    s.input_zero_point = static_cast<int>(rng.uniform(0, 255)) - 128;
    s.output_zero_point = static_cast<int>(rng.uniform(0, 255)) - 128;
    Operands o = int8_operands(rng, s);
    random_requant(rng, s.n, o.requant);
    return std::pair{s, o};
  }));
  list.push_back(gemm_case("int8-req-relu", [](const HardwareConfig& c, oracle::OperandRng& rng) {
    // relu (lo = zo) with zo at either end: at 127, y + zo goes beyond int32
    // where y is near its top.
    GemmSpec s = shape(c.dim + 5, c.dim + 1, c.dim);
    s.in = tpu::InType::Int8;
    s.out = OutType::Int8;
    s.output_zero_point = rng.uniform(0, 1) ? 127 : -128;
    s.clamp_lo = s.output_zero_point;
    Operands o = int8_operands(rng, s);
    random_requant(rng, s.n, o.requant);
    return std::pair{s, o};
  }));
  for (unsigned i = 0; i < random_cases; ++i) {
    list.push_back(gemm_case(
        fmt::format("random-{}", i), [](const HardwareConfig& c, oracle::OperandRng& rng) {
          GemmSpec s = shape(static_cast<std::uint32_t>(rng.uniform(1, 3 * c.dim)),
                             static_cast<std::uint32_t>(rng.uniform(1, 3 * c.dim)),
                             static_cast<std::uint32_t>(rng.uniform(1, 3 * c.dim)));
          s.has_c = rng.uniform(0, 1);
          s.has_bias = rng.uniform(0, 1);
          s.act = static_cast<tpu::isa::Func>(rng.uniform(0, tpu::isa::func_count(c) - 1));
          if (s.act == tpu::isa::Func::Leaky) s.alpha = rng.bf16();
          s.out = rng.uniform(0, 1) ? OutType::Bf16 : OutType::Fp32;
          return std::pair{s, operands_for(rng, s, 5)};
        }));
  }
  // The vector unit, on the cores that have one.
  for (const bool int32 : {false, true}) {
    list.push_back({int32 ? "vector-int32" : "vector-fp32",
                    [int32](const HardwareConfig& c, oracle::OperandRng& rng) {
                      return vector_job(c, rng, int32);
                    },
                    true});
  }
  list.push_back({"softmax", softmax_job, true});
  list.push_back({"residual", residual_job, true});
  list.push_back({"lstm-cell", lstm_cell_job, true});
  for (const bool max : {true, false}) {
    list.push_back(
        {max ? "maxpool" : "avgpool",
         [max](const HardwareConfig& c, oracle::OperandRng& rng) { return pool_job(c, rng, max); },
         true});
  }
  list.push_back({"depthwise", depthwise_job, true});
  list.push_back({"int8-depthwise", int8_depthwise_job, true});
  list.push_back({"int8-add", int8_add_job, true});
  list.push_back({"int8-mean", int8_mean_job, true});
  list.push_back({"move", move_job, false});  // READ_HOST and WRITE_HOST only: every core
  // B given as its transpose's rows (READ_WEIGHTS T, attention's K): K over several weight
  // FIFOs' worth of tiles, ending in a partial tile; bf16 with a bias, and int8 requantised.
  list.push_back(gemm_case(
      "weights-t",
      [](const HardwareConfig& c, oracle::OperandRng& rng) {
        GemmSpec s = shape(c.dim + 3, 2 * (c.weight_tiles + 1) * c.dim + 5, c.dim + 2);
        s.b_transposed = true;
        s.has_bias = true;
        s.out = OutType::Bf16;
        return std::pair{s, operands_for(rng, s, 5)};
      },
      true));
  list.push_back(gemm_case(
      "int8-weights-t",
      [](const HardwareConfig& c, oracle::OperandRng& rng) {
        GemmSpec s = shape(c.dim + 3, (c.weight_tiles + 1) * c.dim + 5, c.dim + 2);
        s.b_transposed = true;
        s.in = tpu::InType::Int8;
        s.out = OutType::Int8;
        s.input_zero_point = 3;
        Operands o = int8_operands(rng, s);
        random_requant(rng, s.n, o.requant);
        return std::pair{s, o};
      },
      true));
  list.push_back({"quantize", quantize_job, true});
  list.push_back({"dequantize", dequantize_job, true});
  list.push_back({"layernorm", layernorm_job, true});
  return list;
}

std::string options_of(const GemmSpec& s) {
  const std::string transposed = s.b_transposed ? " B^T" : "";
  if (s.int8()) {
    std::string o = s.out == OutType::Int8 ? "int8 req" : "int32";
    if (s.has_c) o += " +C";
    if (s.input_zero_point != 0) o += " za";
    if (s.out == OutType::Int8 && s.clamp_lo != -128) o += " relu";
    return o + transposed;
  }
  std::string o = (s.out == OutType::Bf16 ? "bf16" : "fp32") + transposed;
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
    for (const Case& c : cases(random_cases)) {
      // Each core runs the modes it has.
      const bool int8_case = c.name.rfind("int8-", 0) == 0;
      if (int8_case ? !config.int8 : !config.float_datapath) continue;
      if (c.vector && config.vector_lanes == 0) continue;
      plan.push_back({config, c, config.name() + "/" + c.name});
    }
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
    Job job;
    std::string note;
    bool pass = false;
    tpu::Counters c{};
    try {
      job = p.test.make(p.config, rng);
      tpu::sim::RtlOptions options;
      options.memory_bytes = job.memory_bytes;
      options.random_init_seed = static_cast<std::uint32_t>(seed);
      options.trace_path = wave;
      tpu::sim::RtlBackend rtl(p.config, options);
      job.write_inputs(rtl.memory());
      const tpu::RunResult r = rtl.run(job.prog_addr, job.count);
      c = r.counters.value_or(tpu::Counters{});

      tpu::FunctionalModel model(p.config, job.memory_bytes);
      job.write_inputs(model.memory());
      const tpu::RunResult mr = model.run(job.prog_addr, job.count);

      const bool rtl_ok = r.ok() && job.results(rtl.memory()) == job.want;
      const bool model_ok = mr.ok() && job.results(model.memory()) == job.want;
      pass = rtl_ok && model_ok;
      note = rtl_ok ? (model_ok ? "rtl = model = reference" : "model differs")
                    : (r.ok() ? "rtl differs" : tpu::regs::error_name(r.error));
    } catch (const std::exception& e) {
      note = e.what();
    }
    if (!pass) ++failures;
    const double cycles = static_cast<double>(std::max<std::uint64_t>(c[0], 1));
    auto share = [&](std::size_t index) { return 100.0 * double(c[index]) / cycles; };
    fmt::print(
        "{:<9} {:<12} {:>11} {:<18} {:>7} {:>7.0f} {:>6.1f} {:>6.1f} {:>6.1f} {:>6.1f} "
        "{:>6.1f}  {:<6} {}\n",
        p.config.name(), p.test.name, job.shape, job.options, c[0], job.ideal_cycles,
        100.0 * job.ideal_cycles / cycles,
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
