// NumPy .npy files of float32 ('<f4'), C order, with one or two dimensions: what the runtime
// exchanges with Python (weights, inputs, results). Reads format versions 1.0, 2.0 and 3.0 and
// writes 1.0. Anything else is refused with a one-line message naming the file and the problem.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tpu::npy {

struct Array {
  std::vector<std::size_t> shape;  // 1 or 2 nonzero dimensions
  std::vector<float> data;         // C order: element (r, c) at r * shape[1] + c

  std::size_t rows() const { return shape.empty() ? 0 : shape[0]; }
  std::size_t cols() const { return shape.size() == 2 ? shape[1] : 1; }
};

// Throws std::runtime_error ("<path>: <problem>") for a missing or unreadable file, a bad magic
// string, an unsupported version, a malformed header, a dtype other than '<f4', fortran_order
// True, a number of dimensions other than 1 or 2, an empty shape, or data of the wrong size.
Array read(const std::string& path);

// Writes through a temporary file in the same directory, renamed over `path` once complete, so a
// failure never leaves a partial file. Throws std::invalid_argument for an array read() would
// refuse (shape and data size disagree, 0 or more than 2 dimensions, a zero dimension), and
// std::runtime_error ("<path>: <problem>") when the file cannot be written.
void write(const std::string& path, const Array& array);

}  // namespace tpu::npy
