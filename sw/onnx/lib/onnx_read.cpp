#include "onnx_read.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tpu::onnx_front {
namespace {

using graph::DType;

std::size_t byte_width(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
      return 4;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::DOUBLE:
      return 8;
    default:
      return 1;  // INT8, UINT8, BOOL
  }
}

template <typename T>
T read_le(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));  // the host is little-endian, as ONNX's raw data is
  return value;
}

// The bytes of an externally stored tensor: location, offset and length as ONNX defines them.
std::string external_bytes(const onnx::TensorProto& tensor, const std::filesystem::path& dir,
                           const std::string& what) {
  std::string location;
  std::uint64_t offset = 0;
  std::optional<std::uint64_t> length;
  for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
    try {
      if (entry.key() == "location") location = entry.value();
      if (entry.key() == "offset") offset = std::stoull(entry.value());
      if (entry.key() == "length") length = std::stoull(entry.value());
    } catch (const std::exception&) {
      throw std::runtime_error(what + ": external data " + entry.key() + " \"" + entry.value() +
                               "\" is not a number");
    }
  }
  const std::filesystem::path relative(location);
  if (location.empty() || relative.is_absolute() ||
      std::find(relative.begin(), relative.end(), "..") != relative.end()) {
    throw std::runtime_error(what + ": external data location \"" + location +
                             "\" is not a file in the model's folder");
  }
  const std::filesystem::path file = dir / relative;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw std::runtime_error(what + ": external data " + file.string() + ": " +
                             std::strerror(errno));
  }
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const std::uint64_t wanted = length.value_or(offset <= size ? size - offset : 0);
  if (offset > size || wanted > size - offset) {
    throw std::runtime_error(what + ": external data " + file.string() + " is short (" +
                             std::to_string(size) + " bytes, " + std::to_string(wanted) +
                             " wanted from offset " + std::to_string(offset) + ")");
  }
  std::string bytes(wanted, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(wanted));
  return bytes;
}

}  // namespace

onnx::ModelProto read_model(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream bytes;
  bytes << file.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str()) || !model.has_graph() || model.graph().node_size() == 0) {
    throw std::runtime_error("not an ONNX model (malformed, truncated, or without a graph)");
  }
  return model;
}

int default_opset(const onnx::ModelProto& model, int oldest, int newest) {
  std::optional<std::int64_t> opset;
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") opset = id.version();
  }
  if (!opset || *opset < oldest || *opset > newest) {
    throw std::runtime_error("opset " + (opset ? std::to_string(*opset) : std::string("none")) +
                             " of the default domain not supported (" + std::to_string(oldest) +
                             " to " + std::to_string(newest) + ")");
  }
  return static_cast<int>(*opset);
}

std::optional<DType> dtype_of(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::DOUBLE:
      return DType::Float32;
    case onnx::TensorProto::INT64:
      return DType::Int64;
    case onnx::TensorProto::INT32:
      return DType::Int32;
    case onnx::TensorProto::INT8:
      return DType::Int8;
    case onnx::TensorProto::UINT8:
      return DType::UInt8;
    case onnx::TensorProto::BOOL:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

graph::Tensor read_tensor(const onnx::TensorProto& tensor, const std::filesystem::path& model_dir,
                          const std::string& what) {
  const int type = tensor.data_type();
  const std::optional<DType> dtype = dtype_of(type);
  if (!dtype) {
    throw std::runtime_error(what + ": element type " + std::to_string(type) +
                             " not supported (float32, float64, int64, int32, int8, uint8, bool)");
  }
  graph::Tensor t;
  t.dtype = *dtype;
  for (const std::int64_t d : tensor.dims()) {
    if (d < 0) throw std::runtime_error(what + ": a negative dimension");
    t.shape.push_back(d);
  }
  const std::size_t count = graph::element_count(t.shape);
  const bool external = tensor.data_location() == onnx::TensorProto::EXTERNAL;
  if (external || tensor.has_raw_data()) {
    const std::string bytes =
        external ? external_bytes(tensor, model_dir, what) : tensor.raw_data();
    const std::size_t width = byte_width(type);
    if (bytes.size() != count * width) {
      throw std::runtime_error(what + ": " + std::to_string(bytes.size()) + " bytes for shape " +
                               graph::shape_text(t.shape) + " of " + std::to_string(width) +
                               "-byte elements");
    }
    for (std::size_t i = 0; i < count; ++i) {
      const char* at = bytes.data() + i * width;
      switch (type) {
        case onnx::TensorProto::FLOAT:
          t.floats.push_back(read_le<float>(at));
          break;
        case onnx::TensorProto::DOUBLE:
          t.floats.push_back(static_cast<float>(read_le<double>(at)));
          break;
        case onnx::TensorProto::INT64:
          t.ints.push_back(read_le<std::int64_t>(at));
          break;
        case onnx::TensorProto::INT32:
          t.ints.push_back(read_le<std::int32_t>(at));
          break;
        case onnx::TensorProto::INT8:
          t.ints.push_back(read_le<std::int8_t>(at));
          break;
        case onnx::TensorProto::UINT8:
          t.ints.push_back(read_le<std::uint8_t>(at));
          break;
        default:
          t.ints.push_back(*at != 0);
          break;  // BOOL
      }
    }
  } else {
    switch (type) {
      case onnx::TensorProto::FLOAT:
        t.floats.assign(tensor.float_data().begin(), tensor.float_data().end());
        break;
      case onnx::TensorProto::DOUBLE:
        t.floats.assign(tensor.double_data().begin(), tensor.double_data().end());
        break;
      case onnx::TensorProto::INT64:
        t.ints.assign(tensor.int64_data().begin(), tensor.int64_data().end());
        break;
      default:  // int32, int8, uint8 and bool values are all stored in int32_data
        t.ints.assign(tensor.int32_data().begin(), tensor.int32_data().end());
        break;
    }
  }
  if (t.size() != count) {
    throw std::runtime_error(what + ": " + std::to_string(t.size()) + " values for shape " +
                             graph::shape_text(t.shape));
  }
  return t;
}

}  // namespace tpu::onnx_front
