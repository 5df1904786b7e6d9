#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>

#include "ops.hpp"
#include "resident_weights.hpp"
#include "tpu/compiler.hpp"
#include "tpu/cycle_model.hpp"
#include "tpu/elementwise.hpp"
#include "tpu/layernorm.hpp"
#include "tpu/nn.hpp"
#include "tpu/pool.hpp"
#include "tpu/softmax.hpp"

namespace tpu::graph::ops {

void fail(const Node& node, const std::string& what) {
  throw std::runtime_error(node.label() + ": " + what);
}

const Tensor& need(const Node& node, const Inputs& inputs, std::size_t i) {
  if (i >= inputs.size() || !inputs[i]) fail(node, "input " + std::to_string(i) + " missing");
  return *inputs[i];
}

const Tensor& need_float(const Node& node, const Inputs& inputs, std::size_t i) {
  const Tensor& t = need(node, inputs, i);
  if (!t.is_float()) {
    fail(node, "input " + std::to_string(i) + " is " + dtype_name(t.dtype) + ", not float32");
  }
  return t;
}

std::size_t axis_index(const Node& node, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    fail(node,
         "axis " + std::to_string(axis) + " outside a rank-" + std::to_string(rank) + " tensor");
  }
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::vector<std::int64_t> int_values(const Tensor& t) {
  std::vector<std::int64_t> values(t.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = t.int_value(i);
  return values;
}

std::vector<std::size_t> strides_of(const Shape& shape) {
  std::vector<std::size_t> strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * static_cast<std::size_t>(shape[d]);
  }
  return strides;
}

Shape broadcast_shapes(const Node& node, const std::vector<Shape>& shapes) {
  std::size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::int64_t& o = out[rank - s.size() + i];
      const std::int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o != 1) {
        std::string text;
        for (const Shape& t : shapes) text += (text.empty() ? "" : " and ") + shape_text(t);
        fail(node, "shapes " + text + " do not broadcast");
      }
      o = d;
    }
  }
  return out;
}

std::vector<std::size_t> strided_offsets(const Shape& out, std::ptrdiff_t base,
                                         const std::vector<std::ptrdiff_t>& strides) {
  std::vector<std::size_t> at(element_count(out));
  if (at.empty()) return at;
  if (out.empty()) {
    at[0] = static_cast<std::size_t>(base);
    return at;
  }
  const std::size_t last = out.size() - 1;
  const auto length = static_cast<std::size_t>(out[last]);
  const std::ptrdiff_t step = strides[last];
  Shape index(out.size(), 0);  // of the row's first element; index[last] stays 0
  std::ptrdiff_t row_start = base;
  for (std::size_t first = 0; first < at.size(); first += length) {
    std::ptrdiff_t offset = row_start;
    for (std::size_t j = 0; j < length; ++j, offset += step) {
      at[first + j] = static_cast<std::size_t>(offset);
    }
    for (std::size_t d = last; d-- > 0;) {
      row_start += strides[d];
      if (++index[d] < out[d]) break;
      row_start -= strides[d] * out[d];
      index[d] = 0;
    }
  }
  return at;
}

std::vector<std::size_t> broadcast_offsets(const Shape& in, const Shape& out) {
  // in's strides, aligned to out's last axes, 0 along an axis of one element (and the axes out
  // adds in front).
  const std::size_t rank = out.size();
  std::vector<std::ptrdiff_t> in_strides(rank, 0);
  const std::vector<std::size_t> own = strides_of(in);
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != 1) in_strides[rank - in.size() + i] = static_cast<std::ptrdiff_t>(own[i]);
  }
  return strided_offsets(out, 0, in_strides);
}

isa::Func core_function(Epilogue act) {
  switch (act) {
    case Epilogue::Relu:
      return isa::Func::Relu;
    case Epilogue::Relu6:
      return isa::Func::Relu6;
    case Epilogue::Sigmoid:
      return isa::Func::Sigmoid;
    case Epilogue::Tanh:
      return isa::Func::Tanh;
    case Epilogue::Gelu:
      return isa::Func::Gelu;
    case Epilogue::None:
      break;
  }
  return isa::Func::None;
}

namespace {

// The epilogue in host fp32, as ONNX's Add and the activation's operator compute it.
void host_epilogue(std::vector<float>& c, std::size_t n, const ProductEpilogue& epilogue) {
  for (std::size_t e = 0; e < c.size(); ++e) {
    float v = c[e];
    if (epilogue.bias) v += epilogue.bias[e % n];
    c[e] = activation(epilogue.act, v);
  }
}

}  // namespace

std::vector<float> gemm_bias(const Node& node, const Tensor* c, std::size_t n) {
  if (!c || node.float_attr("alpha", 1.0f) != 1.0f || node.float_attr("beta", 1.0f) != 1.0f ||
      !c->is_float() || c->rank() > 2 || (c->rank() == 2 && c->shape[0] != 1) ||
      (c->size() != 1 && c->size() != n)) {
    return {};
  }
  return c->size() == n ? c->floats : std::vector<float>(n, c->floats[0]);
}

namespace {

// Counts a product's MACs and where it runs (record_run counts its GEMMs on the accelerator).
void count_product(Context& context, std::size_t m, std::size_t k, std::size_t n,
                   bool on_accelerator) {
  if (!context.run) return;
  context.run->macs += static_cast<std::uint64_t>(m) * k * n;
  context.run->on_accelerator = on_accelerator;
}

// Where B goes: at its resident address when it derives from the graph's constants (written
// there on the session's first run), above the resident weights with the other operands
// otherwise. `b()` gives B (of `rows` rows), made only where it is written now; `written`
// receives the weight bytes written now.
template <typename MakeB>
GemmPlacement place_weights(Context& context, const WeightOf& weight, std::size_t rows, MakeB b,
                            std::uint64_t& written) {
  GemmPlacement placement;
  written = 0;
  if (context.weights && context.node && context.constants && weight.source &&
      context.constants->count(weight.source)) {
    placement.weights_addr = context.weights->find(*context.node, weight, rows);
    if (!placement.weights_addr) {
      placement.weights_addr =
          context.weights->place(*context.accelerator, *context.node, weight, b(), written);
    }
  }
  if (context.weights) placement.base = context.weights->top();
  return placement;
}

// A matrix made the first time it is asked for: a product's B, which a product whose weights are
// resident never makes (the session's later runs: no conversion, no layout, no copy).
template <typename T>
class MadeOnce {
 public:
  explicit MadeOnce(std::function<num::Matrix<T>()> make) : make_(std::move(make)) {}
  explicit MadeOnce(const num::Matrix<T>& made) : given_(&made) {}  // one made already
  const num::Matrix<T>& operator()() {
    if (given_) return *given_;
    if (!made_) made_ = make_();
    return *made_;
  }

 private:
  std::function<num::Matrix<T>()> make_;
  std::optional<num::Matrix<T>> made_;
  const num::Matrix<T>* given_ = nullptr;
};

// B as a planned GEMM's run takes it: left out (0 x 0) where the plan's weights are resident and
// the product is bf16 (write_gemm_inputs), else `make()`'s: an int8 product's host folds its
// input zero point with B's column sums at every run.
template <typename In, typename Make>
const num::Matrix<In>& b_to_write(const GemmPlan& plan, Make&& make) {
  static const num::Matrix<In> kLeftOut;
  if (plan.weights_resident && !plan.spec.int8()) return kLeftOut;
  return make();
}

// A program's cycles and the bytes it moved over the core's bus, as the backend counted them.
void add_counted(OpRun& figures, const Counters& counters, const HardwareConfig& config) {
  figures.counted = true;
  figures.cycles += counters[regs::kCntCyclesIndex];
  figures.vector_cycles += counters[regs::kCntVectorBusyIndex];
  figures.bus_bytes +=
      (counters[regs::kCntDmaReadBeatsIndex] + counters[regs::kCntDmaWriteBeatsIndex]) *
      config.bus_bytes;
}

// The figures of a planned GEMM's run: what the host wrote (A and B unless resident, C (the
// sums of a split K so far), the column rows, the program unless resident) and, where
// `result_read`, read (the result); the cycle model's estimate and the backend's counters;
// `program_ran`: it started a program (not a GEMM that runs in the next one's). A compiled
// model's resident programs count once, with its image.
void record_run(Context& context, const GemmPlan& plan, std::uint64_t weights_written,
                const RunResult& result, bool program_ran = true, bool result_read = true) {
  if (!context.run) return;
  OpRun& figures = *context.run;
  const GemmSpec& spec = plan.spec;
  const Backend& backend = *context.accelerator;
  const std::uint64_t b_bytes = plan.weights_resident ? 0 : weights_bytes(backend.config(), spec);
  const bool program_written =
      !plan.program_resident || (context.schedule && context.schedule->first_run);
  // The rows of 4 bytes per column: a bias; an int8 product's bias, multipliers and shifts, or
  // its seed row.
  const std::uint64_t column_rows = spec.has_bias               ? 1
                                    : spec.out == OutType::Int8 ? 3
                                    : plan.has_seed_row()       ? 1
                                                                : 0;
  const std::uint64_t column_bytes = std::uint64_t{plan.n_pad} * 4 * column_rows;
  const std::uint64_t c_bytes = spec.has_c ? std::uint64_t{spec.m} * plan.n_pad * 4 : 0;
  ++figures.products;
  figures.from_images += plan.conv.empty() ? 0 : 1;
  figures.weight_bytes += weights_written;
  if (context.estimates) figures.estimated_cycles += estimate_cycles(plan).cycles;
  const std::uint64_t a_bytes = plan.input_resident ? 0 : plan.a_bytes();
  figures.host_bytes += a_bytes + b_bytes + c_bytes + column_bytes +
                        (program_written ? plan.program.size() * isa::kInstrBytes : 0) +
                        (result_read ? plan.result_bytes() : 0);
  figures.programs += program_ran ? 1 : 0;
  if (result.counters) {
    const Counters& counters = *result.counters;
    add_counted(figures, counters, backend.config());
    // The core counts a convolution's wide rows, each the same MACs: its output pixels' share.
    const ConvGeometry& g = plan.conv;
    const std::uint64_t useful = counters[regs::kCntUsefulMacsIndex];
    figures.useful_macs += g.empty() ? useful : useful / spec.m * g.batch * g.out_h() * g.out_w();
  }
}

// Columns [first, first + count) of a matrix.
template <typename T>
num::Matrix<T> columns_of(const num::Matrix<T>& m, std::size_t first, std::size_t count) {
  num::Matrix<T> part(m.rows, count);
  for (std::size_t r = 0; r < m.rows; ++r) {
    std::copy_n(m.data.begin() + static_cast<std::ptrdiff_t>(r * m.cols + first), count,
                part.data.begin() + static_cast<std::ptrdiff_t>(r * count));
  }
  return part;
}

// Rows [first, first + count) of a matrix.
template <typename T>
num::Matrix<T> rows_of(const num::Matrix<T>& m, std::size_t first, std::size_t count) {
  num::Matrix<T> part(count, m.cols);
  std::copy_n(m.data.begin() + static_cast<std::ptrdiff_t>(first * m.cols), count * m.cols,
              part.data.begin());
  return part;
}

// The compiled model's next GEMM, which must be the one the running node asks for now (a bf16
// chain's GEMM that runs with the next writes bf16 where the node may ask for fp32).
const CompiledGemm& next_compiled(Context& context, const GemmSpec& spec) {
  GemmSchedule& schedule = *context.schedule;
  const std::vector<CompiledGemm>& gemms = *schedule.compiled;
  const Node& node = *context.node;
  // A bf16 chain's GEMM writes bf16 whatever the node asks for (fp32, or bf16 already).
  const auto asks_for = [&](const CompiledGemm& gemm) {
    GemmSpec asked = spec;
    if (gemm.result_kept && !asked.int8()) asked.out = OutType::Bf16;
    return asked == gemm.plan.spec;
  };
  if (schedule.next >= gemms.size() || gemms[schedule.next].node != node.name ||
      !asks_for(gemms[schedule.next])) {
    fail(node, "runs a " + std::to_string(spec.m) + " x " + std::to_string(spec.k) + " x " +
                   std::to_string(spec.n) +
                   " product the compiled model does not have as its GEMM " +
                   std::to_string(schedule.next));
  }
  return gemms[schedule.next++];
}

// A x B on the accelerator: one GEMM of `last` (its spec, k set here), or, where K is larger than
// one GEMM takes, GEMMs of `middle` over the first rows of B, each adding onto the sums of the
// one before (C), then `last` over the rest, which alone applies `columns` (the bias, or the
// requantisation). Counts each run in the context's figures.
template <typename In, typename Sums, typename Columns>
Sums run_on_core(Context& context, const WeightOf& weight, GemmSpec middle, GemmSpec last,
                 const num::Matrix<In>& a, MadeOnce<In>& b, const Columns* columns) {
  Backend& backend = *context.accelerator;
  const std::size_t k = a.cols;
  const std::size_t chunk = std::max<std::size_t>(1, max_gemm_k(backend.config(), middle));
  Sums sums;
  for (std::size_t first = 0; first < k; first += chunk) {
    const std::size_t count = std::min(chunk, k - first);
    const bool final = first + count == k;
    GemmSpec spec = final ? last : middle;
    spec.k = static_cast<std::uint32_t>(count);
    spec.has_c = first > 0;
    const bool whole = count == k;
    const num::Matrix<In> a_part = whole ? num::Matrix<In>() : columns_of(a, first, count);
    const num::Matrix<In>& a_used = whole ? a : a_part;
    // B's rows [first, first + count): its transpose's columns where it is given so; made only
    // where it is written (b_to_write).
    MadeOnce<In> part([&] {
      return last.b_transposed ? columns_of(b(), first, count) : rows_of(b(), first, count);
    });
    const auto b_part = [&]() -> const num::Matrix<In>& { return whole ? b() : part(); };
    const std::size_t b_rows = last.b_transposed ? last.n : count;
    const auto b_used = [&](const GemmPlan& plan) -> const num::Matrix<In>& {
      return b_to_write<In>(plan, b_part);
    };
    std::uint64_t weights_written = 0;
    GemmPlan planned;
    const GemmPlan* plan = &planned;
    if (context.schedule && context.schedule->compiled) {
      const CompiledGemm& gemm = next_compiled(context, spec);
      plan = &gemm.plan;
      weights_written = context.schedule->first_run ? gemm.weight_bytes : 0;
      if (gemm.runs_with_next) {
        // A GEMM that runs in the next one's program: its operands written now. A chain's
        // result stays in the core's memory for the next GEMM (what the node returns is read
        // by that product alone, which does not look at it); a group's is read by products()
        // once the program has run.
        write_gemm_inputs(*plan, backend.memory(), a_used, b_used(*plan),
                          spec.has_c ? &sums : nullptr, final ? columns : nullptr);
        record_run(context, *plan, weights_written, RunResult{}, false, !gemm.result_kept);
        sums = Sums(a.rows, last.n);
        continue;
      }
    } else {
      const GemmPlacement placement = place_weights(context, {weight.source, weight.part, first},
                                                    b_rows, b_part, weights_written);
      planned = plan_gemm(backend.config(), spec, placement);
      if (context.schedule && context.schedule->recording) {
        // Compiling: the products are planned, not run; what follows them runs on zeros.
        context.schedule->recording->push_back(
            {{context.node->name, weights_written, false, false, planned}});
        sums = Sums(a.rows, last.n);
        continue;
      }
    }
    auto run = execute_gemm(*plan, backend, a_used, b_used(*plan), spec.has_c ? &sums : nullptr,
                            final ? columns : nullptr);
    require_halt(run.result);
    record_run(context, *plan, weights_written, run.result);
    sums = std::move(run.out);
  }
  return sums;
}

// A bf16 product's spec of n columns with the epilogue (M and K left to the caller), and its
// bias row (empty without one).
GemmSpec bf16_spec(std::size_t n, const ProductEpilogue& epilogue, std::vector<num::fp32_t>& bias) {
  GemmSpec spec;
  spec.n = static_cast<std::uint32_t>(n);
  spec.act = core_function(epilogue.act);
  if (epilogue.bf16_result) spec.out = OutType::Bf16;
  if (epilogue.bias) {
    spec.has_bias = true;
    bias.resize(n);
    std::memcpy(bias.data(), epilogue.bias, n * sizeof(float));
  }
  return spec;
}

// The plan of a convolution group on the core from its images (plan_conv, not yet placed),
// where the core can take it so and the cycle model has it no slower than the product of its
// im2col matrix: none for an image too wide for the unified buffer, or where the im2col product
// is faster (small images, whose padding's rows are many; few channels under a large kernel: K
// tiles that the im2col rows fill and the taps' channel tiles do not). compile()'s trace and
// the compiled model's runs decide alike: the same core, the same shapes.
std::optional<GemmPlan> conv_plan(Backend* accelerator, const GemmSpec& spec,
                                  const ConvGeometry& g) {
  if (!accelerator) return std::nullopt;
  const HardwareConfig& config = accelerator->config();
  try {
    GemmPlan conv = plan_conv(config, spec, g);
    GemmSpec im2col = spec;
    im2col.m = g.batch * g.out_h() * g.out_w();
    im2col.k = g.taps() * g.channels;
    if (im2col.k <= max_gemm_k(config, im2col) &&
        estimate_cycles(plan_gemm(config, im2col)).cycles < estimate_cycles(conv).cycles) {
      return std::nullopt;
    }
    return conv;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// Runs a convolution group that conv_plan planned (`unplaced`), its weights (im2col's B)
// resident where they derive from the graph's constants, and counts the run; compiling, records
// its plan and gives zeros; in a compiled model, runs the compiled plan.
template <typename In, typename Columns>
auto run_conv(Context& context, const GemmPlan& unplaced, const In* x, const ImageStrides& strides,
              MadeOnce<In>& im2col_b, const WeightOf& weight, const Columns* columns) {
  Backend& backend = *context.accelerator;
  const ConvGeometry& g = unplaced.conv;
  // B in the plan's layout, made only where it is written (b_to_write).
  MadeOnce<In> made_b([&] { return conv_weights(backend.config(), g, im2col_b()); });
  const auto b = [&](const GemmPlan& plan) -> const num::Matrix<In>& {
    return b_to_write<In>(plan, made_b);
  };
  std::uint64_t written = 0;
  GemmPlan planned;
  const GemmPlan* plan = &planned;
  GemmSchedule* schedule = context.schedule;
  if (schedule && schedule->compiled) {
    const CompiledGemm& gemm = next_compiled(context, unplaced.spec);
    plan = &gemm.plan;
    written = schedule->first_run ? gemm.weight_bytes : 0;
  } else {
    planned = plan_conv(backend.config(), unplaced.spec, g,
                        place_weights(context, weight, unplaced.spec.k, made_b, written));
    if (schedule && schedule->recording) {
      // Compiling: planned, not run; what follows runs on zeros.
      schedule->recording->push_back({{context.node->name, written, false, false, planned}});
      return decltype(execute_conv(planned, backend, x, strides, b(planned), columns).out)(
          std::size_t{g.batch} * g.out_h() * g.out_w(), unplaced.spec.n);
    }
  }
  auto run = execute_conv(*plan, backend, x, strides, b(*plan), columns);
  require_halt(run.result);
  record_run(context, *plan, written, run.result);
  return std::move(run.out);
}

}  // namespace

namespace {

// Where a vector-unit program's operands go: above what the session keeps in the core's
// memory (the resident weights, or a compiled model's image and its products' operands).
std::uint64_t vector_base(const Context& context) {
  const GemmSchedule* schedule = context.schedule;
  return schedule && schedule->compiled ? schedule->compiled_top
         : context.weights              ? context.weights->top()
                                        : 0;
}

// While compile() traces the graph: records the node as one the vector unit runs.
bool recording_vector_node(Context& context) {
  GemmSchedule* schedule = context.schedule;
  if (!schedule || !schedule->recording) return false;
  // Once a node: a recurrent node runs a program a step.
  std::vector<std::string>* nodes = schedule->vector_nodes;
  if (nodes && context.node && (nodes->empty() || nodes->back() != context.node->name)) {
    nodes->push_back(context.node->name);
  }
  return true;
}

// The figures of a vector-unit program's run: the bytes the host wrote and read, the cycle
// model's estimate and the backend's counters.
// The cycle model's estimate of a vector-unit program, and of its vector unit's busy cycles.
void count_vector_estimate(OpRun& figures, const HardwareConfig& config,
                           const std::vector<isa::Instruction>& program) {
  figures.estimated_cycles += estimate_vector_program_cycles(config, program);
  for (const isa::Instruction& in : program) {
    if (in.opcode() == isa::Opcode::Eltwise) {
      figures.estimated_vector_cycles += eltwise_cycles(config, in);
    }
  }
}

void record_vector_run(Context& context, const HardwareConfig& config,
                       const std::vector<isa::Instruction>& program, std::uint64_t host_bytes,
                       const RunResult& result) {
  require_halt(result);
  if (!context.run) return;
  OpRun& figures = *context.run;
  figures.on_accelerator = true;
  figures.programs += 1;
  figures.host_bytes += host_bytes;
  if (context.estimates) count_vector_estimate(figures, config, program);
  if (result.counters) add_counted(figures, *result.counters, config);
}

}  // namespace

namespace {

// A program of the vector unit whose result the host reads back (what `reference` returns: fp32
// bits, int8 values): planned above what the session keeps (nothing where the plan refuses: the
// caller computes it on the host), then run, or while compile() traces the graph recorded and its
// bits computed on the host by `reference`.
template <typename Plan, typename Execute, typename Reference>
auto run_on_vector_unit(Context& context, Plan plan_at, Execute execute, Reference reference)
    -> std::optional<decltype(reference())> {
  if (!context.accelerator || context.accelerator->config().vector_lanes == 0) return std::nullopt;
  decltype(plan_at(std::uint64_t{0})) plan;
  try {
    plan = plan_at(vector_base(context));
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // operands too large for the accumulators, beyond 32-bit addresses
  }
  if (recording_vector_node(context)) return reference();
  auto run = execute(plan, *context.accelerator);
  record_vector_run(context, plan.config, plan.program, plan.written_bytes() + plan.read_bytes(),
                    run.result);
  return std::move(run.out);
}

// The same for a result of fp32 values.
template <typename Plan, typename Execute, typename Reference>
std::optional<std::vector<float>> on_vector_unit(Context& context, Plan plan_at, Execute execute,
                                                 Reference reference) {
  const std::optional<std::vector<num::fp32_t>> y =
      run_on_vector_unit(context, plan_at, execute, reference);
  if (!y) return std::nullopt;
  return floats_of(*y);
}

}  // namespace

bool softmax_on_core(Context& context, std::vector<float>& values, std::size_t rows,
                     std::size_t length) {
  if (rows == 0 || rows > UINT32_MAX || length > UINT32_MAX) return false;
  const auto m = static_cast<std::uint32_t>(rows), n = static_cast<std::uint32_t>(length);
  const std::vector<num::fp32_t> bits = bits_of(values);
  const std::optional<std::vector<float>> y = on_vector_unit(
      context,
      [&](std::uint64_t base) { return plan_softmax(context.accelerator->config(), m, n, base); },
      [&](const SoftmaxPlan& plan, Backend& backend) {
        return execute_softmax(plan, backend, bits);
      },
      [&] { return reference_softmax(context.accelerator->config(), m, n, bits); });
  if (!y) return false;
  values = *y;
  return true;
}

std::optional<std::vector<num::fp32_t>> elementwise_bits_on_core(
    Context& context, const ElementwiseSpec& spec, const std::vector<num::fp32_t>& a,
    const std::vector<num::fp32_t>& b) {
  return run_on_vector_unit(
      context,
      [&](std::uint64_t base) {
        return plan_elementwise(context.accelerator->config(), spec, base);
      },
      [&](const ElementwisePlan& plan, Backend& backend) {
        return execute_elementwise(plan, backend, a, b);
      },
      [&] { return reference_elementwise(spec, a, b); });
}

std::optional<std::vector<float>> elementwise_on_core(Context& context, const ElementwiseSpec& spec,
                                                      const std::vector<float>& a,
                                                      const std::vector<float>& b) {
  const std::optional<std::vector<num::fp32_t>> y =
      elementwise_bits_on_core(context, spec, bits_of(a), bits_of(b));
  if (!y) return std::nullopt;
  return floats_of(*y);
}

std::vector<num::fp32_t> bits_of(const float* values, std::size_t count) {
  std::vector<num::fp32_t> bits(count);
  std::memcpy(bits.data(), values, count * sizeof(float));
  return bits;
}

std::vector<num::fp32_t> bits_of(const std::vector<float>& values) {
  return bits_of(values.data(), values.size());
}

std::vector<float> floats_of(const std::vector<num::fp32_t>& bits) {
  std::vector<float> values(bits.size());
  std::memcpy(values.data(), bits.data(), bits.size() * sizeof(float));
  return values;
}

std::optional<std::vector<std::vector<float>>> expression_on_core(Context& context,
                                                                  const ExpressionBuilder& e,
                                                                  std::uint64_t above) {
  const auto out = run_on_vector_unit(
      context,
      [&](std::uint64_t base) {
        return plan_expression(context.accelerator->config(), e.spec(), std::max(base, above));
      },
      [&](const ExpressionPlan& plan, Backend& backend) {
        return execute_expression(plan, backend, e.tensors(), e.constants());
      },
      [&] { return reference_expression(e.spec(), e.tensors(), e.constants()); });
  if (!out) return std::nullopt;
  std::vector<std::vector<float>> values;
  for (const std::vector<num::fp32_t>& bits : *out) {
    std::vector<float>& v = values.emplace_back(bits.size());
    std::memcpy(v.data(), bits.data(), bits.size() * sizeof(float));
  }
  return values;
}

std::optional<std::vector<float>> pool_on_core(Context& context, const PoolSpec& spec,
                                               const std::vector<float>& x) {
  const std::vector<num::fp32_t> bits = bits_of(x);
  return on_vector_unit(
      context,
      [&](std::uint64_t base) { return plan_pool(context.accelerator->config(), spec, base); },
      [&](const PoolPlan& plan, Backend& backend) { return execute_pool(plan, backend, bits); },
      [&] { return reference_pool(spec, bits); });
}

std::optional<std::vector<float>> layernorm_on_core(Context& context, const LayerNormSpec& spec,
                                                    const std::vector<float>& x,
                                                    const std::vector<float>& gamma,
                                                    const std::vector<float>& beta) {
  const std::vector<num::fp32_t> x_bits = bits_of(x), gamma_bits = bits_of(gamma),
                                 beta_bits = bits_of(beta);
  return on_vector_unit(
      context,
      [&](std::uint64_t base) { return plan_layernorm(context.accelerator->config(), spec, base); },
      [&](const LayerNormPlan& plan, Backend& backend) {
        return execute_layernorm(plan, backend, x_bits, gamma_bits, beta_bits);
      },
      [&] {
        return reference_layernorm(context.accelerator->config(), spec, x_bits, gamma_bits,
                                   beta_bits);
      });
}

namespace {

// A depthwise convolution's MACs, among the node's and as the vector unit's.
void count_vector_macs(Context& context, const DepthwiseSpec& spec) {
  if (!context.run) return;
  const std::uint64_t macs =
      std::uint64_t{spec.batch} * spec.channels * spec.out_h * spec.out_w * spec.taps();
  context.run->macs += macs;
  context.run->vector_macs += macs;
}

}  // namespace

std::optional<std::vector<float>> depthwise_on_core(Context& context, const DepthwiseSpec& spec,
                                                    const std::vector<float>& x,
                                                    const std::vector<float>& w,
                                                    const std::vector<float>& bias) {
  const std::vector<num::fp32_t> x_bits = bits_of(x), w_bits = bits_of(w),
                                 bias_bits = bits_of(bias);
  std::optional<std::vector<float>> y = on_vector_unit(
      context,
      [&](std::uint64_t base) { return plan_depthwise(context.accelerator->config(), spec, base); },
      [&](const DepthwisePlan& plan, Backend& backend) {
        return execute_depthwise(plan, backend, x_bits, w_bits, bias_bits);
      },
      [&] { return reference_depthwise(spec, x_bits, w_bits, bias_bits); });
  if (y && context.run) {
    const std::uint64_t macs =
        std::uint64_t{spec.batch} * spec.channels * spec.out_h * spec.out_w * spec.taps();
    context.run->macs += macs;
    context.run->vector_macs += macs;
  }
  return y;
}

std::optional<std::vector<std::int8_t>> pool_int8_on_core(Context& context, const PoolSpec& spec,
                                                          const std::vector<std::int8_t>& x) {
  return run_on_vector_unit(
      context,
      [&](std::uint64_t base) { return plan_pool(context.accelerator->config(), spec, base); },
      [&](const PoolPlan& plan, Backend& backend) { return execute_pool_int8(plan, backend, x); },
      [&] { return reference_pool_int8(spec, x); });
}

std::optional<std::vector<std::int8_t>> quant_add_on_core(Context& context,
                                                          const QuantAddSpec& spec,
                                                          const std::vector<std::int8_t>& a,
                                                          const std::vector<std::int8_t>& b) {
  return run_on_vector_unit(
      context,
      [&](std::uint64_t base) { return plan_quant_add(context.accelerator->config(), spec, base); },
      [&](const QuantAddPlan& plan, Backend& backend) {
        return execute_quant_add(plan, backend, a, b);
      },
      [&] { return reference_quant_add(spec, a, b); });
}

std::optional<std::vector<std::int8_t>> quantize_on_core(Context& context,
                                                         const QuantConvertSpec& spec,
                                                         const std::vector<float>& x) {
  const std::vector<num::fp32_t> bits = bits_of(x);
  return run_on_vector_unit(
      context,
      [&](std::uint64_t base) {
        return plan_quant_convert(context.accelerator->config(), spec, base);
      },
      [&](const QuantConvertPlan& plan, Backend& backend) {
        return execute_quantize(plan, backend, bits);
      },
      [&] { return reference_quantize(spec, bits); });
}

std::optional<std::vector<float>> dequantize_on_core(Context& context, const QuantConvertSpec& spec,
                                                     const std::vector<std::int8_t>& q) {
  return on_vector_unit(
      context,
      [&](std::uint64_t base) {
        return plan_quant_convert(context.accelerator->config(), spec, base);
      },
      [&](const QuantConvertPlan& plan, Backend& backend) {
        return execute_dequantize(plan, backend, q);
      },
      [&] { return reference_dequantize(spec, q); });
}

namespace {

// The longest run among the output's trailing blocks (its last dimension, that times the one
// before, ...) that is a whole number of array rows of `d` values, at most `most` values, and
// divides x's values, along which `at` reads x in order from the start of one of x's runs of that
// length; 0 where none. A block that is no run leaves none longer.
std::uint64_t run_length(std::size_t x_size, const Shape& out, const std::vector<std::size_t>& at,
                         std::uint32_t d, std::uint64_t most) {
  std::uint64_t longest = 0, block = 1;
  for (std::size_t k = out.size(); k-- > 0;) {
    block *= static_cast<std::uint64_t>(out[k]);
    if (block == 0) return 0;
    // The output's blocks one after another (block divides its size): each from a run's start.
    bool runs = true;
    for (std::size_t start = 0; start < at.size() && runs; start += block) {
      const std::size_t first = at[start];
      runs = first % block == 0 && first + block <= x_size;
      for (std::size_t j = 1; j < block && runs; ++j) runs = at[start + j] == first + j;
    }
    if (!runs) break;
    if (block % d == 0 && block <= most && x_size % block == 0) longest = block;
  }
  return longest;
}

}  // namespace

std::optional<Tensor> move_on_core(Context& context, const Tensor& x, const Shape& out,
                                   const std::vector<std::size_t>& at) {
  if (!context.accelerator || at.empty()) return std::nullopt;
  const HardwareConfig& config = context.accelerator->config();
  const bool int8 = x.dtype == DType::Int8 || x.dtype == DType::UInt8;
  if (config.vector_lanes == 0 || (int8 && !config.int8) ||
      !(int8 || x.dtype == DType::Float32 || x.dtype == DType::Int32)) {
    return std::nullopt;
  }
  MoveSpec spec;
  spec.int8 = int8;
  // A run within half the memory the values pass through (plan_move's blocks).
  const std::uint64_t most =
      std::uint64_t{int8 ? config.ub_depth : config.acc_depth} / 2 * config.dim;
  spec.run = run_length(x.size(), out, at, config.dim, most);
  if (spec.run == 0) return std::nullopt;
  // Only the runs the output reads go to the core (a Gather of one of q, k and v: a third), in
  // x's order.
  // Each run of x: its place among the used ones (kUnused where none reads it).
  constexpr std::uint64_t kUnused = ~std::uint64_t{0};
  std::vector<std::uint64_t> place(x.size() / spec.run, kUnused);
  for (std::size_t e = 0; e < at.size(); e += spec.run) place[at[e] / spec.run] = 0;
  std::vector<std::uint64_t> used;
  for (std::uint64_t run = 0; run < place.size(); ++run) {
    if (place[run] == kUnused) continue;
    place[run] = used.size();
    used.push_back(run);
  }
  spec.source_runs = used.size();
  spec.from.reserve(at.size() / spec.run);
  for (std::size_t e = 0; e < at.size(); e += spec.run)
    spec.from.push_back(place[at[e] / spec.run]);
  // The used runs' values, one after the other.
  const auto sources = [&](auto value_of) {
    std::vector<decltype(value_of(std::size_t{0}))> values;
    values.reserve(used.size() * spec.run);
    for (const std::uint64_t run : used) {
      for (std::uint64_t k = 0; k < spec.run; ++k) values.push_back(value_of(run * spec.run + k));
    }
    return values;
  };
  const auto plan_at = [&](std::uint64_t base) { return plan_move(config, spec, base); };
  Tensor y(x.dtype, out);
  if (int8) {
    // uint8 moved down by 128 and back: the same bits a value, moved.
    const int shift = x.dtype == DType::UInt8 ? 128 : 0;
    const std::vector<std::int8_t> values =
        sources([&](std::size_t e) { return static_cast<std::int8_t>(x.ints[e] - shift); });
    const auto moved = run_on_vector_unit(
        context, plan_at,
        [&](const MovePlan& plan, Backend& backend) { return execute_move(plan, backend, values); },
        [&] { return reference_move(spec, values); });
    if (!moved) return std::nullopt;
    for (std::size_t e = 0; e < moved->size(); ++e) y.ints[e] = (*moved)[e] + shift;
    return y;
  }
  std::vector<std::uint32_t> values;
  if (x.is_float()) {
    // The used runs' bits, a run at a time.
    values.resize(used.size() * spec.run);
    for (std::size_t r = 0; r < used.size(); ++r) {
      std::memcpy(&values[r * spec.run], &x.floats[used[r] * spec.run], spec.run * sizeof(float));
    }
  } else {
    values = sources([&](std::size_t e) { return static_cast<std::uint32_t>(x.ints[e]); });
  }
  const auto moved = run_on_vector_unit(
      context, plan_at,
      [&](const MovePlan& plan, Backend& backend) { return execute_move(plan, backend, values); },
      [&] { return reference_move(spec, values); });
  if (!moved) return std::nullopt;
  if (y.is_float()) {
    std::memcpy(y.floats.data(), moved->data(), moved->size() * sizeof(float));
  } else {
    for (std::size_t e = 0; e < moved->size(); ++e) {
      y.ints[e] = static_cast<std::int32_t>((*moved)[e]);
    }
  }
  return y;
}

std::optional<std::vector<std::int32_t>> depthwise_int8_on_core(
    Context& context, const DepthwiseSpec& spec, const std::vector<std::int8_t>& x,
    const std::vector<std::int8_t>& w, const std::vector<std::int32_t>& bias,
    const std::vector<num::QuantizedMultiplier>& multipliers) {
  const std::optional<std::vector<std::int8_t>> y = run_on_vector_unit(
      context,
      [&](std::uint64_t base) { return plan_depthwise(context.accelerator->config(), spec, base); },
      [&](const DepthwisePlan& plan, Backend& backend) {
        return execute_depthwise_int8(plan, backend, x, w, bias, multipliers);
      },
      [&] { return reference_depthwise_int8(spec, x, w, bias, multipliers); });
  if (!y) return std::nullopt;
  count_vector_macs(context, spec);
  return std::vector<std::int32_t>(y->begin(), y->end());
}

std::optional<std::vector<float>> conv_product(Context& context, const ConvGeometry& g,
                                               const float* x, const ImageStrides& strides,
                                               const ProductB<float>& b, std::size_t n,
                                               WeightOf weight, ProductEpilogue epilogue) {
  std::vector<num::fp32_t> bias;
  const std::optional<GemmPlan> plan =
      conv_plan(context.accelerator, bf16_spec(n, epilogue, bias), g);
  if (!plan) return std::nullopt;
  const std::size_t m = std::size_t{g.batch} * g.out_h() * g.out_w(), k = g.taps() * g.channels;
  count_product(context, m, k, n, true);
  // The group's images in bf16, in their layout: NCHW one after the other, or a pixel's
  // channels after another.
  const std::size_t plane = std::size_t{g.height} * g.width, image = g.channels * plane;
  const bool last = strides.channel == 1 && g.channels > 1;
  std::vector<float> values(g.batch * image);
  for (std::size_t i = 0; i < g.batch; ++i) {
    for (std::size_t c = 0; c < g.channels; ++c) {
      for (std::size_t p = 0; p < plane; ++p) {
        values[i * image + (last ? p * g.channels + c : c * plane + p)] =
            x[i * strides.image + c * strides.channel + p * strides.pixel];
      }
    }
  }
  const num::MatrixBf16 images = nn::bf16_matrix(values.data(), 1, values.size());
  MadeOnce<num::bf16_t> b16([&] { return nn::bf16_matrix(b(), k, n); });
  const num::MatrixFp32 out =
      run_conv(context, *plan, images.data.data(),
               last ? ImageStrides{image, 1, g.channels} : nchw_images(g, image), b16, weight,
               epilogue.bias ? &bias : nullptr);
  std::vector<float> c(m * n);
  std::memcpy(c.data(), out.data.data(), c.size() * sizeof(float));
  return c;
}

std::vector<float> product(Context& context, const float* a, const ProductB<float>& b,
                           std::size_t m, std::size_t k, std::size_t n, WeightOf weight,
                           ProductEpilogue epilogue, bool b_transposed, bool host_transposes_b,
                           const num::MatrixBf16* a_bf16) {
  count_product(context, m, k, n, context.accelerator != nullptr);
  if (m == 0 || n == 0) return {};
  const bool host_transposes = b_transposed && (host_transposes_b || !context.accelerator ||
                                                context.accelerator->config().vector_lanes == 0);
  if (host_transposes) b_transposed = false;
  if (k == 0 || !context.accelerator) {
    const std::vector<float> laid_out =
        host_transposes && k > 0 ? nn::transpose(b(), n, k) : std::vector<float>{};
    std::vector<float> c =
        k == 0 ? std::vector<float>(m * n, 0.0f)
               : nn::matmul(nullptr, a, host_transposes ? laid_out.data() : b(),
                            static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(k),
                            static_cast<std::uint32_t>(n));
    host_epilogue(c, n, epilogue);
    return c;
  }
  std::vector<num::fp32_t> bias;
  GemmSpec spec = bf16_spec(n, epilogue, bias);
  spec.m = static_cast<std::uint32_t>(m);
  spec.b_transposed = b_transposed;
  GemmSpec sums_only;
  sums_only.m = spec.m;
  sums_only.n = spec.n;
  sums_only.b_transposed = b_transposed;
  num::MatrixBf16 rounded;
  if (!a_bf16) {
    rounded = nn::bf16_matrix(a, m, k);
    a_bf16 = &rounded;
  }
  MadeOnce<num::bf16_t> b16([&] {
    return host_transposes ? nn::bf16_matrix(nn::transpose(b(), n, k).data(), k, n)
           : b_transposed  ? nn::bf16_matrix(b(), n, k)
                           : nn::bf16_matrix(b(), k, n);
  });
  std::vector<TracedGemm>* traced = context.schedule ? context.schedule->recording : nullptr;
  const std::size_t first_traced = traced ? traced->size() : 0;
  const num::MatrixFp32 out = run_on_core<num::bf16_t, num::MatrixFp32>(
      context, weight, sums_only, spec, *a_bf16, b16, epilogue.bias ? &bias : nullptr);
  std::vector<float> c(m * n);
  std::memcpy(c.data(), out.data.data(), c.size() * sizeof(float));
  if (traced) {
    // Where A came from and where the result goes (its buffer moves into the node's output).
    for (std::size_t g = first_traced; g < traced->size(); ++g) {
      (*traced)[g].a = reinterpret_cast<std::uintptr_t>(a);
      (*traced)[g].out = reinterpret_cast<std::uintptr_t>(c.data());
    }
  }
  return c;
}

bool ResidentProduct::possible(const Context& context, std::size_t k) {
  if (!context.accelerator || (context.schedule && context.schedule->recording) || k == 0) {
    return false;
  }
  GemmSpec spec;
  spec.n = 1;
  return k <= max_gemm_k(context.accelerator->config(), spec);
}

ResidentProduct::ResidentProduct(Context& context, const float* b, std::size_t m, std::size_t k,
                                 std::size_t n, WeightOf weight, std::size_t ahead)
    : context_(context), a_shape_(m, k) {
  if (!possible(context, k)) throw std::logic_error("a resident product where none can run");
  std::vector<num::fp32_t> no_bias;
  GemmSpec spec = bf16_spec(n, ProductEpilogue{}, no_bias);
  spec.m = static_cast<std::uint32_t>(m);
  spec.k = static_cast<std::uint32_t>(k);
  const GemmSchedule* schedule = context.schedule;
  if (schedule && schedule->compiled) {
    // The compiled GEMM of its first turn, which join() takes (and checks) in turn.
    if (schedule->next + ahead >= schedule->compiled->size()) {
      fail(*context.node, "runs more products than the compiled model has");
    }
    plan_ = (*schedule->compiled)[schedule->next + ahead].plan;
  } else {
    MadeOnce<num::bf16_t> made([&] { return nn::bf16_matrix(b, k, n); });
    const GemmPlacement placement = place_weights(context, weight, k, made, weights_written_);
    plan_ = plan_gemm(context.accelerator->config(), spec, placement);
  }
  plan_.input_resident = true;
}

void ResidentProduct::plan_above_weights() {
  if (!context_.weights || (context_.schedule && context_.schedule->compiled)) return;
  GemmPlacement placement;
  placement.base = context_.weights->top();
  if (plan_.weights_resident) placement.weights_addr = plan_.b_addr;
  plan_ = plan_gemm(context_.accelerator->config(), plan_.spec, placement);
  plan_.input_resident = true;
}

std::uint64_t ResidentProduct::top() const {
  return std::max<std::uint64_t>(vector_base(context_), plan_.memory_bytes);
}

std::vector<isa::Instruction> ResidentProduct::join(const num::MatrixBf16* a) {
  const GemmSpec& spec = plan_.spec;
  count_product(context_, spec.m, spec.k, spec.n, true);
  std::uint64_t weights_written = weights_written_;
  weights_written_ = 0;
  GemmSchedule* schedule = context_.schedule;
  if (schedule && schedule->compiled) {
    const CompiledGemm& gemm = next_compiled(context_, spec);
    if (gemm.plan.a_addr != plan_.a_addr || gemm.plan.out_addr != plan_.out_addr) {
      fail(*context_.node, "its compiled products lie in different places from step to step");
    }
    weights_written = schedule->first_run ? gemm.weight_bytes : 0;
  }
  // A where given; not B (resident) nor the program (it goes with the joined one, counted
  // there): written now, before the joined program runs, they could land on another part's
  // operands.
  if (!plan_.weights_resident) throw std::logic_error("a joined product without resident weights");
  GemmPlan counted = plan_;
  counted.input_resident = a == nullptr;
  counted.program_resident = true;
  write_gemm_inputs(counted, context_.accelerator->memory(), a ? *a : a_shape_, num::MatrixBf16(),
                    nullptr, nullptr);
  record_run(context_, counted, weights_written, RunResult{}, false, false);
  return {plan_.program.begin(), plan_.program.end() - 1};
}

void JoinedProgram::add(ResidentProduct& product, const num::MatrixBf16* a) {
  const std::vector<isa::Instruction> part = product.join(a);
  program_.insert(program_.end(), part.begin(), part.end());
  top_ = std::max<std::uint64_t>(top_, product.plan().memory_bytes);
}

bool JoinedProgram::add(const ExpressionBuilder& e, std::uint64_t above) {
  const HardwareConfig& config = context_.accelerator->config();
  const ExpressionSpec& spec = e.spec();
  bool own_tensors = false;
  for (std::uint32_t t = 0; t < spec.tensors; ++t) own_tensors = own_tensors || !spec.in_view(t);
  if (own_tensors || std::any_of(spec.outputs.begin(), spec.outputs.end(),
                                 [](const ExpressionOutput& o) { return !o.view; })) {
    // Their regions would be written before the joined program runs, or read back after it.
    throw std::logic_error("a joined program's expression with tensors or outputs of its own");
  }
  ExpressionPlan plan;
  try {
    plan = plan_expression(config, spec, std::max(vector_base(context_), above));
  } catch (const std::invalid_argument&) {
    return false;
  }
  // The constant rows (the tensors are views): written unless an earlier part wrote the same
  // rows there. Rows of an earlier part in the place of these would be overwritten before the
  // program runs.
  const std::uint64_t written = std::uint64_t{spec.constant_rows} * plan.tiles * plan.row_stride;
  const auto same = constants_.find(plan.constants_addr);
  if (written > 0 && (same == constants_.end() || same->second.rows != e.constants())) {
    for (const auto& [addr, earlier] : constants_) {
      // What write_expression_inputs writes: from the constant rows to the end of its program.
      if (addr < plan.memory_bytes && plan.constants_addr < earlier.end) {
        throw std::logic_error("a joined program's parts with other constant rows in one place");
      }
    }
    write_expression_inputs(plan, context_.accelerator->memory(), e.tensors(), e.constants());
    constants_[plan.constants_addr] = {plan.constants_addr + written, e.constants()};
    if (context_.run) context_.run->host_bytes += written;
  }
  program_.insert(program_.end(), plan.program.begin(), plan.program.end() - 1);
  top_ = std::max<std::uint64_t>(top_, plan.memory_bytes);
  if (context_.run) {
    context_.run->on_accelerator = true;
    if (context_.estimates) count_vector_estimate(*context_.run, config, plan.program);
  }
  return true;
}

void JoinedProgram::run() {
  Backend& backend = *context_.accelerator;
  isa::ProgramBuilder halt(backend.config());
  halt.halt();
  program_.push_back(halt.instructions().front());
  const std::uint64_t at = (top_ + 63) / 64 * 64;
  const std::vector<std::uint8_t> encoded = isa::encode_program(program_);
  HostMemory& memory = backend.memory();
  if (memory.size() < at + encoded.size()) memory.resize(at + encoded.size());
  memory.write_array(at, encoded);
  const RunResult result =
      backend.run(static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(program_.size()));
  require_halt(result);
  if (!context_.run) return;
  OpRun& figures = *context_.run;
  figures.programs += 1;
  figures.host_bytes += encoded.size();
  if (result.counters) {
    add_counted(figures, *result.counters, backend.config());
    figures.useful_macs += (*result.counters)[regs::kCntUsefulMacsIndex];  // its products'
  }
}

namespace {

// An int8 product's per-column requantisationnamespace {

// An int8 product's per-column requantisation (Q-REQ's parameters); none for its sums alone.
std::vector<num::RequantParams> requant_params(const QuantEpilogue& epilogue, std::size_t n) {
  if (!epilogue.multipliers) return {};
  std::vector<num::RequantParams> columns(n);
  for (std::size_t j = 0; j < n; ++j) {
    columns[j] = {epilogue.bias ? epilogue.bias[j] : 0, epilogue.multipliers[j],
                  epilogue.output_zero_point, epilogue.clamp_lo, epilogue.clamp_hi};
  }
  return columns;
}

// An int8 product's results from what the core (or the reference model) gave: with a zero point
// in B (two activations, as in attention, or MatMulInteger's b_zero_point) the int32 sums of
// (a - za) b, from which the host takes off zb times each row's sum of (a - za), then
// requantises (Q-REQ) where the product has multipliers; else what it gave (the requantised
// values, or the sums).
std::vector<std::int32_t> int8_results(num::MatrixI32 out, const ProductCallInt8& call) {
  const QuantEpilogue& epilogue = call.epilogue;
  if (epilogue.weight_zero_point != 0) {
    const std::vector<num::RequantParams> columns = requant_params(epilogue, call.n);
    for (std::size_t i = 0; i < call.m; ++i) {
      std::uint32_t row_sum = 0;  // of a - za, modulo 2^32 as the core's sums are
      for (std::size_t kk = 0; kk < call.k; ++kk) {
        row_sum += static_cast<std::uint32_t>(call.a[i * call.k + kk] - epilogue.input_zero_point);
      }
      const std::uint32_t correction =
          static_cast<std::uint32_t>(epilogue.weight_zero_point) * row_sum;
      for (std::size_t j = 0; j < call.n; ++j) {
        std::int32_t& sum = out.data[i * call.n + j];
        sum = isa::int32_value(static_cast<std::uint32_t>(sum) - correction);
        if (!columns.empty()) sum = num::requantize(sum, columns[j]);
      }
    }
  }
  return std::move(out.data);
}

// products() and products_int8(): each call as `run` computes it, in order; where compile()
// grouped their GEMMs into one program, the results those GEMMs left in the core's memory are
// read (`read`) once it has run, before the next program reuses the scratch region.
template <typename Result, typename Call, typename Run, typename Read>
std::vector<Result> run_products(Context& context, const std::vector<Call>& calls, Run run,
                                 Read read) {
  GemmSchedule* schedule = context.schedule;
  std::vector<TracedGemm>* traced = schedule ? schedule->recording : nullptr;
  const std::size_t group = traced ? ++schedule->groups : 0;
  const std::vector<CompiledGemm>* compiled = schedule ? schedule->compiled : nullptr;
  std::vector<Result> results;
  std::vector<std::pair<std::size_t, const GemmPlan*>> pending;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::size_t first_traced = traced ? traced->size() : 0;
    const std::size_t next = compiled ? schedule->next : 0;
    results.push_back(run(calls[i]));
    for (std::size_t g = first_traced; traced && g < traced->size(); ++g) {
      (*traced)[g].group = group;
      (*traced)[g].call = i;
    }
    if (!compiled || schedule->next != next + 1) continue;
    const CompiledGemm& gemm = (*compiled)[next];
    if (gemm.runs_with_next) {
      if (!gemm.result_kept) pending.emplace_back(i, &gemm.plan);
      continue;
    }
    for (const auto& [index, plan] : pending) {
      results[index] = read(calls[index], *plan, context.accelerator->memory());
    }
    pending.clear();
  }
  return results;
}

}  // namespace

std::vector<std::vector<float>> products(Context& context, const std::vector<ProductCall>& calls) {
  return run_products<std::vector<float>>(
      context, calls,
      [&](const ProductCall& call) {
        return product(context, call.a, call.b, call.m, call.k, call.n, call.weight, call.epilogue,
                       call.b_transposed, false, call.a_bf16.data.empty() ? nullptr : &call.a_bf16);
      },
      [](const ProductCall& call, const GemmPlan& plan, const HostMemory& memory) {
        const num::MatrixFp32 out = read_gemm_output(plan, memory);
        std::vector<float> values(call.m * call.n);
        std::memcpy(values.data(), out.data.data(), values.size() * sizeof(float));
        return values;
      });
}

std::vector<std::vector<std::int32_t>> products_int8(Context& context,
                                                     const std::vector<ProductCallInt8>& calls) {
  return run_products<std::vector<std::int32_t>>(
      context, calls,
      [&](const ProductCallInt8& call) {
        return product_int8(context, call.a, call.b, call.m, call.k, call.n, call.weight,
                            call.epilogue, call.b_transposed);
      },
      [](const ProductCallInt8& call, const GemmPlan& plan, const HostMemory& memory) {
        return int8_results(read_gemm_output_int(plan, memory), call);
      });
}

namespace {

// The core of an int8 product: a core with the int8 datapath, or none.
Backend* int8_accelerator(const Context& context) {
  return context.accelerator && context.accelerator->config().int8 ? context.accelerator : nullptr;
}

// An int8 product's spec of n columns (M and K left to the caller), and its
// requantisation on the core (`requant`): none where the host requantises, with a zero point in
// B (int8_results), and none without multipliers, whose int32 sums are the product's results.
GemmSpec int8_spec(const QuantEpilogue& epilogue, std::size_t n,
                   const std::vector<num::RequantParams>& columns, RequantColumns& requant) {
  const bool host_requant = epilogue.weight_zero_point != 0 || columns.empty();
  GemmSpec spec;
  spec.n = static_cast<std::uint32_t>(n);
  spec.in = InType::Int8;
  spec.out = host_requant ? OutType::Int32 : OutType::Int8;
  spec.input_zero_point = epilogue.input_zero_point;
  if (host_requant) return spec;
  spec.output_zero_point = epilogue.output_zero_point;
  spec.clamp_lo = epilogue.clamp_lo;
  spec.clamp_hi = epilogue.clamp_hi;
  for (const num::RequantParams& column : columns) {
    requant.bias.push_back(column.bias);
    requant.multiplier.push_back(column.m.multiplier);
    requant.shift.push_back(column.m.shift);
  }
  return spec;
}

}  // namespace

std::optional<std::vector<std::int32_t>> conv_product_int8(
    Context& context, const ConvGeometry& g, const std::int8_t* x, const ImageStrides& strides,
    const ProductB<std::int8_t>& b, std::size_t n, WeightOf weight, const QuantEpilogue& epilogue) {
  // B's zero point is taken off by the host from each im2col row's sum (int8_results).
  if (epilogue.weight_zero_point != 0) return std::nullopt;
  const std::vector<num::RequantParams> columns = requant_params(epilogue, n);
  RequantColumns requant;
  const std::optional<GemmPlan> plan =
      conv_plan(int8_accelerator(context), int8_spec(epilogue, n, columns, requant), g);
  if (!plan) return std::nullopt;
  const std::size_t m = std::size_t{g.batch} * g.out_h() * g.out_w(), k = g.taps() * g.channels;
  count_product(context, m, k, n, true);
  MadeOnce<std::int8_t> b8([&] {
    num::MatrixI8 made(k, n);
    std::copy(b(), b() + k * n, made.data.begin());
    return made;
  });
  return run_conv(context, *plan, x, strides, b8, weight,
                  plan->spec.out == OutType::Int8 ? &requant : nullptr)
      .data;
}

std::vector<std::int32_t> product_int8(Context& context, const std::int8_t* a,
                                       const ProductB<std::int8_t>& b_source, std::size_t m,
                                       std::size_t k, std::size_t n, WeightOf weight,
                                       const QuantEpilogue& epilogue, bool b_transposed) {
  // A core without the int8 datapath leaves the product to the host's reference model.
  Backend* accelerator = int8_accelerator(context);
  count_product(context, m, k, n, accelerator != nullptr);
  if (m == 0 || n == 0) return {};
  // Made at once: the host folds the input zero point with B's column sums at every run.
  const std::int8_t* b = b_source();
  std::vector<std::int8_t> laid_out;
  if (b_transposed && (!accelerator || accelerator->config().vector_lanes == 0)) {
    laid_out = nn::transpose(b, n, k);
    b = laid_out.data();
    b_transposed = false;
  }
  const std::vector<num::RequantParams> columns = requant_params(epilogue, n);
  RequantColumns requant;
  GemmSpec spec = int8_spec(epilogue, n, columns, requant);
  spec.m = static_cast<std::uint32_t>(m);
  spec.k = static_cast<std::uint32_t>(k);
  const bool host_requant = spec.out == OutType::Int32;
  spec.b_transposed = b_transposed;
  num::MatrixI8 a8(m, k), b8 = b_transposed ? num::MatrixI8(n, k) : num::MatrixI8(k, n);
  std::copy(a, a + m * k, a8.data.begin());
  std::copy(b, b + k * n, b8.data.begin());
  MadeOnce<std::int8_t> b_on_core(b8);
  const RequantColumns* on_core = host_requant ? nullptr : &requant;
  num::MatrixI32 out;
  if (k == 0) {
    out = num::MatrixI32(m, n);  // no sums
    if (!host_requant) {
      for (std::size_t e = 0; e < m * n; ++e) out.data[e] = num::requantize(0, columns[e % n]);
    }
  } else if (!accelerator) {
    // The reference model's int8 product (Q-MAC, Q-ZP, Q-REQ): the core's bits.
    out = reference_gemm(spec, a8, b8, nullptr, on_core);
  } else {
    // The sums of the first rows of B (where K is split) are int32: wrapping, so exact.
    GemmSpec sums_only = spec;
    sums_only.out = OutType::Int32;
    sums_only.output_zero_point = 0;
    sums_only.clamp_lo = -128;
    sums_only.clamp_hi = 127;
    out = run_on_core<std::int8_t, num::MatrixI32>(context, weight, sums_only, spec, a8, b_on_core,
                                                   on_core);
  }
  return int8_results(std::move(out), {a, b, m, k, n, weight, epilogue});
}

const Table& table() {
  static const Table all = [] {
    Table t;
    add_elementwise(t);
    add_shape(t);
    add_nn(t);
    add_recurrent(t);
    add_quant(t);
    return t;
  }();
  return all;
}

}  // namespace tpu::graph::ops
