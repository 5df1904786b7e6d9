// Runs a graph (tpu/graph/graph.hpp) on a batch of inputs. Matrix products (MatMul, Gemm and
// Conv, the last as im2col rows per group) run on an accelerator backend, bf16 operands and fp32
// sums as the contract has them (docs/numerics.md), with their bias and fused activation in the
// core's epilogue, or in host fp32 without one; the quantised products (QLinearConv,
// QLinearMatMul, QGemm) on its int8 datapath, requantised in the epilogue (the Q-rules), or by
// the reference model without one. On a core with a vector unit, the softmaxes, elementwise
// operators, pools and means, layer norms, depthwise convolutions, int8 additions, quantisations
// and dequantisations run there too, each its own program, and the moves of whole array rows
// (Transpose, Gather, Slice, Concat, Expand, Tile) on its DMA. Views and shape arithmetic do no
// work (node_work). Every other operator is a host step in fp32 (or int64 for shape arithmetic and
// quantised values), as ONNX defines it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/graph/graph.hpp"

namespace tpu::graph {

struct CompiledModel;  // tpu/graph/compiled.hpp
namespace ops {
struct TracedGemm;  // the executor's (internal)
}

// One line naming the first node `run` would refuse (an operator it does not take, or an
// attribute value it does not), empty when there is none. Checks what can be checked before
// the inputs' shapes are known.
std::string check_supported(const Graph& graph);

// Evaluates every node whose inputs are all constants once, into the graph's constants, and
// removes it (the weights' and the exporters' shape arithmetic); returns how many it folded.
std::size_t fold_constants(Graph& graph);

// What a node does with the values of a run's activations, as the graph alone tells it.
enum class NodeWork : std::uint8_t {
  Values,  // computes on them or moves them: on the core, or a host step
  // Nothing: its output is its input's bytes under another shape (Reshape, Flatten, Squeeze,
  // Unsqueeze, Identity), tensors being laid out row-major on the host and in the core's memory.
  // A Transpose that moves only axes of one element is one too, which its run tells (OpRun::work)
  // and compile() makes a Reshape.
  View,
  // Nothing: its outputs follow from its inputs' shapes and the constants alone (Shape and Size,
  // and the arithmetic on their results that exporters emit), the same for every run of inputs
  // of one shape; compile() folds them into constants.
  ShapeArithmetic,
};

// Each node's work, in the graph's order.
std::vector<NodeWork> node_work(const Graph& graph);

// Per node, in the graph's order: whether it is a Transpose of the last two axes alone (an
// explicit perm) whose result goes, through Reshapes, Mul or Div by a constant of one element and
// QuantizeLinear or DequantizeLinear per tensor (each the only reader of what it reads, none a
// graph output), only into a MatMul or QLinearMatMul as its B: attention's K^T. On a core with a
// vector unit, whose READ_WEIGHTS T reads a product's B as its transpose's rows, such a Transpose
// moves nothing (a view, Tensor::stored_transposed), and the MatMul's weight tiles are K's rows,
// transposed on their way into the array.
std::vector<bool> transposed_operands(const Graph& graph);

// Turns each GELU that an exporter decomposed (PyTorch before opset 20: x / sqrt(2), Erf, + 1,
// times x, times 0.5, or x times 0.5 first; x times 1 / sqrt(2) for the division) into one Gelu
// node (its erf form), whose every intermediate value had no other reader: on the core the
// contract's GELU (N-ACT, within a bf16 ulp), a product's epilogue after fuse_epilogues; on the
// host the same function in fp32. Returns how many it fused. Run after fold_constants (the
// scalars must be constants), before fuse_epilogues.
std::size_t fuse_gelu(Graph& graph);

// Moves into the matrix products' epilogues what follows them: first each Add of a 1-D constant
// of B's columns that is the only reader of a MatMul with constant B (a Linear layer as PyTorch
// exports it on more than two dimensions) becomes the MatMul's bias, its third input; then each
// Relu, Clip to [0, 6], Sigmoid, Tanh and Gelu (its erf form) that is the only reader of a
// Conv's, Gemm's, MatMul's, Add's, Sub's, Mul's, Max's or Min's result (and not a graph output)
// becomes that node's activation; a Gemm only where its C is a bias (a row, beta and alpha 1),
// which the product then adds on the core too; a Max or Min of two inputs. The fused nodes go. On
// the core, sigmoid, tanh and GELU are the contract's approximations (within a bf16 ulp); on the
// host, the ONNX operators' fp32. Returns how many it fused. Run after fold_constants (Clip's
// bounds, the biases must be constants).
std::size_t fuse_epilogues(Graph& graph);

// Marks each Conv, Gemm and MatMul whose result goes, through operators that only move values
// or pick among them (MaxPool, Relu, Flatten, Reshape, Transpose, Squeeze, Unsqueeze,
// Identity), nowhere but into other products as their A or B, and is no graph output, to write
// its result as bf16 on the core (Node::bf16_result): the rounding (N-OUT) those products give
// their operands anyway, so the same bits, in half the bytes. A Gemm only where it takes an
// epilogue (alpha 1, C a bias). Returns how many it marked. Run after fuse_epilogues.
std::size_t round_results(Graph& graph);

// Turns each Conv, MatMul and Gemm between DequantizeLinear and QuantizeLinear (the QDQ form
// that onnxruntime's quantize_static writes) into one quantised product that runs on the core's
// int8 datapath: QLinearConv, QLinearMatMul, or QGemm (onnxruntime's com.microsoft operator) for
// a Gemm with a bias. Fused where the input is quantised per tensor, the weights symmetric (per
// tensor, or per output channel), the bias (if any) int32 at the input scale times the weight
// scale, and the product's only reader the QuantizeLinear (per tensor) or a Relu or Clip to
// [0, 6] that is followed by one (the activation then the clamp of the requantisation). The
// DequantizeLinear nodes nothing reads any more go. Returns how many it fused. Run before
// fold_constants, which would fold the weights' DequantizeLinear into float weights.
std::size_t fuse_quantized_products(Graph& graph);

// Turns each patch embedding that a vision transformer writes without a convolution (images of
// one channel, padded by a Pad of 0.0 or not, cut by Reshapes and a Transpose into patches of
// ph x pw pixels, each a row of A, times constant weights: a MatMul, or a QLinearMatMul after
// fuse_quantized_products, whose Pad pads with the zero point) into the convolution it is, of
// kernel and stride ph x pw: onnxruntime's NHWC convolution (com.microsoft's NhwcConv, or its
// QLinearConv with channels_last), between Reshapes. The same bits: its sums run over a patch's
// pixels in the product's order. On the core the convolution reads the images (plan_conv) where
// the Transpose moved runs shorter than an array row. Checked on the offsets the nodes move,
// with two and three images. Returns how many it fused. Run after fuse_epilogues (the MatMul's
// bias and activation go with it), before round_results.
std::size_t fuse_patch_embeddings(Graph& graph);

// Per operator of one run: its work, where it ran (a view or shape arithmetic on the host, doing
// nothing a core would: no host step), the multiply-accumulates it took and, on a backend
// with performance counters (the RTL), the cycles and the bytes its products moved over the
// host bus.
struct OpRun {
  std::string node;  // its label
  std::string op;
  NodeWork work = NodeWork::Values;
  bool on_accelerator = false;
  // Values computed on the host besides (a recurrent node's gates on a core without a vector
  // unit): a host step as well.
  bool host_arithmetic = false;
  std::uint64_t macs = 0;      // products of two operands (matrix products, convolutions)
  std::uint64_t vector_macs = 0;  // of those, the vector unit's (depthwise convolutions)
  std::uint64_t products = 0;  // GEMMs sent to the accelerator
  // Program runs the host started for them: one a GEMM, except that a compiled model's chain
  // (products that keep their results in the core's memory for the next) runs as one program,
  // counted at its last.
  std::uint64_t programs = 0;
  // Of those GEMMs, the convolutions the core ran from their images (plan_conv), not from their
  // im2col rows.
  std::uint64_t from_images = 0;
  // Bytes the host wrote into the accelerator's memory and read from it for those GEMMs: the
  // weights (written on a session's first run only: they stay resident), and the rest (the
  // other operands, the programs and the results).
  std::uint64_t weight_bytes = 0;
  std::uint64_t host_bytes = 0;
  // The cycle model's estimate of those GEMMs on the backend's core (tpu/cycle_model.hpp), on
  // every backend; the RTL's counters below are what it measured.
  double estimated_cycles = 0;
  // Of those cycles, the vector unit's busy ones (ELTWISE: eltwise_cycles), as the cycle model
  // gives them; the RTL's VECTOR_BUSY counter below.
  double estimated_vector_cycles = 0;
  bool counted = false;        // the figures below are the backend's counters
  std::uint64_t cycles = 0;
  std::uint64_t vector_cycles = 0;
  std::uint64_t useful_macs = 0;  // the counters' USEFUL_MACS
  std::uint64_t bus_bytes = 0;    // AXI4 read and write beats times the bus width
};

// A graph run on one backend, batch after batch: the weights of its matrix products are
// written into the backend's host memory the first time each product runs and stay there
// (resident), so that later runs write only activations and programs. The graph and the
// backend must outlive the session, and nothing else may use the backend's memory meanwhile.
class Session {
 public:
  // `accelerator` null runs everything on the host.
  Session(const Graph& graph, Backend* accelerator);
  // A compiled model (tpu/graph/compiled.hpp) on a backend of the core it was compiled for
  // (std::invalid_argument otherwise): its image is written on the first run, and each product
  // runs the GEMMs compiled for it. The model must outlive the session.
  Session(const CompiledModel& model, Backend& accelerator);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the graph on `inputs` (in the order of graph.inputs, each of its type, its shape with
  // any dimension the file leaves open): returns the outputs in the order of graph.outputs;
  // `runs`, when given, receives each node's figures. Throws std::invalid_argument for inputs
  // of the wrong number, type or shape, std::runtime_error (one line naming the node) for a
  // node that cannot run on what it gets.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, std::vector<OpRun>* runs = nullptr);
  // Bytes of weights resident on the accelerator (with a compiled model: its image, the
  // programs included).
  std::uint64_t resident_bytes() const;

 private:
  friend CompiledModel compile(const Graph& graph, const HardwareConfig& config, std::size_t batch);
  // compile()'s trace: the products' GEMMs planned into `gemms`, not run, the nodes the vector
  // unit will run into `vector_nodes`, the outputs of the nodes of NodeWork::ShapeArithmetic
  // into `shape_values`, and the output shapes of the nodes that its shapes make views (a
  // Transpose of axes of one element) into `view_shapes`, by node name.
  void record(std::vector<ops::TracedGemm>& gemms, std::vector<std::string>& vector_nodes,
              std::map<std::string, Tensor>& shape_values,
              std::map<std::string, Shape>& view_shapes);
  struct State;
  const Graph& graph_;
  Backend* accelerator_;
  std::unique_ptr<State> state_;
};

// One run in a session of its own.
std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs, Backend* accelerator,
                        std::vector<OpRun>* runs = nullptr);

}  // namespace tpu::graph
