// Depthwise convolution on a core with a vector unit: each channel of an image convolved with a
// filter of its own (a Conv whose groups are its channels, one filter each: MobileNet's), the
// bits of the matrix unit's product of the same convolution (N-DEPTHWISE of docs/numerics.md),
// without its one-column products per channel.
//
// Each output value is the fold of N-ORDER: S = +0, then S = add(S, mul(x, w)) for the taps
// (ky, kx) in increasing order, ky first, with x and w rounded to bf16 (N-OUT) and the padding's
// x = +0; then the bias (N-ADD) and the function (N-ACT), and bf16 where the result is (N-OUT).
// The vector unit's mul of two bf16 values is N-MUL's exact product and its add N-ADD, so the
// bits are those of the product of the im2col rows and the filters, on every core.
//
// int8 (Q-MAC, Q-ZP, Q-REQ of docs/numerics.md): the int8 images and filters give int32 sums (the
// padding's x the input zero point, whose share of every sum the bias takes off, Q-ZP), each
// channel's sums requantised with its bias and multiplier (ACTIVATE REQ): the bits of a
// QLinearConv's products on the int8 datapath.
//
// Layout: channels in lanes (NHWC), ceil(C / D) rows a pixel. The host writes the images as bf16
// rows (unified-buffer rows, as a product's A), the filters as fp32 accumulator rows of bf16
// values, tap by tap, and the bias; it reads the result back as fp32 (or bf16) rows. The program
// passes the images through the unified buffer in bands (whole images, or the output rows of one
// image with the input rows they read, of all the channels or of a group of channel tiles), two in
// flight, each laid out with its padding as rows read from one padding row (+0, or int8's input
// zero point). For each output row, one ELTWISE mul per tap pairs the tap's input pixels
// (unified-buffer rows) with the tap's filter rows into a scratch region, and one ELTWISE add
// folds the taps' products into the output row in tap order; then the bias (ELTWISE add), the
// function (ACTIVATE; int8: the requantisation) and the store, which waits in the program until
// the next band's function has issued.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu {

struct DepthwiseSpec {
  std::uint32_t batch = 0, channels = 0, height = 0, width = 0;
  std::uint32_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  std::uint32_t dilation_h = 1, dilation_w = 1;
  std::uint32_t pad_top = 0, pad_left = 0;
  std::uint32_t out_h = 0, out_w = 0;  // as the padding after the image and the strides give
  bool bias = false;
  isa::Func func = isa::Func::None;  // none, relu, relu6, sigmoid, tanh, gelu
  bool bf16_out = false;             // results rounded to bf16 (N-OUT) and read as bf16
  // int8 values and int32 sums, requantised (Q-REQ) to int8 with the output zero point and the
  // clamp (an activation's bounds); func none, no bf16_out. The bias is always there (zeros
  // where the caller has none).
  bool int8 = false;
  int input_zero_point = 0, output_zero_point = 0;
  int clamp_lo = -128, clamp_hi = 127;

  std::uint32_t taps() const { return kernel_h * kernel_w; }
};

struct DepthwisePlan {
  DepthwiseSpec spec;
  HardwareConfig config;
  std::uint32_t tiles = 0;       // rows a pixel takes, ceil(C / D)
  std::uint32_t group = 0;       // channel tiles a band takes
  std::uint32_t chunk = 0;       // output columns one ELTWISE mul takes
  std::uint32_t bands = 0;       // passes through the unified buffer and the accumulators
  std::uint32_t ub_stride = 0;   // host bytes between unified-buffer rows (2 D, or D int8, aligned)
  std::uint32_t acc_stride = 0;  // between accumulator rows (4 D, aligned)
  // Host memory: the padding's unified-buffer row (+0, or the input zero point), the zero
  // accumulator row, the filters (tap by tap, each tiles rows), the bias (int8: the bias, the
  // multiplier and the shift of each tile), the images (NHWC rows), the output (NHWC rows), the
  // program.
  std::uint32_t pad_addr = 0, filter_addr = 0, in_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  // Bytes the host writes (the constant rows, the images, the program) and reads (the output).
  std::uint64_t written_bytes() const;
  std::uint64_t read_bytes() const;
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a core without a vector unit (or, int8, without the int8 datapath), an empty shape, a
// function the activation unit lacks (or one with int8), zero points or a clamp out of int8's
// range, filters and one output row of one channel tile that do not fit the accumulators, or
// tensors beyond 32-bit host addresses.
DepthwisePlan plan_depthwise(const HardwareConfig& config, const DepthwiseSpec& spec,
                             std::uint64_t base = 0);

// x: batch x channels x height x width fp32 values (NCHW); w: channels x kernel_h x kernel_w
// (ONNX's filters of one input channel each); bias: channels values, or none. Grows the memory.
void write_depthwise_inputs(const DepthwisePlan& plan, HostMemory& memory,
                            const std::vector<num::fp32_t>& x, const std::vector<num::fp32_t>& w,
                            const std::vector<num::fp32_t>& bias);
// The output, batch x channels x out_h x out_w (NCHW), bf16 results widened.
std::vector<num::fp32_t> read_depthwise_output(const DepthwisePlan& plan, const HostMemory& memory);

struct DepthwiseRun {
  RunResult result;
  std::vector<num::fp32_t> out;  // empty unless the core reached HALT without an error
};
DepthwiseRun execute_depthwise(const DepthwisePlan& plan, Backend& backend,
                               const std::vector<num::fp32_t>& x, const std::vector<num::fp32_t>& w,
                               const std::vector<num::fp32_t>& bias);

// The bits the plan's program gives, computed on the host output by output (N-DEPTHWISE).
std::vector<num::fp32_t> reference_depthwise(const DepthwiseSpec& spec,
                                             const std::vector<num::fp32_t>& x,
                                             const std::vector<num::fp32_t>& w,
                                             const std::vector<num::fp32_t>& bias);

// int8: x and w as above, int8 values; bias: channels int32 values (or none: zeros);
// multipliers: Q-REQ's M and s of each channel. The output: the int8 values, NCHW.
void write_depthwise_int8_inputs(const DepthwisePlan& plan, HostMemory& memory,
                                 const std::vector<std::int8_t>& x,
                                 const std::vector<std::int8_t>& w,
                                 const std::vector<std::int32_t>& bias,
                                 const std::vector<num::QuantizedMultiplier>& multipliers);
std::vector<std::int8_t> read_depthwise_int8_output(const DepthwisePlan& plan,
                                                    const HostMemory& memory);

struct DepthwiseInt8Run {
  RunResult result;
  std::vector<std::int8_t> out;  // empty unless the core reached HALT without an error
};
DepthwiseInt8Run execute_depthwise_int8(const DepthwisePlan& plan, Backend& backend,
                                        const std::vector<std::int8_t>& x,
                                        const std::vector<std::int8_t>& w,
                                        const std::vector<std::int32_t>& bias,
                                        const std::vector<num::QuantizedMultiplier>& multipliers);

// The int8 bits: each output's sum of (x - input zero point) times the filter over its taps (the
// padding's x the zero point), wrapping in int32 (Q-MAC), requantised by Q-REQ.
std::vector<std::int8_t> reference_depthwise_int8(
    const DepthwiseSpec& spec, const std::vector<std::int8_t>& x, const std::vector<std::int8_t>& w,
    const std::vector<std::int32_t>& bias,
    const std::vector<num::QuantizedMultiplier>& multipliers);

}  // namespace tpu
