// The executor's operators (internal to the graph library): one kernel per ONNX operator, each
// as the ONNX operator of the graph's opset defines it, grouped by kind in ops_*.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/compiler.hpp"
#include "tpu/depthwise.hpp"
#include "tpu/elementwise.hpp"
#include "tpu/graph/compiled.hpp"
#include "tpu/graph/executor.hpp"
#include "tpu/graph/graph.hpp"
#include "tpu/layernorm.hpp"
#include "tpu/move.hpp"
#include "tpu/numerics/quant.hpp"
#include "tpu/pool.hpp"
#include "tpu/quant_add.hpp"
#include "tpu/quant_convert.hpp"
#include "tpu/vector_expression.hpp"

namespace tpu::graph::ops {

class ResidentWeights;  // resident_weights.hpp

// A GEMM as compile()'s trace records it, with where the product's A and result lay in the
// host's memory (addresses compared, never read): a result whose buffer is the next product's A
// went to it untouched, the first condition of a chain (compiled.cpp).
struct TracedGemm {
  CompiledGemm gemm;
  std::uintptr_t a = 0, out = 0;
  // The products() call it came from (0: a product of its own) and which of its products: the
  // products of one call are independent, and may run as one program (compiled.cpp).
  std::size_t group = 0, call = 0;
};

// A compiled model's GEMMs (tpu/graph/compiled.hpp): recorded as compile() traces the graph,
// then, as the compiled model runs, taken in the order they were recorded instead of planned.
struct GemmSchedule {
  std::vector<TracedGemm>* recording = nullptr;  // compile()'s trace: products only planned
  const std::vector<CompiledGemm>* compiled = nullptr;
  std::size_t next = 0;    // the next of `compiled`
  std::size_t groups = 0;  // products() calls recorded so far
  bool first_run = false;  // the image (weights, programs) was written for this run
  // compile()'s trace: the nodes that run on the vector unit (planned as the model runs).
  std::vector<std::string>* vector_nodes = nullptr;
  // A compiled model's run: the first host byte above its image and its products' operands.
  std::uint64_t compiled_top = 0;
};

struct Context {
  int opset = 0;
  Backend* accelerator = nullptr;  // null: products in host fp32
  OpRun* run = nullptr;            // the running node's figures
  // The caller asked for them (Session::run's `runs`): the cycle model's estimates, which
  // take longer than a small product on the functional model, are made only then.
  bool estimates = false;
  const Node* node = nullptr;      // the running node
  // The graph's constants, and the session's weights on the accelerator (with one).
  const std::set<const Tensor*>* constants = nullptr;
  ResidentWeights* weights = nullptr;
  GemmSchedule* schedule = nullptr;  // compiling, or running a compiled model
  // The running node is a Transpose of transposed_operands() and the core reads B transposed:
  // it leaves its values where they are (Tensor::stored_transposed).
  bool operand_transpose = false;
};

// A node's inputs: null for an optional input left out.
using Inputs = std::vector<const Tensor*>;

// A kernel's outputs, moved into the vector that returns them (`return {y}` would copy each:
// an initializer list's elements are const). A product's result thus reaches the next node in
// its own buffer, which is how compile() sees a chain.
template <typename... Outputs>
std::vector<Tensor> outputs(Outputs&&... values) {
  std::vector<Tensor> all;
  all.reserve(sizeof...(values));
  (all.push_back(std::forward<Outputs>(values)), ...);
  return all;
}
using Kernel = std::function<std::vector<Tensor>(Context&, const Node&, const Inputs&)>;
using Table = std::map<std::string, Kernel>;

void add_elementwise(Table& table);  // ops_elementwise.cpp
void add_shape(Table& table);        // ops_shape.cpp
void add_nn(Table& table);           // ops_nn.cpp
void add_recurrent(Table& table);    // ops_recurrent.cpp
void add_quant(Table& table);        // ops_quant.cpp
const Table& table();

[[noreturn]] void fail(const Node& node, const std::string& what);
// Input i, which the node must have.
const Tensor& need(const Node& node, const Inputs& inputs, std::size_t i);
const Tensor& need_float(const Node& node, const Inputs& inputs, std::size_t i);
// An axis in [-rank, rank) as an index in [0, rank).
std::size_t axis_index(const Node& node, std::int64_t axis, std::size_t rank);
// An integer tensor's values (shapes, axes, pads).
std::vector<std::int64_t> int_values(const Tensor& t);

// Row-major strides of a shape.
std::vector<std::size_t> strides_of(const Shape& shape);
// NumPy broadcasting of the shapes (ONNX's multidirectional broadcasting).
Shape broadcast_shapes(const Node& node, const std::vector<Shape>& shapes);
// The offset base + sum(index[d] * strides[d]) of every element of `out` (row-major), a row of
// its last axis at a time: a transpose's, a slice's (negative strides too) or a broadcast's.
std::vector<std::size_t> strided_offsets(const Shape& out, std::ptrdiff_t base,
                                         const std::vector<std::ptrdiff_t>& strides);
// For each input shape, the offset of every element of `out` (broadcast shape) in it.
std::vector<std::size_t> broadcast_offsets(const Shape& in, const Shape& out);

// What B of a product comes from: when `source` is one of the graph's constants (weights, and B
// derived from them alone), the product's B stays on the accelerator for the session's later
// runs; `part` tells apart the products a node derives from one source (groups, directions,
// batches).
struct WeightOf {
  const Tensor* source = nullptr;
  std::size_t part = 0;
  std::size_t first_row = 0;  // of B: where a K larger than one GEMM takes is split
};

// What a product does to its sums before they leave it: a bias per column (n values; none where
// null), then an activation; on the core, where `bf16_result`, the rounding to bf16 (N-OUT).
struct ProductEpilogue {
  const float* bias = nullptr;
  Epilogue act = Epilogue::None;
  bool bf16_result = false;
};

// A product's B: values where they lie (a tensor's), or made the first time they are asked for
// (a convolution group's regrouped filters), which a product whose weights are resident on the
// core never does.
template <typename T>
class ProductB {
 public:
  ProductB(const T* values = nullptr) : values_(values) {}  // a B where it lies
  explicit ProductB(std::function<const T*()> make) : make_(std::move(make)) {}
  const T* operator()() const {
    if (!values_ && make_) values_ = make_();
    // A compiled model's weights lie in its image alone (Tensor::values_on_core): asked for
    // only where they are not resident, which compile() rules out.
    if (!values_)
      throw std::logic_error("a product's weights asked for where the core alone has them");
    return values_;
  }

 private:
  mutable const T* values_ = nullptr;
  std::function<const T*()> make_;
};

// C = act(A (m x k) B (k x n) + bias), row-major fp32: on the accelerator (bf16 operands, fp32
// sums, the epilogue in the core's accumulators and activation unit) or in host fp32; counts
// the MACs, and on the accelerator what the host wrote and read, in the context's figures. A K
// larger than one GEMM takes on the core (max_gemm_k) runs as several, each adding its rows of
// B onto the sums of the one before (C), in order of k: the contract's sums, bit for bit.
// With `b_transposed`, b holds B's transpose (n x k), which a core with a vector unit reads as
// it lies (READ_WEIGHTS T) unless `host_transposes_b`; the host lays it out for any other, and
// for resident weights only when it writes them.
// Where `a_bf16` is given (on an accelerator only), it is A rounded to bf16 and `a` is not read.
std::vector<float> product(Context& context, const float* a, const ProductB<float>& b,
                           std::size_t m, std::size_t k, std::size_t n, WeightOf weight = {},
                           ProductEpilogue epilogue = {}, bool b_transposed = false,
                           bool host_transposes_b = false, const num::MatrixBf16* a_bf16 = nullptr);

// A product on the accelerator whose A the program before it left in the core's memory where
// the plan reads it, and whose fp32 sums stay there for the program after it: a recurrent
// node's step with its state kept on the core. A is m x k (k within one GEMM), B the node's
// weight `b` (k x n floats), no epilogue: the GEMM product() runs for the same shapes, so that a
// compiled model's schedule serves both. Not while compile() traces the graph (possible() says
// whether it can run: an accelerator, not tracing, K within one GEMM).
class ResidentProduct {
 public:
  static bool possible(const Context& context, std::size_t k);
  // `ahead`: the products the caller takes before this one's first turn (a compiled model's
  // GEMMs of them come first in its schedule).
  ResidentProduct(Context& context, const float* b, std::size_t m, std::size_t k, std::size_t n,
                  WeightOf weight, std::size_t ahead = 0);
  const GemmPlan& plan() const { return plan_; }
  bool weights_resident() const { return plan_.weights_resident; }
  // Plans its operands again above the session's weights (not a compiled model's: its plans are
  // fixed), where products planned after it placed weights of their own.
  void plan_above_weights();
  // The first host byte above the product's memory and what the session keeps there: from where
  // the caller may keep rows of its own.
  std::uint64_t top() const;

 private:
  friend class JoinedProgram;
  // Takes the product's turn (a compiled model's next GEMM), counts it in the node's figures
  // (the result not crossing the bus, nor A unless `a` is given: then the host writes it) and
  // gives its program without HALT, to run with others.
  std::vector<isa::Instruction> join(const num::MatrixBf16* a = nullptr);

  Context& context_;
  GemmPlan plan_;  // input_resident: A is not written
  std::uint64_t weights_written_ = 0;
  num::MatrixBf16 a_shape_;  // zeros of A's shape, for the plan's checks (not written)
};

// Programs run as one (a recurrent direction's steps, each its product and its gates): their
// instructions one after the other, the HALTs between taken out; the core's hazard tracking
// orders what each reads after what the one before wrote. Each part is counted in the node's
// figures as it would run alone (its cycle estimate, its MACs), the joined program as one
// program run (its bytes, the backend's counters).
class JoinedProgram {
 public:
  explicit JoinedProgram(Context& context) : context_(context) {}
  // The product's program next, its A written by the host where `a` is given.
  void add(ResidentProduct& product, const num::MatrixBf16* a = nullptr);
  // The program of the expression `e`, planned above `above` (as expression_on_core plans it),
  // every tensor and output in a view; its constant rows written now (not again where the part
  // before wrote the same rows at the same place). False where the core cannot take it (nothing
  // added).
  bool add(const ExpressionBuilder& e, std::uint64_t above);
  // Writes the joined program above every part's memory, runs it and counts it.
  void run();

 private:
  Context& context_;
  std::vector<isa::Instruction> program_;
  std::uint64_t top_ = 0;  // above every part's memory
  // The constant rows written so far, by where they start: where they end, their values.
  struct WrittenRows {
    std::uint64_t end = 0;
    std::vector<std::vector<num::fp32_t>> rows;
  };
  std::map<std::uint64_t, WrittenRows> constants_;
};

// Softmax of `rows` rows of `length` values each, in place, on the accelerator where it has a
// vector unit and the rows fit its accumulators (plan_softmax, N-SOFTMAX), counting what the
// host wrote and read, the program and its cycles in the context's figures. False where it
// cannot: the caller computes it on the host. While compile() traces the graph the node is
// recorded and its values computed on the host, the core's bits.
bool softmax_on_core(Context& context, std::vector<float>& values, std::size_t rows,
                     std::size_t length);

// The elementwise operator `spec` describes (y = f(a op b), or f(a): tpu/elementwise.hpp) on the
// accelerator's vector unit, counting what the host wrote and read, the program and its cycles
// in the context's figures; nothing where it cannot (no vector unit, a period too long for the
// accumulators): the caller computes it on the host. While compile() traces the graph the node
// is recorded and its values computed on the host, the core's bits.
std::optional<std::vector<float>> elementwise_on_core(Context& context, const ElementwiseSpec& spec,
                                                      const std::vector<float>& a,
                                                      const std::vector<float>& b);

// The same for operands and a result given as 32-bit lanes (int32 values with spec.int32).
std::optional<std::vector<num::fp32_t>> elementwise_bits_on_core(Context& context,
                                                                 const ElementwiseSpec& spec,
                                                                 const std::vector<num::fp32_t>& a,
                                                                 const std::vector<num::fp32_t>& b);

// Floats' bits (fp32 values as the core's programs take them), and back.
std::vector<num::fp32_t> bits_of(const float* values, std::size_t count);
std::vector<num::fp32_t> bits_of(const std::vector<float>& values);
std::vector<float> floats_of(const std::vector<num::fp32_t>& bits);

// The expression `e` builds (tpu/vector_expression.hpp: a recurrent cell's gates) on the
// accelerator's vector unit, counted as elementwise_on_core counts: the values of its outputs
// not in views; nothing where it cannot (no vector unit, more values at once than the
// accumulators hold): the caller computes them on the host. Its program and operands go above
// what the session keeps and above `above` (the caller's rows in the core's memory).
std::optional<std::vector<std::vector<float>>> expression_on_core(Context& context,
                                                                  const ExpressionBuilder& e,
                                                                  std::uint64_t above = 0);

// Pooling (tpu/pool.hpp) of x (NCHW) on the accelerator's vector unit, counted as
// elementwise_on_core counts; nothing where it cannot: the caller pools on the host.
std::optional<std::vector<float>> pool_on_core(Context& context, const PoolSpec& spec,
                                               const std::vector<float>& x);

// Layer normalisation (tpu/layernorm.hpp) of x's rows on the accelerator's vector unit, counted
// as elementwise_on_core counts; nothing where it cannot.
std::optional<std::vector<float>> layernorm_on_core(Context& context, const LayerNormSpec& spec,
                                                    const std::vector<float>& x,
                                                    const std::vector<float>& gamma,
                                                    const std::vector<float>& beta);

// A depthwise convolution (tpu/depthwise.hpp) of x (NCHW) with w (channels x kernel values) and
// its bias on the accelerator's vector unit, the bits of its products on the matrix unit,
// counted as elementwise_on_core counts (its MACs the vector unit's); nothing where it cannot:
// the caller runs the products.
std::optional<std::vector<float>> depthwise_on_core(Context& context, const DepthwiseSpec& spec,
                                                    const std::vector<float>& x,
                                                    const std::vector<float>& w,
                                                    const std::vector<float>& bias);

// The same for an int8 depthwise convolution (spec.int8: a QLinearConv's), its results the int8
// values as int32.
std::optional<std::vector<std::int32_t>> depthwise_int8_on_core(
    Context& context, const DepthwiseSpec& spec, const std::vector<std::int8_t>& x,
    const std::vector<std::int8_t>& w, const std::vector<std::int32_t>& bias,
    const std::vector<num::QuantizedMultiplier>& multipliers);

// The core's function for an activation (Epilogue::None: isa::Func::None).
isa::Func core_function(Epilogue act);

// One product of products(): A (m x k) times B (k x n), its weights' source and its epilogue;
// with b_transposed, b holds B's transpose (n x k, Tensor::stored_transposed). A is a's values,
// or where a_bf16 holds them (on an accelerator only), A rounded to bf16 as the core takes it.
struct ProductCall {
  const float* a = nullptr;
  ProductB<float> b;
  std::size_t m = 0, k = 0, n = 0;
  WeightOf weight;
  ProductEpilogue epilogue;
  bool b_transposed = false;
  num::MatrixBf16 a_bf16{};
};

// Independent products, each as product() computes it, in order (a batched MatMul's matrices, a
// grouped convolution's groups). A compiled model runs those compile() grouped as one program:
// their operands written first, their results read after it.
std::vector<std::vector<float>> products(Context& context, const std::vector<ProductCall>& calls);

// A convolution group on the accelerator from its images, without im2col (plan_conv): x the
// group's first channel of the first image, the others where `strides` say (NCHW or NHWC), b() its
// filters as the im2col product's B (taps x C rows in (ky, kx, c) order, by n; asked for only
// where the weights are not resident yet), the result a
// row per output pixel, as product() gives it for the im2col matrix, bit for bit. None where the
// core does not take it so (conv_plan in ops_common.cpp: no accelerator, an image too wide, an
// im2col product the cycle model has faster): the caller runs that product.
std::optional<std::vector<float>> conv_product(Context& context, const ConvGeometry& g,
                                               const float* x, const ImageStrides& strides,
                                               const ProductB<float>& b, std::size_t n,
                                               WeightOf weight, ProductEpilogue epilogue);

// What an int8 product does to its int32 sums (TensorFlow Lite's scheme, docs/numerics.md's
// Q-rules): A's zero point is taken off (Q-ZP), then per column the bias is added and the sum
// requantised to int8 (Q-REQ) with the multiplier, the output zero point and the clamp (relu's
// and relu6's bounds where an activation is fused). B's zero point, where it has one (a product
// of two activations), is taken off by the host, which then requantises. Without multipliers
// (MatMulInteger, ConvInteger) the product's results are its int32 sums of (a - za)(b - zb).
struct QuantEpilogue {
  int input_zero_point = 0;
  int weight_zero_point = 0;
  const std::int32_t* bias = nullptr;                     // n values; none where null
  const num::QuantizedMultiplier* multipliers = nullptr;  // n values, or none: the sums
  int output_zero_point = 0;
  int clamp_lo = -128, clamp_hi = 127;
};

// One product of products_int8(): A (m x k) times B (k x n), its weights' source and epilogue;
// b_transposed as ProductCall's.
struct ProductCallInt8 {
  const std::int8_t* a = nullptr;
  ProductB<std::int8_t> b;
  std::size_t m = 0, k = 0, n = 0;
  WeightOf weight;
  QuantEpilogue epilogue;
  bool b_transposed = false;
};

// C = requantise(A (m x k) B (k x n)), row-major, the int8 values as int32 (or, without
// multipliers, the int32 sums): on the accelerator's int8 datapath, or by the reference model
// without one (or on a core without the datapath: a host step), the same bits either way; counts
// as product() does.
std::vector<std::int32_t> product_int8(Context& context, const std::int8_t* a,
                                       const ProductB<std::int8_t>& b, std::size_t m, std::size_t k,
                                       std::size_t n, WeightOf weight,
                                       const QuantEpilogue& epilogue, bool b_transposed = false);
// The same for an int8 convolution group (its padding the input zero point), as product_int8()
// gives it for the im2col matrix; none also for weights with a zero point.
std::optional<std::vector<std::int32_t>> conv_product_int8(
    Context& context, const ConvGeometry& g, const std::int8_t* x, const ImageStrides& strides,
    const ProductB<std::int8_t>& b, std::size_t n, WeightOf weight, const QuantEpilogue& epilogue);
// Independent int8 products, as products() runs float ones.
std::vector<std::vector<std::int32_t>> products_int8(Context& context,
                                                     const std::vector<ProductCallInt8>& calls);

// A quantised operand of QLinearConv, QLinearMatMul or QGemm: real = scale * (q - zero point),
// per tensor or per channel. uint8 values and their zero points are moved down by 128, which
// keeps every real value, so that the core's int8 datapath takes both types.
struct QuantOperand {
  std::vector<std::int8_t> values;
  std::vector<double> scales;    // one, or one per channel
  std::vector<int> zero_points;  // as many as the scales, in [-128, 127]
  DType type = DType::Int8;      // the file's: Int8 or UInt8
};

// The node's inputs `value` and `zero_point` (which may be left out: zero) as an operand of
// MatMulInteger or ConvInteger: its scales empty, its zero points one or one per channel.
QuantOperand integer_operand(const Node& node, const Inputs& inputs, std::size_t value,
                             std::size_t zero_point);
// The node's inputs `value`, `scale` and `zero_point` (which may be left out: zero) as one.
QuantOperand quant_operand(const Node& node, const Inputs& inputs, std::size_t value,
                           std::size_t scale, std::size_t zero_point);

// A quantised result (of a product, or of QLinearAdd): its scale, its zero point (moved down by
// 128 for uint8), its type and the clamp bounds of the activation fused into it (the node's
// epilogue).
struct QuantResult {
  double scale = 1;
  int zero_point = 0;
  DType type = DType::Int8;
  int lo = -128, hi = 127;
};

// The activation fused into a quantised node (its epilogue), as its requantisation's clamp
// takes it: relu, relu6, or none.
num::QuantActivation quant_activation(const Node& node);

// The node's inputs `scale` and `zero_point` (which may be left out: uint8, 0) as one.
QuantResult quant_result(const Node& node, const Inputs& inputs, std::size_t scale,
                         std::size_t zero_point);
// The int8 results (uint8's moved down by 128) as a tensor of the result's type.
Tensor quant_tensor(const QuantResult& r, const Shape& shape, const std::vector<std::int32_t>& q);

// An int8 average (tpu/pool.hpp with spec.int8, Q-MEAN) of x (NCHW) on the accelerator's vector
// unit, counted as elementwise_on_core counts; nothing where it cannot: the caller averages on
// the host, the same bits.
std::optional<std::vector<std::int8_t>> pool_int8_on_core(Context& context, const PoolSpec& spec,
                                                          const std::vector<std::int8_t>& x);

// An int8 addition (tpu/quant_add.hpp, Q-ADD) on the accelerator's vector unit, counted as
// elementwise_on_core counts; nothing where it cannot (no vector unit or int8 datapath): the
// caller adds on the host, the same bits.
std::optional<std::vector<std::int8_t>> quant_add_on_core(Context& context,
                                                          const QuantAddSpec& spec,
                                                          const std::vector<std::int8_t>& a,
                                                          const std::vector<std::int8_t>& b);

// QuantizeLinear of fp32 values to int8 (Q-QUANT) and DequantizeLinear of int8 values to fp32
// (Q-DEQUANT) on the accelerator's vector unit (tpu/quant_convert.hpp), counted as
// elementwise_on_core counts; nothing where it cannot (no vector unit or int8 datapath, a scale
// whose reciprocal is no normal fp32): the caller converts on the host, onnxruntime's way.
std::optional<std::vector<std::int8_t>> quantize_on_core(Context& context,
                                                         const QuantConvertSpec& spec,
                                                         const std::vector<float>& x);
std::optional<std::vector<float>> dequantize_on_core(Context& context, const QuantConvertSpec& spec,
                                                     const std::vector<std::int8_t>& q);

// x's values moved into a tensor of shape `out` (element e x's element at[e]: a Transpose, Gather,
// Slice, Concat (x the inputs one after another), Expand or Tile) on the accelerator's DMA
// (tpu/move.hpp) where they make runs of whole array rows, counted as elementwise_on_core counts:
// fp32 and int32 values, int8 and uint8 ones on a core with the int8 datapath, on a core with a
// vector unit (a core that runs a network's other operators). Nothing elsewhere: the caller moves
// them on the host, the same values.
std::optional<Tensor> move_on_core(Context& context, const Tensor& x, const Shape& out,
                                   const std::vector<std::size_t>& at);

// An int8 product's Q-REQ multipliers, one per column: x_scale * w_scale(j) / y_scale by Q-SCALE
// (w_scales one, or one per column of n).
std::vector<num::QuantizedMultiplier> requant_multipliers(const Node& node, double x_scale,
                                                          const std::vector<double>& w_scales,
                                                          double y_scale, std::size_t n);

// A fused activation as the host computes its ONNX operator in fp32 (Relu, Clip to [0, 6],
// Sigmoid, Tanh, Gelu): the epilogue of a product run on the host.
float activation(Epilogue act, float x);

// Gemm's C as a bias of its product's n columns (a scalar, or a row of 1 or n values, added
// with beta = alpha = 1), or empty where it is not one; fuse_epilogues fuses a Gemm only then.
std::vector<float> gemm_bias(const Node& node, const Tensor* c, std::size_t n);

}  // namespace tpu::graph::ops
