// The activation reference model (sw/numerics/activation.cpp) against independent expectations:
// MPFR's correctly rounded sigmoid, tanh, gelu, exp, reciprocal and reciprocal square root for
// every bf16 input, the double-precision oracle on random fp32 samples, the host-float oracle for
// relu, relu6 and leaky relu, and the special values of N-ACT written out by hand. Randomised tests
// print their seed; TPU_TEST_SEED reproduces a run.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_seed.hpp"
#include "oracle/activation.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu {
namespace {

using num::ActFunc;
using num::bf16_t;
using num::fp32_t;
using tpu::test::test_seed;

constexpr std::uint64_t kRandomSampleCount = 1'000'000;
constexpr std::uint64_t kMaxReportedMismatches = 10;
constexpr mpfr_prec_t kMpfrPrecision = 128;

// Every result of an approximated function of magnitude 2^-125 or more is within this relative
// error of the true value (the measured worst cases are in docs/numerics.md, section Activation
// functions). It implies the 1-ulp bound of N-ACT with a wide margin: half a bf16 ulp is at least
// 2^-9 relative.
const double kMaxRelativeError = std::ldexp(1.0, -14);
// Below this the flush to zero decides the result, and from the second the overflow to infinity
// (2^128 (1 - 2^-25), the midpoint between the largest fp32 value and 2^128): there the relative
// error is not meaningful.
const double kRelativeErrorFloor = std::ldexp(1.0, -125);
const double kOverflowThreshold = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);

fp32_t act(ActFunc func, fp32_t x, bf16_t alpha = 0) {
  return num::act_func(static_cast<unsigned>(func), x, alpha);
}

template <typename T>
std::string hex(T bits) {
  std::ostringstream out;
  out << "0x" << std::uppercase << std::hex << std::setw(2 * sizeof(T)) << std::setfill('0')
      << static_cast<std::uint64_t>(bits);
  return out.str();
}

const char* name(ActFunc func) {
  switch (func) {
    case ActFunc::kSigmoid:
      return "sigmoid";
    case ActFunc::kTanh:
      return "tanh";
    case ActFunc::kGelu:
      return "gelu";
    case ActFunc::kExp:
      return "exp";
    case ActFunc::kRecip:
      return "recip";
    case ActFunc::kRsqrt:
      return "rsqrt";
    default:
      return "other";
  }
}

bool is_nan_fp32(fp32_t x) {
  return (x & 0x7F800000u) == 0x7F800000u && (x & 0x007FFFFFu) != 0;
}

// Bulk comparisons: counts mismatches and reports the first few with their inputs.
class MismatchLog {
 public:
  template <typename DescribeInputs>
  void check(fp32_t got, fp32_t expected, DescribeInputs describe_inputs) {
    if (got == expected) return;
    if (++count_ <= kMaxReportedMismatches)
      ADD_FAILURE() << describe_inputs() << ": ref " << hex(got) << ", expected " << hex(expected);
  }
  std::uint64_t count() const { return count_; }

 private:
  std::uint64_t count_ = 0;
};

// The error of one function over a set of inputs: the distance in bf16 ulps between the result
// rounded by N-OUT and the correctly rounded true value, and the relative error of the fp32
// result itself.
class ErrorStats {
 public:
  void add(fp32_t x, fp32_t result, bf16_t correctly_rounded, double relative_error) {
    ++checked_;
    const int ulps = oracle::bf16_ulp_distance(num::fp32_to_bf16(result), correctly_rounded);
    if (ulps > 0) ++inexact_;
    if (ulps > max_ulps_) {
      max_ulps_ = ulps;
      worst_ulp_input_ = x;
    }
    if (relative_error > max_relative_) {
      max_relative_ = relative_error;
      worst_relative_input_ = x;
    }
  }

  int max_ulps() const { return max_ulps_; }
  double max_relative() const { return max_relative_; }

  std::string summary(const char* what) const {
    std::ostringstream out;
    out << what << ": " << checked_ << " inputs, max " << max_ulps_ << " bf16 ulp (at "
        << hex(worst_ulp_input_) << "), " << inexact_ << " not correctly rounded, max relative "
        << "error 2^" << std::fixed << std::setprecision(2) << std::log2(max_relative_) << " (at "
        << hex(worst_relative_input_) << ")";
    return out.str();
  }

  // Prints the summary and records it in the test's XML output.
  void report(const char* what) const {
    const std::string text = summary(what);
    std::cout << "[ error    ] " << text << '\n';
    ::testing::Test::RecordProperty("error", text);
  }

 private:
  std::uint64_t checked_ = 0;
  std::uint64_t inexact_ = 0;
  int max_ulps_ = 0;
  fp32_t worst_ulp_input_ = 0;
  double max_relative_ = 0;
  fp32_t worst_relative_input_ = 0;
};

class Mpfr {
 public:
  explicit Mpfr(mpfr_prec_t precision) { mpfr_init2(value_, precision); }
  ~Mpfr() { mpfr_clear(value_); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
  mpfr_ptr get() { return value_; }

 private:
  mpfr_t value_;
};

// func(x) at kMpfrPrecision bits for a finite fp32 x after N-IN.
void mpfr_function(ActFunc func, fp32_t x, mpfr_ptr out) {
  Mpfr arg(kMpfrPrecision);
  mpfr_set_flt(arg.get(), oracle::as_float(num::canon_in_fp32(x)), MPFR_RNDN);
  switch (func) {
    case ActFunc::kSigmoid:  // 1 / (1 + e^-x)
      mpfr_neg(out, arg.get(), MPFR_RNDN);
      mpfr_exp(out, out, MPFR_RNDN);
      mpfr_add_ui(out, out, 1, MPFR_RNDN);
      mpfr_ui_div(out, 1, out, MPFR_RNDN);
      break;
    case ActFunc::kTanh:
      mpfr_tanh(out, arg.get(), MPFR_RNDN);
      break;
    case ActFunc::kExp:
      mpfr_exp(out, arg.get(), MPFR_RNDN);
      break;
    case ActFunc::kRecip:
      mpfr_ui_div(out, 1, arg.get(), MPFR_RNDN);
      break;
    case ActFunc::kRsqrt:  // IEEE 754's rSqrt: -inf at -0, where MPFR gives +inf
      mpfr_rec_sqrt(out, arg.get(), MPFR_RNDN);
      if (mpfr_zero_p(arg.get())) mpfr_setsign(out, out, mpfr_signbit(arg.get()), MPFR_RNDN);
      break;
    default:  // gelu: x erfc(-x / sqrt(2)) / 2
      mpfr_sqrt_ui(out, 2, MPFR_RNDN);
      mpfr_div(out, arg.get(), out, MPFR_RNDN);
      mpfr_neg(out, out, MPFR_RNDN);
      mpfr_erfc(out, out, MPFR_RNDN);
      mpfr_mul(out, out, arg.get(), MPFR_RNDN);
      mpfr_div_2ui(out, out, 1, MPFR_RNDN);
      break;
  }
}

// The value rounded by N-OUT's rules: nearest even at 8 bits with MPFR's unbounded exponent,
// then the flush below 2^-126, and infinity from 2^128 on. Rounding the 128-bit value instead of
// the exact one cannot change the result for bf16 inputs: none of these functions comes within
// 2^-120 of a bf16 rounding midpoint there (the closest candidates, tanh(x) ~ x and gelu(x) ~ x/2
// for tiny x, are bf16 values themselves, not midpoints).
bf16_t mpfr_round_to_bf16(mpfr_ptr value) {
  Mpfr rounded(8);
  mpfr_set(rounded.get(), value, MPFR_RNDN);
  const bf16_t sign = mpfr_signbit(rounded.get()) ? bf16_t{0x8000} : bf16_t{0};
  if (mpfr_zero_p(rounded.get())) return sign;
  if (mpfr_inf_p(rounded.get())) return static_cast<bf16_t>(sign | 0x7F80u);
  // MPFR writes value = m * 2^exp with 0.5 <= |m| < 1.
  if (mpfr_get_exp(rounded.get()) <= -126) return sign;
  if (mpfr_get_exp(rounded.get()) > 128) return static_cast<bf16_t>(sign | 0x7F80u);
  return static_cast<bf16_t>(sign |
                             (oracle::as_bits(mpfr_get_flt(rounded.get(), MPFR_RNDN)) >> 16));
}

// |result - value| / |value|, or 0 where the flush or the overflow decides the result.
double mpfr_relative_error(fp32_t result, mpfr_ptr value) {
  const double magnitude = std::fabs(mpfr_get_d(value, MPFR_RNDN));
  if (magnitude < kRelativeErrorFloor || magnitude >= kOverflowThreshold) return 0.0;
  Mpfr error(kMpfrPrecision);
  mpfr_set_flt(error.get(), oracle::as_float(result), MPFR_RNDN);
  mpfr_sub(error.get(), error.get(), value, MPFR_RNDN);
  mpfr_div(error.get(), error.get(), value, MPFR_RNDN);
  return std::fabs(mpfr_get_d(error.get(), MPFR_RNDN));
}

// Every finite bf16 input (as fp32, x << 16) against MPFR. Infinities and NaN have their own
// directed tests.
void check_every_bf16_input(ActFunc func) {
  ErrorStats stats;
  MismatchLog nan_log;
  Mpfr value(kMpfrPrecision);
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    const fp32_t x = num::bf16_to_fp32(static_cast<bf16_t>(bits));
    if ((x & 0x7F800000u) == 0x7F800000u) continue;
    const fp32_t y = act(func, x);
    mpfr_function(func, x, value.get());
    if (mpfr_nan_p(value.get())) {  // rsqrt below zero
      nan_log.check(y, num::kCanonicalNanFp32, [&] { return hex(x); });
      continue;
    }
    stats.add(x, y, mpfr_round_to_bf16(value.get()), mpfr_relative_error(y, value.get()));
  }
  stats.report(name(func));
  EXPECT_EQ(nan_log.count(), 0u);
  EXPECT_LE(stats.max_ulps(), 1) << stats.summary(name(func));
  EXPECT_LE(stats.max_relative(), kMaxRelativeError) << stats.summary(name(func));
}

TEST(ActRefEveryBf16, SigmoidWithinOneUlpOfMpfr) {
  check_every_bf16_input(ActFunc::kSigmoid);
}
TEST(ActRefEveryBf16, TanhWithinOneUlpOfMpfr) {
  check_every_bf16_input(ActFunc::kTanh);
}
TEST(ActRefEveryBf16, GeluWithinOneUlpOfMpfr) {
  check_every_bf16_input(ActFunc::kGelu);
}
TEST(ActRefEveryBf16, ExpWithinOneUlpOfMpfr) {
  check_every_bf16_input(ActFunc::kExp);
}
TEST(ActRefEveryBf16, RecipWithinOneUlpOfMpfr) {
  check_every_bf16_input(ActFunc::kRecip);
}
// Negative inputs give NaN (directed tests below); every positive finite one against MPFR.
TEST(ActRefEveryBf16, RsqrtWithinOneUlpOfMpfr) {
  check_every_bf16_input(ActFunc::kRsqrt);
}

double double_function(ActFunc func, fp32_t x) {
  switch (func) {
    case ActFunc::kSigmoid:
      return oracle::sigmoid_double(x);
    case ActFunc::kTanh:
      return oracle::tanh_double(x);
    case ActFunc::kExp:
      return oracle::exp_double(x);
    case ActFunc::kRecip:
      return oracle::recip_double(x);
    case ActFunc::kRsqrt:
      return oracle::rsqrt_double(x);
    default:
      return oracle::gelu_double(x);
  }
}

// kRandomSampleCount fp32 inputs (oracle::activation_input) against the double-precision
// oracle. Its own error (a few units of 2^-53) is negligible next to kMaxRelativeError, so the
// relative-error bound, which implies the 1-ulp bound, holds against the exact value as well.
void check_random_fp32_inputs(ActFunc func, std::uint64_t seed) {
  oracle::OperandRng rng(seed);
  ErrorStats stats;
  MismatchLog nan_log;
  for (std::uint64_t n = 0; n < kRandomSampleCount; ++n) {
    const fp32_t x = oracle::activation_input(rng);
    const fp32_t y = act(func, x);
    if (is_nan_fp32(x)) {
      nan_log.check(y, num::kCanonicalNanFp32, [&] { return hex(x); });
      continue;
    }
    const double truth = double_function(func, x);
    if (std::isnan(truth)) {  // rsqrt below zero
      nan_log.check(y, num::kCanonicalNanFp32, [&] { return hex(x); });
      continue;
    }
    const double relative =
        std::fabs(truth) < kRelativeErrorFloor || std::fabs(truth) >= kOverflowThreshold
            ? 0.0
            : std::fabs((static_cast<double>(oracle::as_float(y)) - truth) / truth);
    stats.add(x, y, oracle::round_real_to_bf16(truth), relative);
  }
  stats.report(name(func));
  EXPECT_EQ(nan_log.count(), 0u);
  EXPECT_LE(stats.max_ulps(), 1) << stats.summary(name(func));
  EXPECT_LE(stats.max_relative(), kMaxRelativeError) << stats.summary(name(func));
}

TEST(ActRefRandomFp32, SigmoidWithinOneUlp) {
  check_random_fp32_inputs(ActFunc::kSigmoid, test_seed());
}
TEST(ActRefRandomFp32, TanhWithinOneUlp) {
  check_random_fp32_inputs(ActFunc::kTanh, test_seed() + 1);
}
TEST(ActRefRandomFp32, GeluWithinOneUlp) {
  check_random_fp32_inputs(ActFunc::kGelu, test_seed() + 2);
}
TEST(ActRefRandomFp32, ExpWithinOneUlp) {
  check_random_fp32_inputs(ActFunc::kExp, test_seed() + 3);
}
TEST(ActRefRandomFp32, RecipWithinOneUlp) {
  check_random_fp32_inputs(ActFunc::kRecip, test_seed() + 4);
}
TEST(ActRefRandomFp32, RsqrtWithinOneUlp) {
  check_random_fp32_inputs(ActFunc::kRsqrt, test_seed() + 5);
}

// ---------------------------------------------------------------------------------------------
// Directed: the special values of N-ACT, bit patterns written out by hand.

struct Case {
  ActFunc func;
  fp32_t x;
  bf16_t alpha;
  fp32_t expected;
  const char* what;
};

constexpr fp32_t kPlusInf = 0x7F800000u, kMinusInf = 0xFF800000u;
constexpr fp32_t kPlusZero = 0x00000000u, kMinusZero = 0x80000000u;
constexpr fp32_t kOne = 0x3F800000u, kMinusOne = 0xBF800000u, kHalf = 0x3F000000u;
constexpr fp32_t kSix = 0x40C00000u, kNan = 0x7FC00000u;
constexpr bf16_t kAlphaHalf = 0x3F00u, kAlphaMinusHalf = 0xBF00u;

const std::vector<Case> kSpecialCases = {
    {ActFunc::kSigmoid, kPlusInf, 0, kOne, "sigmoid(+inf) = 1"},
    {ActFunc::kSigmoid, kMinusInf, 0, kPlusZero, "sigmoid(-inf) = +0"},
    {ActFunc::kSigmoid, kPlusZero, 0, kHalf, "sigmoid(+0) = 0.5"},
    {ActFunc::kSigmoid, kMinusZero, 0, kHalf, "sigmoid(-0) = 0.5"},
    {ActFunc::kSigmoid, 0x80000001u, 0, kHalf, "sigmoid(-subnormal) = 0.5"},
    {ActFunc::kSigmoid, 0x42C80000u, 0, kOne, "sigmoid(100) = 1"},
    {ActFunc::kSigmoid, 0xC2C80000u, 0, kPlusZero, "sigmoid(-100) flushed"},
    {ActFunc::kTanh, kPlusInf, 0, kOne, "tanh(+inf) = 1"},
    {ActFunc::kTanh, kMinusInf, 0, kMinusOne, "tanh(-inf) = -1"},
    {ActFunc::kTanh, kPlusZero, 0, kPlusZero, "tanh(+0) = +0"},
    {ActFunc::kTanh, kMinusZero, 0, kMinusZero, "tanh(-0) = -0"},
    {ActFunc::kTanh, 0x807FFFFFu, 0, kMinusZero, "tanh(-subnormal) = -0"},
    {ActFunc::kTanh, 0x00800000u, 0, 0x00800000u, "tanh(2^-126) = 2^-126"},
    {ActFunc::kTanh, 0x41A00000u, 0, kOne, "tanh(20) = 1"},
    {ActFunc::kGelu, kPlusInf, 0, kPlusInf, "gelu(+inf) = +inf"},
    {ActFunc::kGelu, kMinusInf, 0, kMinusZero, "gelu(-inf) = -0"},
    {ActFunc::kGelu, kPlusZero, 0, kPlusZero, "gelu(+0) = +0"},
    {ActFunc::kGelu, kMinusZero, 0, kMinusZero, "gelu(-0) = -0"},
    {ActFunc::kGelu, 0x00000001u, 0, kPlusZero, "gelu(+subnormal) = +0"},
    {ActFunc::kGelu, 0x41800000u, 0, 0x41800000u, "gelu(16) = 16"},
    {ActFunc::kGelu, 0x7F7FFFFFu, 0, 0x7F7FFFFFu, "gelu(max) = max"},
    {ActFunc::kGelu, 0xC1800000u, 0, kMinusZero, "gelu(-16) = -0"},
    {ActFunc::kGelu, 0xC1600000u, 0, kMinusZero, "gelu(-14) flushed"},
    {ActFunc::kExp, kPlusZero, 0, kOne, "exp(+0) = 1"},
    {ActFunc::kExp, kMinusZero, 0, kOne, "exp(-0) = 1"},
    {ActFunc::kExp, 0x80000001u, 0, kOne, "exp(-subnormal) = 1"},
    {ActFunc::kExp, kPlusInf, 0, kPlusInf, "exp(+inf) = +inf"},
    {ActFunc::kExp, kMinusInf, 0, kPlusZero, "exp(-inf) = +0"},
    {ActFunc::kExp, 0x42B20000u, 0, kPlusInf, "exp(89) overflows"},
    {ActFunc::kExp, 0xC2B00000u, 0, kPlusZero, "exp(-88) flushed"},
    {ActFunc::kExp, 0x7F7FFFFFu, 0, kPlusInf, "exp(max) = +inf"},
    {ActFunc::kRecip, kPlusZero, 0, kPlusInf, "recip(+0) = +inf"},
    {ActFunc::kRecip, kMinusZero, 0, kMinusInf, "recip(-0) = -inf"},
    {ActFunc::kRecip, 0x807FFFFFu, 0, kMinusInf, "recip(-subnormal) = -inf"},
    {ActFunc::kRecip, kPlusInf, 0, kPlusZero, "recip(+inf) = +0"},
    {ActFunc::kRecip, kMinusInf, 0, kMinusZero, "recip(-inf) = -0"},
    {ActFunc::kRecip, 0xC0000000u, 0, 0xBF000000u, "recip(-2) = -0.5"},
    {ActFunc::kRecip, 0x7F000000u, 0, kPlusZero, "recip(2^127) flushed"},
    {ActFunc::kRecip, 0x00800000u, 0, 0x7E800000u, "recip(2^-126) = 2^126"},
    {ActFunc::kRsqrt, kPlusZero, 0, kPlusInf, "rsqrt(+0) = +inf"},
    {ActFunc::kRsqrt, kMinusZero, 0, kMinusInf, "rsqrt(-0) = -inf"},
    {ActFunc::kRsqrt, 0x00000001u, 0, kPlusInf, "rsqrt(+subnormal) = +inf"},
    {ActFunc::kRsqrt, kPlusInf, 0, kPlusZero, "rsqrt(+inf) = +0"},
    {ActFunc::kRsqrt, kMinusInf, 0, kNan, "rsqrt(-inf) = NaN"},
    {ActFunc::kRsqrt, kMinusOne, 0, kNan, "rsqrt(-1) = NaN"},
    {ActFunc::kRsqrt, 0x40800000u, 0, kHalf, "rsqrt(4) = 0.5"},
    {ActFunc::kRsqrt, 0x3E800000u, 0, 0x40000000u, "rsqrt(0.25) = 2"},
    {ActFunc::kRsqrt, 0x00800000u, 0, 0x5F000000u, "rsqrt(2^-126) = 2^63"},
    {ActFunc::kRelu, kMinusZero, 0, kPlusZero, "relu(-0) = +0"},
    {ActFunc::kRelu, kMinusInf, 0, kPlusZero, "relu(-inf) = +0"},
    {ActFunc::kRelu, kPlusInf, 0, kPlusInf, "relu(+inf) = +inf"},
    {ActFunc::kRelu, 0x00000001u, 0, kPlusZero, "relu(+subnormal) = +0"},
    {ActFunc::kRelu6, kPlusInf, 0, kSix, "relu6(+inf) = 6"},
    {ActFunc::kRelu6, kMinusZero, 0, kPlusZero, "relu6(-0) = +0"},
    {ActFunc::kRelu6, 0x40BFFFFFu, 0, 0x40BFFFFFu, "relu6(6 - ulp) = 6 - ulp"},
    {ActFunc::kRelu6, 0x40C00001u, 0, kSix, "relu6(6 + ulp) = 6"},
    {ActFunc::kLeaky, kMinusZero, kAlphaMinusHalf, kMinusZero, "leaky(-0) = -0"},
    {ActFunc::kLeaky, 0x80000001u, kAlphaHalf, kMinusZero, "leaky(-subnormal) = -0"},
    {ActFunc::kLeaky, kPlusInf, kAlphaMinusHalf, kPlusInf, "leaky(+inf) = +inf"},
    {ActFunc::kLeaky, kMinusInf, kAlphaHalf, kMinusInf, "leaky(-inf, 0.5) = -inf"},
    {ActFunc::kLeaky, kMinusInf, kAlphaMinusHalf, kPlusInf, "leaky(-inf, -0.5) = +inf"},
    {ActFunc::kLeaky, kMinusInf, 0x0000u, kNan, "leaky(-inf, 0) = NaN"},
    {ActFunc::kLeaky, kMinusInf, 0x0001u, kNan, "leaky(-inf, subnormal) = NaN"},
    {ActFunc::kLeaky, kMinusOne, 0x0000u, kMinusZero, "leaky(-1, +0) = -0"},
    {ActFunc::kLeaky, kMinusOne, 0x8000u, kPlusZero, "leaky(-1, -0) = +0"},
    {ActFunc::kLeaky, kMinusOne, 0xFF80u, kPlusInf, "leaky(-1, -inf) = +inf"},
    {ActFunc::kLeaky, kMinusOne, 0x7FC1u, kNan, "leaky(-1, NaN) = NaN"},
    {ActFunc::kLeaky, kOne, 0x7FC1u, kOne, "leaky(1, NaN) = 1"},
    {ActFunc::kLeaky, 0xC0000000u, kAlphaMinusHalf, kOne, "leaky(-2, -0.5) = 1"},
    {ActFunc::kLeaky, 0xFF7FFFFFu, 0xC000u, kPlusInf, "leaky(-max, -2) overflows"},
    {ActFunc::kLeaky, 0x80800000u, kAlphaHalf, kMinusZero, "leaky(-2^-126, 0.5) flushed"},
    // -(2^-125 - 2^-149) * 0.5 = -(2^-126 - 2^-150) is a tie on the subnormal grid, which IEEE
    // rounds to -2^-126 (even): not flushed. One grid step lower it is subnormal and flushed.
    {ActFunc::kLeaky, 0x80FFFFFFu, kAlphaHalf, 0x80800000u, "leaky rounds up to -2^-126"},
    {ActFunc::kLeaky, 0x80FFFFFEu, kAlphaHalf, kMinusZero, "leaky flushes -(2^-126 - 2^-149)"},
    {ActFunc::kNone, 0x80000001u, 0, kMinusZero, "none(-subnormal) = -0"},
    {ActFunc::kNone, 0xC0490FDBu, 0, 0xC0490FDBu, "none(-pi) = -pi"},
};

TEST(ActRefSpecial, SpecialValues) {
  for (const auto& c : kSpecialCases) {
    EXPECT_EQ(hex(act(c.func, c.x, c.alpha)), hex(c.expected)) << c.what;
  }
}

TEST(ActRefSpecial, EveryNaNGivesCanonicalNaN) {
  const fp32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FBFFFFFu};
  for (unsigned func = 0; func < 16; ++func)
    for (fp32_t x : nans) EXPECT_EQ(hex(num::act_func(func, x, 0x3F80u)), hex(kNan)) << func;
}

TEST(ActRefSpecial, IllegalCodesAreTheIdentity) {
  oracle::OperandRng rng(test_seed());
  for (unsigned func = 10; func < 16; ++func) {
    for (int n = 0; n < 10'000; ++n) {
      const fp32_t x = rng.fp32();
      ASSERT_EQ(hex(num::act_func(func, x, 0)), hex(act(ActFunc::kNone, x)));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// relu, relu6 and leaky relu are exact: against the host-float oracle.

// The structured fp32 operands, every bf16 pattern widened, and kRandomSampleCount random fp32
// values (OperandRng's mix: specials, boundary exponents, random bits).
std::vector<fp32_t> piecewise_inputs(std::uint64_t seed) {
  std::vector<fp32_t> inputs = oracle::structured_fp32_operands();
  for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits)
    inputs.push_back(num::bf16_to_fp32(static_cast<bf16_t>(bits)));
  oracle::OperandRng rng(seed);
  for (std::uint64_t n = 0; n < kRandomSampleCount; ++n) inputs.push_back(rng.fp32());
  return inputs;
}

TEST(ActRefPiecewise, NoneReluRelu6MatchHostFloat) {
  MismatchLog log;
  for (fp32_t x : piecewise_inputs(test_seed())) {
    log.check(act(ActFunc::kNone, x), oracle::canon_in_fp32(x), [&] { return "none " + hex(x); });
    log.check(act(ActFunc::kRelu, x), oracle::relu(x), [&] { return "relu " + hex(x); });
    log.check(act(ActFunc::kRelu6, x), oracle::relu6(x), [&] { return "relu6 " + hex(x); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(ActRefPiecewise, LeakyMatchesHostFloat) {
  // 0.01, 0.2, 1, -0.5, +0, -0, a subnormal (zero), +-inf, NaN, the largest finite (overflow)
  // and the smallest normal (flush).
  const bf16_t alphas[] = {0x3C24u, 0x3E4Du, 0x3F80u, 0xBF00u, 0x0000u, 0x8000u,
                           0x0001u, 0x7F80u, 0xFF80u, 0x7FC0u, 0x7F7Fu, 0x0080u};
  MismatchLog log;
  const std::vector<fp32_t> inputs = piecewise_inputs(test_seed());
  for (bf16_t alpha : alphas)
    for (fp32_t x : inputs)
      log.check(act(ActFunc::kLeaky, x, alpha), oracle::leaky_relu(x, alpha),
                [&] { return hex(x) + " alpha " + hex(alpha); });
  oracle::OperandRng rng(test_seed() + 1);
  for (std::uint64_t n = 0; n < kRandomSampleCount; ++n) {
    const fp32_t x = rng.fp32();
    const bf16_t alpha = rng.bf16();
    log.check(act(ActFunc::kLeaky, x, alpha), oracle::leaky_relu(x, alpha),
              [&] { return hex(x) + " alpha " + hex(alpha); });
  }
  EXPECT_EQ(log.count(), 0u);
}

}  // namespace
}  // namespace tpu
