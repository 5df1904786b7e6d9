#include "tpu/idx.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace tpu::idx {
namespace {

// The whole file, inflated if it is gzip (zlib reads plain files as they are).
std::vector<std::uint8_t> read_all(const std::string& path) {
  gzFile raw = gzopen(path.c_str(), "rb");
  if (!raw) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  const std::unique_ptr<gzFile_s, int (*)(gzFile)> file(raw, gzclose);
  std::vector<std::uint8_t> bytes;
  std::uint8_t chunk[1 << 16];
  for (;;) {
    const int n = gzread(file.get(), chunk, sizeof chunk);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      throw std::runtime_error(
          path + ": corrupt or unreadable: " + (code == Z_ERRNO ? std::strerror(errno) : message));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  // A gzip stream cut short reads as a short file; gzread only says so here.
  int code = 0;
  gzerror(file.get(), &code);
  if (code != Z_OK) throw std::runtime_error(path + ": truncated or corrupt gzip stream");
  return bytes;
}

std::uint32_t be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

}  // namespace

Array read(const std::string& path) {
  const std::vector<std::uint8_t> bytes = read_all(path);
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) {
    throw std::runtime_error(path + ": not an IDX file (bad magic number)");
  }
  if (bytes[2] != 0x08) {
    throw std::runtime_error(path + ": IDX element type " + std::to_string(bytes[2]) +
                             " is not supported (only unsigned bytes, type 8)");
  }
  const unsigned dims = bytes[3];
  if (dims == 0 || dims > 4) {
    throw std::runtime_error(path + ": IDX file with " + std::to_string(dims) + " dimensions");
  }
  if (bytes.size() < 4 + 4 * dims) throw std::runtime_error(path + ": truncated IDX header");
  Array array;
  std::uint64_t elements = 1;
  for (unsigned d = 0; d < dims; ++d) {
    array.shape.push_back(be32(&bytes[4 + 4 * d]));
    elements *= array.shape.back();
  }
  const std::uint64_t have = bytes.size() - (4 + 4 * dims);
  if (have != elements) {
    throw std::runtime_error(path + ": the header promises " + std::to_string(elements) +
                             " values, the file holds " + std::to_string(have));
  }
  array.data.assign(bytes.begin() + 4 + 4 * dims, bytes.end());
  return array;
}

Dataset read_dataset(const std::string& images_path, const std::string& labels_path,
                     unsigned classes) {
  const Array images = read(images_path);
  const Array labels = read(labels_path);
  if (images.shape.size() != 3) {
    throw std::runtime_error(images_path + ": images must be count x rows x cols");
  }
  if (labels.shape.size() != 1) throw std::runtime_error(labels_path + ": labels must be 1-D");
  if (images.shape[0] != labels.shape[0]) {
    throw std::runtime_error(labels_path + ": " + std::to_string(labels.shape[0]) + " labels for " +
                             std::to_string(images.shape[0]) + " images");
  }
  Dataset set;
  set.count = images.shape[0];
  set.rows = images.shape[1];
  set.cols = images.shape[2];
  set.images = images.data;
  set.labels = labels.data;
  for (std::uint8_t label : set.labels) {
    if (label >= classes) {
      throw std::runtime_error(labels_path + ": label " + std::to_string(label) +
                               " is not one of the " + std::to_string(classes) + " classes");
    }
  }
  return set;
}

}  // namespace tpu::idx
