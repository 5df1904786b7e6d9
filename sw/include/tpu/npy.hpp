// NumPy .npy files of float32 ('<f4'), C order, with one or two dimensions (or, where asked, any
// number up to NumPy's 32, a scalar's none included): what the runtime exchanges with Python
// (weights, inputs, results, gradients); of int8 ('|i1') and int32 ('<i4'), the operands and
// results of int8 products; and of int64 ('<i8'), graphs' integer inputs and outputs. Reads format
// versions 1.0, 2.0 and 3.0 and writes 1.0. Anything else is refused with a one-line message naming
// the file and the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpu::npy {

// The dimensions a caller accepts.
enum class Dims { OneOrTwo, Any };

struct Array {
  std::vector<std::size_t> shape;  // nonzero extents: 1 or 2 of them unless read with Dims::Any
  std::vector<float> data;         // C order: element (r, c) at r * shape[1] + c

  std::size_t rows() const { return shape.empty() ? 0 : shape[0]; }
  std::size_t cols() const { return shape.size() == 2 ? shape[1] : 1; }
};

// Throws std::runtime_error ("<path>: <problem>") for a missing or unreadable file, a bad magic
// string, an unsupported version, a malformed header, a dtype other than '<f4', fortran_order
// True, a number of dimensions other than 1 or 2 (with Dims::Any, more than 32), an empty shape,
// or data of the wrong size.
Array read(const std::string& path, Dims dims = Dims::OneOrTwo);

// Writes through a temporary file in the same directory, renamed over `path` once complete, so a
// failure never leaves a partial file. Throws std::invalid_argument for an array read() would
// refuse (shape and data size disagree, 0 or more than 2 dimensions, a zero dimension), and
// std::runtime_error ("<path>: <problem>") when the file cannot be written.
void write(const std::string& path, const Array& array, Dims dims = Dims::OneOrTwo);

// Integer files: int8 ('|i1'; '<i1' and '>i1' read too), int32 ('<i4') or int64 ('<i8').
enum class Dtype { Float32, Int8, Int32, Int64 };

struct IntArray {
  std::vector<std::size_t> shape;
  Dtype dtype = Dtype::Int32;      // Int8 or Int32
  std::vector<std::int32_t> data;  // C order, int8 values widened

  std::size_t rows() const { return shape.empty() ? 0 : shape[0]; }
  std::size_t cols() const { return shape.size() == 2 ? shape[1] : 1; }
};

// As read(), for a file whose dtype is `dtype` (Int8 or Int32); any other dtype is refused with
// the message read() gives, naming the one expected.
IntArray read_int(const std::string& path, Dtype dtype, Dims dims = Dims::OneOrTwo);
// As write(); also std::invalid_argument for an Int8 array holding a value outside [-128, 127].
void write_int(const std::string& path, const IntArray& array, Dims dims = Dims::OneOrTwo);

// int64 files ('<i8'): the token ids, indices and class numbers of graphs' inputs and outputs.
struct Int64Array {
  std::vector<std::size_t> shape;
  std::vector<std::int64_t> data;  // C order
};
// As read() and write(), for int64 files.
Int64Array read_int64(const std::string& path, Dims dims = Dims::OneOrTwo);
void write_int64(const std::string& path, const Int64Array& array, Dims dims = Dims::OneOrTwo);

}  // namespace tpu::npy
