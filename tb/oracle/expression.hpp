// Expressions of the vector unit (tpu/vector_expression.hpp) as the host computes them, the
// independent expectation of their tests and of make sim: each step's ELTWISE lane by the host
// FPU's oracle (oracle/eltwise.hpp) or its function (N-ACT), value by value; and the LSTM cell
// the tests run, with random operands.
#pragma once

#include <cstdint>
#include <vector>

#include "oracle/eltwise.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/vector_expression.hpp"

namespace tpu::oracle {

// The outputs of `spec` over `tensors` and `constants`, in spec.outputs' order.
inline std::vector<std::vector<fp32_t>> expression_values(
    const ExpressionSpec& spec, const std::vector<std::vector<fp32_t>>& tensors,
    const std::vector<std::vector<fp32_t>>& constants) {
  const std::uint64_t size = spec.rows * spec.length;
  std::vector<std::vector<fp32_t>> out(spec.outputs.size());
  for (std::uint64_t n = 0; n < size; ++n) {
    std::vector<fp32_t> steps;
    const auto value = [&](const ExpressionValue& v) {
      switch (v.kind) {
        case ExpressionValue::Kind::Tensor:
          return tensors[v.index][n];
        case ExpressionValue::Kind::Row:
          return constants[v.index][n % spec.length];
        case ExpressionValue::Kind::Step:
          break;
      }
      return steps[v.index];
    };
    for (const ExpressionStep& step : spec.steps) {
      steps.push_back(
          step.op ? eltwise_lane(*step.op, false, value(step.a), value(step.b))
                  : num::act_func(static_cast<unsigned>(step.func), value(step.a), step.alpha));
    }
    for (std::size_t o = 0; o < spec.outputs.size(); ++o) {
      const fp32_t v = value(spec.outputs[o].value);
      // A bf16 output: N-OUT by the oracle's conversion (Eigen's for normal values), widened.
      out[o].push_back(spec.outputs[o].bf16 ? fp32_t{fp32_to_bf16(v)} << 16 : v);
    }
  }
  return out;
}

// An LSTM cell as the graph runs it, its operands drawn from `rng`: each gate the sum of its two
// products' rows, a bias row and, for i, f and o, a peephole row times the cell state, clipped to
// [-clip, clip]; sigmoid and tanh; the outputs H and C.
inline ExpressionBuilder lstm_cell_expression(OperandRng& rng, std::uint64_t rows,
                                              std::uint32_t length, float clip) {
  using Op = isa::VectorOp;
  const auto draw = [&](std::uint64_t count) {
    std::vector<fp32_t> values(count);
    for (fp32_t& v : values) v = rng.fp32();
    return values;
  };
  ExpressionBuilder e(rows, length);
  const ExpressionValue high = e.row(std::vector<fp32_t>(length, as_bits(clip)));
  const ExpressionValue low = e.row(std::vector<fp32_t>(length, as_bits(-clip)));
  const ExpressionValue c_prev = e.tensor(draw(rows * length));
  // A gate's sum, with a peephole on `state` where given.
  const auto gate = [&](const ExpressionValue* state) {
    ExpressionValue g = e.op(Op::Add, e.tensor(draw(rows * length)), e.tensor(draw(rows * length)));
    g = e.op(Op::Add, g, e.row(draw(length)));
    if (state) g = e.op(Op::Add, g, e.op(Op::Mul, e.row(draw(length)), *state));
    return e.op(Op::Max, e.op(Op::Min, g, high), low);
  };
  const ExpressionValue i = e.func(isa::Func::Sigmoid, gate(&c_prev));
  const ExpressionValue f = e.func(isa::Func::Sigmoid, gate(&c_prev));
  const ExpressionValue candidate = e.func(isa::Func::Tanh, gate(nullptr));
  const ExpressionValue c = e.op(Op::Add, e.op(Op::Mul, f, c_prev), e.op(Op::Mul, i, candidate));
  const ExpressionValue o = e.func(isa::Func::Sigmoid, gate(&c));
  e.output(e.op(Op::Mul, o, e.func(isa::Func::Tanh, c)));
  e.output(c);
  return e;
}

}  // namespace tpu::oracle
