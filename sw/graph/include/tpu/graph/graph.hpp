// The graph IR: one representation of a network, whatever wrote it (docs/graph.md). A graph is
// a DAG of operators over named tensors, in an order in which every operator comes after the
// operators whose outputs it reads; the graph's inputs are fed per inference, its constants
// (weights and the shape arithmetic folded from them) are part of the graph.
//
// Tensors are dense and row-major, with a shape (any rank; rank 0 is a scalar) and an element
// type. Float tensors are float32; integer tensors (shapes, indices, flags, quantised values)
// hold their values as int64, whatever their width in the file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpu::graph {

enum class DType : std::uint8_t { Float32, Int64, Int32, Int8, UInt8, Bool };

// The type's name as the errors say it: "float32", "int64", ...
const char* dtype_name(DType type);

using Shape = std::vector<std::int64_t>;

struct Tensor {
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<float> floats;       // Float32
  std::vector<std::int64_t> ints;  // every other type
  // Each matrix of the last two axes lies as its transpose's rows: a Transpose of those axes
  // left the values where they were, for a MatMul that takes them as B on a core that reads B
  // transposed (transposed_operands, executor.hpp). Only the executor sets it.
  bool stored_transposed = false;
  // A compiled model's product weights that lie in its image alone (compile()): the tensor has
  // its type and shape, which the host's kernels take, and no values (floats empty).
  bool values_on_core = false;

  Tensor() = default;
  // Zeros of the type and shape.
  Tensor(DType type, Shape dims);
  static Tensor of_floats(Shape dims, std::vector<float> values);
  static Tensor of_ints(Shape dims, std::vector<std::int64_t> values, DType type = DType::Int64);

  bool is_float() const { return dtype == DType::Float32; }
  std::size_t size() const { return is_float() ? floats.size() : ints.size(); }
  std::size_t rank() const { return shape.size(); }
  // Value i as a double or as an integer, whatever the type (a float truncated toward zero).
  double value(std::size_t i) const {
    return is_float() ? floats[i] : static_cast<double>(ints[i]);
  }
  std::int64_t int_value(std::size_t i) const {
    return is_float() ? static_cast<std::int64_t>(floats[i]) : ints[i];
  }
};

// Elements of a shape (1 for a scalar).
std::size_t element_count(const Shape& shape);
// "2x3x4", or "a scalar".
std::string shape_text(const Shape& shape);

// An operator's attribute: one of ONNX's kinds.
struct Attribute {
  enum class Kind : std::uint8_t {
    Int,
    Float,
    String,
    Ints,
    Floats,
    Strings,
    Tensor
  } kind = Kind::Int;
  std::int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::optional<graph::Tensor> tensor;

  static Attribute of_int(std::int64_t value);
  static Attribute of_ints(std::vector<std::int64_t> values);
  static Attribute of_float(float value);
};

// An activation fused into a matrix product's epilogue (fuse_epilogues, executor.hpp): on the
// core the activation unit applies it to the sums, after the bias (relu, relu6 exactly; sigmoid,
// tanh and GELU as the contract's approximations, docs/numerics.md's N-ACT).
enum class Epilogue : std::uint8_t { None, Relu, Relu6, Sigmoid, Tanh, Gelu };

struct Node {
  std::string op;                    // the operator, e.g. "Conv"
  std::string name;                  // as the file names it (or "<op> <index>" where it has none)
  std::vector<std::string> inputs;   // "" for an optional input left out
  std::vector<std::string> outputs;  // "" for an optional output not wanted
  std::map<std::string, Attribute> attributes;
  // The activation that followed this Conv, Gemm, MatMul, Add, Sub, Mul, Max or Min, now
  // applied to its results.
  Epilogue epilogue = Epilogue::None;
  // This Conv, Gemm or MatMul writes its results as bf16 on the core: every reader rounds them
  // to bf16 anyway (round_results, executor.hpp).
  bool bf16_result = false;

  // "node \"conv3\" (Conv)": how errors name it.
  std::string label() const;
  bool has(const std::string& attribute) const { return attributes.count(attribute) != 0; }
  // An attribute's value, or `fallback` where the node has none. Throws std::runtime_error
  // (naming the node) for an attribute of another kind.
  std::int64_t int_attr(const std::string& name, std::int64_t fallback) const;
  float float_attr(const std::string& name, float fallback) const;
  std::string string_attr(const std::string& name, const std::string& fallback) const;
  std::vector<std::int64_t> ints_attr(const std::string& name,
                                      std::vector<std::int64_t> fallback = {}) const;
  std::vector<float> floats_attr(const std::string& name) const;
  std::vector<std::string> strings_attr(const std::string& name) const;
  // Input i's name, or "" where the node has fewer inputs or leaves it out.
  const std::string& input(std::size_t i) const;
};

// A graph input or output: its name, element type and shape, where a dimension of -1 is not
// fixed by the file (the batch, typically); without `ranked` the file gives no shape at all.
struct ValueInfo {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  bool ranked = true;
};

// One line saying how `given` differs from what the graph input `info` takes (its type, its
// rank, a fixed dimension), empty when it fits.
std::string input_mismatch(const ValueInfo& info, const Tensor& given);

struct Graph {
  std::string name;
  int opset = 0;  // of the default domain: operators behave as this version defines them
  std::vector<ValueInfo> inputs, outputs;
  std::map<std::string, Tensor> constants;
  std::vector<Node> nodes;  // in an order in which each node's inputs come before it
};

// One line naming what is wrong where the nodes do not form a valid DAG in order (an input that
// no earlier node, graph input or constant provides; a tensor written twice; an output that
// nothing provides); empty when they do.
std::string check_order(const Graph& graph);

}  // namespace tpu::graph
