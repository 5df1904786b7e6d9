// Reference int8 arithmetic (TensorFlow Lite's scheme): the integer GEMM of Q-MAC, the
// requantisation of Q-REQ, the zero-point folding of Q-ZP and the multiplier of Q-SCALE, bit for
// bit as docs/numerics.md states them. Pure integer code except quantize_multiplier and the
// relu6 bound, which start from a real scale.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tpu/numerics/float.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu::num {

using MatrixI8 = Matrix<std::int8_t>;
using MatrixI32 = Matrix<std::int32_t>;

// Q-MAC: out(i, j) = c(i, j) (or 0) + sum over k of a(i, k) * w(k, j), every addition wrapping
// modulo 2^32 (so the order of the sum does not matter). a is M x K, w is K x N, c (optional) is
// M x N; throws std::invalid_argument otherwise.
MatrixI32 gemm_int8(const MatrixI8& a, const MatrixI8& w, const MatrixI32* c = nullptr);

// Q-REQ's SRDHM, TensorFlow Lite's SaturatingRoundingDoublingHighMul: a * b / 2^31 rounded to
// nearest with ties toward +infinity; INT32_MAX for a = b = INT32_MIN, the one product that
// overflows.
std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b);

// Q-REQ's RDBP, TensorFlow Lite's RoundingDivideByPOT: x / 2^exponent rounded to nearest with
// ties away from zero. exponent must be in [0, 31]; throws std::invalid_argument otherwise.
std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent);

// A real multiplier r ~ multiplier * 2^(shift - 31) (Q-SCALE). Valid: multiplier 0 or in
// [2^30, 2^31 - 1], shift in [-31, 30].
struct QuantizedMultiplier {
  std::int32_t multiplier = 0;
  int shift = 0;
};

bool valid_quantized_multiplier(QuantizedMultiplier m);

// The multiply of Q-REQ, TensorFlow Lite's MultiplyByQuantizedMultiplier in its double-rounding
// form: x = wrap(x * 2^max(s, 0)); RDBP(SRDHM(x, M), max(-s, 0)). Throws std::invalid_argument
// if m is not valid.
std::int32_t multiply_by_quantized_multiplier(std::int32_t x, QuantizedMultiplier m);

// One output channel's requantisation parameters (Q-REQ): bias b(j), multiplier M(j) and shift
// s(j), output zero point zo in [-128, 127] and clamp bounds -128 <= lo <= hi <= 127.
struct RequantParams {
  std::int32_t bias = 0;
  QuantizedMultiplier m;
  int zero_point = 0;
  int lo = -128;
  int hi = 127;
};

// Q-REQ: x = wrap(sum + bias), y = multiply_by_quantized_multiplier(x, m),
// out = clamp(y + zero_point, lo, hi) with y + zero_point exact. Throws std::invalid_argument if
// the parameters are outside the ranges above.
std::int8_t requantize(std::int32_t sum, const RequantParams& p);

// Q-SCALE, TensorFlow Lite's QuantizeMultiplier: r = f * 2^e (frexp), M = f * 2^31 rounded half
// away from zero, s = e, with M = 2^31 renormalised to 2^30 and e + 1, and M = 0, s = 0 when
// e < -31 or r = 0 (either zero). Throws std::invalid_argument for r < 0, a non-finite r, or an r
// that needs s > 30 (r >= 2^30 - 2^-2).
QuantizedMultiplier quantize_multiplier(double real_multiplier);

// Q-ZP: the bias with the input zero point folded in,
// b'(j) = wrap(b(j) - input_zero_point * sum over k of w(k, j)), so that
// sum of a * w + b' = sum of (a - input_zero_point) * w + b modulo 2^32. bias has one entry per
// column of w; throws std::invalid_argument otherwise.
std::vector<std::int32_t> fold_input_zero_point(const std::vector<std::int32_t>& bias,
                                                int input_zero_point, const MatrixI8& w);

// The activations an int8 layer fuses into its clamp (Q-REQ).
enum class QuantActivation { kNone, kRelu, kRelu6 };

// q6 of Q-REQ: 6 / output_scale rounded half away from zero, saturated to [0, INT32_MAX].
// output_scale must be positive and finite; throws std::invalid_argument otherwise.
int relu6_quantized_six(double output_scale);

// Q-REQ's clamp bounds {lo, hi}: none (-128, 127); relu (max(zo, -128), 127); relu6
// (max(zo, -128), min(127, zo + q6)). zero_point must be in [-128, 127]; output_scale is only read
// for relu6. Throws std::invalid_argument otherwise.
std::pair<int, int> clamp_bounds(QuantActivation act, int zero_point, double output_scale);

// Q-ADD: TensorFlow Lite's int8 ADD. Each input's offset value (q - its zero point) is moved up
// by 2^20 (kAddLeftShift) and rescaled to the common scale 2 max(s_a, s_b) / 2^20 by its
// multiplier (Q-REQ's multiply, no bias), the two are added, and the sum is requantised to the
// output by Q-REQ (no bias) with the output's multiplier, zero point and clamp.
inline constexpr int kAddLeftShift = 20;

struct QuantAddParams {
  int a_zero_point = 0, b_zero_point = 0;  // in [-128, 127]
  QuantizedMultiplier a, b;                // s_a / (2 max(s_a, s_b)), s_b / (2 max(s_a, s_b))
  QuantizedMultiplier out;                 // 2 max(s_a, s_b) / (2^20 s_y)
  int zero_point = 0;                      // the output's, in [-128, 127]
  int lo = -128, hi = 127;                 // the clamp (clamp_bounds)
};

// TensorFlow Lite's parameters of an ADD of a (scale a_scale, zero point a_zero_point) and b
// into y, by Q-SCALE from the real multipliers above computed in double precision, the clamp of
// the fused activation. Throws std::invalid_argument for a scale that is not positive and finite,
// a zero point outside [-128, 127] or a multiplier Q-SCALE refuses.
QuantAddParams quant_add_params(double a_scale, int a_zero_point, double b_scale, int b_zero_point,
                                double y_scale, int y_zero_point, QuantActivation act);

// Q-ADD of one pair of values: with x_a = multiply_by_quantized_multiplier((a - za) 2^20, p.a)
// and x_b likewise, requantize(x_a + x_b, {0, p.out, zo, lo, hi}). Throws std::invalid_argument
// for parameters outside the ranges above.
std::int8_t add_int8(std::int8_t a, std::int8_t b, const QuantAddParams& p);

// Q-MEAN: the mean of `count` int8 values of scale x_scale and zero point x_zero_point, into y.
// Their int32 sum S is moved up by 2^up, the largest power of two that keeps 256 count 2^up
// within 2^30 and the multiplier below at least 2^-31 (so that Q-REQ's first rounding, SRDHM's,
// falls far below the output's step), and
// requantised by Q-REQ with the bias -count x_zero_point 2^up (the values' offsets summed
// exactly, as Q-ZP takes off a zero point), the multiplier x_scale / (count y_scale 2^up) by
// Q-SCALE, the output's zero point and the clamp of the fused activation.
struct QuantMeanParams {
  int up = 0;
  RequantParams requant;
};

// Throws std::invalid_argument for a count of 0 or above 2^22, a scale that is not positive
// and finite, a zero point outside [-128, 127] or a multiplier Q-SCALE refuses.
QuantMeanParams quant_mean_params(double x_scale, int x_zero_point, double y_scale,
                                  int y_zero_point, std::uint64_t count, QuantActivation act);

// Q-MEAN of a window whose int8 values sum to `sum` (wrapping, as ELTWISE I32's adds).
std::int8_t mean_int8(std::int32_t sum, const QuantMeanParams& p);

// Q-QUANT: QuantizeLinear to int8 on the core. q = clamp(fp32_to_int32(mul_fp32(x, r)) + zo,
// lo, hi), the sum exact, r being 1 / scale rounded to fp32. The core takes the product and its
// rounding in ELTWISE quant, and the rest in Q-REQ with no bias and kQuantizeTail, which leaves
// a value below 2^30 in magnitude as it is and moves a larger one by at most 1, never across
// the clamp. onnxruntime divides by the scale instead: x / scale and x · r differ by an ulp now
// and then, which moves q by one where the quotient lies within an ulp of a half.
struct QuantizeParams {
  fp32_t reciprocal = 0;
  int zero_point = 0;       // in [-128, 127]
  int lo = -128, hi = 127;  // the clamp
};
inline constexpr QuantizedMultiplier kQuantizeTail{0x7FFFFFFF, 0};

// For a scale that is positive and finite, with a reciprocal that is a normal fp32, and a zero
// point in [-128, 127]; throws std::invalid_argument otherwise.
QuantizeParams quantize_params(float scale, int zero_point);
std::int8_t quantize_int8(fp32_t x, const QuantizeParams& p);

// Q-DEQUANT: DequantizeLinear of int8 on the core, y = mul_fp32(int32_to_fp32(q - zero_point),
// scale): onnxruntime's fp32 (q - zero_point) · scale, but for the flush of a product below
// 2^-126 (N-VEC's mul).
fp32_t dequantize_int8(std::int8_t q, int zero_point, fp32_t scale);

}  // namespace tpu::num
