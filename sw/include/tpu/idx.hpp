// IDX files (the format of MNIST and Fashion-MNIST), gzip-compressed or not:
// a big-endian header (two zero bytes, a type code, the number of
// dimensions, then each dimension as a 32-bit size) and the data. Only
// unsigned bytes (type 0x08) are read, which is what the data sets hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::idx {

struct Array {
  std::vector<std::uint32_t> shape;
  std::vector<std::uint8_t> data;  // C order
};

// Throws std::runtime_error("<path>: <what is wrong>") for a missing or
// unreadable file, a corrupt gzip stream, a bad header, an element type other
// than unsigned bytes, or data shorter or longer than the header says.
Array read(const std::string& path);

// A labelled image set: images N x rows x cols, labels N.
struct Dataset {
  std::uint32_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> images;  // count * rows * cols
  std::vector<std::uint8_t> labels;  // count
};

// Reads an images file and its labels file and checks that they belong
// together (same count, 3-D images, 1-D labels, labels below `classes`).
Dataset read_dataset(const std::string& images_path, const std::string& labels_path,
                     unsigned classes = 10);

}  // namespace tpu::idx
