// Quantisation: QuantizeLinear and DequantizeLinear on the host, as onnxruntime computes them,
// and the operands of the quantised products (ops_nn.cpp).
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "ops.hpp"

namespace tpu::graph::ops {
namespace {

bool quantised_type(DType type) {
  return type == DType::Int8 || type == DType::UInt8;
}

// A QuantizeLinear's or DequantizeLinear's scales and zero points: one for the tensor, or one
// per index along `axis` of x; element e of x takes entry (e / inner) % count.
struct Quantisation {
  std::vector<float> scales;
  std::vector<std::int64_t> zero_points;
  std::size_t inner = 1;
};

Quantisation quantisation(Context& context, const Node& node, const Inputs& in, const Tensor& x) {
  const Tensor& scale = need_float(node, in, 1);
  if (node.int_attr("block_size", 0) != 0) fail(node, "blocked quantisation (block_size)");
  Quantisation q;
  q.scales = scale.floats;
  if (in.size() > 2 && in[2]) {
    q.zero_points = int_values(*in[2]);
    if (in[2]->size() != scale.size()) fail(node, "zero points and scales of different counts");
  } else {
    q.zero_points.assign(q.scales.size(), 0);
  }
  if (scale.rank() > 1) fail(node, "a scale of rank " + std::to_string(scale.rank()));
  if (scale.rank() == 1 && scale.size() != 1) {
    if (context.opset < 13) fail(node, "per-axis scales before opset 13");
    const std::size_t axis = axis_index(node, node.int_attr("axis", 1), x.rank());
    if (static_cast<std::size_t>(x.shape[axis]) != scale.size()) {
      fail(node, std::to_string(scale.size()) + " scales along an axis of " +
                     std::to_string(x.shape[axis]));
    }
    for (std::size_t d = axis + 1; d < x.rank(); ++d)
      q.inner *= static_cast<std::size_t>(x.shape[d]);
  }
  return q;
}

// The conversion of a QuantizeLinear or DequantizeLinear between x and int8 (uint8 as int8, moved
// down by 128) that the vector unit can take: one scale and zero point for the tensor.
std::optional<QuantConvertSpec> core_conversion(const Quantisation& q, QuantDirection direction,
                                                DType type, std::size_t size) {
  if (q.scales.size() != 1 || size == 0) return std::nullopt;
  QuantConvertSpec spec;
  spec.direction = direction;
  spec.size = size;
  spec.scale = q.scales[0];
  spec.zero_point = static_cast<int>(q.zero_points[0]) - (type == DType::UInt8 ? 128 : 0);
  return spec;
}

// y = saturate(round_half_even(x / scale) + zero point), x / scale in fp32, as onnxruntime
// computes it (its MLAS kernels: divide, clamp, convert with rounding to nearest even); NaN
// quantises to the zero point. On a core's vector unit, with one scale for the tensor, Q-QUANT
// instead: x times the scale's reciprocal, which differs from the quotient by a step now and
// then (docs/numerics.md).
std::vector<Tensor> quantize_linear(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need_float(node, in, 0);
  const Quantisation q = quantisation(context, node, in, x);
  DType type = in.size() > 2 && in[2] ? in[2]->dtype : DType::UInt8;
  if (node.has("output_dtype") && !(in.size() > 2 && in[2])) {
    const std::int64_t output_dtype = node.int_attr("output_dtype", 0);
    // TensorProto's UINT8 and INT8.
    type = output_dtype == 3 ? DType::Int8 : output_dtype == 2 ? DType::UInt8 : DType::Bool;
  }
  if (!quantised_type(type)) fail(node, "quantisation to a type other than int8 and uint8");
  Tensor y(type, x.shape);
  const std::optional<QuantConvertSpec> spec =
      core_conversion(q, QuantDirection::Quantize, type, x.size());
  if (const auto on_core = spec ? quantize_on_core(context, *spec, x.floats) : std::nullopt) {
    const int shift = type == DType::UInt8 ? 128 : 0;
    for (std::size_t e = 0; e < x.size(); ++e) y.ints[e] = (*on_core)[e] + shift;
    return outputs(std::move(y));
  }
  const float lo = type == DType::Int8 ? -128.0f : 0.0f;
  const float hi = type == DType::Int8 ? 127.0f : 255.0f;
  for (std::size_t e = 0; e < x.size(); ++e) {
    const std::size_t c = (e / q.inner) % q.scales.size();
    const auto zero_point = static_cast<float>(q.zero_points[c]);
    const float v = x.floats[e] / q.scales[c];
    y.ints[e] =
        std::isnan(v)
            ? q.zero_points[c]
            : static_cast<std::int64_t>(
                  std::nearbyint(std::clamp(v, lo - zero_point, hi - zero_point)) + zero_point);
  }
  return outputs(std::move(y));
}

// The dequantisation of int32 values (a product's sums, as MatMulInteger and ConvInteger give
// them) on the vector unit: ELTWISE dequant with I32, each value rounded to fp32 and multiplied
// by its scale (Q-DEQUANT's bits), the scales one for the tensor or per axis as a repeating
// block (scale c repeated `inner` times, every scale once a block); zero points 0. Nothing where
// the core cannot.
std::optional<std::vector<float>> int32_dequantized_on_core(Context& context, const Quantisation& q,
                                                            const Tensor& x) {
  if (x.size() == 0 ||
      std::any_of(q.zero_points.begin(), q.zero_points.end(), [](std::int64_t z) { return z; })) {
    return std::nullopt;
  }
  ElementwiseSpec spec;
  spec.op = isa::VectorOp::Dequant;
  spec.int32 = true;
  spec.size = x.size();
  spec.a_period = spec.size;
  std::vector<num::fp32_t> scales(q.scales.size() * q.inner);
  for (std::size_t j = 0; j < scales.size(); ++j) {
    scales[j] = bits_of(&q.scales[j / q.inner], 1)[0];
  }
  spec.b_period = scales.size();
  std::vector<num::fp32_t> values(x.size());
  std::transform(x.ints.begin(), x.ints.end(), values.begin(),
                 [](std::int64_t v) { return static_cast<num::fp32_t>(v); });
  const std::optional<std::vector<num::fp32_t>> y =
      elementwise_bits_on_core(context, spec, values, scales);
  if (!y) return std::nullopt;
  return floats_of(*y);
}

// y = (x - zero point) * scale in fp32, as onnxruntime computes it; on a core's vector unit, int8
// or uint8 with one scale for the tensor, and int32 with zero points 0 (int32_dequantized_on_core),
// Q-DEQUANT, the same bits but for a product below 2^-126, which it flushes.
std::vector<Tensor> dequantize_linear(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  if (!quantised_type(x.dtype) && x.dtype != DType::Int32) {
    fail(node, std::string("dequantisation of ") + dtype_name(x.dtype));
  }
  const Quantisation q = quantisation(context, node, in, x);
  if (in.size() > 2 && in[2] && in[2]->dtype != x.dtype) {
    fail(node, "a zero point of another type than the input");
  }
  Tensor y(DType::Float32, x.shape);
  const std::optional<QuantConvertSpec> spec =
      quantised_type(x.dtype) ? core_conversion(q, QuantDirection::Dequantize, x.dtype, x.size())
                              : std::nullopt;
  if (spec) {
    const int shift = x.dtype == DType::UInt8 ? 128 : 0;
    std::vector<std::int8_t> values(x.size());
    for (std::size_t e = 0; e < x.size(); ++e) {
      values[e] = static_cast<std::int8_t>(x.ints[e] - shift);
    }
    if (auto on_core = dequantize_on_core(context, *spec, values)) {
      y.floats = std::move(*on_core);
      return outputs(std::move(y));
    }
  }
  if (x.dtype == DType::Int32) {
    if (std::optional<std::vector<float>> on_core = int32_dequantized_on_core(context, q, x)) {
      y.floats = std::move(*on_core);
      return outputs(std::move(y));
    }
  }
  for (std::size_t e = 0; e < x.size(); ++e) {
    const std::size_t c = (e / q.inner) % q.scales.size();
    y.floats[e] = static_cast<float>(x.ints[e] - q.zero_points[c]) * q.scales[c];
  }
  return outputs(std::move(y));
}

// QLinearAdd (onnxruntime's operator, which fuse_quantized_products makes of a DequantizeLinear
// pair, an Add, its Relu or Clip and a QuantizeLinear): TensorFlow Lite's int8 ADD (Q-ADD), with
// NumPy's broadcasting, on the vector unit where the core has one and the int8 datapath (the
// operands written at the result's size), else on the host; the same bits either way.
std::vector<Tensor> qlinear_add(Context& context, const Node& node, const Inputs& in) {
  const QuantOperand a = quant_operand(node, in, 0, 1, 2);
  const QuantOperand b = quant_operand(node, in, 3, 4, 5);
  if (a.scales.size() != 1 || b.scales.size() != 1) fail(node, "scales per channel");
  const QuantResult r = quant_result(node, in, 6, 7);
  QuantAddSpec spec;
  try {
    spec.params =
        num::quant_add_params(a.scales[0], a.zero_points[0], b.scales[0], b.zero_points[0], r.scale,
                              r.zero_point, quant_activation(node));
  } catch (const std::invalid_argument& e) {
    fail(node, e.what());
  }
  const Shape a_shape = need(node, in, 0).shape, b_shape = need(node, in, 3).shape;
  const Shape shape = broadcast_shapes(node, {a_shape, b_shape});
  const std::size_t size = element_count(shape);
  std::vector<std::int8_t> a_values = a.values, b_values = b.values;
  for (auto [values, from] : {std::pair{&a_values, &a_shape}, std::pair{&b_values, &b_shape}}) {
    if (*from == shape) continue;
    const std::vector<std::size_t> at = broadcast_offsets(*from, shape);
    std::vector<std::int8_t> whole(size);
    for (std::size_t e = 0; e < size; ++e) whole[e] = (*values)[at[e]];
    *values = std::move(whole);
  }
  spec.size = size;
  std::vector<std::int8_t> y;
  if (std::optional<std::vector<std::int8_t>> on_core =
          size == 0 ? std::nullopt : quant_add_on_core(context, spec, a_values, b_values)) {
    y = std::move(*on_core);
  } else {
    y.resize(size);
    for (std::size_t e = 0; e < size; ++e)
      y[e] = num::add_int8(a_values[e], b_values[e], spec.params);
  }
  return outputs(quant_tensor(r, shape, std::vector<std::int32_t>(y.begin(), y.end())));
}

}  // namespace

QuantOperand integer_operand(const Node& node, const Inputs& inputs, std::size_t value,
                             std::size_t zero_point) {
  const Tensor& q = need(node, inputs, value);
  if (!quantised_type(q.dtype)) {
    fail(node,
         "input " + std::to_string(value) + " is " + dtype_name(q.dtype) + ", not int8 or uint8");
  }
  QuantOperand operand;
  operand.type = q.dtype;
  const int shift = q.dtype == DType::UInt8 ? 128 : 0;
  operand.values.resize(q.size());
  for (std::size_t e = 0; e < q.size(); ++e) {
    operand.values[e] = static_cast<std::int8_t>(q.ints[e] - shift);
  }
  const Tensor* zp = zero_point < inputs.size() ? inputs[zero_point] : nullptr;
  if (zp && zp->dtype != q.dtype) fail(node, "a zero point of another type than its operand");
  if (zp && zp->rank() > 1) fail(node, "a zero point of rank " + std::to_string(zp->rank()));
  if (!zp) operand.zero_points.push_back(0);
  for (std::size_t i = 0; zp && i < zp->size(); ++i) {
    operand.zero_points.push_back(static_cast<int>(zp->ints[i]) - shift);
  }
  if (operand.zero_points.empty()) fail(node, "no zero point");
  return operand;
}

QuantOperand quant_operand(const Node& node, const Inputs& inputs, std::size_t value,
                           std::size_t scale, std::size_t zero_point) {
  QuantOperand operand = integer_operand(node, inputs, value, zero_point);
  const Tensor& s = need_float(node, inputs, scale);
  for (const float v : s.floats) {
    if (!(v > 0.0f) || !std::isfinite(v)) fail(node, "a scale that is not positive and finite");
    operand.scales.push_back(v);
  }
  if (operand.scales.empty()) fail(node, "no scale");
  if (operand.zero_points.size() != operand.scales.size()) {
    if (zero_point < inputs.size() && inputs[zero_point]) {
      fail(node, "zero points and scales of different counts");
    }
    operand.zero_points.assign(operand.scales.size(), 0);
  }
  return operand;
}

std::vector<num::QuantizedMultiplier> requant_multipliers(const Node& node, double x_scale,
                                                          const std::vector<double>& w_scales,
                                                          double y_scale, std::size_t n) {
  if (w_scales.size() != 1 && w_scales.size() != n) {
    fail(node, std::to_string(w_scales.size()) + " weight scales for " + std::to_string(n) +
                   " output channels");
  }
  std::vector<num::QuantizedMultiplier> multipliers;
  for (std::size_t j = 0; j < n; ++j) {
    const double real = x_scale * w_scales[w_scales.size() == 1 ? 0 : j] / y_scale;
    try {
      multipliers.push_back(num::quantize_multiplier(real));
    } catch (const std::invalid_argument&) {
      fail(node, "a requantisation multiplier of " + std::to_string(real) +
                     " (input scale x weight scale / output scale) is out of Q-SCALE's range");
    }
  }
  return multipliers;
}

num::QuantActivation quant_activation(const Node& node) {
  return node.epilogue == Epilogue::Relu    ? num::QuantActivation::kRelu
         : node.epilogue == Epilogue::Relu6 ? num::QuantActivation::kRelu6
                                            : num::QuantActivation::kNone;
}

QuantResult quant_result(const Node& node, const Inputs& in, std::size_t scale,
                         std::size_t zero_point) {
  const Tensor& s = need_float(node, in, scale);
  if (s.size() != 1) fail(node, "an output scale that is not one value");
  if (!(s.floats[0] > 0.0f) || !std::isfinite(s.floats[0])) {
    fail(node, "an output scale that is not positive and finite");
  }
  const Tensor* zp = zero_point < in.size() ? in[zero_point] : nullptr;
  QuantResult r;
  r.scale = s.floats[0];
  r.type = zp ? zp->dtype : DType::UInt8;
  if (!quantised_type(r.type)) {
    fail(node, std::string("an output of type ") + dtype_name(r.type) + ", not int8 or uint8");
  }
  if (zp && zp->size() != 1) fail(node, "an output zero point that is not one value");
  r.zero_point = (zp ? static_cast<int>(zp->ints[0]) : 0) - (r.type == DType::UInt8 ? 128 : 0);
  std::tie(r.lo, r.hi) = num::clamp_bounds(quant_activation(node), r.zero_point, r.scale);
  return r;
}

Tensor quant_tensor(const QuantResult& r, const Shape& shape, const std::vector<std::int32_t>& q) {
  Tensor y(r.type, shape);
  const int shift = r.type == DType::UInt8 ? 128 : 0;
  for (std::size_t e = 0; e < q.size(); ++e) y.ints[e] = q[e] + shift;
  return y;
}

void add_quant(Table& t) {
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
  t["QLinearAdd"] = qlinear_add;
}

}  // namespace tpu::graph::ops
