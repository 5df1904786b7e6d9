// Reference GEMM: bf16 operands, fp32 accumulation in the order fixed by N-ORDER.
#pragma once

#include <cstddef>
#include <vector>

#include "tpu/numerics/float.hpp"

namespace tpu::num {

// Dense row-major matrix: element (r, c) is data[r * cols + c].
template <typename T>
struct Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<T> data;

  Matrix() = default;
  Matrix(std::size_t r, std::size_t c, T fill = T{}) : rows(r), cols(c), data(r * c, fill) {}

  T& at(std::size_t r, std::size_t c) { return data[r * cols + c]; }
  const T& at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

// The matrix transposed (cols x rows).
template <typename T>
Matrix<T> transposed(const Matrix<T>& m) {
  Matrix<T> t(m.cols, m.rows);
  for (std::size_t r = 0; r < m.rows; ++r) {
    for (std::size_t c = 0; c < m.cols; ++c) t.at(c, r) = m.at(r, c);
  }
  return t;
}

using MatrixBf16 = Matrix<bf16_t>;
using MatrixFp32 = Matrix<fp32_t>;

// N-ORDER: out(i, j) starts from canon_in_fp32(seed(i, j)) when a seed is given, else +0,
// then folds S = mac(S, a(i, k), w(k, j)) for k = 0, 1, ..., K-1 in increasing order.
// a is M x K, w is K x N, seed (optional) is M x N; throws std::invalid_argument otherwise.
MatrixFp32 gemm(const MatrixBf16& a, const MatrixBf16& w, const MatrixFp32* seed = nullptr);

// N-OUT applied to every element.
MatrixBf16 round_to_bf16(const MatrixFp32& m);

}  // namespace tpu::num
