// Elementwise operators: functions of one tensor, NumPy-broadcast functions of several,
// comparisons and selection, casts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "ops.hpp"
#include "vector_functions.hpp"

namespace tpu::graph::ops {
namespace {

Kernel unary(float (*fn)(float)) {
  return [fn](Context&, const Node& node, const Inputs& in) {
    Tensor y = need_float(node, in, 0);
    for (float& v : y.floats) v = fn(v);
    return std::vector<Tensor>{std::move(y)};
  };
}

// A function of one float with the node's attributes read once.
template <typename MakeFn>
Kernel unary_with(MakeFn make) {
  return [make](Context&, const Node& node, const Inputs& in) {
    Tensor y = need_float(node, in, 0);
    const auto fn = make(node);
    for (float& v : y.floats) v = fn(v);
    return std::vector<Tensor>{std::move(y)};
  };
}

// The period of `in` along `out` as the vector unit's operands repeat (tpu/elementwise.hpp):
// all its values where it has out's shape, else the trailing block of out's shape it has, its
// leading ones aside; nothing for any other broadcast.
std::optional<std::uint64_t> repeat_period(const Shape& in, const Shape& out) {
  std::size_t lead = 0;
  while (lead < in.size() && in[lead] == 1) ++lead;
  const std::size_t rank = in.size() - lead;
  if (rank > out.size()) return std::nullopt;
  std::uint64_t period = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    if (in[lead + i] != out[out.size() - rank + i]) return std::nullopt;
    period *= static_cast<std::uint64_t>(in[lead + i]);
  }
  return period;
}

// `op` of two float tensors and the node's activation on the vector unit: nothing where the
// core cannot (no vector unit, a broadcast it does not take).
std::optional<Tensor> binary_on_core(Context& context, const Node& node, isa::VectorOp op,
                                     const Tensor& a, const Tensor& b, const Shape& out) {
  const std::optional<std::uint64_t> a_period = repeat_period(a.shape, out);
  const std::optional<std::uint64_t> b_period = repeat_period(b.shape, out);
  if (!a_period || !b_period) return std::nullopt;
  ElementwiseSpec spec;
  spec.op = op;
  spec.func = core_function(node.epilogue);
  spec.size = element_count(out);
  spec.a_period = *a_period;
  spec.b_period = *b_period;
  std::optional<std::vector<float>> y = elementwise_on_core(context, spec, a.floats, b.floats);
  if (!y) return std::nullopt;
  Tensor result(DType::Float32, out);
  result.floats = std::move(*y);
  return result;
}

// `op` of two int32 tensors on the vector unit (ELTWISE I32: wrapping, as the host's int32
// arithmetic here): nothing where the core cannot (no vector unit, a broadcast it does not take).
std::optional<Tensor> int32_binary_on_core(Context& context, isa::VectorOp op, const Tensor& a,
                                           const Tensor& b, const Shape& out) {
  const std::optional<std::uint64_t> a_period = repeat_period(a.shape, out);
  const std::optional<std::uint64_t> b_period = repeat_period(b.shape, out);
  if (!a_period || !b_period) return std::nullopt;
  ElementwiseSpec spec;
  spec.op = op;
  spec.int32 = true;
  spec.size = element_count(out);
  spec.a_period = *a_period;
  spec.b_period = *b_period;
  const auto lanes = [](const Tensor& x) {
    std::vector<num::fp32_t> bits(x.ints.size());
    std::transform(x.ints.begin(), x.ints.end(), bits.begin(),
                   [](std::int64_t v) { return static_cast<num::fp32_t>(v); });
    return bits;
  };
  const std::optional<std::vector<num::fp32_t>> y =
      elementwise_bits_on_core(context, spec, lanes(a), lanes(b));
  if (!y) return std::nullopt;
  Tensor result(DType::Int32, out);
  std::transform(y->begin(), y->end(), result.ints.begin(),
                 [](num::fp32_t v) { return std::int64_t{isa::int32_value(v)}; });
  return result;
}

// A function of one float tensor on the vector unit (ACTIVATE in place), or nothing.
std::optional<Tensor> function_on_core(Context& context, isa::Func func, num::bf16_t alpha,
                                       const Tensor& x) {
  ElementwiseSpec spec;
  spec.func = func;
  spec.alpha = alpha;
  spec.size = x.floats.size();
  spec.a_period = spec.size;
  std::optional<std::vector<float>> y = elementwise_on_core(context, spec, x.floats, {});
  if (!y) return std::nullopt;
  Tensor result(DType::Float32, x.shape);
  result.floats = std::move(*y);
  return result;
}

// A kernel of one float tensor that runs `func` on the vector unit where it can, else `host`.
Kernel on_core_else(isa::Func func, Kernel host) {
  return [func, host](Context& context, const Node& node, const Inputs& in) {
    if (std::optional<Tensor> y = function_on_core(context, func, 0, need_float(node, in, 0))) {
      return outputs(std::move(*y));
    }
    return host(context, node, in);
  };
}

// Broadcast function of all inputs, float or integer (both the same type); two float or int32
// inputs on the vector unit where `vop` is its operation and the core can. The node's activation
// (fuse_epilogues) follows.
template <typename FloatFn, typename IntFn>
Kernel nary(FloatFn ffn, IntFn ifn, bool variadic,
            std::optional<isa::VectorOp> vop = std::nullopt) {
  return [ffn, ifn, variadic, vop](Context& context, const Node& node, const Inputs& in) {
    const std::size_t count = variadic ? in.size() : 2;
    std::vector<Shape> shapes;
    for (std::size_t i = 0; i < count; ++i) shapes.push_back(need(node, in, i).shape);
    const DType type = in[0]->dtype;
    for (std::size_t i = 1; i < count; ++i) {
      if (in[i]->dtype != type) {
        fail(node, std::string("inputs of two types, ") + dtype_name(type) + " and " +
                       dtype_name(in[i]->dtype));
      }
    }
    const Shape out = broadcast_shapes(node, shapes);
    if (node.epilogue != Epilogue::None && type != DType::Float32) {
      fail(node, "an activation of integers");
    }
    if (vop && count == 2 && type == DType::Float32) {
      if (std::optional<Tensor> y = binary_on_core(context, node, *vop, *in[0], *in[1], out)) {
        return outputs(std::move(*y));
      }
    }
    if (vop && count == 2 && type == DType::Int32) {
      if (std::optional<Tensor> y = int32_binary_on_core(context, *vop, *in[0], *in[1], out)) {
        return outputs(std::move(*y));
      }
    }
    Tensor y(type, out);
    for (std::size_t i = 0; i < count; ++i) {
      const std::vector<std::size_t> at = broadcast_offsets(in[i]->shape, out);
      if (type == DType::Float32) {
        const std::vector<float>& x = in[i]->floats;
        if (i == 0) {
          for (std::size_t e = 0; e < at.size(); ++e) y.floats[e] = x[at[e]];
        } else {
          for (std::size_t e = 0; e < at.size(); ++e) y.floats[e] = ffn(y.floats[e], x[at[e]]);
        }
      } else {
        const std::vector<std::int64_t>& x = in[i]->ints;
        if (i == 0) {
          for (std::size_t e = 0; e < at.size(); ++e) y.ints[e] = x[at[e]];
        } else {
          for (std::size_t e = 0; e < at.size(); ++e) {
            y.ints[e] = ifn(node, y.ints[e], x[at[e]]);
            // int32 arithmetic wraps, as the core's int32 sums do.
            if (type == DType::Int32) {
              y.ints[e] = isa::int32_value(static_cast<std::uint32_t>(y.ints[e]));
            }
          }
        }
      }
    }
    if (node.epilogue != Epilogue::None) {
      for (float& v : y.floats) v = activation(node.epilogue, v);
    }
    return std::vector<Tensor>{std::move(y)};
  };
}

template <typename FloatFn>
Kernel binary(FloatFn ffn) {
  return nary(
      ffn,
      [](const Node& node, std::int64_t, std::int64_t) -> std::int64_t {
        fail(node, "integer inputs not supported");
      },
      false);
}

template <typename FloatFn, typename IntFn>
Kernel binary(FloatFn ffn, IntFn ifn, isa::VectorOp vop) {
  return nary(
      ffn, [ifn](const Node&, std::int64_t a, std::int64_t b) { return ifn(a, b); }, false, vop);
}

// Comparisons and logic: a bool result from two broadcast inputs, compared as doubles.
template <typename Compare>
Kernel compare(Compare cmp) {
  return [cmp](Context&, const Node& node, const Inputs& in) {
    const Tensor& a = need(node, in, 0);
    const Tensor& b = need(node, in, 1);
    const Shape out = broadcast_shapes(node, {a.shape, b.shape});
    const std::vector<std::size_t> at = broadcast_offsets(a.shape, out);
    const std::vector<std::size_t> bt = broadcast_offsets(b.shape, out);
    Tensor y(DType::Bool, out);
    for (std::size_t e = 0; e < at.size(); ++e) y.ints[e] = cmp(a.value(at[e]), b.value(bt[e]));
    return std::vector<Tensor>{std::move(y)};
  };
}

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

float tanh_of(float x) {
  return std::tanh(x);
}

// Gelu's default form, with the normal CDF through erf.
float gelu(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678118f));
}

// ONNX's TensorProto element types that Cast takes.
DType cast_target(const Node& node) {
  switch (node.int_attr("to", 0)) {
    case 1:
      return DType::Float32;
    case 2:
      return DType::UInt8;
    case 3:
      return DType::Int8;
    case 6:
      return DType::Int32;
    case 7:
      return DType::Int64;
    case 9:
      return DType::Bool;
    default:
      fail(node, "cast to element type " + std::to_string(node.int_attr("to", 0)) +
                     " not supported (float32, int64, int32, int8, uint8, bool)");
  }
}

std::vector<Tensor> cast(Context&, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const DType to = cast_target(node);
  Tensor y(to, x.shape);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (to == DType::Float32) {
      y.floats[i] = static_cast<float>(x.value(i));
    } else if (to == DType::Bool) {
      y.ints[i] = x.value(i) != 0;
    } else {
      const double v = x.value(i);
      if (std::isnan(v)) fail(node, "cast of NaN to an integer");
      std::int64_t q = x.is_float() ? static_cast<std::int64_t>(std::trunc(v)) : x.ints[i];
      // ONNX casts between integer types wrap (two's complement), as C++ conversions do.
      if (to == DType::Int32) q = static_cast<std::int32_t>(static_cast<std::uint32_t>(q));
      if (to == DType::Int8) q = static_cast<std::int8_t>(static_cast<std::uint8_t>(q));
      if (to == DType::UInt8) q = static_cast<std::uint8_t>(q);
      y.ints[i] = q;
    }
  }
  return outputs(std::move(y));
}

std::vector<Tensor> where(Context&, const Node& node, const Inputs& in) {
  const Tensor& c = need(node, in, 0);
  const Tensor& a = need(node, in, 1);
  const Tensor& b = need(node, in, 2);
  if (a.dtype != b.dtype) fail(node, "the two choices are of different types");
  const Shape out = broadcast_shapes(node, {c.shape, a.shape, b.shape});
  const std::vector<std::size_t> ct = broadcast_offsets(c.shape, out);
  const std::vector<std::size_t> at = broadcast_offsets(a.shape, out);
  const std::vector<std::size_t> bt = broadcast_offsets(b.shape, out);
  Tensor y(a.dtype, out);
  for (std::size_t e = 0; e < ct.size(); ++e) {
    const bool pick_a = c.value(ct[e]) != 0;
    if (y.is_float()) {
      y.floats[e] = pick_a ? a.floats[at[e]] : b.floats[bt[e]];
    } else {
      y.ints[e] = pick_a ? a.ints[at[e]] : b.ints[bt[e]];
    }
  }
  return outputs(std::move(y));
}

// Clip: bounds as attributes before opset 11, as optional inputs from it on.
std::vector<Tensor> clip(Context& context, const Node& node, const Inputs& in) {
  Tensor y = need_float(node, in, 0);
  float low = -std::numeric_limits<float>::infinity();
  float high = std::numeric_limits<float>::infinity();
  if (context.opset < 11) {
    low = node.float_attr("min", low);
    high = node.float_attr("max", high);
  } else {
    if (in.size() > 1 && in[1]) low = static_cast<float>(need(node, in, 1).value(0));
    if (in.size() > 2 && in[2]) high = static_cast<float>(need(node, in, 2).value(0));
  }
  if (low == 0.0f && high == 6.0f) {
    if (std::optional<Tensor> on_core = function_on_core(context, isa::Func::Relu6, 0, y)) {
      return outputs(std::move(*on_core));
    }
  }
  for (float& v : y.floats) v = std::min(std::max(v, low), high);
  return outputs(std::move(y));
}

// `f` of x's values on the vector unit where it can (function_steps_on_core), else on the host.
std::vector<Tensor> function_steps(Context& context, const VectorFunction& f, const Tensor& x) {
  if (std::optional<Tensor> y = function_steps_on_core(context, f, x))
    return outputs(std::move(*y));
  Tensor y = x;
  for (float& v : y.floats) v = f(v);
  return outputs(std::move(y));
}

// A leaky relu `f`: on the vector unit where its slope is a bf16 value (ACTIVATE's leaky, the
// core's alpha field) or lies in [0, 1] (max(x, alpha x): PyTorch's 0.01 is no bf16), else on the
// host.
std::vector<Tensor> leaky(Context& context, const VectorFunction& f, const Tensor& x) {
  if (f.bf16_slope()) {
    const auto bf16_alpha = static_cast<num::bf16_t>(float_bits(f.alpha) >> 16);
    if (std::optional<Tensor> y = function_on_core(context, isa::Func::Leaky, bf16_alpha, x)) {
      return outputs(std::move(*y));
    }
  }
  return function_steps(context, f, x);
}

std::vector<Tensor> leaky_relu(Context& context, const Node& node, const Inputs& in) {
  return leaky(context, {VectorFunction::Kind::LeakyRelu, node.float_attr("alpha", 0.01f)},
               need_float(node, in, 0));
}

// Gelu: its erf form on the vector unit where there is one; the tanh form on the host.
std::vector<Tensor> gelu_kernel(Context& context, const Node& node, const Inputs& in) {
  const std::string approximate = node.string_attr("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    fail(node, "approximate \"" + approximate + "\" is neither none nor tanh");
  }
  const bool tanh_form = approximate == "tanh";
  if (!tanh_form) {
    if (std::optional<Tensor> y =
            function_on_core(context, isa::Func::Gelu, 0, need_float(node, in, 0))) {
      return outputs(std::move(*y));
    }
  }
  Tensor y = need_float(node, in, 0);
  for (float& v : y.floats) {
    if (tanh_form) {
      const float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
      v = 0.5f * v * (1.0f + std::tanh(inner));
    } else {
      v = gelu(v);
    }
  }
  return outputs(std::move(y));
}

// PRelu: x times its slope where x < 0. One slope for every value (PyTorch's PReLU of one
// parameter, or a slope per channel whose values are all the same) is a LeakyRelu of it, on the
// vector unit where that runs there (leaky_relu); other slopes on the host.
std::vector<Tensor> prelu(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need_float(node, in, 0);
  const Tensor& slope = need_float(node, in, 1);
  const Shape out = broadcast_shapes(node, {x.shape, slope.shape});
  if (out != x.shape)
    fail(node, "a slope of shape " + shape_text(slope.shape) + " for " + shape_text(x.shape));
  const bool one_slope =
      !slope.floats.empty() && std::all_of(slope.floats.begin(), slope.floats.end(), [&](float v) {
        return float_bits(v) == float_bits(slope.floats[0]);
      });
  if (one_slope)
    return leaky(context, VectorFunction{VectorFunction::Kind::LeakyRelu, slope.floats[0]}, x);
  const std::vector<std::size_t> st = broadcast_offsets(slope.shape, out);
  Tensor y = x;
  for (std::size_t e = 0; e < st.size(); ++e) {
    if (y.floats[e] < 0) y.floats[e] *= slope.floats[st[e]];
  }
  return outputs(std::move(y));
}

std::vector<Tensor> pass_through(Context&, const Node& node, const Inputs& in) {
  std::vector<Tensor> out{need(node, in, 0)};
  if (node.op == "Dropout" && node.outputs.size() > 1) {  // the mask: everything kept
    Tensor mask(DType::Bool, out[0].shape);
    std::fill(mask.ints.begin(), mask.ints.end(), 1);
    out.push_back(std::move(mask));
  }
  return out;
}

// Mod: the remainder with the divisor's sign (fmod 0, integers only), or C's fmod (fmod 1).
std::vector<Tensor> mod(Context& context, const Node& node, const Inputs& in) {
  const bool c_fmod = node.int_attr("fmod", 0) != 0;
  if (!c_fmod && need(node, in, 0).is_float()) fail(node, "fmod 0 on float inputs");
  const auto ints = [c_fmod](const Node& n, std::int64_t a, std::int64_t b) -> std::int64_t {
    if (b == 0) fail(n, "integer modulo by zero");
    const std::int64_t r = a % b;
    return !c_fmod && r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
  };
  return nary([](float a, float b) { return std::fmod(a, b); }, ints, false)(context, node, in);
}

std::vector<Tensor> logical_not(Context&, const Node& node, const Inputs& in) {
  Tensor y = need(node, in, 0);
  if (y.dtype != DType::Bool) fail(node, "input not bool");
  for (std::int64_t& v : y.ints) v = !v;
  return outputs(std::move(y));
}

}  // namespace

float activation(Epilogue act, float x) {
  switch (act) {
    case Epilogue::Relu:
      return x < 0 ? 0.0f : x;
    case Epilogue::Relu6:
      return x < 0 ? 0.0f : std::min(x, 6.0f);
    case Epilogue::Sigmoid:
      return sigmoid(x);
    case Epilogue::Tanh:
      return tanh_of(x);
    case Epilogue::Gelu:
      return gelu(x);
    case Epilogue::None:
      break;
  }
  return x;
}

void add_elementwise(Table& t) {
  // The activation functions the core has run on its vector unit where there is one: relu
  // exactly; sigmoid, tanh, GELU, exp and the reciprocal as the contract's approximations
  // (within a bf16 ulp).
  t["Relu"] =
      on_core_else(isa::Func::Relu, unary([](float x) { return activation(Epilogue::Relu, x); }));
  t["Sigmoid"] = on_core_else(isa::Func::Sigmoid, unary(sigmoid));
  t["Tanh"] = on_core_else(isa::Func::Tanh, unary(tanh_of));
  t["Exp"] = on_core_else(isa::Func::Exp, unary([](float x) { return std::exp(x); }));
  t["Log"] = unary([](float x) { return std::log(x); });
  t["Sqrt"] = unary([](float x) { return std::sqrt(x); });
  t["Reciprocal"] = on_core_else(isa::Func::Recip, unary([](float x) { return 1.0f / x; }));
  t["Neg"] = unary([](float x) { return -x; });
  t["Abs"] = unary([](float x) { return std::fabs(x); });
  t["Erf"] = unary([](float x) { return std::erf(x); });
  t["Floor"] = unary([](float x) { return std::floor(x); });
  t["Ceil"] = unary([](float x) { return std::ceil(x); });
  t["Softplus"] = unary([](float x) { return std::log1p(std::exp(x)); });
  t["LeakyRelu"] = leaky_relu;
  t["Elu"] = unary_with([](const Node& n) {
    const float alpha = n.float_attr("alpha", 1.0f);
    return [alpha](float x) { return x < 0 ? alpha * (std::exp(x) - 1.0f) : x; };
  });
  // HardSigmoid and HardSwish (alpha 1/6, beta 1/2) on the vector unit where there is one.
  t["HardSigmoid"] = [](Context& c, const Node& n, const Inputs& i) {
    return function_steps(c,
                          {VectorFunction::Kind::HardSigmoid, n.float_attr("alpha", 0.2f),
                           n.float_attr("beta", 0.5f)},
                          need_float(n, i, 0));
  };
  t["HardSwish"] = [](Context& c, const Node& n, const Inputs& i) {
    return function_steps(c, {VectorFunction::Kind::HardSwish, 1.0f / 6.0f, 0.5f},
                          need_float(n, i, 0));
  };
  t["Gelu"] = gelu_kernel;
  t["Clip"] = clip;
  t["PRelu"] = prelu;
  t["Add"] = binary([](float a, float b) { return a + b; },
                    [](std::int64_t a, std::int64_t b) { return a + b; }, isa::VectorOp::Add);
  t["Sub"] = binary([](float a, float b) { return a - b; },
                    [](std::int64_t a, std::int64_t b) { return a - b; }, isa::VectorOp::Sub);
  t["Mul"] = binary([](float a, float b) { return a * b; },
                    [](std::int64_t a, std::int64_t b) { return a * b; }, isa::VectorOp::Mul);
  t["Div"] = nary([](float a, float b) { return a / b; },
                  [](const Node& node, std::int64_t a, std::int64_t b) {
                    if (b == 0) fail(node, "integer division by zero");
                    return a / b;  // ONNX's integer Div truncates, as C++ does
                  },
                  false);
  t["Mod"] = mod;
  t["Pow"] = binary([](float a, float b) { return std::pow(a, b); });
  const auto fmax = [](float a, float b) { return std::isnan(a) || a > b ? a : b; };
  const auto fmin = [](float a, float b) { return std::isnan(a) || a < b ? a : b; };
  const auto imax = [](const Node&, std::int64_t a, std::int64_t b) { return std::max(a, b); };
  const auto imin = [](const Node&, std::int64_t a, std::int64_t b) { return std::min(a, b); };
  const auto iadd = [](const Node&, std::int64_t a, std::int64_t b) { return a + b; };
  t["Max"] = nary(fmax, imax, true, isa::VectorOp::Max);
  t["Min"] = nary(fmin, imin, true, isa::VectorOp::Min);
  t["Sum"] = nary([](float a, float b) { return a + b; }, iadd, true);
  t["Equal"] = compare([](double a, double b) { return a == b; });
  t["Less"] = compare([](double a, double b) { return a < b; });
  t["LessOrEqual"] = compare([](double a, double b) { return a <= b; });
  t["Greater"] = compare([](double a, double b) { return a > b; });
  t["GreaterOrEqual"] = compare([](double a, double b) { return a >= b; });
  t["And"] = compare([](double a, double b) { return a != 0 && b != 0; });
  t["Or"] = compare([](double a, double b) { return a != 0 || b != 0; });
  t["Not"] = logical_not;
  t["Where"] = where;
  t["Cast"] = cast;
  t["Identity"] = pass_through;
  t["Dropout"] = pass_through;
}

}  // namespace tpu::graph::ops
