// Pooling on a core with a vector unit (N-POOL of docs/numerics.md): max and average pooling
// over windows of images, and global pooling (a window of the whole image), each window's
// values folded by ELTWISE max or add in the window's order, an average then multiplied by the
// reciprocal of its count.
//
// Layout: channels in lanes, as a matrix product leaves its results (NHWC): each pixel of an
// image is ceil(C / D) accumulator rows (lanes past C hold +0). The host writes the input in that
// layout and reads the output back from it (the caller's tensors are NCHW, or NHWC with
// channels_last). The program passes
// the images through the accumulators in bands (whole images, or the output rows of one image
// whose input rows fit), two bands in flight in the two banks: each band's input rows are read,
// its output rows set to the fold's seed (-inf for max, -0 for a sum), then for each output row,
// kernel row and kernel column one ELTWISE folds that tap into the output pixels whose windows
// have it inside the image (a window row as wide as the image, unpadded, folds its taps in one
// ELTWISE), an average's sums are multiplied by the reciprocal, and the output rows are written.
// int8 pooling reads the pixels as int8 rows into the unified buffer and folds them into int32
// accumulator rows (ELTWISE UB I32); an average's sums are moved up (ELTWISE I32 ROW mul) and
// requantised into the unified buffer (ACTIVATE REQ), a maximum's values requantised as they
// are, and int8 rows are written.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/numerics/quant.hpp"

namespace tpu {

struct PoolSpec {
  bool max = true;  // max pooling, else average
  std::uint32_t batch = 0, channels = 0, height = 0, width = 0;
  std::uint32_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  std::uint32_t pad_top = 0, pad_left = 0;
  std::uint32_t out_h = 0, out_w = 0;  // as the caller's padding after the image and rounding give
  // An average's divisor: the same for every window, or with `count_inside` each window's
  // values inside the image (its padding not counted, ONNX's count_include_pad 0): rows times
  // columns inside, each distinct count's reciprocal a constant row of its own (float only).
  std::uint32_t count = 1;
  bool count_inside = false;
  // int8 values (a core with the int8 datapath): a maximum, or an average (Q-MEAN of
  // docs/numerics.md, num::quant_mean_params): each window's int32 sum of its int8 values, moved
  // up by 2^mean.up and requantised.
  bool int8 = false;
  num::QuantMeanParams mean;
  // The caller's tensors are NHWC (channels last, as the rows of a sequence's tokens are), not
  // NCHW: the host writes and reads them as they are.
  bool channels_last = false;
};

struct PoolPlan {
  PoolSpec spec;
  HardwareConfig config;
  std::uint32_t tiles = 0;       // accumulator rows a pixel takes, ceil(C / D)
  std::uint32_t row_stride = 0;  // host bytes between accumulator rows
  // Host bytes between input rows and between output rows (int8: int8 rows of D bytes).
  std::uint32_t in_stride = 0, out_stride = 0;
  std::uint32_t bands = 0;       // passes through the accumulators
  // Host memory: the seed row (and an average's reciprocal row), the input's pixels (NHWC), the
  // output's, the program.
  std::uint32_t const_addr = 0, in_addr = 0, out_addr = 0, prog_addr = 0;
  std::size_t memory_bytes = 0;
  std::vector<isa::Instruction> program;

  std::uint64_t written_bytes() const;  // the constant rows, the input, the program
  std::uint64_t read_bytes() const;     // the output
};

// Its host memory from `base` up (rounded up to 64 bytes). Throws std::invalid_argument with one
// line for a core without a vector unit, an empty or inconsistent shape (an output size the
// windows do not give, a window with no value inside the image), a count of 0, an output row
// whose input rows do not fit half the accumulators, or tensors beyond 32-bit host addresses.
PoolPlan plan_pool(const HardwareConfig& config, const PoolSpec& spec, std::uint64_t base = 0);

// x: the input, batch x channels x height x width fp32 values (NCHW; NHWC with channels_last).
// Grows the memory.
void write_pool_input(const PoolPlan& plan, HostMemory& memory, const std::vector<num::fp32_t>& x);
// The output, batch x channels x out_h x out_w (NCHW; NHWC with channels_last).
std::vector<num::fp32_t> read_pool_output(const PoolPlan& plan, const HostMemory& memory);

struct PoolRun {
  RunResult result;
  std::vector<num::fp32_t> out;  // empty unless the core reached HALT without an error
};
PoolRun execute_pool(const PoolPlan& plan, Backend& backend, const std::vector<num::fp32_t>& x);

// The bits the plan's program gives, computed on the host window by window (N-POOL).
std::vector<num::fp32_t> reference_pool(const PoolSpec& spec, const std::vector<num::fp32_t>& x);

// int8 pooling (spec.int8): x and the output int8, NCHW.
void write_pool_int8_input(const PoolPlan& plan, HostMemory& memory,
                           const std::vector<std::int8_t>& x);
std::vector<std::int8_t> read_pool_int8_output(const PoolPlan& plan, const HostMemory& memory);
struct PoolInt8Run {
  RunResult result;
  std::vector<std::int8_t> out;  // empty unless the core reached HALT without an error
};
PoolInt8Run execute_pool_int8(const PoolPlan& plan, Backend& backend,
                              const std::vector<std::int8_t>& x);
// Window by window: the largest value, or Q-MEAN (num::mean_int8 of the window's sum).
std::vector<std::int8_t> reference_pool_int8(const PoolSpec& spec,
                                             const std::vector<std::int8_t>& x);

}  // namespace tpu
