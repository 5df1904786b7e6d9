// Reading and writing lanes of Verilator port values. Verilator maps a port of
// up to 64 bits to an unsigned integer and a wider one to VlWide (32-bit words);
// lanes of 16 or 32 bits never straddle a word.
#pragma once

#include <cstdint>
#include <type_traits>

namespace tpu::harness {

template <typename Port>
void set_lane(Port& port, unsigned lane, unsigned width, std::uint32_t value) {
  const unsigned bit = lane * width;
  const std::uint64_t mask = (width >= 32) ? 0xFFFFFFFFull : ((1ull << width) - 1);
  if constexpr (std::is_integral_v<Port>) {
    const auto cleared = static_cast<std::uint64_t>(port) & ~(mask << bit);
    port = static_cast<Port>(cleared | ((value & mask) << bit));
  } else {
    auto& word = port[bit / 32];
    const unsigned shift = bit % 32;
    const auto cleared = static_cast<std::uint64_t>(word) & ~(mask << shift);
    word = static_cast<std::uint32_t>(cleared | ((value & mask) << shift));
  }
}

template <typename Port>
std::uint32_t get_lane(const Port& port, unsigned lane, unsigned width) {
  const unsigned bit = lane * width;
  const std::uint64_t mask = (width >= 32) ? 0xFFFFFFFFull : ((1ull << width) - 1);
  if constexpr (std::is_integral_v<Port>) {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(port) >> bit) & mask);
  } else {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(port[bit / 32]) >> (bit % 32)) &
                                      mask);
  }
}

}  // namespace tpu::harness
