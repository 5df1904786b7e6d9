// Random operands of a compiled GEMM (tpu::GemmSpec): A and B bf16 with exponents in
// [min_exp, max_exp], C and the bias fp32 partial-sum seeds, each with special values (zeros,
// subnormals, infinities, NaNs, extremes) mixed in at the given rates (tb/oracle).
#pragma once

#include <vector>

#include "oracle/random_matrices.hpp"
#include "tpu/compiler.hpp"

namespace tpu::test {

struct GemmOperands {
  num::MatrixBf16 a, b;
  num::MatrixFp32 c;
  std::vector<num::fp32_t> bias;

  // C and the bias as run_gemm takes them: null when the spec has none.
  const num::MatrixFp32* c_for(const GemmSpec& spec) const { return spec.has_c ? &c : nullptr; }
  const std::vector<num::fp32_t>* bias_for(const GemmSpec& spec) const {
    return spec.has_bias ? &bias : nullptr;
  }
};

inline GemmOperands random_gemm_operands(oracle::OperandRng& rng, const GemmSpec& s,
                                         unsigned special_percent, unsigned seed_special_percent,
                                         unsigned min_exp = 115, unsigned max_exp = 135) {
  GemmOperands o;
  o.a = oracle::random_bf16_matrix(rng, s.m, s.k, special_percent, min_exp, max_exp);
  o.b = oracle::random_bf16_matrix(rng, s.k, s.n, special_percent, min_exp, max_exp);
  o.c = oracle::random_seed_matrix(rng, s.m, s.n, seed_special_percent);
  o.bias = oracle::random_seed_matrix(rng, 1, s.n, seed_special_percent).data;
  return o;
}

}  // namespace tpu::test
