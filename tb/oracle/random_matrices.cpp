#include "oracle/random_matrices.hpp"

namespace tpu::oracle {

num::MatrixBf16 random_bf16_matrix(OperandRng& rng, std::size_t rows, std::size_t cols,
                                   unsigned special_percent, unsigned min_exp, unsigned max_exp) {
  num::MatrixBf16 m(rows, cols);
  for (auto& v : m.data) {
    v = rng.uniform(0, 99) < special_percent ? rng.bf16()
                                             : rng.bf16_with_exponent(min_exp, max_exp);
  }
  return m;
}

num::MatrixFp32 random_seed_matrix(OperandRng& rng, std::size_t rows, std::size_t cols,
                                   unsigned special_percent) {
  num::MatrixFp32 m(rows, cols);
  for (auto& v : m.data) {
    if (rng.uniform(0, 99) < special_percent) {
      v = rng.fp32();
    } else {
      v = static_cast<fp32_t>((rng.uniform(0, 1) << 31) | (rng.uniform(120, 130) << 23) |
                              rng.uniform(0, 0x7FFFFF));
    }
  }
  return m;
}

}  // namespace tpu::oracle
