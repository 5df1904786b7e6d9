// Compiles a matrix product with its post-processing into a TPU program:
//
//   OUT = act(A x B + C + bias)        A: M x K, B: K x N, C: M x N, bias: N
//
// in the order the numerics contract fixes (N-ORDER, N-ACT): the accumulation
// starts from C (or +0), adds the products k = 0 .. K-1 in order, then the
// bias, then the function, then (bf16 output) N-OUT. The result is the same
// bits on every array size and every backend.
//
// Tiling and memory planning (docs/programming.md):
// - A is cut into blocks of at most MB rows. A block lies in one bank of the
//   unified buffer, K tile by K tile (row base + kt * MB + i); blocks alternate
//   banks, so the next block loads while the array works on this one. Nothing
//   hides the first block's load, so the first block is made small when the
//   array's work on it still covers the load of the second.
// - Each (M block, N tile) pair accumulates in MB accumulator rows, in the bank
//   of the pair's parity, so the activation unit and the store unit finish one
//   pair while the array computes the next. One MATMUL with FETCH runs the
//   whole K loop: its weights stream from host memory, tile by tile.
// - The program issues the next pair's MATMUL, and the next block's
//   READ_HOST, before the previous pair's ACTIVATE and WRITE_HOST, so neither
//   the array nor the load waits for them (issue is in order, and a
//   WRITE_HOST waits until its ACTIVATE has finished).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/gemm.hpp"

namespace tpu {

enum class OutType : std::uint8_t { Fp32, Bf16 };

struct GemmSpec {
  std::uint32_t m = 1, k = 1, n = 1;
  bool has_c = false;     // accumulate onto C (M x N fp32)
  bool has_bias = false;  // add bias (N fp32)
  isa::Func act = isa::Func::None;
  std::uint16_t alpha = 0;  // bf16 slope of Func::Leaky
  OutType out = OutType::Fp32;
};

// Where the operands lie in host memory, and the program that uses them.
struct GemmPlan {
  GemmSpec spec;
  HardwareConfig config;
  std::uint32_t k_pad = 0, n_pad = 0;  // K and N rounded up to the array size
  std::uint32_t block_rows = 0;        // MB, the largest block
  // First row of each M block, then M. The first block is smaller when that
  // lets the array start sooner and the next block still loads in time.
  std::vector<std::uint32_t> block_first;
  std::uint32_t prog_addr = 0, a_addr = 0, b_addr = 0, c_addr = 0, bias_addr = 0, out_addr = 0;
  std::size_t memory_bytes = 0;  // host memory the layout needs
  std::vector<isa::Instruction> program;

  std::uint32_t out_elem_bytes() const { return spec.out == OutType::Fp32 ? 4 : 2; }
};

// Throws std::invalid_argument with a one-line reason for a shape that is
// empty, or too large for this core's memories or the 32-bit host space.
GemmPlan plan_gemm(const HardwareConfig& config, const GemmSpec& spec);

// Lays out the operands (A, B bf16; C, bias fp32) as the plan says, padding
// with zeros; the shapes must match the plan's spec (std::invalid_argument).
void write_gemm_inputs(const GemmPlan& plan, HostMemory& memory, const num::MatrixBf16& a,
                       const num::MatrixBf16& b, const num::MatrixFp32* c,
                       const std::vector<num::fp32_t>* bias);
// The M x N result as fp32 bit patterns (bf16 results widened exactly).
num::MatrixFp32 read_gemm_output(const GemmPlan& plan, const HostMemory& memory);

// The figures of a run of a planned GEMM, and its M x N result when the core
// reached HALT without an error (empty otherwise).
struct GemmRun {
  RunResult result;
  num::MatrixFp32 out;
};

// Places the operands on `backend` as `plan` (made for backend.config()) says,
// growing its host memory when needed, runs the program and reads the result.
GemmRun execute_gemm(const GemmPlan& plan, Backend& backend, const num::MatrixBf16& a,
                     const num::MatrixBf16& b, const num::MatrixFp32* c = nullptr,
                     const std::vector<num::fp32_t>* bias = nullptr);

// Plans, places, runs and reads one GEMM on a backend (growing its host
// memory when needed). Throws std::runtime_error when the core stops with an
// error; `result` receives the run's figures.
num::MatrixFp32 run_gemm(Backend& backend, const GemmSpec& spec, const num::MatrixBf16& a,
                         const num::MatrixBf16& b, const num::MatrixFp32* c = nullptr,
                         const std::vector<num::fp32_t>* bias = nullptr,
                         RunResult* result = nullptr);

// The same computation by the reference model: num::gemm, then bias, the
// function and the output rounding, element by element (docs/numerics.md).
num::MatrixFp32 reference_gemm(const GemmSpec& spec, const num::MatrixBf16& a,
                               const num::MatrixBf16& b, const num::MatrixFp32* c,
                               const std::vector<num::fp32_t>* bias);

}  // namespace tpu
