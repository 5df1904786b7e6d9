// The systolic array's arithmetic for the functional model, fast: rows of activations folded
// against weight tiles, column by column, in N-ORDER (S = mac(S, a_k, W[k][j]) for k = 0, 1, ...).
//
// It uses the host's binary32 multiply and add, which round to nearest even like N-ADD; a
// bf16 x bf16 product is exact in binary32 (N-MUL). What the contract adds: operands go through
// N-IN first (a subnormal becomes a signed zero), every product and sum below 2^-126 is flushed
// to a zero of its sign, and a NaN result becomes the canonical NaN (a NaN, once there, stays
// NaN to the end of the fold). The portable path does the flushes explicitly; the AVX2 and
// AVX-512 paths set the host's flush-to-zero and denormals-are-zero modes for the fold alone
// (restored after) and multiply and add eight or sixteen columns at a time, four to sixteen rows
// at once, each column's sums still in the order of k. That is the same arithmetic as the tests'
// host-float oracle (tb/oracle/host_float.hpp); every path is held against the reference model's
// soft-float mac (tests/sw/test_array_fold.cpp), and the functional model's results against the
// RTL's. int8 products (Q-MAC: exact, int32 sums wrapping) take the same paths in int32 lanes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tpu/numerics/float.hpp"

namespace tpu::detail {

// The code paths of fold_rows.
enum class FoldPath { Portable, Avx2, Avx512 };
const char* fold_path_name(FoldPath path);

// The paths this CPU runs, the portable one first.
std::vector<FoldPath> available_fold_paths();

// The fastest path this CPU runs, or the one the environment variable TPU_FOLD_PATH names
// (portable, avx2, avx512): std::runtime_error with one line for another name or a path the CPU
// lacks.
FoldPath default_fold_path();

// `count` bf16 lanes as the fold takes them, into `out`: N-IN (a subnormal is a zero of its
// sign), widened.
void fold_operands(const num::bf16_t* lanes, std::size_t count, float* out);

// Where a fold's activations lie: row r's D values for tile t at first + t * tile_stride +
// r * D (fold_operands' floats, lanes past the tile's k_valid -0; or int8 values as int32, lanes
// past k_valid 0). The rows of one tile lie one after the other, as a MATMUL iteration's
// unified-buffer rows do; a K loop's tiles read rows `step_a` apart.
template <typename T>
struct FoldActs {
  const T* first = nullptr;
  std::size_t tile_stride = 0;

  FoldActs rows_from(std::size_t row, std::size_t dim) const {
    return {first + row * dim, tile_stride};
  }
};

// `rows` rows of activations folded against `tiles` weight tiles (D x D of fold_operands' floats
// each, weight (k, j) of tile t at weights[(t * D + k) * D + j]: a K loop's tiles one after the
// other) into `rows` rows of D sums (fp32 bit patterns: the seeds, +0 for none, in; the results
// out), row r's at sums[r * D]: k in order, tile after tile.
void fold_rows(FoldPath path, const FoldActs<float>& acts, const float* weights, std::size_t tiles,
               num::fp32_t* sums, std::size_t rows, std::size_t dim);

// The same in int8 mode (Q-MAC): int8 activations and weights as int32, their products exact,
// added onto the int32 sums (their bits) wrapping modulo 2^32, in whatever order.
void fold_rows_int8(FoldPath path, const FoldActs<std::int32_t>& acts, const std::int32_t* weights,
                    std::size_t tiles, num::fp32_t* sums, std::size_t rows, std::size_t dim);

// Weights as host memory holds a FETCH MATMUL's tiles (one after the other, row after row, every
// row whole): little-endian bf16 lanes, which the vector paths widen as they load them (their
// denormals-are-zero mode is N-IN), or int8 bytes, which they sign-extend. No copy of the
// weights is made but on the portable path.
struct HostBf16Weights {
  const std::uint8_t* bytes;
};
struct HostInt8Weights {
  const std::uint8_t* bytes;
};
void fold_rows(FoldPath path, const FoldActs<float>& acts, HostBf16Weights weights,
               std::size_t tiles, num::fp32_t* sums, std::size_t rows, std::size_t dim);
void fold_rows_int8(FoldPath path, const FoldActs<std::int32_t>& acts, HostInt8Weights weights,
                    std::size_t tiles, num::fp32_t* sums, std::size_t rows, std::size_t dim);

// The vector unit's and the activation unit's fp32 arithmetic over n lanes on the host's
// binary32, the contract's flushes explicit (whatever the host's modes), NaN canonical: N-ADD
// (out = a + b, or a - b), N-MUL (out = a x b), the comparisons and relu, and N-OUT's rounding of
// fp32 to bf16. Each is held
// against the reference (num::add_fp32, mul_fp32, fp32_to_bf16) bit for bit
// (tests/sw/test_array_fold.cpp).
void add_lanes(const num::fp32_t* a, const num::fp32_t* b, num::fp32_t* out, std::size_t n,
               bool subtract = false);
void mul_lanes(const num::fp32_t* a, const num::fp32_t* b, num::fp32_t* out, std::size_t n);
// The larger (or with `smaller` the smaller) of each pair as num::max_fp32 and min_fp32 order
// them: N-IN first, -0 below +0, a NaN canonical.
void max_lanes(const num::fp32_t* a, const num::fp32_t* b, num::fp32_t* out, std::size_t n,
               bool smaller = false);
// The activation unit's identity, relu or relu6 (num::act_func's kNone, kRelu and kRelu6) in
// place: N-IN, a NaN canonical; with `relu` or `relu6` a negative value +0, with `relu6` a value
// above 6 (+inf included) 6.
void relu_lanes(num::fp32_t* values, std::size_t n, bool relu, bool relu6 = false);
void round_to_bf16(const num::fp32_t* in, num::bf16_t* out, std::size_t n);

}  // namespace tpu::detail
