// The soft-float reference model (sw/numerics/float.cpp) against independent expectations: the
// host-FPU oracle, MPFR, Eigen's bfloat16 conversion, and bit patterns written out by hand for
// every special case of numerics.md. Randomised tests print their seed; TPU_TEST_SEED
// reproduces a run.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_seed.hpp"
#include "oracle/host_float.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu {
namespace {

using tpu::test::test_seed;

using num::bf16_t;
using num::fp32_t;

constexpr std::uint64_t kLargeSampleCount = 10'000'000;
constexpr std::uint64_t kMediumSampleCount = 1'000'000;
constexpr std::uint64_t kMpfrAddSampleCount = 100'000;
constexpr std::uint64_t kMaxReportedMismatches = 10;

template <typename T>
std::string hex(T bits) {
  std::ostringstream out;
  out << "0x" << std::uppercase << std::hex << std::setw(2 * sizeof(T)) << std::setfill('0')
      << static_cast<std::uint64_t>(bits);
  return out.str();
}

template <typename T>
struct NonDeduced {
  using type = T;
};

// EXPECT_TRUE(SameBits(actual, expected)) prints both bit patterns in hex on failure.
template <typename T>
::testing::AssertionResult SameBits(T actual, typename NonDeduced<T>::type expected) {
  if (actual == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << hex(actual) << ", expected " << hex(expected);
}

// Bulk comparisons: counts mismatches and reports the first few with their inputs.
class MismatchLog {
 public:
  template <typename T, typename DescribeInputs>
  void check(T got, T expected, DescribeInputs describe_inputs) {
    if (got == expected) return;
    if (++count_ <= kMaxReportedMismatches) {
      ADD_FAILURE() << describe_inputs() << ": ref " << hex(got) << ", expected " << hex(expected);
    }
  }
  std::uint64_t count() const { return count_; }

 private:
  std::uint64_t count_ = 0;
};

bool is_normal_fp32(fp32_t x) {
  const fp32_t exponent = (x >> 23) & 0xFF;
  return exponent != 0 && exponent != 0xFF;
}

std::uint16_t eigen_round_bf16(fp32_t x) {
  return Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(oracle::as_float(x)));
}

// ---------------------------------------------------------------------------------------------
// N-IN

TEST(CanonIn, Bf16SubnormalBecomesSignedZero) {
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0x0001), 0x0000));
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0x007F), 0x0000));
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0x8001), 0x8000));
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0x807F), 0x8000));
}

TEST(CanonIn, Bf16NaNBecomesCanonical) {
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0x7F81), 0x7FC0));
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0xFFC0), 0x7FC0));
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0xFFFF), 0x7FC0));
  EXPECT_TRUE(SameBits(num::canon_in_bf16(0x7FC0), 0x7FC0));
}

TEST(CanonIn, Bf16OtherValuesUnchanged) {
  for (bf16_t x : std::initializer_list<bf16_t>{0x0000, 0x8000, 0x0080, 0x8080, 0x3F80, 0xFF7F,
                                                0x7F80, 0xFF80}) {
    EXPECT_TRUE(SameBits(num::canon_in_bf16(x), x));
  }
}

TEST(CanonIn, Fp32SubnormalBecomesSignedZero) {
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0x00000001u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0x007FFFFFu), 0x00000000u));
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0x80000001u), 0x80000000u));
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0x80400000u), 0x80000000u));
}

TEST(CanonIn, Fp32NaNBecomesCanonical) {
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0x7F800001u), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0xFFC12345u), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0xFFFFFFFFu), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::canon_in_fp32(0x7FC00000u), 0x7FC00000u));
}

TEST(CanonIn, Fp32OtherValuesUnchanged) {
  for (fp32_t x : {0x00000000u, 0x80000000u, 0x00800000u, 0x80800000u, 0x3F800000u, 0xFF7FFFFFu,
                   0x7F800000u, 0xFF800000u}) {
    EXPECT_TRUE(SameBits(num::canon_in_fp32(x), x));
  }
}

TEST(CanonIn, Bf16AllPatternsMatchHostClassification) {
  MismatchLog log;
  for (std::uint32_t x = 0; x <= 0xFFFF; ++x) {
    const bf16_t expected = static_cast<bf16_t>(oracle::canon_in_fp32(x << 16) >> 16);
    log.check(num::canon_in_bf16(static_cast<bf16_t>(x)), expected, [&] { return hex(x); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(CanonIn, Fp32RandomMatchesHostClassification) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kMediumSampleCount; ++n) {
    const fp32_t x = rng.fp32();
    log.check(num::canon_in_fp32(x), oracle::canon_in_fp32(x), [&] { return hex(x); });
  }
  EXPECT_EQ(log.count(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Widening and bit casts

TEST(Widening, Bf16ToFp32MatchesEigenForAllPatterns) {
  MismatchLog log;
  for (std::uint32_t x = 0; x <= 0xFFFF; ++x) {
    const auto b = static_cast<std::uint16_t>(x);
    const float eigen_widened = static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(b));
    log.check(num::bf16_to_fp32(b), oracle::as_bits(eigen_widened), [&] { return hex(b); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(Widening, BitCastsKeepBits) {
  EXPECT_EQ(num::fp32_to_float(0x3F800000u), 1.0f);
  EXPECT_EQ(num::fp32_to_float(0xC0400000u), -3.0f);
  EXPECT_TRUE(SameBits(num::float_to_fp32(-2.0f), 0xC0000000u));
  EXPECT_TRUE(SameBits(num::float_to_fp32(-0.0f), 0x80000000u));
  EXPECT_TRUE(SameBits(num::float_to_fp32(num::fp32_to_float(0x7FC01234u)), 0x7FC01234u));
}

// ---------------------------------------------------------------------------------------------
// N-MUL, directed

// N-VEC's conversions against the host's: an int32 rounded to float by the FPU (nearest even),
// a float rounded to an integer by nearbyint (ties to even), saturated, NaN 0, a subnormal its
// zero; every int32 around each power of two and a million random bit patterns each way (make
// verify-exhaustive takes all 2^32).
TEST(Conversions, MatchTheHosts) {
  const auto to_int = [](tpu::num::fp32_t bits) -> std::int32_t {
    const float f = tpu::oracle::as_float(bits);
    if (std::isnan(f) || std::fpclassify(f) == FP_SUBNORMAL) return 0;
    const double r = std::nearbyint(static_cast<double>(f));
    return r >= 2147483647.0    ? INT32_MAX
           : r <= -2147483648.0 ? INT32_MIN
                                : static_cast<std::int32_t>(r);
  };
  std::vector<std::uint32_t> inputs;
  for (int bit = 0; bit < 32; ++bit) {
    for (std::uint32_t delta = 0; delta < 5; ++delta) {
      for (const std::uint32_t v : {(1u << bit) + delta, (1u << bit) - delta}) {
        inputs.push_back(v);
        inputs.push_back(0u - v);
      }
    }
  }
  for (const float f : {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 0.49999997f, 8388607.5f, 2147483520.0f,
                        2147483648.0f, -2147483648.0f, -2147483904.0f}) {
    inputs.push_back(tpu::oracle::as_bits(f));
  }
  tpu::oracle::OperandRng rng(tpu::test::test_seed());
  for (int i = 0; i < 1000000; ++i) inputs.push_back(rng.fp32());
  for (const std::uint32_t x : inputs) {
    const auto as_int = static_cast<std::int32_t>(x);
    ASSERT_EQ(tpu::num::int32_to_fp32(as_int), tpu::oracle::as_bits(static_cast<float>(as_int)))
        << as_int;
    ASSERT_EQ(tpu::num::fp32_to_int32(x), to_int(x)) << std::hex << x;
  }
  EXPECT_EQ(tpu::num::fp32_to_int32(tpu::oracle::as_bits(2.5f)), 2);
  EXPECT_EQ(tpu::num::fp32_to_int32(tpu::oracle::as_bits(-3.5f)), -4);
  EXPECT_EQ(tpu::num::int32_to_fp32(16777217), tpu::oracle::as_bits(16777216.0f));
}

TEST(MulDirected, ZeroProductsAreSignedZeros) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0x0000, 0x3F80), 0x00000000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x8000, 0x3F80), 0x80000000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x0000, 0xBF80), 0x80000000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x8000, 0x8000), 0x00000000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7F7F, 0x8000), 0x80000000u));
}

TEST(MulDirected, InfinityTimesNonzeroIsSignedInfinity) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7F80, 0x3F80), 0x7F800000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7F80, 0xBF80), 0xFF800000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0xFF80, 0xFF80), 0x7F800000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x0080, 0xFF80), 0xFF800000u));
}

TEST(MulDirected, InfinityTimesZeroIsNaN) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7F80, 0x0000), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x8000, 0xFF80), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7F80, 0x0001), 0x7FC00000u));  // subnormal is zero
}

TEST(MulDirected, NaNInputGivesCanonicalNaN) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0xFFC1, 0x3F80), 0x7FC00000u));  // sign and payload
  EXPECT_TRUE(SameBits(num::mul_bf16(0x3F80, 0x7F81), 0x7FC00000u));  // signalling
  EXPECT_TRUE(SameBits(num::mul_bf16(0xFFFF, 0x0000), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7FC0, 0xFF80), 0x7FC00000u));
}

TEST(MulDirected, SubnormalInputIsZero) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0x0001, 0x3F80), 0x00000000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x807F, 0x3F80), 0x80000000u));
  // 2^-127 * 2^127 would be 1.0 if the subnormal were honoured.
  EXPECT_TRUE(SameBits(num::mul_bf16(0x0040, 0x7F00), 0x00000000u));
}

TEST(MulDirected, FiniteProductsAreExact) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0x3FC0, 0x3FC0), 0x40100000u));  // 1.5 * 1.5 = 2.25
  EXPECT_TRUE(SameBits(num::mul_bf16(0xC040, 0x4100), 0xC1C00000u));  // -3 * 8 = -24
  // (255/128)^2 = 65025/16384: all 16 product bits survive.
  EXPECT_TRUE(SameBits(num::mul_bf16(0x3FFF, 0x3FFF), 0x407E0100u));
}

TEST(MulDirected, OverflowBecomesInfinity) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0x5F80, 0x5F80), 0x7F800000u));  // 2^64 * 2^64 = 2^128
  EXPECT_TRUE(SameBits(num::mul_bf16(0xDF80, 0x5F80), 0xFF800000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7F7F, 0x4000), 0x7F800000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x5F7F, 0x5F7F), 0x7F7E0100u));  // just below 2^128
  EXPECT_TRUE(SameBits(num::mul_bf16(0x7F7F, 0x3F80), 0x7F7F0000u));
}

TEST(MulDirected, ProductBelowMinNormalIsFlushed) {
  EXPECT_TRUE(SameBits(num::mul_bf16(0x1C80, 0x1C80), 0x00000000u));  // 2^-70 * 2^-70
  EXPECT_TRUE(SameBits(num::mul_bf16(0x9C80, 0x1C80), 0x80000000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x2000, 0x1FFF), 0x00000000u));  // (2 - 2^-7) * 2^-127
  EXPECT_TRUE(SameBits(num::mul_bf16(0x1FFF, 0x9FFF), 0x80000000u));
  EXPECT_TRUE(SameBits(num::mul_bf16(0x2000, 0x2000), 0x00800000u));  // exactly 2^-126: kept
}

// ---------------------------------------------------------------------------------------------
// N-ADD, directed

TEST(AddDirected, SignedZeroSums) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x80000000u, 0x80000000u), 0x80000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x00000000u, 0x80000000u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x80000000u, 0x00000000u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x00000000u, 0x00000000u), 0x00000000u));
}

TEST(AddDirected, ExactCancellationIsPositiveZero) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800000u, 0xBF800000u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xBF800000u, 0x3F800000u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xC0490FDBu, 0x40490FDBu), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x80800000u, 0x00800000u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xFF7FFFFFu, 0x7F7FFFFFu), 0x00000000u));
}

TEST(AddDirected, ZeroPlusValueIsValue) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x80000000u, 0xBF800000u), 0xBF800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x00000000u, 0x00800000u), 0x00800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800000u, 0x80000000u), 0x3F800000u));
}

TEST(AddDirected, InfinitySums) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F800000u, 0x3F800000u), 0x7F800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F7FFFFFu, 0xFF800000u), 0xFF800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F800000u, 0x7F800000u), 0x7F800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xFF800000u, 0xFF800000u), 0xFF800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x80000000u, 0xFF800000u), 0xFF800000u));
}

TEST(AddDirected, InfinityMinusInfinityIsNaN) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F800000u, 0xFF800000u), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xFF800000u, 0x7F800000u), 0x7FC00000u));
}

TEST(AddDirected, NaNInputGivesCanonicalNaN) {
  EXPECT_TRUE(SameBits(num::add_fp32(0xFFC00001u, 0x3F800000u), 0x7FC00000u));  // sign, payload
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800000u, 0x7F800001u), 0x7FC00000u));  // signalling
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F800001u, 0xFF800000u), 0x7FC00000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xFFFFFFFFu, 0x7FC12345u), 0x7FC00000u));
}

TEST(AddDirected, SubnormalInputIsZero) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x00000001u, 0x00000001u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x80000001u, 0x80000001u), 0x80000000u));  // (-0) + (-0)
  EXPECT_TRUE(SameBits(num::add_fp32(0x80000001u, 0x00000001u), 0x00000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x007FFFFFu, 0x00800000u), 0x00800000u));  // IEEE: 0x00FFFFFF
  EXPECT_TRUE(SameBits(num::add_fp32(0x80400000u, 0x3F800000u), 0x3F800000u));
}

TEST(AddDirected, OverflowBecomesInfinity) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F7FFFFFu, 0x7F7FFFFFu), 0x7F800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xFF7FFFFFu, 0xFF7FFFFFu), 0xFF800000u));
  // max finite + half an ulp (2^103) is a tie with an odd significand: rounds up to 2^128.
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F7FFFFFu, 0x73000000u), 0x7F800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x7F7FFFFFu, 0x72FFFFFFu), 0x7F7FFFFFu));
}

TEST(AddDirected, ResultBelowMinNormalIsFlushed) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x00C00000u, 0x80800000u), 0x00000000u));  // 1.5 - 1 (x2^-126)
  EXPECT_TRUE(SameBits(num::add_fp32(0x80C00000u, 0x00800000u), 0x80000000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x00800001u, 0x80800000u), 0x00000000u));  // 2^-149
  EXPECT_TRUE(SameBits(num::add_fp32(0x01000000u, 0x80800000u), 0x00800000u));  // 2^-126: kept
}

TEST(AddDirected, TiesRoundToEven) {
  // 1 + 2^-24 is halfway between 1 (even) and 1 + 2^-23: rounds down.
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800000u, 0x33800000u), 0x3F800000u));
  // (1 + 2^-23) + 2^-24 is halfway between odd 1 + 2^-23 and even 1 + 2^-22: rounds up.
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800001u, 0x33800000u), 0x3F800002u));
  EXPECT_TRUE(SameBits(num::add_fp32(0xBF800001u, 0xB3800000u), 0xBF800002u));
  // Subtractive ties: (1 + 2^-23) - 2^-24 goes down to 1, (1 + 2^-22) - 2^-24 stays at 1 + 2^-22.
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800001u, 0xB3800000u), 0x3F800000u));
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800002u, 0xB3800000u), 0x3F800002u));
  // Just above the tie (sticky bit set): rounds up.
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800000u, 0x33800001u), 0x3F800001u));
}

TEST(AddDirected, RoundingCarriesIntoExponent) {
  EXPECT_TRUE(
      SameBits(num::add_fp32(0x3FFFFFFFu, 0x33800000u), 0x40000000u));  // (2 - 2^-23) + 2^-24
  EXPECT_TRUE(SameBits(num::add_fp32(0xBFFFFFFFu, 0xB3800000u), 0xC0000000u));
}

TEST(AddDirected, CancellationNormalises) {
  EXPECT_TRUE(SameBits(num::add_fp32(0x3F800001u, 0xBF800000u), 0x34000000u));  // 2^-23
  EXPECT_TRUE(SameBits(num::add_fp32(0x01000000u, 0x00C00000u), 0x01600000u));
}

// ---------------------------------------------------------------------------------------------
// N-OUT, directed

TEST(Fp32ToBf16Directed, NaNBecomesCanonical) {
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0xFFC00001u), 0x7FC0));
  // Truncating 0x7F800001 would give the infinity encoding.
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x7F800001u), 0x7FC0));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x7FFFFFFFu), 0x7FC0));
}

TEST(Fp32ToBf16Directed, InfinityAndZeroKeepSign) {
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x7F800000u), 0x7F80));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0xFF800000u), 0xFF80));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x00000000u), 0x0000));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x80000000u), 0x8000));
}

TEST(Fp32ToBf16Directed, SubnormalBecomesSignedZero) {
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x007FFFFFu), 0x0000));  // RNE would give 0x0080
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x807FFFFFu), 0x8000));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x00000001u), 0x0000));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x80008000u), 0x8000));
}

TEST(Fp32ToBf16Directed, TiesRoundToEven) {
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x3F808000u), 0x3F80));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x3F818000u), 0x3F82));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0xBF818000u), 0xBF82));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x3F808001u), 0x3F81));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x3F807FFFu), 0x3F80));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x00808000u), 0x0080));  // min normal, tie
}

TEST(Fp32ToBf16Directed, RoundingCarriesIntoExponent) {
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x3FFF8000u), 0x4000));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x3FFFFFFFu), 0x4000));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x00FFFFFFu), 0x0100));
}

TEST(Fp32ToBf16Directed, RoundingReachesInfinity) {
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x7F7F8000u), 0x7F80));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0xFF7F8000u), 0xFF80));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x7F7FFFFFu), 0x7F80));
  EXPECT_TRUE(SameBits(num::fp32_to_bf16(0x7F7F7FFFu), 0x7F7F));
}

// ---------------------------------------------------------------------------------------------
// N-MAC: unfused. The fused value is computed with std::fma on the host and written out too.

fp32_t fused_mac(fp32_t s, bf16_t a, bf16_t w) {
  return oracle::as_bits(std::fma(oracle::widen(a), oracle::widen(w), oracle::as_float(s)));
}

TEST(MacUnfused, OverflowedProductIsNotBroughtBackBySum) {
  // 2^64 * 2^64 = 2^128 overflows to infinity before -2^127 is added; fused gives 2^127.
  const fp32_t s = 0xFF000000u;
  EXPECT_TRUE(SameBits(num::mac(s, 0x5F80, 0x5F80), 0x7F800000u));
  EXPECT_TRUE(SameBits(fused_mac(s, 0x5F80, 0x5F80), 0x7F000000u));
  EXPECT_NE(num::mac(s, 0x5F80, 0x5F80), fused_mac(s, 0x5F80, 0x5F80));
}

TEST(MacUnfused, NegativeOverflowedProductAgainstMaxFinite) {
  // -2^128 is -infinity before max finite (2^128 - 2^104) is added; fused gives -2^104.
  const fp32_t s = 0x7F7FFFFFu;
  EXPECT_TRUE(SameBits(num::mac(s, 0xDF80, 0x5F80), 0xFF800000u));
  EXPECT_TRUE(SameBits(fused_mac(s, 0xDF80, 0x5F80), 0xF3800000u));
  EXPECT_NE(num::mac(s, 0xDF80, 0x5F80), fused_mac(s, 0xDF80, 0x5F80));
}

TEST(MacUnfused, FlushedProductIsLostEvenWhenSumIsNormal) {
  // 2^-63 * 1.5 * 2^-64 = 1.5 * 2^-127 is flushed; fused 2^-125 + 1.5 * 2^-127 = 1.375 * 2^-125.
  const fp32_t s = 0x01000000u;
  EXPECT_TRUE(SameBits(num::mac(s, 0x2000, 0x1FC0), 0x01000000u));
  EXPECT_TRUE(SameBits(fused_mac(s, 0x2000, 0x1FC0), 0x01300000u));
  EXPECT_NE(num::mac(s, 0x2000, 0x1FC0), fused_mac(s, 0x2000, 0x1FC0));
}

TEST(MacUnfused, MatchesOracleOnRandomTriples) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kMediumSampleCount; ++n) {
    const fp32_t s = rng.fp32();
    const bf16_t a = rng.bf16();
    const bf16_t w = rng.bf16();
    log.check(num::mac(s, a, w), oracle::add_fp32(s, oracle::mul_bf16(a, w)),
              [&] { return "s=" + hex(s) + " a=" + hex(a) + " w=" + hex(w); });
  }
  EXPECT_EQ(log.count(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Reference vs host-FPU oracle

TEST(OperandSets, StructuredSetsHaveDocumentedSizes) {
  const std::vector<bf16_t> bf16_operands = oracle::structured_bf16_operands();
  EXPECT_EQ(bf16_operands.size(), 10496u);  // 2 signs x 41 exponents x 128 fractions
  EXPECT_TRUE(std::is_sorted(bf16_operands.begin(), bf16_operands.end()));
  const std::vector<fp32_t> fp32_operands = oracle::structured_fp32_operands();
  EXPECT_EQ(fp32_operands.size(), 288u);  // 2 signs x 12 exponents x 12 fractions
  EXPECT_TRUE(std::is_sorted(fp32_operands.begin(), fp32_operands.end()));
}

TEST(RefVsOracle, AddStructuredAllPairs) {
  const std::vector<fp32_t> operands = oracle::structured_fp32_operands();
  MismatchLog log;
  for (fp32_t x : operands) {
    for (fp32_t y : operands) {
      log.check(num::add_fp32(x, y), oracle::add_fp32(x, y),
                [&] { return hex(x) + " + " + hex(y); });
    }
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsOracle, Fp32ToBf16Structured) {
  MismatchLog log;
  for (fp32_t x : oracle::structured_fp32_operands()) {
    log.check(num::fp32_to_bf16(x), oracle::fp32_to_bf16(x), [&] { return hex(x); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsOracleLarge, MulStructuredAllPairs) {
  const std::vector<bf16_t> operands = oracle::structured_bf16_operands();
  MismatchLog log;
  for (bf16_t a : operands) {
    for (bf16_t b : operands) {
      log.check(num::mul_bf16(a, b), oracle::mul_bf16(a, b),
                [&] { return hex(a) + " * " + hex(b); });
    }
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsOracleLarge, MulRandomPairs) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kLargeSampleCount; ++n) {
    const bf16_t a = rng.bf16();
    const bf16_t b = rng.bf16();
    log.check(num::mul_bf16(a, b), oracle::mul_bf16(a, b), [&] { return hex(a) + " * " + hex(b); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsOracleLarge, AddRandomPairs) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kLargeSampleCount; ++n) {
    const auto [x, y] = rng.fp32_pair();
    log.check(num::add_fp32(x, y), oracle::add_fp32(x, y), [&] { return hex(x) + " + " + hex(y); });
  }
  EXPECT_EQ(log.count(), 0u);
}

// fp32 pairs for N-VEC's mul: random bits, and pairs whose product lands near 2^-126 (the
// rounding that may reach the smallest normal) or 2^128.
TEST(RefVsOracleLarge, Fp32MulRandomPairs) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kLargeSampleCount; ++n) {
    const fp32_t x = rng.fp32();
    fp32_t y = rng.fp32();
    const int ex = static_cast<int>((x >> 23) & 0xFF);
    if (n % 2 == 1 && ex > 0 && ex < 255) {
      // Exponent sums of 126 + (-2 .. 1) or 254 + (-1 .. 2): products at 2^-126 or 2^128.
      const int target = (n % 4 == 1 ? 125 : 254) + static_cast<int>(y % 4);
      const int ey = std::clamp(target - ex + 1, 1, 254);
      y = (y & 0x807FFFFFu) | (static_cast<fp32_t>(ey) << 23);
    }
    log.check(num::mul_fp32(x, y), oracle::mul_fp32(x, y), [&] { return hex(x) + " * " + hex(y); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsOracleLarge, Fp32MulStructuredAllPairs) {
  const std::vector<fp32_t> operands = oracle::structured_fp32_operands();
  MismatchLog log;
  for (fp32_t x : operands) {
    for (fp32_t y : operands) {
      log.check(num::mul_fp32(x, y), oracle::mul_fp32(x, y),
                [&] { return hex(x) + " * " + hex(y); });
    }
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(Fp32MulDirected, RoundsUpToTheSmallestNormal) {
  // (1 - 2^-24) * 2^-126 = 2^-126 - 2^-150 is a tie on IEEE's subnormal grid (2^-149), which
  // rounds to even: 2^-126, kept. 2^-126 - 2^-149 is on the grid and below 2^-126: flushed.
  EXPECT_EQ(num::mul_fp32(0x3F7FFFFFu, 0x00800000u), 0x00800000u);
  EXPECT_EQ(oracle::mul_fp32(0x3F7FFFFFu, 0x00800000u), 0x00800000u);
  EXPECT_EQ(num::mul_fp32(0x3F7FFFFEu, 0x00800000u), 0u);
  EXPECT_EQ(num::mul_fp32(0x3F800000u, 0x007FFFFFu), 0u);  // a subnormal operand is zero (N-IN)
  EXPECT_EQ(num::mul_fp32(0x7F7FFFFFu, 0x40000000u), 0x7F800000u);  // overflow
  EXPECT_EQ(num::mul_fp32(0xFF800000u, 0x00000000u), num::kCanonicalNanFp32);
  EXPECT_EQ(num::mul_fp32(0x80000000u, 0x3F800000u), 0x80000000u);
}

TEST(RefVsOracleLarge, Fp32MaxMinRandomPairs) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kLargeSampleCount; ++n) {
    const auto [x, y] = n % 2 ? rng.fp32_pair() : std::pair{rng.fp32(), rng.fp32()};
    log.check(num::max_fp32(x, y), oracle::max_min_fp32(x, y, true),
              [&] { return "max " + hex(x) + " " + hex(y); });
    log.check(num::min_fp32(x, y), oracle::max_min_fp32(x, y, false),
              [&] { return "min " + hex(x) + " " + hex(y); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(Fp32MaxMinDirected, SignedZerosAndNaN) {
  EXPECT_EQ(num::max_fp32(0x80000000u, 0x00000000u), 0x00000000u);
  EXPECT_EQ(num::max_fp32(0x00000000u, 0x80000000u), 0x00000000u);
  EXPECT_EQ(num::min_fp32(0x00000000u, 0x80000000u), 0x80000000u);
  EXPECT_EQ(num::min_fp32(0x80000001u, 0x00000000u), 0x80000000u);  // a subnormal is its zero
  EXPECT_EQ(num::max_fp32(0xFFC12345u, 0x3F800000u), num::kCanonicalNanFp32);
  EXPECT_EQ(num::min_fp32(0x3F800000u, 0x7F800001u), num::kCanonicalNanFp32);
  EXPECT_EQ(num::max_fp32(0xFF800000u, 0xC0000000u), 0xC0000000u);
}

TEST(RefVsOracleLarge, Fp32ToBf16Random) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kLargeSampleCount; ++n) {
    const fp32_t x = rng.fp32();
    log.check(num::fp32_to_bf16(x), oracle::fp32_to_bf16(x), [&] { return hex(x); });
  }
  EXPECT_EQ(log.count(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Reference vs MPFR

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

// The N-MUL / N-ADD range rules applied to an MPFR value whose significand fits in 24 bits.
fp32_t apply_fp32_range_rules(mpfr_ptr value) {
  const fp32_t sign = mpfr_signbit(value) ? 0x80000000u : 0u;
  if (mpfr_zero_p(value)) return sign;
  // MPFR writes value = m * 2^exp with 0.5 <= |m| < 1.
  const mpfr_exp_t exp = mpfr_get_exp(value);
  if (exp > 128) return sign | 0x7F800000u;  // |value| >= 2^128
  if (exp <= -126) return sign;              // |value| < 2^-126
  return oracle::as_bits(mpfr_get_flt(value, MPFR_RNDN));
}

TEST(RefVsMpfr, AddMatchesMpfrRoundedTo24Bits) {
  oracle::OperandRng rng(test_seed());
  Mpfr x_value(24);
  Mpfr y_value(24);
  Mpfr sum(24);  // unbounded exponent range: overflow and flush are applied afterwards
  MismatchLog log;
  for (std::uint64_t n = 0; n < kMpfrAddSampleCount; ++n) {
    const auto [x, y] = rng.fp32_pair_finite_normal();
    mpfr_set_flt(x_value.get(), oracle::as_float(x), MPFR_RNDN);
    mpfr_set_flt(y_value.get(), oracle::as_float(y), MPFR_RNDN);
    mpfr_add(sum.get(), x_value.get(), y_value.get(), MPFR_RNDN);
    log.check(num::add_fp32(x, y), apply_fp32_range_rules(sum.get()),
              [&] { return hex(x) + " + " + hex(y); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsMpfr, MulIsExactAt200Bits) {
  oracle::OperandRng rng(test_seed());
  Mpfr a_value(200);
  Mpfr b_value(200);
  Mpfr product(200);
  MismatchLog log;
  std::uint64_t wider_than_16_bits = 0;
  for (std::uint64_t n = 0; n < kMediumSampleCount; ++n) {
    const bf16_t a = rng.bf16_finite_normal();
    const bf16_t b = rng.bf16_finite_normal();
    mpfr_set_flt(a_value.get(), oracle::widen(a), MPFR_RNDN);
    mpfr_set_flt(b_value.get(), oracle::widen(b), MPFR_RNDN);
    mpfr_mul(product.get(), a_value.get(), b_value.get(), MPFR_RNDN);  // exact at 200 bits
    if (mpfr_min_prec(product.get()) > 16) ++wider_than_16_bits;
    log.check(num::mul_bf16(a, b), apply_fp32_range_rules(product.get()),
              [&] { return hex(a) + " * " + hex(b); });
  }
  EXPECT_EQ(wider_than_16_bits, 0u) << "a bf16 product needed more than 16 significant bits";
  EXPECT_EQ(log.count(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Reference N-OUT vs Eigen's bfloat16 conversion, normal finite values only

TEST(RefVsEigen, Fp32ToBf16StridedSweepOfNormals) {
  MismatchLog log;
  std::uint64_t compared = 0;
  // A prime stride visits every exponent with varied low bits: ~1.05e6 patterns.
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099) {
    const auto x = static_cast<fp32_t>(bits);
    if (!is_normal_fp32(x)) continue;
    ++compared;
    log.check(num::fp32_to_bf16(x), eigen_round_bf16(x), [&] { return hex(x); });
  }
  EXPECT_GT(compared, 1'000'000u);
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsEigen, Fp32ToBf16RandomNormals) {
  oracle::OperandRng rng(test_seed());
  MismatchLog log;
  for (std::uint64_t n = 0; n < kMediumSampleCount; ++n) {
    const fp32_t x = rng.fp32_finite_normal();
    log.check(num::fp32_to_bf16(x), eigen_round_bf16(x), [&] { return hex(x); });
  }
  EXPECT_EQ(log.count(), 0u);
}

TEST(RefVsEigen, Fp32ToBf16AllTiesAndTheirNeighbours) {
  // Every tie of N-OUT has low half 0x8000; the neighbours 0x7FFF and 0x8001 pin the boundary.
  MismatchLog log;
  for (std::uint32_t high = 0; high <= 0xFFFF; ++high) {
    for (std::uint32_t low : {0x7FFFu, 0x8000u, 0x8001u}) {
      const fp32_t x = (high << 16) | low;
      if (!is_normal_fp32(x)) continue;
      log.check(num::fp32_to_bf16(x), eigen_round_bf16(x), [&] { return hex(x); });
    }
  }
  EXPECT_EQ(log.count(), 0u);
}

}  // namespace
}  // namespace tpu
