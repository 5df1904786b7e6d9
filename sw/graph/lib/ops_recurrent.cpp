// LSTM and GRU, unrolled: the input's products for every step at once (one matrix product per
// direction), then per step the recurrent product and the gates' arithmetic, as ONNX defines
// them (gate order i, o, f, c for LSTM; z, r, h for GRU).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>

#include "ops.hpp"
#include "tpu/nn.hpp"
#include "vector_functions.hpp"

namespace tpu::graph::ops {
namespace {

VectorFunction gate_function(const Node& node, const std::string& name, float alpha, float beta) {
  using Kind = VectorFunction::Kind;
  static const std::map<std::string, Kind> kKinds = {
      {"Sigmoid", Kind::Sigmoid},     {"Tanh", Kind::Tanh},
      {"Relu", Kind::Relu},           {"HardSigmoid", Kind::HardSigmoid},
      {"LeakyRelu", Kind::LeakyRelu}, {"ScaledTanh", Kind::ScaledTanh}};
  const auto kind = kKinds.find(name);
  if (kind == kKinds.end()) fail(node, "activation " + name + " not supported");
  return {kind->second, alpha, beta};
}

// What LSTM and GRU share: shapes, direction, layout, the gate functions, the clip.
struct Recurrence {
  std::size_t steps = 0, batch = 0, inputs = 0, hidden = 0, directions = 1, gates = 0;
  bool reverse_only = false;
  std::vector<VectorFunction> functions;  // per direction: f, g (and h for LSTM)
  float clip = 0;                       // 0: none
  bool has_bias = false;
  bool functions_on_core = true;  // every one of them on the vector unit (VectorFunction::on_core)

  Recurrence(const Node& node, const Inputs& in, std::size_t gate_count,
             std::vector<std::string> default_functions) {
    const Tensor& x = need_float(node, in, 0);
    const Tensor& w = need_float(node, in, 1);
    const Tensor& r = need_float(node, in, 2);
    if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) fail(node, "X, W and R not of rank 3");
    // layout 1 (batch first, opset 14) is left out: exporters write layout 0 with transposes,
    // and onnxruntime, the tests' reference, does not run it.
    if (node.int_attr("layout", 0) != 0) fail(node, "layout 1 (batch first) not supported");
    steps = static_cast<std::size_t>(x.shape[0]);
    batch = static_cast<std::size_t>(x.shape[1]);
    inputs = static_cast<std::size_t>(x.shape[2]);
    hidden = static_cast<std::size_t>(
        node.int_attr("hidden_size", w.shape[1] / static_cast<std::int64_t>(gate_count)));
    gates = gate_count;
    const std::string direction = node.string_attr("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
      fail(node, "direction \"" + direction + "\" not known");
    }
    directions = direction == "bidirectional" ? 2 : 1;
    reverse_only = direction == "reverse";
    const auto d = static_cast<std::int64_t>(directions);
    const auto gh = static_cast<std::int64_t>(gates * hidden);
    if (w.shape != Shape{d, gh, static_cast<std::int64_t>(inputs)} ||
        r.shape != Shape{d, gh, static_cast<std::int64_t>(hidden)}) {
      fail(node, "W " + shape_text(w.shape) + " or R " + shape_text(r.shape) +
                     " does not match the input and hidden_size");
    }
    if (in.size() > 4 && in[4]) {
      for (const std::int64_t length : int_values(*in[4])) {
        if (length != static_cast<std::int64_t>(steps)) {
          fail(node, "sequence_lens shorter than the sequence not supported");
        }
      }
    }
    clip = node.float_attr("clip", 0.0f);
    has_bias = in.size() > 3 && in[3];
    const std::vector<float> alphas = node.floats_attr("activation_alpha");
    const std::vector<float> betas = node.floats_attr("activation_beta");
    const std::size_t per = default_functions.size();
    std::vector<std::string> names = node.strings_attr("activations");
    if (names.empty()) {
      for (std::size_t i = 0; i < directions * per; ++i)
        names.push_back(default_functions[i % per]);
    }
    if (names.size() != directions * per) {
      fail(node, std::to_string(names.size()) + " activations where it takes " +
                     std::to_string(directions * per));
    }
    // activation_alpha and activation_beta are consumed in the functions' order, each by the
    // functions that take one (as onnxruntime reads them); ONNX's defaults where they run out.
    std::size_t next_alpha = 0, next_beta = 0;
    for (const std::string& name : names) {
      const bool takes_beta = name == "HardSigmoid" || name == "ScaledTanh";
      const bool takes_alpha = takes_beta || name == "LeakyRelu";
      float alpha = name == "HardSigmoid" ? 0.2f : name == "LeakyRelu" ? 0.01f : 1.0f;
      float beta = name == "HardSigmoid" ? 0.5f : 1.0f;
      if (takes_alpha && next_alpha < alphas.size()) alpha = alphas[next_alpha++];
      if (takes_beta && next_beta < betas.size()) beta = betas[next_beta++];
      functions.push_back(gate_function(node, name, alpha, beta));
      functions_on_core = functions_on_core && functions.back().on_core();
    }
  }

  float clipped(float v) const { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; }
  // The same on the vector unit.
  Value clipped(RowExpression& e, Value v) const {
    if (clip <= 0) return v;
    return e.op(Op::Max, e.op(Op::Min, v, e.scalar(clip)), e.scalar(-clip));
  }

  // W[d] or R[d] (gates*hidden x cols) transposed, as the right operand of a product.
  static std::vector<float> operand(const Tensor& m, std::size_t d, std::size_t rows,
                                    std::size_t cols) {
    return nn::transpose(&m.floats[d * rows * cols], rows, cols);
  }

  // An initial state [directions, batch, hidden] (zeros where the node leaves it out).
  std::vector<float> initial(const Node& node, const Inputs& in, std::size_t index,
                             std::size_t d) const {
    if (in.size() <= index || !in[index]) return std::vector<float>(batch * hidden, 0.0f);
    const Tensor& t = need_float(node, in, index);
    if (t.size() != directions * batch * hidden) fail(node, "an initial state of another shape");
    return {t.floats.begin() + static_cast<std::ptrdiff_t>(d * batch * hidden),
            t.floats.begin() + static_cast<std::ptrdiff_t>((d + 1) * batch * hidden)};
  }

  // Y: [steps, directions, batch, hidden].
  Tensor output_y() const {
    return Tensor(DType::Float32,
                  {static_cast<std::int64_t>(steps), static_cast<std::int64_t>(directions),
                   static_cast<std::int64_t>(batch), static_cast<std::int64_t>(hidden)});
  }
  float& y_at(Tensor& y, std::size_t t, std::size_t d, std::size_t b, std::size_t j) const {
    return y.floats[((t * directions + d) * batch + b) * hidden + j];
  }
  // Y_h and Y_c: [directions, batch, hidden].
  Tensor output_state() const {
    return Tensor(DType::Float32,
                  {static_cast<std::int64_t>(directions), static_cast<std::int64_t>(batch),
                   static_cast<std::int64_t>(hidden)});
  }
  float& state_at(Tensor& s, std::size_t d, std::size_t b, std::size_t j) const {
    return s.floats[(d * batch + b) * hidden + j];
  }
  bool reversed(std::size_t d) const { return reverse_only || d == 1; }
};

// The bias of direction d: Wb + Rb per gate row, zeros where the node has none.
std::vector<float> bias_of(const Node& node, const Inputs& in, const Recurrence& rec, std::size_t d,
                           bool split_recurrent, std::vector<float>* recurrent) {
  const std::size_t gh = rec.gates * rec.hidden;
  std::vector<float> bias(gh, 0.0f);
  if (recurrent) recurrent->assign(gh, 0.0f);
  if (in.size() <= 3 || !in[3]) return bias;
  const Tensor& b = need_float(node, in, 3);
  if (b.size() != rec.directions * 2 * gh) fail(node, "B of another shape");
  for (std::size_t i = 0; i < gh; ++i) {
    const float wb = b.floats[d * 2 * gh + i], rb = b.floats[d * 2 * gh + gh + i];
    if (split_recurrent) {
      bias[i] = wb;
      (*recurrent)[i] = rb;
    } else {
      bias[i] = wb + rb;
    }
  }
  return bias;
}

// Gate k's columns of `rows` (batch rows of gates x hidden values): a batch x hidden tensor.
std::vector<float> gate_columns(const float* rows, const Recurrence& rec, std::size_t k) {
  const std::size_t h = rec.hidden, gh = rec.gates * h;
  std::vector<float> columns(rec.batch * h);
  for (std::size_t b = 0; b < rec.batch; ++b) {
    std::copy_n(rows + b * gh + k * h, h, &columns[b * h]);
  }
  return columns;
}

// Marks the node's run as one that computes on the host besides the core (a host step).
void computed_on_host(Context& context) {
  if (context.run) context.run->host_arithmetic = true;
}

// Gate k's columns of the input's or the recurrent products: a tensor of the expression.
using GateOperand = std::function<Value(std::size_t k)>;

// The sum of gate k's input and recurrent products, its bias where the node has one, its
// peephole on `state` where given, clipped.
Value gate_sum(RowExpression& e, const Recurrence& rec, std::size_t k, const GateOperand& xw,
               const GateOperand& hr, const float* bias, const float* peephole = nullptr,
               const Value* state = nullptr) {
  Value v = e.op(Op::Add, xw(k), hr(k));
  if (rec.has_bias) v = e.op(Op::Add, v, e.row(bias + k * rec.hidden));
  if (peephole) v = e.op(Op::Add, v, e.op(Op::Mul, e.row(peephole), *state));
  return rec.clipped(e, v);
}

// An LSTM cell of direction d on `e` (ONNX's gates as the host computes them below, in the
// core's arithmetic): the new hidden and cell states.
std::pair<Value, Value> lstm_cell(RowExpression& e, const Recurrence& rec, std::size_t d,
                                  const GateOperand& xw, const GateOperand& hr, Value c_prev,
                                  const float* bias, const float* p) {
  const std::size_t h = rec.hidden;
  const VectorFunction& f = rec.functions[d * 3];
  const VectorFunction& g = rec.functions[d * 3 + 1];
  const VectorFunction& act_h = rec.functions[d * 3 + 2];
  const auto peephole = [&](std::size_t k) { return p ? p + k * h : nullptr; };
  const Value i = f.steps(e, gate_sum(e, rec, 0, xw, hr, bias, peephole(0), &c_prev));
  const Value forget = f.steps(e, gate_sum(e, rec, 2, xw, hr, bias, peephole(2), &c_prev));
  const Value candidate = g.steps(e, gate_sum(e, rec, 3, xw, hr, bias));
  const Value c = e.op(Op::Add, e.op(Op::Mul, forget, c_prev), e.op(Op::Mul, i, candidate));
  const Value o = f.steps(e, gate_sum(e, rec, 1, xw, hr, bias, peephole(1), &c));
  return {e.op(Op::Mul, o, act_h.steps(e, c)), c};
}

// An LSTM step of direction d on the vector unit: state_h and state_c become the step's; false
// where the core cannot run it, the states as they were.
bool lstm_step_on_core(Context& context, const Recurrence& rec, std::size_t d, const float* xw_t,
                       const std::vector<float>& hr, const std::vector<float>& bias, const float* p,
                       std::vector<float>& state_h, std::vector<float>& state_c) {
  if (!rec.functions_on_core) return false;
  RowExpression e(rec.batch, rec.hidden);
  const auto [h, c] = lstm_cell(
      e, rec, d, [&](std::size_t k) { return e.tensor(gate_columns(xw_t, rec, k)); },
      [&](std::size_t k) { return e.tensor(gate_columns(hr.data(), rec, k)); }, e.tensor(state_c),
      bias.data(), p);
  e.builder().output(h);
  e.builder().output(c);
  std::optional<std::vector<std::vector<float>>> out = expression_on_core(context, e.builder());
  if (!out) return false;
  state_h = std::move((*out)[0]);
  state_c = std::move((*out)[1]);
  return true;
}

// Regions of the core's memory a recurrent direction keeps its rows in, one after the other from
// `next` (each from a 64-byte boundary).
struct Regions {
  std::uint64_t next = 0;
  std::uint32_t take(std::uint64_t bytes) {
    next = (next + 63) / 64 * 64;
    const std::uint64_t at = next;
    next += bytes;
    if (next > 0xFFFFFFFFull) throw std::invalid_argument("beyond 32-bit host addresses");
    return static_cast<std::uint32_t>(at);
  }
};

// The bits of `count` floats.
void write_floats(HostMemory& memory, std::uint64_t addr, const float* values, std::size_t count) {
  if (memory.size() < addr + count * sizeof(float)) memory.resize(addr + count * sizeof(float));
  memory.write(addr, values, count * sizeof(float));
}

// What a direction with its state on the core (lstm_direction_on_core, gru_direction_on_core)
// shares: the input's product for every step and the recurrent product, the rows of the
// input's products (copied out of the product's memory, where the recurrent product's operands
// may go), the output's rows (read once) and the state's rows, above the products' memory; the
// host's writes and reads counted in the node's figures.
class StateOnCore {
 public:
  // Whether a direction of `rec` can keep its state on the core: its gate functions there, a
  // vector unit, rows of whole tiles, each product one GEMM.
  static bool possible(const Context& context, const Recurrence& rec) {
    return rec.functions_on_core && ResidentProduct::possible(context, rec.hidden) &&
           ResidentProduct::possible(context, rec.inputs) &&
           context.accelerator->config().vector_lanes > 0 &&
           rec.hidden % context.accelerator->config().dim == 0;
  }

  // Direction d's products: of the inputs `x` (steps x batch rows of rec.inputs) and the input
  // weights `w` (W's transpose), then of the hidden state and `r` (R's transpose), and where
  // `r_h` is given (a GRU without linear_before_reset) of the reset state and R's candidate rows
  // (h x h), after each of the former.
  StateOnCore(Context& context, const Recurrence& rec, const float* x, const std::vector<float>& w,
              WeightOf input_weight, const std::vector<float>& r, WeightOf weight,
              const std::vector<float>* r_h = nullptr, WeightOf reset_weight = {})
      : context_(context),
        rec_(rec),
        x_(x),
        input_product_(context, w.data(), rec.steps * rec.batch, rec.inputs, rec.gates * rec.hidden,
                       input_weight),
        product_(context, r.data(), rec.batch, rec.hidden, rec.gates * rec.hidden, weight, 1) {
    if (r_h) {
      reset_product_.emplace(context, r_h->data(), rec.batch, rec.hidden, rec.hidden, reset_weight,
                             2);
      product_.plan_above_weights();
    }
    // The recurrent products' weights were placed after the input product was planned.
    input_product_.plan_above_weights();
    std::uint64_t top = std::max(input_product_.top(), product_.top());
    if (reset_product_) top = std::max(top, reset_product_->top());
    Regions regions{top};
    xw_addr_ = regions.take(rec.steps * rec.batch * rec.gates * rec.hidden * sizeof(float));
    state_addr_ = regions.take(row_pitch() * rec.batch);
    hidden_addr_ = regions.take(row_pitch() * rec.batch);
    y_addr_ = regions.take(rec.steps * rec.batch * row_pitch());
    if (reset_product_) {
      z_addr_ = regions.take(row_pitch() * rec.batch);
      reset_state_addr_ = regions.take(row_pitch() * rec.batch);
    }
    base_ = regions.next;
  }

  const GemmPlan& plan() const { return product_.plan(); }
  std::uint32_t row_pitch() const {
    return static_cast<std::uint32_t>(rec_.hidden * sizeof(float));
  }

  // Gate k's input products of step t, and its recurrent products of the step just run.
  ExpressionView xw(std::size_t t, std::size_t k) const {
    const std::size_t gh = rec_.gates * rec_.hidden;
    return {static_cast<std::uint32_t>(xw_addr_ + (t * rec_.batch * gh + k * rec_.hidden) * 4),
            static_cast<std::uint32_t>(gh * 4)};
  }
  ExpressionView hr(std::size_t k) const {
    return {static_cast<std::uint32_t>(plan().out_addr + k * rec_.hidden * 4),
            static_cast<std::uint32_t>(plan().n_pad * 4)};
  }
  // The state the steps read and write over: the cell state (LSTM), the hidden state (GRU).
  ExpressionView state() const { return {state_addr_, row_pitch()}; }
  ExpressionView y(std::size_t t) const {
    return {static_cast<std::uint32_t>(y_addr_ + t * rec_.batch * row_pitch()), row_pitch()};
  }
  // The recurrent product's A, as the step writes it for the next: bf16 rows.
  ExpressionView a() const { return {plan().a_addr, static_cast<std::uint32_t>(plan().k_pad * 2)}; }
  // A GRU step's z and reset state r h between its two programs, and the reset state's product.
  ExpressionView z() const { return {z_addr_, row_pitch()}; }
  ExpressionView reset_state() const { return {reset_state_addr_, row_pitch()}; }
  ExpressionView reset_product() const {
    const GemmPlan& p = reset_product_->plan();
    return {p.out_addr, static_cast<std::uint32_t>(p.n_pad * 4)};
  }

  // A step's gates at time t on `e`, over this direction's views: the new hidden state (written
  // as the step's output rows and as the next product's A) and the state kept (written over the
  // old).
  using Cell = std::function<std::pair<Value, Value>(RowExpression& e, std::size_t t)>;
  // With a reset product: a step's program before it, on `e`, writing what `cell` reads after
  // the reset state's product (the views z() and reset_state()).
  using FirstPart = std::function<void(RowExpression& e, std::size_t t)>;

  // Runs direction d's steps, each the recurrent product and then `cell`'s gates (with a reset
  // product: `first`, the reset state's bf16 rows as that product's A, the product, then
  // `cell`), from the initial `state` and `hidden` state, as one program. False where the core
  // cannot take the gates (nothing run).
  bool run_steps(std::size_t d, const Cell& cell, const std::vector<float>& state,
                 const std::vector<float>& hidden, const FirstPart& first = nullptr) {
    const auto gates = [&](std::size_t t) {
      RowExpression e(rec_.batch, rec_.hidden);
      const auto [h, kept] = cell(e, t);
      e.builder().output_to(h, y(t));
      e.builder().output_to(h, a(), true);
      e.builder().output_to(kept, this->state());
      return e.builder();
    };
    const auto first_part = [&](std::size_t t) {
      RowExpression e(rec_.batch, rec_.hidden);
      first(e, t);
      return e.builder();
    };
    const bool reset = reset_product_.has_value();
    if (reset && (!reset_product_->weights_resident() || !plans(first_part(0), base_) ||
                  !plans(reset_a(), base_))) {
      return false;
    }
    // The first part's constant rows at base_, the gates' above its memory.
    const std::uint64_t gates_base =
        reset ? plan_expression(context_.accelerator->config(), first_part(0).spec(), base_)
                    .memory_bytes
              : base_;
    if (!input_product_.weights_resident() || !product_.weights_resident() ||
        !plans(copy(), base_) || !plans(initial_a(), base_) || !plans(gates(0), gates_base)) {
      return false;
    }
    write_rows(state_addr_, state);
    write_rows(hidden_addr_, hidden);
    JoinedProgram steps(context_);
    // The input's products, then their copy where the steps read them, then the initial hidden
    // state as the recurrent product's A (where the input product's operands may have been).
    const num::MatrixBf16 a = nn::bf16_matrix(x_, rec_.steps * rec_.batch, rec_.inputs);
    steps.add(input_product_, &a);
    if (!steps.add(copy(), base_) || !steps.add(initial_a(), base_)) {
      throw std::logic_error("a copy refused on the core where it was planned");
    }
    for (std::size_t s = 0; s < rec_.steps; ++s) {
      const std::size_t t = rec_.reversed(d) ? rec_.steps - 1 - s : s;
      steps.add(product_);
      if (reset) {
        if (!steps.add(first_part(t), base_) || !steps.add(reset_a(), base_)) {
          throw std::logic_error("a step's gates refused on the core where the first were planned");
        }
        steps.add(*reset_product_);
      }
      if (!steps.add(gates(t), gates_base)) {
        throw std::logic_error("a step's gates refused on the core where the first were planned");
      }
    }
    steps.run();
    return true;
  }

  std::vector<float> read_state() { return read(state_addr_, rec_.batch * rec_.hidden); }
  // The output's rows into direction d of Y; returns the last step's (the final hidden state).
  std::vector<float> read_y_into(Tensor& y, std::size_t d) {
    const std::size_t h = rec_.hidden, batch = rec_.batch;
    const std::vector<float> rows = read(y_addr_, rec_.steps * batch * h);
    for (std::size_t t = 0; t < rec_.steps; ++t) {
      for (std::size_t b = 0; b < batch; ++b) {
        std::copy_n(&rows[(t * batch + b) * h], h, &rec_.y_at(y, t, d, b, 0));
      }
    }
    const std::size_t last = rec_.reversed(d) ? 0 : rec_.steps - 1;
    return {rows.begin() + static_cast<std::ptrdiff_t>(last * batch * h),
            rows.begin() + static_cast<std::ptrdiff_t>((last + 1) * batch * h)};
  }

 private:
  // The input's products from the input product's result to the rows the steps read.
  ExpressionBuilder copy() const {
    const std::size_t gh = rec_.gates * rec_.hidden;
    const GemmPlan& input = input_product_.plan();
    ExpressionBuilder e(rec_.steps * rec_.batch, static_cast<std::uint32_t>(gh));
    e.output_to(e.tensor_in({input.out_addr, input.n_pad * 4}),
                {xw_addr_, static_cast<std::uint32_t>(gh * 4)});
    return e;
  }
  // The reset state from its rows to the reset product's A, in bf16 (the rows apart from the
  // first product's result, which the first part reads while it writes them).
  ExpressionBuilder reset_a() const {
    const GemmPlan& p = reset_product_->plan();
    ExpressionBuilder e(rec_.batch, static_cast<std::uint32_t>(rec_.hidden));
    e.output_to(e.tensor_in(reset_state()), {p.a_addr, static_cast<std::uint32_t>(p.k_pad * 2)},
                true);
    return e;
  }
  // The initial hidden state from its rows to the recurrent product's A, in bf16.
  ExpressionBuilder initial_a() const {
    ExpressionBuilder e(rec_.batch, static_cast<std::uint32_t>(rec_.hidden));
    e.output_to(e.tensor_in({hidden_addr_, row_pitch()}), a(), true);
    return e;
  }
  // Writes a state's rows (batch x hidden) at `addr`.
  void write_rows(std::uint32_t addr, const std::vector<float>& values) {
    write_floats(context_.accelerator->memory(), addr, values.data(), values.size());
    count_host_bytes(values.size() * sizeof(float));
  }
  // Whether the core takes `e` above `base`.
  bool plans(const ExpressionBuilder& e, std::uint64_t base) const {
    try {
      plan_expression(context_.accelerator->config(), e.spec(), base);
      return true;
    } catch (const std::invalid_argument&) {
      return false;
    }
  }
  std::vector<float> read(std::uint64_t addr, std::size_t count) {
    std::vector<float> values(count);
    context_.accelerator->memory().read(addr, values.data(), count * sizeof(float));
    count_host_bytes(count * sizeof(float));
    return values;
  }
  void count_host_bytes(std::uint64_t bytes) {
    if (context_.run) context_.run->host_bytes += bytes;
  }

  Context& context_;
  const Recurrence& rec_;
  const float* x_;
  ResidentProduct input_product_, product_;
  std::optional<ResidentProduct> reset_product_;
  std::uint32_t xw_addr_ = 0, state_addr_ = 0, hidden_addr_ = 0, y_addr_ = 0;
  std::uint32_t z_addr_ = 0, reset_state_addr_ = 0;  // with a reset product
  std::uint64_t base_ = 0;
};

// An LSTM direction with its state on the core, as one program (StateOnCore::run_steps): the
// input's product of `x` for every step, then per step the recurrent product on the hidden state
// as the step before left it (bf16 rows where the product reads its A) and the gates, which read
// the input's products, the recurrent ones and the cell state where they lie, and write the new
// cell state over the old, the hidden state as the step's output rows and again as the next
// product's A. The host writes the inputs and the initial states and reads the outputs and the
// last cell state. False where it cannot (nothing run): the caller runs the steps one by one.
bool lstm_direction_on_core(Context& context, const Recurrence& rec, std::size_t d, const float* x,
                            const std::vector<float>& w, WeightOf input_weight,
                            const std::vector<float>& r, WeightOf weight,
                            const std::vector<float>& bias, const float* p,
                            std::vector<float>& state_h, std::vector<float>& state_c, Tensor& y) {
  if (!StateOnCore::possible(context, rec)) return false;
  StateOnCore core(context, rec, x, w, input_weight, r, weight);
  const auto cell = [&](RowExpression& e, std::size_t t) {
    return lstm_cell(
        e, rec, d, [&](std::size_t k) { return e.view(core.xw(t, k)); },
        [&](std::size_t k) { return e.view(core.hr(k)); }, e.view(core.state()), bias.data(), p);
  };
  if (!core.run_steps(d, cell, state_c, state_h)) return false;
  state_h = core.read_y_into(y, d);
  state_c = core.read_state();
  return true;
}

std::vector<Tensor> lstm(Context& context, const Node& node, const Inputs& in) {
  Recurrence rec(node, in, 4, {"Sigmoid", "Tanh", "Tanh"});
  if (node.int_attr("input_forget", 0) != 0) fail(node, "input_forget not supported");
  const Tensor& x = need_float(node, in, 0);
  const std::size_t h = rec.hidden, gh = 4 * h, batch = rec.batch;
  const Tensor* peepholes = in.size() > 7 && in[7] ? &need_float(node, in, 7) : nullptr;
  if (peepholes && peepholes->size() != rec.directions * 3 * h) fail(node, "P of another shape");
  Tensor y = rec.output_y(), y_h = rec.output_state(), y_c = rec.output_state();
  const std::vector<float>& rows = x.floats;  // [steps, batch, inputs]
  for (std::size_t d = 0; d < rec.directions; ++d) {
    const VectorFunction& f = rec.functions[d * 3];
    const VectorFunction& g = rec.functions[d * 3 + 1];
    const VectorFunction& act_h = rec.functions[d * 3 + 2];
    const std::vector<float> w = Recurrence::operand(need_float(node, in, 1), d, gh, rec.inputs);
    const std::vector<float> r = Recurrence::operand(need_float(node, in, 2), d, gh, h);
    const std::vector<float> bias = bias_of(node, in, rec, d, false, nullptr);
    std::vector<float> state_h = rec.initial(node, in, 5, d);
    std::vector<float> state_c = rec.initial(node, in, 6, d);
    const float* p = peepholes ? &peepholes->floats[d * 3 * h] : nullptr;  // i, o, f
    const bool on_core = lstm_direction_on_core(context, rec, d, rows.data(), w, {in[1], d}, r,
                                                {in[2], d}, bias, p, state_h, state_c, y);
    // Else the input's products for every step, then the steps one by one.
    const std::vector<float> xw = on_core ? std::vector<float>()
                                          : product(context, rows.data(), w.data(),
                                                    rec.steps * batch, rec.inputs, gh, {in[1], d});
    for (std::size_t s = 0; s < (on_core ? 0 : rec.steps); ++s) {
      const std::size_t t = rec.reversed(d) ? rec.steps - 1 - s : s;
      const std::vector<float> hr =
          product(context, state_h.data(), r.data(), batch, h, gh, {in[2], d});
      const float* xw_t = &xw[t * batch * gh];
      if (!lstm_step_on_core(context, rec, d, xw_t, hr, bias, p, state_h, state_c)) {
        computed_on_host(context);
        for (std::size_t b = 0; b < batch; ++b) {
          for (std::size_t j = 0; j < h; ++j) {
            const auto gate = [&](std::size_t k) {
              return xw_t[b * gh + k * h + j] + hr[b * gh + k * h + j] + bias[k * h + j];
            };
            float& c = state_c[b * h + j];
            const float i_gate = f(rec.clipped(gate(0) + (p ? p[j] * c : 0.0f)));
            const float f_gate = f(rec.clipped(gate(2) + (p ? p[2 * h + j] * c : 0.0f)));
            const float candidate = g(rec.clipped(gate(3)));
            c = f_gate * c + i_gate * candidate;
            const float o_gate = f(rec.clipped(gate(1) + (p ? p[h + j] * c : 0.0f)));
            state_h[b * h + j] = o_gate * act_h(c);
          }
        }
      }
      for (std::size_t b = 0; b < batch; ++b) {
        std::copy_n(&state_h[b * h], h, &rec.y_at(y, t, d, b, 0));
      }
    }
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t j = 0; j < h; ++j) {
        rec.state_at(y_h, d, b, j) = state_h[b * h + j];
        rec.state_at(y_c, d, b, j) = state_c[b * h + j];
      }
    }
  }
  return outputs(std::move(y), std::move(y_h), std::move(y_c));
}

// A GRU gate k on `e`: f(clip(((xw + hr) + Wb) + Rb)).
Value gru_gate(RowExpression& e, const Recurrence& rec, std::size_t d, std::size_t k,
               const GateOperand& xw, const GateOperand& hr, const std::vector<float>& wb,
               const std::vector<float>& rb) {
  Value v = e.op(Op::Add, xw(k), hr(k));
  if (rec.has_bias) {
    v = e.op(Op::Add, e.op(Op::Add, v, e.row(&wb[k * rec.hidden])), e.row(&rb[k * rec.hidden]));
  }
  return rec.functions[d * 2].steps(e, rec.clipped(e, v));
}

// GRU's candidate's recurrent term with linear_before_reset on `e`: r (hr + Rb).
Value gru_reset_recurrent(RowExpression& e, const Recurrence& rec, Value reset,
                          const GateOperand& hr, const std::vector<float>& rb) {
  Value recurrent = hr(2);
  if (rec.has_bias) recurrent = e.op(Op::Add, recurrent, e.row(&rb[2 * rec.hidden]));
  return e.op(Op::Mul, reset, recurrent);
}

// GRU's new state on `e` from z, the state and the candidate's recurrent term (before Rb where
// `add_rb`): (1 - z) g(clip((xw + Wb) + recurrent)) + z state.
Value gru_new_state(RowExpression& e, const Recurrence& rec, std::size_t d, Value z, Value state,
                    Value recurrent, bool add_rb, const GateOperand& xw,
                    const std::vector<float>& wb, const std::vector<float>& rb) {
  const std::size_t h = rec.hidden;
  if (add_rb && rec.has_bias) recurrent = e.op(Op::Add, recurrent, e.row(&rb[2 * h]));
  Value sum = xw(2);
  if (rec.has_bias) sum = e.op(Op::Add, sum, e.row(&wb[2 * h]));
  const Value candidate =
      rec.functions[d * 2 + 1].steps(e, rec.clipped(e, e.op(Op::Add, sum, recurrent)));
  const Value keep = e.op(Op::Sub, e.scalar(1.0f), z);
  return e.op(Op::Add, e.op(Op::Mul, keep, candidate), e.op(Op::Mul, z, state));
}

// A GRU direction with linear_before_reset and its state on the core, as
// lstm_direction_on_core runs an LSTM's: the hidden state one region, read by the gates and
// written over by them, as the step's output rows and as the next product's A. False where it
// cannot (nothing run): the caller runs the steps one by one.
bool gru_direction_on_core(Context& context, const Recurrence& rec, std::size_t d,
                           bool linear_before_reset, const float* x, const std::vector<float>& w,
                           WeightOf input_weight, const std::vector<float>& r, WeightOf weight,
                           const std::vector<float>& r_h, WeightOf reset_weight,
                           const std::vector<float>& wb, const std::vector<float>& rb,
                           std::vector<float>& state, Tensor& y) {
  if (!StateOnCore::possible(context, rec)) return false;
  StateOnCore core(context, rec, x, w, input_weight, r, weight,
                   linear_before_reset ? nullptr : &r_h, reset_weight);
  const auto gates = [&](RowExpression& e, std::size_t t, Value& z, Value& reset) {
    const GateOperand input = [&](std::size_t k) { return e.view(core.xw(t, k)); };
    const GateOperand recurrent = [&](std::size_t k) { return e.view(core.hr(k)); };
    z = gru_gate(e, rec, d, 0, input, recurrent, wb, rb);
    reset = gru_gate(e, rec, d, 1, input, recurrent, wb, rb);
    return recurrent;
  };
  bool ran = false;
  if (linear_before_reset) {
    const auto cell = [&](RowExpression& e, std::size_t t) {
      Value z, reset;
      const GateOperand recurrent = gates(e, t, z, reset);
      const Value h = gru_new_state(
          e, rec, d, z, e.view(core.state()), gru_reset_recurrent(e, rec, reset, recurrent, rb),
          false, [&](std::size_t k) { return e.view(core.xw(t, k)); }, wb, rb);
      return std::pair{h, h};
    };
    ran = core.run_steps(d, cell, state, state);
  } else {
    // z and the reset state r h, then (after the reset state's product) the new state.
    const auto first = [&](RowExpression& e, std::size_t t) {
      Value z, reset;
      gates(e, t, z, reset);
      e.builder().output_to(z, core.z());
      e.builder().output_to(e.op(Op::Mul, reset, e.view(core.state())), core.reset_state());
    };
    const auto cell = [&](RowExpression& e, std::size_t t) {
      const Value h = gru_new_state(
          e, rec, d, e.view(core.z()), e.view(core.state()), e.view(core.reset_product()), true,
          [&](std::size_t k) { return e.view(core.xw(t, k)); }, wb, rb);
      return std::pair{h, h};
    };
    ran = core.run_steps(d, cell, state, state, first);
  }
  if (!ran) return false;
  core.read_y_into(y, d);
  state = core.read_state();
  return true;
}

// What a GRU's step reads: the step's input products (xw_t: a row of gates a batch entry), the
// recurrent ones (hr), the biases, and the product of the reset state with R's candidate rows
// (linear_before_reset 0).
struct GruStep {
  const Recurrence& rec;
  std::size_t d = 0;
  bool linear_before_reset = false;
  const float* xw_t = nullptr;
  const std::vector<float>& hr;
  const std::vector<float>& wb;
  const std::vector<float>& rb;
  std::function<std::vector<float>(const std::vector<float>&)> reset_product;

  const VectorFunction& f() const { return rec.functions[d * 2]; }
  const VectorFunction& g() const { return rec.functions[d * 2 + 1]; }
  std::size_t at(std::size_t b, std::size_t k, std::size_t j) const {
    return b * rec.gates * rec.hidden + k * rec.hidden + j;
  }

  // On the host: gate k, f(clip(((xw + hr) + wb) + rb)).
  std::vector<float> gate(std::size_t k) const {
    const std::size_t h = rec.hidden;
    std::vector<float> values(rec.batch * h);
    for (std::size_t b = 0; b < rec.batch; ++b) {
      for (std::size_t j = 0; j < h; ++j) {
        values[b * h + j] =
            f()(rec.clipped(xw_t[at(b, k, j)] + hr[at(b, k, j)] + wb[k * h + j] + rb[k * h + j]));
      }
    }
    return values;
  }
  // On the host: the new state (1 - z) candidate + z state, the candidate
  // g(clip((xw + wb) + recurrent)) with recurrent r (hr + rb) (linear_before_reset) or
  // product_of_reset + rb.
  void update(const std::vector<float>& z, const std::vector<float>& reset,
              const std::vector<float>& product_of_reset, std::vector<float>& state) const {
    const std::size_t h = rec.hidden;
    for (std::size_t b = 0; b < rec.batch; ++b) {
      for (std::size_t j = 0; j < h; ++j) {
        const float recurrent = linear_before_reset
                                    ? reset[b * h + j] * (hr[at(b, 2, j)] + rb[2 * h + j])
                                    : product_of_reset[b * h + j] + rb[2 * h + j];
        const float candidate = g()(rec.clipped(xw_t[at(b, 2, j)] + wb[2 * h + j] + recurrent));
        float& value = state[b * h + j];
        value = (1.0f - z[b * h + j]) * candidate + z[b * h + j] * value;
      }
    }
  }
  // The step on the host.
  void on_host(std::vector<float>& state) const {
    const std::vector<float> z = gate(0), reset = gate(1);
    std::vector<float> product_of_reset;
    if (!linear_before_reset) {
      std::vector<float> reset_state(reset.size());
      for (std::size_t i = 0; i < reset_state.size(); ++i) reset_state[i] = reset[i] * state[i];
      product_of_reset = reset_product(reset_state);
    }
    update(z, reset, product_of_reset, state);
  }

  // The step on the vector unit: one program with linear_before_reset, else the gates' and
  // the reset state's, then its product, then the update's. False where the core cannot run it,
  // the state as it was.
  bool on_core(Context& context, std::vector<float>& state) const {
    if (!rec.functions_on_core) return false;
    RowExpression gates(rec.batch, rec.hidden);
    const GateOperand xw = [&](std::size_t k) { return gates.tensor(gate_columns(xw_t, rec, k)); };
    const GateOperand recurrent = [&](std::size_t k) {
      return gates.tensor(gate_columns(hr.data(), rec, k));
    };
    const Value h_prev = gates.tensor(state);
    const Value z = gru_gate(gates, rec, d, 0, xw, recurrent, wb, rb);
    const Value reset = gru_gate(gates, rec, d, 1, xw, recurrent, wb, rb);
    if (linear_before_reset) {
      gates.builder().output(gru_new_state(gates, rec, d, z, h_prev,
                                           gru_reset_recurrent(gates, rec, reset, recurrent, rb),
                                           false, xw, wb, rb));
    } else {
      gates.builder().output(z);
      gates.builder().output(gates.op(Op::Mul, reset, h_prev));
    }
    std::optional<std::vector<std::vector<float>>> out =
        expression_on_core(context, gates.builder());
    if (!out) return false;
    if (linear_before_reset) {
      state = std::move((*out)[0]);
      return true;
    }
    const std::vector<float> product_of_reset = reset_product((*out)[1]);
    RowExpression second(rec.batch, rec.hidden);
    const Value z_value = second.tensor((*out)[0]), state_value = second.tensor(state);
    second.builder().output(gru_new_state(
        second, rec, d, z_value, state_value, second.tensor(product_of_reset), true,
        [&](std::size_t k) { return second.tensor(gate_columns(xw_t, rec, k)); }, wb, rb));
    std::optional<std::vector<std::vector<float>>> next =
        expression_on_core(context, second.builder());
    if (next) {
      state = std::move((*next)[0]);
    } else {
      // Refused where the first ran (its values more at once): the update on the host.
      computed_on_host(context);
      update((*out)[0], {}, product_of_reset, state);
    }
    return true;
  }
};

std::vector<Tensor> gru(Context& context, const Node& node, const Inputs& in) {
  Recurrence rec(node, in, 3, {"Sigmoid", "Tanh"});
  const bool linear_before_reset = node.int_attr("linear_before_reset", 0) != 0;
  const Tensor& x = need_float(node, in, 0);
  const std::size_t h = rec.hidden, gh = 3 * h, batch = rec.batch;
  Tensor y = rec.output_y(), y_h = rec.output_state();
  const std::vector<float>& rows = x.floats;  // [steps, batch, inputs]
  for (std::size_t d = 0; d < rec.directions; ++d) {
    const std::vector<float> w = Recurrence::operand(need_float(node, in, 1), d, gh, rec.inputs);
    const std::vector<float> r = Recurrence::operand(need_float(node, in, 2), d, gh, h);
    std::vector<float> rb;
    const std::vector<float> wb = bias_of(node, in, rec, d, true, &rb);
    // R's h rows alone, for the product with the reset state (linear_before_reset 0).
    std::vector<float> r_h(h * h);
    for (std::size_t k = 0; k < h; ++k) {
      std::copy_n(&r[k * gh + 2 * h], h, &r_h[k * h]);
    }
    const auto reset_product = [&](const std::vector<float>& reset_state) {
      return product(context, reset_state.data(), r_h.data(), batch, h, h,
                     {in[2], rec.directions + d});
    };
    std::vector<float> state = rec.initial(node, in, 5, d);
    const bool on_core =
        gru_direction_on_core(context, rec, d, linear_before_reset, rows.data(), w, {in[1], d}, r,
                              {in[2], d}, r_h, {in[2], rec.directions + d}, wb, rb, state, y);
    // Else the input's products for every step, then the steps one by one.
    const std::vector<float> xw = on_core ? std::vector<float>()
                                          : product(context, rows.data(), w.data(),
                                                    rec.steps * batch, rec.inputs, gh, {in[1], d});
    for (std::size_t s = 0; s < (on_core ? 0 : rec.steps); ++s) {
      const std::size_t t = rec.reversed(d) ? rec.steps - 1 - s : s;
      const std::vector<float> hr =
          product(context, state.data(), r.data(), batch, h, gh, {in[2], d});
      const GruStep step{
          rec, d, linear_before_reset, &xw[t * batch * gh], hr, wb, rb, reset_product,
      };
      if (!step.on_core(context, state)) {
        computed_on_host(context);
        step.on_host(state);
      }
      for (std::size_t b = 0; b < batch; ++b) {
        std::copy_n(&state[b * h], h, &rec.y_at(y, t, d, b, 0));
      }
    }
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t j = 0; j < h; ++j) rec.state_at(y_h, d, b, j) = state[b * h + j];
    }
  }
  return outputs(std::move(y), std::move(y_h));
}

}  // namespace

void add_recurrent(Table& t) {
  t["LSTM"] = lstm;
  t["GRU"] = gru;
}

}  // namespace tpu::graph::ops
