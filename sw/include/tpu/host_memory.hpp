// Host memory as a TPU core sees it: bytes at 32-bit addresses from 0 to
// size() - 1. An access outside them is a bus error (an AXI4 SLVERR on the RTL
// backend, BUS_READ or BUS_WRITE on every backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace tpu {

class HostMemory {
 public:
  explicit HostMemory(std::size_t bytes = 0) : bytes_(bytes, 0) {}

  std::size_t size() const { return bytes_.size(); }
  void resize(std::size_t bytes) { bytes_.resize(bytes, 0); }
  bool contains(std::uint64_t addr, std::uint64_t length) const {
    return addr <= bytes_.size() && length <= bytes_.size() - addr;
  }

  void write(std::uint64_t addr, const void* data, std::size_t length) {
    check(addr, length);
    if (length) std::memcpy(bytes_.data() + addr, data, length);
  }
  void read(std::uint64_t addr, void* data, std::size_t length) const {
    check(addr, length);
    if (length) std::memcpy(data, bytes_.data() + addr, length);
  }

  template <typename T>
  void write_array(std::uint64_t addr, const std::vector<T>& values) {
    write(addr, values.data(), values.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> read_array(std::uint64_t addr, std::size_t count) const {
    std::vector<T> values(count);
    read(addr, values.data(), count * sizeof(T));
    return values;
  }

  std::uint8_t* data() { return bytes_.data(); }
  const std::uint8_t* data() const { return bytes_.data(); }

 private:
  void check(std::uint64_t addr, std::uint64_t length) const {
    if (!contains(addr, length)) {
      throw std::out_of_range("host memory access of " + std::to_string(length) + " bytes at " +
                              std::to_string(addr) + " is outside its " +
                              std::to_string(bytes_.size()) + " bytes");
    }
  }

  std::vector<std::uint8_t> bytes_;
};

}  // namespace tpu
