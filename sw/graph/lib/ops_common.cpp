#include <stdexcept>

#include "ops.hpp"
#include "tpu/nn.hpp"

namespace tpu::graph::ops {

void fail(const Node& node, const std::string& what) {
  throw std::runtime_error(node.label() + ": " + what);
}

const Tensor& need(const Node& node, const Inputs& inputs, std::size_t i) {
  if (i >= inputs.size() || !inputs[i]) fail(node, "input " + std::to_string(i) + " missing");
  return *inputs[i];
}

const Tensor& need_float(const Node& node, const Inputs& inputs, std::size_t i) {
  const Tensor& t = need(node, inputs, i);
  if (!t.is_float()) {
    fail(node, "input " + std::to_string(i) + " is " + dtype_name(t.dtype) + ", not float32");
  }
  return t;
}

std::size_t axis_index(const Node& node, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    fail(node,
         "axis " + std::to_string(axis) + " outside a rank-" + std::to_string(rank) + " tensor");
  }
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::vector<std::int64_t> int_values(const Tensor& t) {
  std::vector<std::int64_t> values(t.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = t.int_value(i);
  return values;
}

std::vector<std::size_t> strides_of(const Shape& shape) {
  std::vector<std::size_t> strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * static_cast<std::size_t>(shape[d]);
  }
  return strides;
}

Shape broadcast_shapes(const Node& node, const std::vector<Shape>& shapes) {
  std::size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::int64_t& o = out[rank - s.size() + i];
      const std::int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o != 1) {
        std::string text;
        for (const Shape& t : shapes) text += (text.empty() ? "" : " and ") + shape_text(t);
        fail(node, "shapes " + text + " do not broadcast");
      }
      o = d;
    }
  }
  return out;
}

std::vector<std::size_t> broadcast_offsets(const Shape& in, const Shape& out) {
  const std::size_t rank = out.size();
  std::vector<std::size_t> in_strides(rank, 0);
  const std::vector<std::size_t> own = strides_of(in);
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != 1) in_strides[rank - in.size() + i] = own[i];
  }
  std::vector<std::size_t> offsets(element_count(out));
  std::vector<std::int64_t> index(rank, 0);
  std::size_t offset = 0;
  for (std::size_t e = 0; e < offsets.size(); ++e) {
    offsets[e] = offset;
    for (std::size_t d = rank; d-- > 0;) {  // the next index, last dimension fastest
      offset += in_strides[d];
      if (++index[d] < out[d]) break;
      offset -= in_strides[d] * static_cast<std::size_t>(out[d]);
      index[d] = 0;
    }
  }
  return offsets;
}

std::vector<float> product(Context& context, const float* a, const float* b, std::size_t m,
                           std::size_t k, std::size_t n) {
  if (context.run) {
    context.run->macs += static_cast<std::uint64_t>(m) * k * n;
    context.run->on_accelerator = context.accelerator != nullptr;
    if (context.accelerator) ++context.run->products;
  }
  if (m == 0 || n == 0) return {};
  if (k == 0) return std::vector<float>(m * n, 0.0f);
  RunResult result;
  std::vector<float> c =
      nn::matmul(context.accelerator, a, b, static_cast<std::uint32_t>(m),
                 static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(n), &result);
  if (context.run && result.counters) {
    const Counters& counters = *result.counters;
    context.run->counted = true;
    context.run->cycles += counters[regs::kCntCyclesIndex];
    context.run->useful_macs += counters[regs::kCntUsefulMacsIndex];
    context.run->bus_bytes +=
        (counters[regs::kCntDmaReadBeatsIndex] + counters[regs::kCntDmaWriteBeatsIndex]) *
        context.accelerator->config().bus_bytes;
  }
  return c;
}

const Table& table() {
  static const Table all = [] {
    Table t;
    add_elementwise(t);
    add_shape(t);
    add_nn(t);
    add_recurrent(t);
    return t;
  }();
  return all;
}

}  // namespace tpu::graph::ops
