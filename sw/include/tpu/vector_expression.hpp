// A straight-line expression on the vector unit: steps of ELTWISE's operations (N-VEC) and
// ACTIVATE's functions (N-ACT), each value in fp32, over tensors of `rows` rows of `length`
// values and constant rows of `length` values that apply to every row. A recurrent cell's gates
// (LSTM, GRU: sums, sigmoids, tanhs, the state's products) run as one such program a step.
//
// Layout: each row in ceil(length / D) accumulator rows (lanes past `length` hold +0). The
// constant rows are read once into the bottom of each accumulator bank; the rows pass through
// the rest in blocks, alternately in each bank: a block's tensors are read, the steps run, each
// result in a slot of accumulator rows that a value no longer needed frees (in place where the
// step's operand was its last use), and the outputs are written back.
//
// A tensor or an output may lie elsewhere in the core's memory than the plan's own regions (a
// view: another program's result or operand, left there): rows `pitch` bytes apart, each row's
// values one after the other. An output in a view may be written as bf16 rows (through the
// activation unit's rounding, N-OUT, and the unified buffer): the next product's A.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu {

// An operand of a step: a tensor of the expression, one of its constant rows, or an earlier
// step's result.
struct ExpressionValue {
  enum class Kind : std::uint8_t { Tensor, Row, Step };
  Kind kind = Kind::Tensor;
  std::uint32_t index = 0;
  bool operator==(const ExpressionValue& other) const {
    return kind == other.kind && index == other.index;
  }
};

// Rows of fp32 (or bf16) values from `addr`, `pitch` bytes apart; a row of `length` values
// whole, its tiles 4 D (2 D) bytes apart. The length must be a whole number of tiles.
struct ExpressionView {
  std::uint32_t addr = 0, pitch = 0;
};

// op(a, b) where there is an operation (at most one of them a constant row), else func(a) (a a
// tensor or a step's result).
struct ExpressionStep {
  std::optional<isa::VectorOp> op;
  isa::Func func = isa::Func::None;
  num::bf16_t alpha = 0;  // leaky's slope
  ExpressionValue a, b;
};

// A step's result, or a tensor as it is, written back: into the plan's own region (read back by
// the host), or into a view (left in the core's memory), as fp32 or as bf16 rows.
struct ExpressionOutput {
  ExpressionValue value;  // a step or a tensor
  std::optional<ExpressionView> view;
  bool bf16 = false;  // only in a view
};

struct ExpressionSpec {
  std::uint64_t rows = 0;
  std::uint32_t length = 0;
  std::uint32_t tensors = 0;        // operands of rows x length values
  std::uint32_t constant_rows = 0;  // operands of length values
  std::vector<ExpressionStep> steps;
  std::vector<ExpressionOutput> outputs;
  // Per tensor, where it lies when not in the plan's region (empty: every tensor there).
  std::vector<std::optional<ExpressionView>> tensor_views;

  bool in_view(std::uint32_t tensor) const {
    return tensor < tensor_views.size() && tensor_views[tensor].has_value();
  }
};

// An expression and its operands' values, built step by step.
class ExpressionBuilder {
 public:
  ExpressionBuilder(std::uint64_t rows, std::uint32_t length);
  ExpressionValue tensor(std::vector<num::fp32_t> values);  // rows x length values
  // A tensor in a view of the core's memory; `values` (rows x length, or none) only for
  // reference_expression.
  ExpressionValue tensor_in(ExpressionView view, std::vector<num::fp32_t> values = {});
  ExpressionValue row(std::vector<num::fp32_t> values);  // length values
  ExpressionValue op(isa::VectorOp op, ExpressionValue a, ExpressionValue b);
  ExpressionValue func(isa::Func func, ExpressionValue a, num::bf16_t alpha = 0);
  void output(ExpressionValue value);  // a step's result or a tensor, read back
  // A step's result or a tensor written into a view of the core's memory, fp32 or bf16 rows (a
  // tensor's copy: from one view into another).
  void output_to(ExpressionValue value, ExpressionView view, bool bf16 = false);

  const ExpressionSpec& spec() const { return spec_; }
  const std::vector<std::vector<num::fp32_t>>& tensors() const { return tensors_; }
  const std::vector<std::vector<num::fp32_t>>& constants() const { return constants_; }

 private:
  ExpressionValue step(const ExpressionStep& step);

  ExpressionSpec spec_;
  std::vector<std::vector<num::fp32_t>> tensors_, constants_;
};

struct ExpressionPlan {
  ExpressionSpec spec;
  HardwareConfig config;
  std::uint32_t tiles = 0;       // accumulator rows a row takes, ceil(length / D)
  std::uint32_t row_stride = 0;  // host bytes between accumulator rows (4 D, aligned to the bus)
  std::uint32_t slots = 0;       // values a block keeps at once
  std::uint32_t block_rows = 0;  // rows a pass through the accumulators takes
  // Host memory: the constant rows, each tensor's rows and each output's (those not in views;
  // a view's address for the others), the program.
  std::uint32_t constants_addr = 0, prog_addr = 0;
  std::vector<std::uint32_t> tensor_addr, output_addr;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  // Bytes the host writes (the constants, the tensors, the program) and reads (the outputs):
  // none of the views'.
  std::uint64_t written_bytes() const;
  std::uint64_t read_bytes() const;
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a core without a vector unit, a function the core lacks (or a slope for one other
// than leaky), an operand that is not an earlier value, an operation of two constant rows, a
// function of one, no output (or a constant row as one), an empty expression, more values at once
// than the accumulators hold, tensors beyond the core's 32-bit host addresses, a view whose address
// or pitch is not a multiple of the transfer's beat or whose rows are not whole tiles, or a bf16
// output not in a view.
ExpressionPlan plan_expression(const HardwareConfig& config, const ExpressionSpec& spec,
                               std::uint64_t base = 0);

// tensors: spec.tensors of rows x length fp32 values (those in views are not written and may
// be empty); constants: spec.constant_rows of length. Grows the memory to the plan's size.
void write_expression_inputs(const ExpressionPlan& plan, HostMemory& memory,
                             const std::vector<std::vector<num::fp32_t>>& tensors,
                             const std::vector<std::vector<num::fp32_t>>& constants);
// The outputs not in views, in spec.outputs' order.
std::vector<std::vector<num::fp32_t>> read_expression_outputs(const ExpressionPlan& plan,
                                                              const HostMemory& memory);

struct ExpressionRun {
  RunResult result;
  std::vector<std::vector<num::fp32_t>> out;  // empty unless the core reached HALT without an error
};
ExpressionRun execute_expression(const ExpressionPlan& plan, Backend& backend,
                                 const std::vector<std::vector<num::fp32_t>>& tensors,
                                 const std::vector<std::vector<num::fp32_t>>& constants);

// The bits the plan's program gives, every output's (those in views too: fp32, or bf16 rounded
// by N-OUT and widened), computed on the host value by value from the contract's operations
// (N-VEC, N-ACT); tensors in views given their values.
std::vector<std::vector<num::fp32_t>> reference_expression(
    const ExpressionSpec& spec, const std::vector<std::vector<num::fp32_t>>& tensors,
    const std::vector<std::vector<num::fp32_t>>& constants);

}  // namespace tpu
