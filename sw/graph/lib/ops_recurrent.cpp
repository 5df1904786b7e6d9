// LSTM and GRU, unrolled: the input's products for every step at once (one matrix product per
// direction), then per step the recurrent product and the gates' arithmetic, as ONNX defines
// them (gate order i, o, f, c for LSTM; z, r, h for GRU).
#include <algorithm>
#include <cmath>

#include "ops.hpp"
#include "tpu/nn.hpp"

namespace tpu::graph::ops {
namespace {

using Activation = std::function<float(float)>;

// One of the gate functions ONNX's recurrent operators name, with its alpha and beta where it
// takes them.
Activation activation(const Node& node, const std::string& name, float alpha, float beta) {
  if (name == "Sigmoid") return [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
  if (name == "Tanh") return [](float x) { return std::tanh(x); };
  if (name == "Relu") return [](float x) { return std::max(0.0f, x); };
  if (name == "HardSigmoid") {
    return [alpha, beta](float x) { return std::max(0.0f, std::min(1.0f, alpha * x + beta)); };
  }
  if (name == "LeakyRelu") return [alpha](float x) { return x < 0 ? alpha * x : x; };
  if (name == "ScaledTanh") return [alpha, beta](float x) { return alpha * std::tanh(beta * x); };
  fail(node, "activation " + name + " not supported");
}

// What LSTM and GRU share: shapes, direction, layout, the gate functions, the clip.
struct Recurrence {
  std::size_t steps = 0, batch = 0, inputs = 0, hidden = 0, directions = 1, gates = 0;
  bool reverse_only = false;
  std::vector<Activation> functions;  // per direction: f, g (and h for LSTM)
  float clip = 0;                     // 0: none

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
      functions.push_back(activation(node, name, alpha, beta));
    }
  }

  float clipped(float v) const { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; }

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
    const Activation& f = rec.functions[d * 3];
    const Activation& g = rec.functions[d * 3 + 1];
    const Activation& act_h = rec.functions[d * 3 + 2];
    const std::vector<float> w = Recurrence::operand(need_float(node, in, 1), d, gh, rec.inputs);
    const std::vector<float> r = Recurrence::operand(need_float(node, in, 2), d, gh, h);
    const std::vector<float> bias = bias_of(node, in, rec, d, false, nullptr);
    const std::vector<float> xw = product(context, rows.data(), w.data(), rec.steps * batch,
                                         rec.inputs, gh, {in[1], d});
    std::vector<float> state_h = rec.initial(node, in, 5, d);
    std::vector<float> state_c = rec.initial(node, in, 6, d);
    const float* p = peepholes ? &peepholes->floats[d * 3 * h] : nullptr;  // i, o, f
    for (std::size_t s = 0; s < rec.steps; ++s) {
      const std::size_t t = rec.reversed(d) ? rec.steps - 1 - s : s;
      const std::vector<float> hr =
          product(context, state_h.data(), r.data(), batch, h, gh, {in[2], d});
      for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t j = 0; j < h; ++j) {
          const auto gate = [&](std::size_t k) {
            return xw[(t * batch + b) * gh + k * h + j] + hr[b * gh + k * h + j] + bias[k * h + j];
          };
          float& c = state_c[b * h + j];
          const float i_gate = f(rec.clipped(gate(0) + (p ? p[j] * c : 0.0f)));
          const float f_gate = f(rec.clipped(gate(2) + (p ? p[2 * h + j] * c : 0.0f)));
          const float candidate = g(rec.clipped(gate(3)));
          c = f_gate * c + i_gate * candidate;
          const float o_gate = f(rec.clipped(gate(1) + (p ? p[h + j] * c : 0.0f)));
          state_h[b * h + j] = o_gate * act_h(c);
          rec.y_at(y, t, d, b, j) = state_h[b * h + j];
        }
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

std::vector<Tensor> gru(Context& context, const Node& node, const Inputs& in) {
  Recurrence rec(node, in, 3, {"Sigmoid", "Tanh"});
  const bool linear_before_reset = node.int_attr("linear_before_reset", 0) != 0;
  const Tensor& x = need_float(node, in, 0);
  const std::size_t h = rec.hidden, gh = 3 * h, batch = rec.batch;
  Tensor y = rec.output_y(), y_h = rec.output_state();
  const std::vector<float>& rows = x.floats;  // [steps, batch, inputs]
  for (std::size_t d = 0; d < rec.directions; ++d) {
    const Activation& f = rec.functions[d * 2];
    const Activation& g = rec.functions[d * 2 + 1];
    const std::vector<float> w = Recurrence::operand(need_float(node, in, 1), d, gh, rec.inputs);
    const std::vector<float> r = Recurrence::operand(need_float(node, in, 2), d, gh, h);
    std::vector<float> rb;
    const std::vector<float> wb = bias_of(node, in, rec, d, true, &rb);
    const std::vector<float> xw = product(context, rows.data(), w.data(), rec.steps * batch,
                                         rec.inputs, gh, {in[1], d});
    // R's h rows alone, for the product with the reset state (linear_before_reset 0).
    std::vector<float> r_h(h * h);
    for (std::size_t k = 0; k < h; ++k) {
      std::copy_n(&r[k * gh + 2 * h], h, &r_h[k * h]);
    }
    std::vector<float> state = rec.initial(node, in, 5, d);
    for (std::size_t s = 0; s < rec.steps; ++s) {
      const std::size_t t = rec.reversed(d) ? rec.steps - 1 - s : s;
      const std::vector<float> hr =
          product(context, state.data(), r.data(), batch, h, gh, {in[2], d});
      std::vector<float> z(batch * h), reset(batch * h);
      for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t j = 0; j < h; ++j) {
          const std::size_t row = (t * batch + b) * gh;
          z[b * h + j] = f(rec.clipped(xw[row + j] + hr[b * gh + j] + wb[j] + rb[j]));
          reset[b * h + j] =
              f(rec.clipped(xw[row + h + j] + hr[b * gh + h + j] + wb[h + j] + rb[h + j]));
        }
      }
      std::vector<float> reset_product;
      if (!linear_before_reset) {
        std::vector<float> reset_state(batch * h);
        for (std::size_t i = 0; i < reset_state.size(); ++i) reset_state[i] = reset[i] * state[i];
        reset_product = product(context, reset_state.data(), r_h.data(), batch, h, h,
                                {in[2], rec.directions + d});
      }
      for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t j = 0; j < h; ++j) {
          const std::size_t row = (t * batch + b) * gh;
          const float recurrent = linear_before_reset
                                      ? reset[b * h + j] * (hr[b * gh + 2 * h + j] + rb[2 * h + j])
                                      : reset_product[b * h + j] + rb[2 * h + j];
          const float candidate = g(rec.clipped(xw[row + 2 * h + j] + wb[2 * h + j] + recurrent));
          float& value = state[b * h + j];
          value = (1.0f - z[b * h + j]) * candidate + z[b * h + j] * value;
          rec.y_at(y, t, d, b, j) = value;
        }
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
