// QuantizeLinear and DequantizeLinear on the vector unit (tpu/quant_convert.hpp): the plans'
// programs on the functional model give Q-QUANT's and Q-DEQUANT's bits (reference_quantize and
// reference_dequantize), and those are the host's: the product by the scale's reciprocal rounded
// by the FPU, then to the nearest integer with ties to even, within one step of onnxruntime's
// quotient and equal to it on all but a few; (q - z) times the scale exactly as onnxruntime
// computes it. Values at the clamps, NaN and infinities, sizes that leave a row part empty and
// take many blocks, no read of a row the program did not write; the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/small_core.hpp"
#include "common/test_seed.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/model.hpp"
#include "tpu/quant_convert.hpp"

namespace tpu {
namespace {

float as_float(num::fp32_t bits) {
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

num::fp32_t as_bits(float f) {
  num::fp32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

QuantConvertPlan plan(const HardwareConfig& config, QuantDirection direction, std::uint64_t size,
                      float scale, int zero_point) {
  QuantConvertSpec spec;
  spec.direction = direction;
  spec.size = size;
  spec.scale = scale;
  spec.zero_point = zero_point;
  return plan_quant_convert(config, spec, 0x40);
}

// Values across the int8 range of `scale` and beyond it, ties of the scaled value included, and
// the special ones.
std::vector<num::fp32_t> values_for(float scale, std::size_t count, std::uint64_t seed) {
  oracle::OperandRng rng(seed);
  std::vector<num::fp32_t> x;
  for (int k = -300; k <= 300; ++k) x.push_back(as_bits((static_cast<float>(k) / 2) * scale));
  const float inf = std::numeric_limits<float>::infinity();
  for (const float special : {0.0f, -0.0f, inf, -inf, std::nanf(""), 1e30f, -1e30f, 3e9f, -3e9f}) {
    x.push_back(as_bits(special));
  }
  while (x.size() < count) {
    const double real = (static_cast<double>(rng.uniform(0, 1u << 20)) / (1u << 20) - 0.5) * 400;
    x.push_back(as_bits(static_cast<float>(real) * scale));
  }
  return x;
}

TEST(QuantConvert, QuantisingGivesTheReferenceBitsAndTheHosts) {
  const HardwareConfig config = test::small_int8_vector_core();
  std::uint64_t differ_from_quotient = 0, total = 0;
  for (const auto& [scale, zero_point] : {std::pair{0.05f, 3}, std::pair{0.1f / 3, -128},
                                          std::pair{1.0f / 64, 127}, std::pair{7.3f, 0}}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale << ", zero point " << zero_point);
    const std::vector<num::fp32_t> x = values_for(scale, 5000, test::test_seed());
    const QuantConvertPlan p = plan(config, QuantDirection::Quantize, x.size(), scale, zero_point);
    EXPECT_GT((p.rows + p.block_rows - 1) / p.block_rows, 4u);
    FunctionalModel model(config, 0);
    const QuantizeRun run = execute_quantize(p, model, x);
    ASSERT_TRUE(run.result.ok()) << model.error_detail();
    EXPECT_EQ(model.uninitialized_reads(), 0u);
    const std::vector<std::int8_t> want = reference_quantize(p.spec, x);
    EXPECT_EQ(run.out, want);
    const float reciprocal = 1.0f / scale;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float v = as_float(x[i]);
      // The host: the product by the FPU, nearbyint, saturated; NaN at the zero point.
      const auto host = [&](float scaled) {
        if (std::isnan(scaled)) return zero_point;
        const double q = std::nearbyint(static_cast<double>(scaled)) + zero_point;
        return static_cast<int>(std::clamp(q, -128.0, 127.0));
      };
      ASSERT_EQ(want[i], host(v * reciprocal)) << "x = " << v;
      const int quotient = host(v / scale);  // onnxruntime's
      ASSERT_LE(std::abs(want[i] - quotient), 1) << "x = " << v;
      differ_from_quotient += want[i] != quotient;
      ++total;
    }
  }
  EXPECT_LT(differ_from_quotient * 100, total) << differ_from_quotient << " of " << total;
}

TEST(QuantConvert, DequantisingGivesTheReferenceBitsAndTheHosts) {
  const HardwareConfig config = test::small_int8_vector_core();
  std::vector<std::int8_t> q;
  for (int repeat = 0; repeat < 7; ++repeat) {
    for (int v = -128; v <= 127; ++v) q.push_back(static_cast<std::int8_t>(v));
  }
  q.resize(q.size() - 3);  // a last row part empty
  for (const auto& [scale, zero_point] : {std::pair{0.05f, 3}, std::pair{1e-3f, -128},
                                          std::pair{3.0e20f, 127}, std::pair{0.1f / 3, 0}}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale << ", zero point " << zero_point);
    const QuantConvertPlan p =
        plan(config, QuantDirection::Dequantize, q.size(), scale, zero_point);
    FunctionalModel model(config, 0);
    const DequantizeRun run = execute_dequantize(p, model, q);
    ASSERT_TRUE(run.result.ok()) << model.error_detail();
    EXPECT_EQ(model.uninitialized_reads(), 0u);
    const std::vector<num::fp32_t> want = reference_dequantize(p.spec, q);
    EXPECT_EQ(run.out, want);
    for (std::size_t i = 0; i < q.size(); ++i) {
      ASSERT_EQ(want[i], as_bits(static_cast<float>(q[i] - zero_point) * scale)) << int{q[i]};
    }
  }
}

TEST(QuantConvert, RefusesWhatItCannotDo) {
  const HardwareConfig config = test::small_int8_vector_core();
  EXPECT_THROW(plan(config, QuantDirection::Quantize, 0, 0.1f, 0), std::invalid_argument);
  EXPECT_THROW(plan(config, QuantDirection::Quantize, 16, 0.0f, 0), std::invalid_argument);
  EXPECT_THROW(plan(config, QuantDirection::Quantize, 16, 1e-39f, 0), std::invalid_argument);
  EXPECT_THROW(plan(config, QuantDirection::Dequantize, 16, 0.1f, 128), std::invalid_argument);
  HardwareConfig float_only = config;
  float_only.int8 = false;
  try {
    plan(float_only, QuantDirection::Quantize, 16, 0.1f, 0);
    ADD_FAILURE() << "a core without the int8 datapath";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs a vector unit and the int8 datapath"),
              std::string::npos);
  }
  const QuantConvertPlan quantise = plan(config, QuantDirection::Quantize, 16, 0.1f, 0);
  FunctionalModel model(config, 0);
  EXPECT_THROW(execute_dequantize(quantise, model, std::vector<std::int8_t>(16)),
               std::invalid_argument);
  EXPECT_THROW(execute_quantize(quantise, model, std::vector<num::fp32_t>(15)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu
