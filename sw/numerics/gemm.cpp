#include "tpu/numerics/gemm.hpp"

#include <stdexcept>
#include <string>

namespace tpu::num {
namespace {

std::string shape(std::size_t rows, std::size_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

}  // namespace

MatrixFp32 gemm(const MatrixBf16& a, const MatrixBf16& w, const MatrixFp32* seed) {
  if (a.cols != w.rows) {
    throw std::invalid_argument("gemm: a is " + shape(a.rows, a.cols) + " but w is " +
                                shape(w.rows, w.cols) + "; a.cols must equal w.rows");
  }
  if (seed != nullptr && (seed->rows != a.rows || seed->cols != w.cols)) {
    throw std::invalid_argument("gemm: seed is " + shape(seed->rows, seed->cols) +
                                " but the output is " + shape(a.rows, w.cols));
  }
  MatrixFp32 out(a.rows, w.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < w.cols; ++j) {
      fp32_t sum =
          seed != nullptr ? canon_in_fp32(seed->at(i, j)) : 0u;  // N-IN on the seed, else +0
      for (std::size_t k = 0; k < a.cols; ++k) sum = mac(sum, a.at(i, k), w.at(k, j));
      out.at(i, j) = sum;
    }
  }
  return out;
}

MatrixBf16 round_to_bf16(const MatrixFp32& m) {
  MatrixBf16 out(m.rows, m.cols);
  for (std::size_t n = 0; n < m.data.size(); ++n) out.data[n] = fp32_to_bf16(m.data[n]);
  return out;
}

}  // namespace tpu::num
