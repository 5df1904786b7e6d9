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
// Layout: channels in lanes (NHWC), ceil(C / D) rows a pixel. The host writes the images as bf16
// rows (unified-buffer rows, as a product's A), the filters as fp32 accumulator rows of bf16
// values, tap by tap, and the bias; it reads the result back as fp32 (or bf16) rows. The program
// passes the images through the unified buffer in bands (whole images, or the output rows of one
// image with the input rows they read, of all the channels or of a group of channel tiles), two in
// flight, each laid out with its padding as rows of +0 read from one zero row. For each output
// row, one ELTWISE mul per tap pairs the tap's input pixels (unified-buffer rows) with the tap's
// filter rows into a scratch region, and one ELTWISE add folds the taps' products into the output
// row in tap order; then the bias (ELTWISE add), the function (ACTIVATE) and the store.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"

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

  std::uint32_t taps() const { return kernel_h * kernel_w; }
};

struct DepthwisePlan {
  DepthwiseSpec spec;
  HardwareConfig config;
  std::uint32_t tiles = 0;       // rows a pixel takes, ceil(C / D)
  std::uint32_t group = 0;       // channel tiles a band takes
  std::uint32_t chunk = 0;       // output columns one ELTWISE mul takes
  std::uint32_t bands = 0;       // passes through the unified buffer and the accumulators
  std::uint32_t ub_stride = 0;   // host bytes between unified-buffer rows (2 D, aligned)
  std::uint32_t acc_stride = 0;  // between accumulator rows (4 D, aligned)
  // Host memory: the zero row, the filters (tap by tap, each tiles rows) and the bias, the images
  // (NHWC bf16 rows), the output (NHWC rows), the program.
  std::uint32_t zero_addr = 0, filter_addr = 0, in_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  std::uint64_t written_bytes()
      const;                         // the zero row, the filters and bias, the images, the program
  std::uint64_t read_bytes() const;  // the output
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a core without a vector unit, an empty or inconsistent shape (an output size the
// windows do not give), a function the activation unit lacks, filters and one output row of one
// channel tile that do not fit the accumulators, or tensors beyond 32-bit host addresses.
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

}  // namespace tpu
