// Reading ONNX files (internal to the ONNX front end): the model, its default opset, and tensors
// as the graph IR's, with values inline (typed fields or raw little-endian bytes) or in an
// external data file beside the model.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <optional>
#include <string>

#include "tpu/graph/graph.hpp"

namespace tpu::onnx_front {

// Parses the model at `path`. Throws std::runtime_error ("cannot open: <reason>", or "not an
// ONNX model (malformed, truncated, or without a graph)") for a file it cannot take.
onnx::ModelProto read_model(const std::string& path);

// The model's opset of the default domain. Throws std::runtime_error ("opset N of the default
// domain not supported (oldest to newest)") where it has none or one outside the range.
int default_opset(const onnx::ModelProto& model, int oldest, int newest);

// The graph IR's type of an ONNX element type, where it has one.
std::optional<graph::DType> dtype_of(int onnx_type);

// Reads `tensor`; external data from files relative to `model_dir`. Throws std::runtime_error
// with "<what>: <what is wrong>" for an element type the IR lacks, values that do not match
// the shape, or external data that is missing, outside the model's folder, or short.
graph::Tensor read_tensor(const onnx::TensorProto& tensor, const std::filesystem::path& model_dir,
                          const std::string& what);

}  // namespace tpu::onnx_front
