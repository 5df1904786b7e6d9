// GTKWave translate-filter process for bf16 and fp32 signals: GTKWave writes each value of a
// signal the layout attaches it to (sim/*.gtkw, `^>` lines) as one line of hex digits, and shows
// the line this program answers. Built twice, with LANE_BITS 16 (tpu_wave_bf16) and 32
// (tpu_wave_fp32): a value of several lanes, a bus such as act_data_i, is shown lane by lane,
// the most significant first as in the hex, separated by " | ". Values that are not whole lanes
// of hex digits (x, z, a narrower signal) are echoed unchanged.
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

namespace {

constexpr std::size_t kDigitsPerLane = LANE_BITS / 4;

bool all_hex(std::string_view text) {
  for (const char c : text) {
    const bool digit = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!digit) return false;
  }
  return !text.empty();
}

// The lane's bits as the floating-point number they encode (bf16 is fp32's top half), in the
// shortest decimal that reads back to the same float.
std::string decimal(std::string_view hex) {
  std::uint32_t bits = 0;
  std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
  if (LANE_BITS == 16) bits <<= 16;
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  std::array<char, 32> text{};
  const auto result = std::to_chars(text.data(), text.data() + text.size(), value);
  return std::string(text.data(), result.ptr);
}

std::string translate(const std::string& value) {
  if (value.size() % kDigitsPerLane != 0 || !all_hex(value)) return value;
  std::string out;
  for (std::size_t at = 0; at < value.size(); at += kDigitsPerLane) {
    if (at != 0) out += " | ";
    out += decimal(std::string_view(value).substr(at, kDigitsPerLane));
  }
  return out;
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // GTKWave waits for each answer before it sends the next value.
    std::cout << translate(line) << std::endl;
  }
  return 0;
}
