// Operators that move elements without arithmetic: shapes, reshapes, transposes, slices,
// gathers, concatenation and splits, padding, broadcasting, and the constants exporters build
// shapes from. Transposes, slices, gathers, concatenations, broadcasts and tiles move their values
// on the core's DMA where they move whole array rows (move_on_core), on the host otherwise.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ops.hpp"

namespace tpu::graph::ops {
namespace {

constexpr std::size_t kFill = std::numeric_limits<std::size_t>::max();

// The offsets of x's elements that make the output: element e of `out` is x's element
// offset_of(index of e), kFill for none.
template <typename OffsetOf>
std::vector<std::size_t> offsets_of(const Shape& out, OffsetOf offset_of) {
  std::vector<std::size_t> at(element_count(out));
  Shape index(out.size(), 0);
  for (std::size_t& offset : at) {
    offset = offset_of(index);
    for (std::size_t d = out.size(); d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return at;
}

// y[e] = x[at[e]] for every element e of the output shape, kFill giving `fill`.
Tensor gathered(const Tensor& x, const Shape& out, const std::vector<std::size_t>& at,
                double fill = 0) {
  Tensor y(x.dtype, out);
  for (std::size_t e = 0; e < at.size(); ++e) {
    if (y.is_float()) {
      y.floats[e] = at[e] == kFill ? static_cast<float>(fill) : x.floats[at[e]];
    } else {
      y.ints[e] = at[e] == kFill ? static_cast<std::int64_t>(fill) : x.ints[at[e]];
    }
  }
  return y;
}

template <typename OffsetOf>
Tensor remap(const Tensor& x, const Shape& out, OffsetOf offset_of, double fill = 0) {
  return gathered(x, out, offsets_of(out, offset_of), fill);
}

// remap's values moved on the core's DMA where move_on_core takes them, else on the host.
Tensor moved_from(Context& context, const Tensor& x, const Shape& out,
                  const std::vector<std::size_t>& at) {
  if (std::optional<Tensor> y = move_on_core(context, x, out, at)) return std::move(*y);
  return gathered(x, out, at);
}

template <typename OffsetOf>
Tensor moved(Context& context, const Tensor& x, const Shape& out, OffsetOf offset_of) {
  return moved_from(context, x, out, offsets_of(out, offset_of));
}

Tensor reshaped(Tensor x, Shape shape) {
  x.shape = std::move(shape);
  return x;
}

std::vector<Tensor> shape_of(Context& context, const Node& node, const Inputs& in) {
  const Shape& shape = need(node, in, 0).shape;
  const auto rank = static_cast<std::int64_t>(shape.size());
  std::int64_t start = context.opset >= 15 ? node.int_attr("start", 0) : 0;
  std::int64_t end = context.opset >= 15 ? node.int_attr("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank);
  end = std::clamp<std::int64_t>(end, start, rank);
  std::vector<std::int64_t> dims(shape.begin() + start, shape.begin() + end);
  return outputs(Tensor::of_ints({static_cast<std::int64_t>(dims.size())}, dims));
}

std::vector<Tensor> size_of(Context&, const Node& node, const Inputs& in) {
  return outputs(Tensor::of_ints({}, {static_cast<std::int64_t>(need(node, in, 0).size())}));
}

std::vector<Tensor> reshape(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  if (context.opset < 5) fail(node, "Reshape before opset 5 not supported");
  const std::vector<std::int64_t> wanted = int_values(need(node, in, 1));
  const bool allow_zero = context.opset >= 14 && node.int_attr("allowzero", 0) != 0;
  Shape shape;
  std::optional<std::size_t> inferred;
  std::size_t known = 1;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    std::int64_t d = wanted[i];
    if (d == 0 && !allow_zero) {
      if (i >= x.rank())
        fail(node, "a 0 (copy) at dimension " + std::to_string(i) + " of a rank-" +
                       std::to_string(x.rank()) + " input");
      d = x.shape[i];
    }
    if (d == -1) {
      if (inferred) fail(node, "more than one -1 in the shape");
      inferred = i;
    } else if (d < 0) {
      fail(node, "a negative dimension " + std::to_string(d));
    } else {
      known *= static_cast<std::size_t>(d);
    }
    shape.push_back(d);
  }
  if (inferred) {
    if (known == 0 || x.size() % known != 0) {
      fail(node, "cannot reshape " + shape_text(x.shape) + " with a -1 and " +
                     std::to_string(known) + " known elements");
    }
    shape[*inferred] = static_cast<std::int64_t>(x.size() / known);
  }
  if (element_count(shape) != x.size()) {
    fail(node, "cannot reshape " + shape_text(x.shape) + " to " + shape_text(shape));
  }
  return outputs(reshaped(x, shape));
}

std::vector<Tensor> flatten(Context&, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const std::int64_t axis = node.int_attr("axis", 1);
  const auto rank = static_cast<std::int64_t>(x.rank());
  if (axis < -rank || axis > rank) fail(node, "axis " + std::to_string(axis) + " out of range");
  const auto split = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  const Shape front(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(split));
  const auto outer = static_cast<std::int64_t>(element_count(front));
  return outputs(reshaped(x, {outer, outer ? static_cast<std::int64_t>(x.size()) / outer : 0}));
}

// Squeeze and Unsqueeze: axes as an attribute before opset 13, an input from it on.
std::vector<std::int64_t> axes_of(Context& context, const Node& node, const Inputs& in,
                                  int input_from) {
  if (context.opset >= input_from) {
    return in.size() > 1 && in[1] ? int_values(*in[1]) : std::vector<std::int64_t>{};
  }
  return node.ints_attr("axes");
}

std::vector<Tensor> squeeze(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const std::vector<std::int64_t> axes = axes_of(context, node, in, 13);
  std::vector<bool> drop(x.rank(), axes.empty());
  if (axes.empty()) {
    for (std::size_t d = 0; d < x.rank(); ++d) drop[d] = x.shape[d] == 1;
  }
  for (const std::int64_t a : axes) {
    const std::size_t d = axis_index(node, a, x.rank());
    if (x.shape[d] != 1) fail(node, "dimension " + std::to_string(a) + " is not 1");
    drop[d] = true;
  }
  Shape shape;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    if (!drop[d]) shape.push_back(x.shape[d]);
  }
  return outputs(reshaped(x, shape));
}

std::vector<Tensor> unsqueeze(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const std::vector<std::int64_t> axes = axes_of(context, node, in, 13);
  const std::size_t rank = x.rank() + axes.size();
  std::vector<bool> added(rank, false);
  for (const std::int64_t a : axes) {
    const std::size_t d = axis_index(node, a, rank);
    if (added[d]) fail(node, "axis " + std::to_string(a) + " given twice");
    added[d] = true;
  }
  Shape shape;
  std::size_t next = 0;
  for (std::size_t d = 0; d < rank; ++d) shape.push_back(added[d] ? 1 : x.shape[next++]);
  return outputs(reshaped(x, shape));
}

std::vector<Tensor> transpose(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  if (context.operand_transpose && x.rank() >= 2) {
    // K^T for a MatMul on a core that reads B transposed (transposed_operands): the values
    // stay as they lie, K's rows, which READ_WEIGHTS T takes as the columns of B's tiles.
    Shape out = x.shape;
    std::swap(out[out.size() - 2], out[out.size() - 1]);
    Tensor y = reshaped(x, out);
    y.stored_transposed = true;
    if (context.run) context.run->work = NodeWork::View;
    return outputs(std::move(y));
  }
  std::vector<std::int64_t> perm = node.ints_attr("perm");
  if (perm.empty()) {
    for (std::size_t d = x.rank(); d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
  }
  std::vector<std::size_t> axes;
  std::vector<bool> seen(x.rank(), false);
  if (perm.size() != x.rank()) fail(node, "perm of " + std::to_string(perm.size()) + " axes");
  for (const std::int64_t p : perm) {
    const std::size_t d = axis_index(node, p, x.rank());
    if (seen[d]) fail(node, "perm names an axis twice");
    seen[d] = true;
    axes.push_back(d);
  }
  Shape out;
  for (const std::size_t d : axes) out.push_back(x.shape[d]);
  // A permutation that keeps the order of the axes of more than one element leaves every value
  // where it is (NHWC to NCHW of one channel): a view, its values as they are.
  std::vector<std::size_t> moving;
  for (const std::size_t d : axes) {
    if (x.shape[d] != 1) moving.push_back(d);
  }
  if (std::is_sorted(moving.begin(), moving.end())) {
    if (context.run) context.run->work = NodeWork::View;
    return outputs(reshaped(x, out));
  }
  const std::vector<std::size_t> strides = strides_of(x.shape);
  std::vector<std::ptrdiff_t> out_strides;
  for (const std::size_t d : axes) out_strides.push_back(static_cast<std::ptrdiff_t>(strides[d]));
  return outputs(moved_from(context, x, out, strided_offsets(out, 0, out_strides)));
}

std::vector<Tensor> concat(Context& context, const Node& node, const Inputs& in) {
  const Tensor& first = need(node, in, 0);
  const std::size_t axis = axis_index(node, node.int_attr("axis", 0), first.rank());
  Shape out = first.shape;
  out[axis] = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = need(node, in, i);
    Shape a = t.shape, b = first.shape;
    if (t.rank() != first.rank() || t.dtype != first.dtype) {
      fail(node, "inputs of different ranks or types");
    }
    a[axis] = b[axis] = 0;
    if (a != b)
      fail(node, "shapes " + shape_text(first.shape) + " and " + shape_text(t.shape) +
                     " differ outside axis " + std::to_string(axis));
    out[axis] += t.shape[axis];
  }
  const std::size_t outer = element_count(Shape(out.begin(), out.begin() + axis));
  const std::size_t inner = element_count(Shape(out.begin() + axis + 1, out.end()));
  const auto total = static_cast<std::size_t>(out[axis]);
  // On the core's DMA where the inputs' blocks are whole array rows (move_on_core): its source the
  // inputs one after another, each output block read from its input's.
  if (context.accelerator && (first.is_float() || first.dtype == DType::Int32 ||
                              first.dtype == DType::Int8 || first.dtype == DType::UInt8)) {
    Tensor sources(first.dtype, {static_cast<std::int64_t>(element_count(out))});
    std::vector<std::size_t> at(sources.size());
    std::size_t base = 0, offset = 0;  // of the input in the sources, along the axis
    for (std::size_t i = 0; i < in.size(); ++i) {
      const Tensor& t = *in[i];
      if (t.is_float()) {
        std::copy(t.floats.begin(), t.floats.end(), sources.floats.begin() + base);
      } else {
        std::copy(t.ints.begin(), t.ints.end(), sources.ints.begin() + base);
      }
      const std::size_t run = static_cast<std::size_t>(t.shape[axis]) * inner;
      for (std::size_t o = 0; o < outer; ++o) {
        for (std::size_t j = 0; j < run; ++j)
          at[(o * total + offset) * inner + j] = base + o * run + j;
      }
      base += t.size();
      offset += static_cast<std::size_t>(t.shape[axis]);
    }
    if (std::optional<Tensor> y = move_on_core(context, sources, out, at)) {
      return outputs(std::move(*y));
    }
  }
  Tensor y(first.dtype, out);
  std::size_t offset = 0;  // along the axis
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = *in[i];
    const std::size_t run = static_cast<std::size_t>(t.shape[axis]) * inner;
    for (std::size_t o = 0; o < outer; ++o) {
      const std::size_t from = o * run, to = (o * total + offset) * inner;
      if (y.is_float()) {
        std::copy_n(t.floats.begin() + from, run, y.floats.begin() + to);
      } else {
        std::copy_n(t.ints.begin() + from, run, y.ints.begin() + to);
      }
    }
    offset += static_cast<std::size_t>(t.shape[axis]);
  }
  return outputs(std::move(y));
}

// A slice along one axis: [start, start + count) of it.
Tensor slice_axis(const Tensor& x, std::size_t axis, std::int64_t start, std::int64_t count) {
  Shape out = x.shape;
  out[axis] = count;
  const std::vector<std::size_t> strides = strides_of(x.shape);
  return remap(x, out, [&](const Shape& index) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < index.size(); ++d) {
      at += static_cast<std::size_t>(index[d] + (d == axis ? start : 0)) * strides[d];
    }
    return at;
  });
}

std::vector<Tensor> split(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const std::size_t axis = axis_index(node, node.int_attr("axis", 0), x.rank());
  std::vector<std::int64_t> sizes =
      context.opset >= 13
          ? (in.size() > 1 && in[1] ? int_values(*in[1]) : std::vector<std::int64_t>{})
          : node.ints_attr("split");
  const std::int64_t length = x.shape[axis];
  if (sizes.empty()) {
    const auto parts =
        static_cast<std::int64_t>(context.opset >= 18 && node.has("num_outputs")
                                      ? node.int_attr("num_outputs", 1)
                                      : static_cast<std::int64_t>(node.outputs.size()));
    if (parts <= 0) fail(node, "no outputs");
    const std::int64_t each = (length + parts - 1) / parts;  // the last part may be smaller
    for (std::int64_t p = 0, left = length; p < parts; ++p, left -= each) {
      sizes.push_back(std::max<std::int64_t>(0, std::min(each, left)));
    }
  }
  std::int64_t sum = 0;
  for (const std::int64_t s : sizes) {
    if (s < 0) fail(node, "a negative split");
    sum += s;
  }
  if (sum != length || sizes.size() != node.outputs.size()) {
    fail(node, "splits summing to " + std::to_string(sum) + " in " + std::to_string(sizes.size()) +
                   " parts for a dimension of " + std::to_string(length) + " and " +
                   std::to_string(node.outputs.size()) + " outputs");
  }
  std::vector<Tensor> parts;
  std::int64_t start = 0;
  for (const std::int64_t s : sizes) {
    parts.push_back(slice_axis(x, axis, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> slice(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (context.opset < 10) {
    starts = node.ints_attr("starts");
    ends = node.ints_attr("ends");
    axes = node.ints_attr("axes");
  } else {
    starts = int_values(need(node, in, 1));
    ends = int_values(need(node, in, 2));
    if (in.size() > 3 && in[3]) axes = int_values(*in[3]);
    if (in.size() > 4 && in[4]) steps = int_values(*in[4]);
  }
  if (axes.empty()) {
    for (std::size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<std::int64_t>(d));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    fail(node, "starts, ends, axes and steps of different lengths");
  }
  std::vector<std::int64_t> first(x.rank(), 0), step(x.rank(), 1);
  Shape out = x.shape;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t d = axis_index(node, axes[i], x.rank());
    const std::int64_t dim = x.shape[d];
    const std::int64_t s = steps[i];
    if (s == 0) fail(node, "a step of 0");
    std::int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    std::int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (s > 0) {
      b = std::clamp<std::int64_t>(b, 0, dim);
      e = std::clamp<std::int64_t>(e, 0, dim);
      out[d] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<std::int64_t>(b, 0, dim - 1);
      e = std::clamp<std::int64_t>(e, -1, dim - 1);
      out[d] = b > e ? (b - e - s - 1) / -s : 0;
    }
    first[d] = b;
    step[d] = s;
  }
  const std::vector<std::size_t> strides = strides_of(x.shape);
  std::ptrdiff_t base = 0;
  std::vector<std::ptrdiff_t> out_strides;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    const auto stride = static_cast<std::ptrdiff_t>(strides[d]);
    base += static_cast<std::ptrdiff_t>(first[d]) * stride;
    out_strides.push_back(static_cast<std::ptrdiff_t>(step[d]) * stride);
  }
  return outputs(moved_from(context, x, out, strided_offsets(out, base, out_strides)));
}

std::vector<Tensor> gather(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const Tensor& indices = need(node, in, 1);
  if (indices.is_float()) fail(node, "float indices");
  const std::size_t axis = axis_index(node, node.int_attr("axis", 0), x.rank());
  const std::int64_t dim = x.shape[axis];
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  std::vector<std::int64_t> index_values = indices.ints;
  for (std::int64_t& i : index_values) {
    if (i < -dim || i >= dim) {
      fail(node, "index " + std::to_string(i) + " outside a dimension of " + std::to_string(dim));
    }
    if (i < 0) i += dim;
  }
  const std::vector<std::size_t> strides = strides_of(x.shape);
  const std::vector<std::size_t> index_strides = strides_of(indices.shape);
  const std::size_t k = indices.rank();
  return outputs(moved(context, x, out, [&](const Shape& index) {
    std::size_t at = 0, which = 0;
    for (std::size_t d = 0; d < axis; ++d) at += static_cast<std::size_t>(index[d]) * strides[d];
    for (std::size_t j = 0; j < k; ++j) {
      which += static_cast<std::size_t>(index[axis + j]) * index_strides[j];
    }
    at += static_cast<std::size_t>(index_values[which]) * strides[axis];
    for (std::size_t d = axis + 1; d < x.rank(); ++d) {
      at += static_cast<std::size_t>(index[d + k - 1]) * strides[d];
    }
    return at;
  }));
}

std::vector<Tensor> expand(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const Shape out = broadcast_shapes(node, {x.shape, int_values(need(node, in, 1))});
  return outputs(moved_from(context, x, out, broadcast_offsets(x.shape, out)));
}

std::vector<Tensor> tile(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  const std::vector<std::int64_t> repeats = int_values(need(node, in, 1));
  if (repeats.size() != x.rank()) fail(node, "repeats of another rank");
  Shape out = x.shape;
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) fail(node, "a negative repeat");
    out[d] *= repeats[d];
  }
  const std::vector<std::size_t> strides = strides_of(x.shape);
  return outputs(moved(context, x, out, [&](const Shape& index) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < index.size(); ++d) {
      at += static_cast<std::size_t>(index[d] % x.shape[d]) * strides[d];
    }
    return at;
  }));
}

std::vector<Tensor> constant_of_shape(Context&, const Node& node, const Inputs& in) {
  const std::vector<std::int64_t> dims = int_values(need(node, in, 0));
  for (const std::int64_t d : dims) {
    if (d < 0) fail(node, "a negative dimension");
  }
  Tensor value = Tensor::of_floats({1}, {0.0f});
  if (node.has("value")) value = *node.attributes.at("value").tensor;
  if (value.size() != 1) fail(node, "a value of more than one element");
  Tensor y(value.dtype, dims);
  if (y.is_float()) {
    std::fill(y.floats.begin(), y.floats.end(), value.floats[0]);
  } else {
    std::fill(y.ints.begin(), y.ints.end(), value.ints[0]);
  }
  return outputs(std::move(y));
}

std::vector<Tensor> range(Context&, const Node& node, const Inputs& in) {
  const Tensor& start = need(node, in, 0);
  const Tensor& limit = need(node, in, 1);
  const Tensor& delta = need(node, in, 2);
  const double s = start.value(0), l = limit.value(0), d = delta.value(0);
  if (d == 0) fail(node, "a delta of 0");
  const auto count = static_cast<std::int64_t>(std::max(0.0, std::ceil((l - s) / d)));
  Tensor y(start.dtype, {count});
  for (std::int64_t i = 0; i < count; ++i) {
    if (y.is_float()) {
      y.floats[static_cast<std::size_t>(i)] =
          start.floats[0] + static_cast<float>(i) * delta.floats[0];
    } else {
      y.ints[static_cast<std::size_t>(i)] = start.ints[0] + i * delta.ints[0];
    }
  }
  return outputs(std::move(y));
}

// Pad: pads as an attribute before opset 11, inputs (pads, value, axes) from it on; constant,
// reflect and edge modes.
std::vector<Tensor> pad(Context& context, const Node& node, const Inputs& in) {
  const Tensor& x = need(node, in, 0);
  std::vector<std::int64_t> pads;
  double value = 0;
  std::vector<std::int64_t> axes;
  if (context.opset < 11) {
    pads = node.ints_attr("pads");
    value = node.float_attr("value", 0.0f);
  } else {
    pads = int_values(need(node, in, 1));
    if (in.size() > 2 && in[2] && in[2]->size()) value = in[2]->value(0);
    if (in.size() > 3 && in[3]) axes = int_values(*in[3]);
  }
  if (axes.empty()) {
    for (std::size_t d = 0; d < x.rank(); ++d) axes.push_back(static_cast<std::int64_t>(d));
  }
  if (pads.size() != 2 * axes.size()) fail(node, "pads of the wrong length");
  std::vector<std::int64_t> before(x.rank(), 0), after(x.rank(), 0);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::size_t d = axis_index(node, axes[i], x.rank());
    before[d] = pads[i];
    after[d] = pads[i + axes.size()];
  }
  const std::string mode = node.string_attr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    fail(node, "mode \"" + mode + "\" not supported (constant, reflect, edge)");
  }
  Shape out = x.shape;
  for (std::size_t d = 0; d < out.size(); ++d) {
    out[d] += before[d] + after[d];
    if (out[d] < 0) fail(node, "pads remove more than the dimension");
    if (mode != "constant" && (before[d] > 0 || after[d] > 0) &&
        (x.shape[d] == 0 ||
         (mode == "reflect" && (before[d] >= x.shape[d] || after[d] >= x.shape[d])))) {
      fail(node, "pads too large for mode " + mode);
    }
  }
  const std::vector<std::size_t> strides = strides_of(x.shape);
  return outputs(remap(
      x, out,
      [&](const Shape& index) {
        std::size_t at = 0;
        for (std::size_t d = 0; d < index.size(); ++d) {
          std::int64_t i = index[d] - before[d];
          const std::int64_t n = x.shape[d];
          if (i < 0 || i >= n) {
            if (mode == "constant") return kFill;
            if (mode == "edge")
              i = i < 0 ? 0 : n - 1;
            else
              i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect
          }
          at += static_cast<std::size_t>(i) * strides[d];
        }
        return at;
      },
      value));
}

}  // namespace

void add_shape(Table& t) {
  t["Shape"] = shape_of;
  t["Size"] = size_of;
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Gather"] = gather;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range;
  t["Pad"] = pad;
}

}  // namespace tpu::graph::ops
