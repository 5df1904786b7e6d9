// Reference model of the activation function unit (rule N-ACT; docs/numerics.md, section Activation
// functions), bit for bit what rtl/core/tpu_act_func.sv computes. Integer arithmetic only: sigmoid,
// tanh, gelu, exp, reciprocal and reciprocal square root are table-driven fixed-point
// approximations whose tables come from sw/numerics/gen_act_tables.cpp.
#pragma once

#include "tpu/numerics/float.hpp"

namespace tpu::num {

// The ISA's `func` field (4 bits). Codes 10..15 are illegal; the unit returns the identity for
// them, like kNone. exp, reciprocal and reciprocal square root exist in the cores with a vector
// unit (elsewhere the decoder rejects their codes).
enum class ActFunc : unsigned {
  kNone = 0,     // identity
  kRelu = 1,     // maximum(x, +0)
  kRelu6 = 2,    // minimum(maximum(x, +0), 6)
  kLeaky = 3,    // x if x is not negative, else x * alpha
  kSigmoid = 4,  // 1 / (1 + e^-x)
  kTanh = 5,
  kGelu = 6,   // x * Phi(x), Phi the standard normal CDF
  kExp = 7,    // e^x
  kRecip = 8,  // 1 / x
  kRsqrt = 9,  // 1 / sqrt(x)
};

// Applies function `func` to the fp32 value x (after N-IN). alpha is the bf16 slope of kLeaky
// (after N-IN) and is ignored by the other functions. Every NaN result is the canonical NaN;
// results below 2^-126 in magnitude are zeros of the result's sign. Without vector_functions
// (a unit built without them: tpu_act_func's VectorFunctions, the sequential core's unit) the
// codes of exp, reciprocal and reciprocal square root are illegal ones: the identity.
fp32_t act_func(unsigned func, fp32_t x, bf16_t alpha, bool vector_functions = true);

}  // namespace tpu::num
