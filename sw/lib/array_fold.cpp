#include "tpu/array_fold.hpp"

#include <cmath>
#include <cstring>

namespace tpu::detail {
namespace {

constexpr float kMinNormal = 0x1p-126f;

float bits_to_float(num::fp32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

num::fp32_t float_to_bits(float f) {
  num::fp32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// N-IN for the product's operands: a subnormal is a zero of its sign. A NaN
// keeps its payload; the fold's result is made canonical at the end.
float bf16_in(num::bf16_t x) {
  if ((x & 0x7F80u) == 0) x &= 0x8000u;
  return bits_to_float(num::fp32_t{x} << 16);
}

// Below 2^-126: a zero of the value's sign (NaN compares false and stays).
float flush(float x) {
  return std::fabs(x) < kMinNormal ? std::copysign(0.0f, x) : x;
}

}  // namespace

std::vector<float> prepare_tile(const std::vector<num::bf16_t>& tile_by_column, std::size_t dim) {
  std::vector<float> tile(dim * dim);
  for (std::size_t k = 0; k < dim; ++k) {
    for (std::size_t j = 0; j < dim; ++j) tile[k * dim + j] = bf16_in(tile_by_column[j * dim + k]);
  }
  return tile;
}

void fold_row(const num::bf16_t* acts, const std::vector<float>& tile, num::fp32_t* sums,
              std::size_t dim) {
  // Up to 256 columns (the largest array): sums live in floats meanwhile.
  float s[256];
  for (std::size_t j = 0; j < dim; ++j) s[j] = bits_to_float(num::canon_in_fp32(sums[j]));
  for (std::size_t k = 0; k < dim; ++k) {
    const float a = bf16_in(acts[k]);
    const float* w = &tile[k * dim];
    // Column by column this is the fold's next step; the loop over columns
    // is independent work, which the compiler may vectorise (no reordering
    // of any one column's additions: -ffp-contract=off, no -ffast-math).
    for (std::size_t j = 0; j < dim; ++j) s[j] = flush(s[j] + flush(a * w[j]));
  }
  for (std::size_t j = 0; j < dim; ++j) {
    sums[j] = std::isnan(s[j]) ? num::kCanonicalNanFp32 : float_to_bits(s[j]);
  }
}

}  // namespace tpu::detail
