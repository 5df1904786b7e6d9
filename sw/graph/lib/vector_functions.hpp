// The functions of one value that the vector unit computes as steps of an expression
// (tpu/vector_expression.hpp): a recurrent operator's gate functions, and LeakyRelu, HardSigmoid
// and HardSwish as operators of their own (internal to the graph library).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "ops.hpp"

namespace tpu::graph::ops {

using Op = isa::VectorOp;
using Value = ExpressionValue;

// One float's bits.
inline num::fp32_t float_bits(float value) {
  num::fp32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// An expression of the vector unit over rows of `hidden` values (a recurrent cell's step: its
// batch's rows; a tensor cut into rows), each constant row made once.
class RowExpression {
 public:
  RowExpression(std::size_t batch, std::size_t hidden)
      : e_(batch, static_cast<std::uint32_t>(hidden)), hidden_(hidden) {}
  ExpressionBuilder& builder() { return e_; }
  // batch x hidden values.
  Value tensor(const std::vector<float>& values) { return e_.tensor(bits_of(values)); }
  // batch x hidden values where they lie in the core's memory.
  Value view(ExpressionView where) { return e_.tensor_in(where); }
  Value row(const float* values) { return e_.row(bits_of(values, hidden_)); }
  // A row of one value in every lane.
  Value scalar(float value) {
    const num::fp32_t bits = float_bits(value);
    const auto made = scalars_.find(bits);
    if (made != scalars_.end()) return made->second;
    return scalars_[bits] = e_.row(std::vector<num::fp32_t>(hidden_, bits));
  }
  Value op(Op op, Value a, Value b) { return e_.op(op, a, b); }

 private:
  ExpressionBuilder e_;
  std::size_t hidden_;
  std::map<num::fp32_t, Value> scalars_;
};

// A function of one value with its alpha and beta where it takes them (the gate functions ONNX's
// recurrent operators name; LeakyRelu, HardSigmoid and HardSwish as operators, HardSwish's
// alpha 1/6 and beta 1/2 as ONNX defines it): on the host in fp32, or as steps of the vector
// unit, the same operations (N-VEC, but for products below 2^-126, which N-MUL flushes).
struct VectorFunction {
  enum class Kind { Sigmoid, Tanh, Relu, HardSigmoid, HardSwish, LeakyRelu, ScaledTanh } kind;
  float alpha = 1.0f, beta = 1.0f;

  float operator()(float x) const {
    switch (kind) {
      case Kind::Sigmoid:
        return 1.0f / (1.0f + std::exp(-x));
      case Kind::Tanh:
        return std::tanh(x);
      case Kind::Relu:
        return std::max(0.0f, x);
      case Kind::HardSigmoid:
        return std::max(0.0f, std::min(1.0f, alpha * x + beta));
      case Kind::HardSwish:
        return x * std::max(0.0f, std::min(1.0f, alpha * x + beta));
      case Kind::LeakyRelu:
        return x < 0 ? alpha * x : x;
      case Kind::ScaledTanh:
        break;
    }
    return alpha * std::tanh(beta * x);
  }

  // A leaky slope ACTIVATE's leaky takes: a bf16 value.
  bool bf16_slope() const { return (float_bits(alpha) & 0xFFFFu) == 0; }

  // Whether the vector unit computes it: ACTIVATE's sigmoid, tanh, relu and leaky (its slope a
  // bf16), the others made of ELTWISE's operations around them; not a leaky slope that is no
  // bf16 and outside [0, 1] (where leaky is max(x, alpha x)).
  bool on_core() const {
    return kind != Kind::LeakyRelu || bf16_slope() || (alpha >= 0.0f && alpha <= 1.0f);
  }

  // The function of x as the vector unit's steps (on_core()).
  Value steps(RowExpression& e, Value x) const {
    ExpressionBuilder& b = e.builder();
    switch (kind) {
      case Kind::Sigmoid:
        return b.func(isa::Func::Sigmoid, x);
      case Kind::Tanh:
        return b.func(isa::Func::Tanh, x);
      case Kind::Relu:
        return b.func(isa::Func::Relu, x);
      case Kind::HardSigmoid:
      case Kind::HardSwish: {
        const Value line = e.op(Op::Add, e.op(Op::Mul, x, e.scalar(alpha)), e.scalar(beta));
        const Value hard = e.op(Op::Max, e.op(Op::Min, line, e.scalar(1.0f)), e.scalar(0.0f));
        return kind == Kind::HardSwish ? e.op(Op::Mul, x, hard) : hard;
      }
      case Kind::LeakyRelu:
        if (bf16_slope()) {
          return b.func(isa::Func::Leaky, x, static_cast<num::bf16_t>(float_bits(alpha) >> 16));
        }
        return e.op(Op::Max, x, e.op(Op::Mul, x, e.scalar(alpha)));
      case Kind::ScaledTanh:
        break;
    }
    return e.op(Op::Mul, b.func(isa::Func::Tanh, e.op(Op::Mul, x, e.scalar(beta))),
                e.scalar(alpha));
  }
};

// `f` of each of x's values on the vector unit (f.on_core()): the tensor as rows of the array's
// size (zeros past its end), one expression; nothing where the core cannot.
std::optional<Tensor> function_steps_on_core(Context& context, const VectorFunction& f,
                                             const Tensor& x);

}  // namespace tpu::graph::ops
