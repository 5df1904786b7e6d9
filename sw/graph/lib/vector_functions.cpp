#include "vector_functions.hpp"

namespace tpu::graph::ops {

std::optional<Tensor> function_steps_on_core(Context& context, const VectorFunction& f,
                                             const Tensor& x) {
  if (!context.accelerator || x.floats.empty() || !f.on_core()) return std::nullopt;
  const std::size_t d = context.accelerator->config().dim;
  const std::size_t rows = (x.floats.size() + d - 1) / d;
  std::vector<float> values = x.floats;
  values.resize(rows * d, 0.0f);
  RowExpression e(rows, d);
  e.builder().output(f.steps(e, e.tensor(values)));
  const std::optional<std::vector<std::vector<float>>> y = expression_on_core(context, e.builder());
  if (!y) return std::nullopt;
  Tensor result = x;
  std::copy_n((*y)[0].begin(), result.floats.size(), result.floats.begin());
  return result;
}

}  // namespace tpu::graph::ops
