// Elementwise operators on a core with a vector unit: y = f(a op b), or y = f(a), each value in
// fp32 by the core's instructions (ELTWISE's N-VEC, then ACTIVATE's function in place, N-ACT of
// docs/numerics.md). A residual add and its relu, a gate's product, a scale by a scalar, a bias
// along the last axis: the graph's Add, Sub, Mul, Max and Min and its activation functions.
//
// Broadcasting: each operand either has the result's values, or `period` values that repeat
// along it (value n of the result takes the operand's value n mod period: a trailing block of
// the result's shape, NumPy's broadcasting of a shape that only has leading ones added, a scalar
// at period 1). At most one operand repeats.
//
// Layout: the result as rows of L values, each row in ceil(L / D) accumulator rows (lanes past
// L hold +0): L = D (the array's size) unless an operand repeats with a period that does not
// divide D, when L is the period. A repeating operand is read once into its own accumulator
// rows (D / period copies of it in each row where the period divides D) and every iteration of
// ELTWISE pairs with it at step 0; the result's rows pass through the accumulators in blocks,
// each read from the host, combined, its function applied in place and written back.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu {

struct ElementwiseSpec {
  std::optional<isa::VectorOp> op;  // none: y = f(a)
  // a's values are int32 (ELTWISE I32): with b's, N-VEC's wrapping integer operations; a
  // dequantisation (op Dequant) rounds them to fp32 and multiplies by b's fp32 scales. No
  // function.
  bool int32 = false;
  isa::Func func = isa::Func::None;
  num::bf16_t alpha = 0;       // leaky's slope (0 for the other functions)
  std::uint64_t size = 0;      // values of the result
  std::uint64_t a_period = 0;  // values of a: size, or a divisor of it that repeats
  std::uint64_t b_period = 0;  // of b likewise (0 without op)
};

struct ElementwisePlan {
  ElementwiseSpec spec;
  HardwareConfig config;
  std::uint32_t length = 0;      // L: the values of a row
  std::uint32_t tiles = 0;       // accumulator rows a row takes, ceil(L / D)
  std::uint64_t rows = 0;        // rows of the result, ceil(size / L)
  std::uint32_t block_rows = 0;  // rows a pass through the accumulators takes
  std::uint32_t row_stride = 0;  // host bytes between accumulator rows (4 D, aligned to the bus)
  // Host memory: the repeating operand's rows (none where no operand repeats), a's rows and b's
  // (those that do not repeat), the result's rows, the program.
  std::uint32_t period_addr = 0, a_addr = 0, b_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  // Bytes the host writes (the operands, the program) and reads (the result).
  std::uint64_t written_bytes() const;
  std::uint64_t read_bytes() const;
};

// Its host memory from `base` up (rounded up to 64 bytes): below it lies what the caller keeps
// there (a session's weights). Throws std::invalid_argument with one line for a core without a
// vector unit, a function the core lacks (or a slope for one other than leaky), an empty result,
// periods that do not divide it or two repeating operands, a period too long for the accumulators,
// or tensors beyond the core's 32-bit host addresses.
ElementwisePlan plan_elementwise(const HardwareConfig& config, const ElementwiseSpec& spec,
                                 std::uint64_t base = 0);

// a: a_period fp32 values, b: b_period (empty without op). Grows the memory to the plan's size.
void write_elementwise_inputs(const ElementwisePlan& plan, HostMemory& memory,
                              const std::vector<num::fp32_t>& a, const std::vector<num::fp32_t>& b);
std::vector<num::fp32_t> read_elementwise_output(const ElementwisePlan& plan,
                                                 const HostMemory& memory);

struct ElementwiseRun {
  RunResult result;
  std::vector<num::fp32_t> out;  // empty unless the core reached HALT without an error
};
ElementwiseRun execute_elementwise(const ElementwisePlan& plan, Backend& backend,
                                   const std::vector<num::fp32_t>& a,
                                   const std::vector<num::fp32_t>& b);

// The bits the plan's program gives, computed on the host value by value from the contract's
// operations (N-VEC, N-ACT).
std::vector<num::fp32_t> reference_elementwise(const ElementwiseSpec& spec,
                                               const std::vector<num::fp32_t>& a,
                                               const std::vector<num::fp32_t>& b);

}  // namespace tpu
