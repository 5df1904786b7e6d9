// Compiles a matrix product with its post-processing into a TPU program:
//
//   OUT = act(A x B + C + bias)        A: M x K, B: K x N, C: M x N, bias: N
//
// in the order the numerics contract fixes (N-ORDER, N-ACT): the accumulation
// starts from C (or +0), adds the products k = 0 .. K-1 in order, then the
// bias, then the function, then (bf16 output) N-OUT. The result is the same
// bits on every array size and every backend.
//
// In int8 mode (InType::Int8, docs/numerics.md's Q-rules) A and B are int8,
// one byte a value in host memory, and the sums int32 (Q-MAC):
//
//   OUT = A x B + C - za * colsum(B)                  (OutType::Int32)
//   OUT = Q-REQ(A x B + C + bias', M, s, zo, lo, hi)   (OutType::Int8)
//
// with the input zero point za folded in (Q-ZP): into the bias of Q-REQ
// (bias' = bias - za * colsum(B)), or, for int32 results, into the seed the
// sums start from: C - za * colsum(B), or that correction row alone, which one
// READ_HOST with host_stride 0 copies into every accumulator row of a block.
// Q-REQ runs in ACTIVATE REQ, with the three rows bias', M and s per N tile.
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
// - B lies in host memory tile by tile, N tile after N tile, each tile's D
//   rows of D values one after the other (rows past K are zeros), so that one
//   burst brings a tile (or as much of it as a burst holds) rather than one
//   burst a row.
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
#include "tpu/numerics/quant.hpp"

namespace tpu {

// The results: fp32 or bf16 of a bf16 product; int32 (Q-MAC) or int8 (Q-REQ) of an int8 one.
enum class OutType : std::uint8_t { Fp32, Bf16, Int32, Int8 };
enum class InType : std::uint8_t { Bf16, Int8 };
// "fp32", "bf16", "int32", "int8".
const char* type_name(OutType out);
const char* type_name(InType in);

struct GemmSpec {
  std::uint32_t m = 1, k = 1, n = 1;
  bool has_c = false;     // accumulate onto C (M x N fp32; int32 in int8 mode)
  bool has_bias = false;  // add bias (N fp32); not in int8 mode, whose bias is RequantColumns'
  isa::Func act = isa::Func::None;  // bf16 only: int8 mode clamps (clamp_lo, clamp_hi) instead
  std::uint16_t alpha = 0;  // bf16 slope of Func::Leaky
  OutType out = OutType::Fp32;
  // int8 mode: A and B int8 (a core with HardwareConfig::int8), out Int32 or Int8.
  InType in = InType::Bf16;
  int input_zero_point = 0;  // za in [-128, 127] (Q-ZP)
  // OutType::Int8 (Q-REQ): the output zero point zo and the clamp, all in [-128, 127]; relu is
  // clamp_lo = zo (num::clamp_bounds).
  int output_zero_point = 0;
  int clamp_lo = -128, clamp_hi = 127;
  // B is given as its transpose's rows (N x K, as a product leaves K of attention), which
  // READ_WEIGHTS T takes into the array as B's tiles: a core with a vector unit; not a
  // convolution's.
  bool b_transposed = false;

  bool int8() const { return in == InType::Int8; }
  bool operator==(const GemmSpec& other) const {
    return m == other.m && k == other.k && n == other.n && has_c == other.has_c &&
           has_bias == other.has_bias && act == other.act && alpha == other.alpha &&
           out == other.out && in == other.in && input_zero_point == other.input_zero_point &&
           output_zero_point == other.output_zero_point && clamp_lo == other.clamp_lo &&
           clamp_hi == other.clamp_hi && b_transposed == other.b_transposed;
  }
  bool operator!=(const GemmSpec& other) const { return !(*this == other); }
};

// Q-REQ's per-column parameters of an int8 GEMM with OutType::Int8: N values each, the bias
// before the zero-point fold, the multipliers M (0 or in [2^30, 2^31 - 1]) and the shifts s
// (in [-31, 30]).
struct RequantColumns {
  std::vector<std::int32_t> bias, multiplier, shift;
};

// A convolution of N images of C channels, H x W pixels, by a kernel_h x kernel_w kernel (its
// strides, dilations and zero padding as ONNX's Conv has them) as plan_conv runs it: without
// im2col (docs/programming.md, "Convolutions"). The host writes each image once, a row of C
// values (padded to whole tiles) per pixel, padded: each image row followed by
// max(pad_left, pad_right) zero pixels, which are the next row's left padding too (a row of
// the padded image runs on into the next), each image by max(pad_top, pad_bottom) zero rows,
// both rounded up to whole strides; and split into stride_h x stride_w phases: pixel (y, x) of
// the padded images is pixel (y / stride_h, x / stride_w) of phase (y % stride_h,
// x % stride_w). Every tap of the kernel then reads the rows of one phase from one offset on,
// and the core sums tap by tap, each tap over the channels: im2col's (ky, kx, c) order, so the
// same bits as the product of the im2col matrix (N-ORDER).
struct ConvGeometry {
  std::uint32_t batch = 0, channels = 0, height = 0, width = 0;
  std::uint32_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  std::uint32_t dilation_h = 1, dilation_w = 1;
  std::uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  bool empty() const { return batch == 0; }  // a plain GEMM's plan has none
  std::uint32_t taps() const { return kernel_h * kernel_w; }
  std::uint32_t phases() const { return stride_h * stride_w; }
  std::uint32_t out_h() const;
  std::uint32_t out_w() const;
  // A phase of one image: phase_h x phase_w pixels; of the batch: phase_rows rows, the images'
  // and any past them that a tap reads.
  std::uint32_t phase_h() const;
  std::uint32_t phase_w() const;
  std::uint64_t phase_rows() const;
  // The core computes "wide" rows: output pixel (n, oy, ox) is row wide_row(n, oy, ox), the
  // position of its window's first tap in the phases; the rows between (the padding's and the
  // phase's edge) are computed and not read. wide_rows(): up to the last pixel's.
  std::uint64_t wide_row(std::uint32_t n, std::uint32_t oy, std::uint32_t ox) const;
  std::uint64_t wide_rows() const { return wide_row(batch - 1, out_h() - 1, out_w() - 1) + 1; }
  // Tap t = ky * kernel_w + kx: the phase it reads, and its rows' offset from the output's.
  std::uint32_t tap_phase(std::uint32_t tap) const;
  std::uint32_t tap_offset(std::uint32_t tap) const;
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
  // bias_addr: the column rows, n_pad 4-byte values each: the bias (bf16 with has_bias); bias',
  // M and s (int8 results); the seed row -za * colsum(B) (int32 results with za but no C).
  std::uint32_t prog_addr = 0, a_addr = 0, b_addr = 0, c_addr = 0, bias_addr = 0, out_addr = 0;
  std::size_t memory_bytes = 0;  // host memory the layout needs
  bool weights_resident = false;  // B already lies at b_addr (GemmPlacement): not written again
  // A lies at a_addr before the program starts (GemmPlacement::input_addr): the result of a
  // GEMM run before it in the same program, which the host neither reads nor writes.
  bool input_resident = false;
  // The program already lies at prog_addr (a compiled model's, tpu/graph/compiled.hpp): written
  // once with the weights, not before each run.
  bool program_resident = false;
  std::vector<isa::Instruction> program;
  // A convolution's (plan_conv), whose M is its wide rows and whose K is its taps times its
  // channels padded to whole tiles (B: each tap's filters, C rows padded with zero rows); empty
  // for a GEMM. a_span: the unified-buffer rows of an A block per phase and channel tile (the
  // block's rows and the last tap's offset).
  ConvGeometry conv;
  std::uint32_t a_span = 0;

  std::uint32_t in_elem_bytes() const { return spec.int8() ? 1 : 2; }
  std::uint32_t out_elem_bytes() const {
    return spec.out == OutType::Fp32 || spec.out == OutType::Int32 ? 4
           : spec.out == OutType::Bf16                             ? 2
                                                                   : 1;
  }
  // int32 results of an int8 product with za but no C start from the seed row.
  bool has_seed_row() const {
    return spec.int8() && spec.out == OutType::Int32 && spec.input_zero_point != 0 && !spec.has_c;
  }
  // Host bytes of A (a convolution's: its padded phases), of the result (M rows), and of the
  // result's rows the host reads (a convolution's output pixels, not the wide rows between).
  std::uint64_t a_bytes() const;
  std::uint64_t out_bytes() const { return std::uint64_t{spec.m} * n_pad * out_elem_bytes(); }
  std::uint64_t result_bytes() const;
  // A convolution's taps one MATMUL runs: with one channel tile and no horizontal stride, a row
  // of taps (kx = 0 .. kernel_w - 1) reads one phase's rows dilation_w apart, against tiles one
  // after the other; otherwise one tap.
  std::uint32_t taps_per_matmul() const {
    return k_pad / conv.taps() == config.dim && conv.stride_w == 1 ? conv.kernel_w : 1;
  }
};

// Operands lie in host memory at multiples of this (any bus width's).
inline constexpr std::uint64_t kOperandAlign = 64;

// Where a plan puts its operands in host memory: everything from `base` up, except B when
// `weights_addr` is given: the weights then already lie there, below `base` (a multiple of
// kOperandAlign), written once by write_weights (a session's resident weights, which later runs
// of the same product do not write again); and A when `input_addr` is given: A lies there,
// below `base` (a multiple of kOperandAlign), as rows of K padded to whole tiles, the layout of
// a result of N = K (an earlier GEMM of the same program wrote it there).
struct GemmPlacement {
  std::uint64_t base = 0;
  std::optional<std::uint32_t> weights_addr;
  std::optional<std::uint32_t> input_addr;
};

// Throws std::invalid_argument with a one-line reason for a shape that is
// empty, or too large for this core's memories or the 32-bit host space, and
// for a spec this core cannot run or that mixes the bf16 and int8 options.
GemmPlan plan_gemm(const HardwareConfig& config, const GemmSpec& spec,
                   const GemmPlacement& placement = {});

// Plans a convolution (ConvGeometry) of `spec`'s types, N (the filters) and epilogue, whose M
// and K it sets; without C. Throws std::invalid_argument as plan_gemm does, and where a block of
// the image's rows does not fit half the unified buffer (an image too wide for the core: the
// caller falls back to im2col).
GemmPlan plan_conv(const HardwareConfig& config, GemmSpec spec, const ConvGeometry& geometry,
                   const GemmPlacement& placement = {});
// B of a convolution's plan from its filters as im2col's B (taps x C rows, in (ky, kx, c) order,
// by N): each tap's C rows padded with zero rows to whole tiles.
template <typename T>
num::Matrix<T> conv_weights(const HardwareConfig& config, const ConvGeometry& geometry,
                            const num::Matrix<T>& im2col_b) {
  const std::size_t c = geometry.channels, d = config.dim, c_pad = (c + d - 1) / d * d;
  num::Matrix<T> b(geometry.taps() * c_pad, im2col_b.cols);
  for (std::size_t t = 0; t < geometry.taps(); ++t) {
    for (std::size_t ch = 0; ch < c; ++ch) {
      for (std::size_t j = 0; j < b.cols; ++j) b.at(t * c_pad + ch, j) = im2col_b.at(t * c + ch, j);
    }
  }
  return b;
}
// Where a convolution's images lie among the caller's values: image n's channel c of pixel
// (y, x) at n * image + c * channel + (y * W + x) * pixel. NCHW (nchw_images): a channel's plane
// of H x W pixels after another; channels last (NHWC): a pixel's channels after another, `pixel`
// the image's channels (a group's channels among them).
struct ImageStrides {
  std::size_t image = 0, channel = 0, pixel = 1;
};
// NCHW images of the geometry's channels, height and width, `image_stride` values apart.
ImageStrides nchw_images(const ConvGeometry& geometry, std::size_t image_stride);

// Writes a convolution's operands as its plan says: the images from x (`strides`), padded with
// +0 (bf16) or the input zero point (int8), split into phases; B (conv_weights' layout) unless
// resident; the bias or the requantisation; the program unless resident.
void write_conv_inputs(const GemmPlan& plan, HostMemory& memory, const num::bf16_t* x,
                       const ImageStrides& strides, const num::MatrixBf16& b,
                       const std::vector<num::fp32_t>* bias);
void write_conv_inputs(const GemmPlan& plan, HostMemory& memory, const std::int8_t* x,
                       const ImageStrides& strides, const num::MatrixI8& b,
                       const RequantColumns* requant);

// The largest K (whole tiles of the array) that one plan of this spec's M and types takes with M
// blocks of min(M, array size) rows: a row of A and its staging must fit half the unified
// buffer that many times. A larger K is the sum of several products, each adding its share of K
// onto the last one's sums (C), in order of k (ops::product in the graph library).
std::uint32_t max_gemm_k(const HardwareConfig& config, const GemmSpec& spec);

// The bytes B takes in host memory, laid out for the core (K and N padded to whole tiles).
std::uint64_t weights_bytes(const HardwareConfig& config, const GemmSpec& spec);
// Writes B at `addr` as a plan of this spec reads it (the write plan_gemm's layout makes).
void write_weights(const HardwareConfig& config, HostMemory& memory, std::uint32_t addr,
                   const num::MatrixBf16& b);
// The same for the int8 B of an int8 product.
void write_weights(const HardwareConfig& config, HostMemory& memory, std::uint32_t addr,
                   const num::MatrixI8& b);

// Lays out the operands (A, B bf16; C, bias fp32) as the plan says, padding
// with zeros (B not when the plan's weights are resident, A not when its input is); the shapes
// must match the plan's spec (std::invalid_argument). A bf16 B may be left out (0 x 0) where the
// plan's weights are resident, here and in write_conv_inputs, execute_gemm and execute_conv.
void write_gemm_inputs(const GemmPlan& plan, HostMemory& memory, const num::MatrixBf16& a,
                       const num::MatrixBf16& b, const num::MatrixFp32* c,
                       const std::vector<num::fp32_t>* bias);
// The M x N result as fp32 bit patterns (bf16 results widened exactly); of a convolution, the
// (N x out_h x out_w) x filters result, a row per output pixel in im2col's order.
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

// A convolution's run: its operands written (write_conv_inputs), its program run, its result
// read (read_gemm_output) when the core reached HALT.
GemmRun execute_conv(const GemmPlan& plan, Backend& backend, const num::bf16_t* x,
                     const ImageStrides& strides, const num::MatrixBf16& b,
                     const std::vector<num::fp32_t>* bias = nullptr);

// Throws std::runtime_error naming the error and its instruction unless the run reached HALT
// without one.
void require_halt(const RunResult& result);

// Plans, places, runs and reads one GEMM on a backend (growing its host
// memory when needed). Throws std::runtime_error when the core stops with an
// error; `result` receives the run's figures.
num::MatrixFp32 run_gemm(Backend& backend, const GemmSpec& spec, const num::MatrixBf16& a,
                         const num::MatrixBf16& b, const num::MatrixFp32* c = nullptr,
                         const std::vector<num::fp32_t>* bias = nullptr,
                         RunResult* result = nullptr);

// The same computation by the reference model: num::gemm, then bias, the
// function and the output rounding, element by element (docs/numerics.md). B is
// B (K x N) whatever spec.b_transposed says: the layout is the core's concern.
num::MatrixFp32 reference_gemm(const GemmSpec& spec, const num::MatrixBf16& a,
                               const num::MatrixBf16& b, const num::MatrixFp32* c,
                               const std::vector<num::fp32_t>* bias);

// int8 mode: the same for int8 A and B, int32 C, and `requant` with OutType::Int8 (nullptr
// otherwise). Results are int32, or int8 widened to int32.
void write_gemm_inputs(const GemmPlan& plan, HostMemory& memory, const num::MatrixI8& a,
                       const num::MatrixI8& b, const num::MatrixI32* c,
                       const RequantColumns* requant);
num::MatrixI32 read_gemm_output_int(const GemmPlan& plan, const HostMemory& memory);
struct GemmRunInt {
  RunResult result;
  num::MatrixI32 out;
};
GemmRunInt execute_gemm(const GemmPlan& plan, Backend& backend, const num::MatrixI8& a,
                        const num::MatrixI8& b, const num::MatrixI32* c = nullptr,
                        const RequantColumns* requant = nullptr);
GemmRunInt execute_conv(const GemmPlan& plan, Backend& backend, const std::int8_t* x,
                        const ImageStrides& strides, const num::MatrixI8& b,
                        const RequantColumns* requant = nullptr);
num::MatrixI32 run_gemm(Backend& backend, const GemmSpec& spec, const num::MatrixI8& a,
                        const num::MatrixI8& b, const num::MatrixI32* c = nullptr,
                        const RequantColumns* requant = nullptr, RunResult* result = nullptr);
// num::gemm_int8, then the za correction (Q-ZP) and, for int8 results, num::requantize with the
// folded bias (Q-REQ).
num::MatrixI32 reference_gemm(const GemmSpec& spec, const num::MatrixI8& a, const num::MatrixI8& b,
                              const num::MatrixI32* c, const RequantColumns* requant);

}  // namespace tpu
