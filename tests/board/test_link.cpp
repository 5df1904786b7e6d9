// The host link's frames, against expectations computed here: the CRC-32 catalogue's check
// value, and a bit-by-bit CRC of the frame's bytes laid out by hand from docs/link.md.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tpu/link.hpp"

namespace tpu::link {
namespace {

// CRC-32/ISO-HDLC one bit at a time, as the CRC catalogue defines it (reflected polynomial
// 0xEDB88320, initial value and final XOR all ones).
std::uint32_t bitwise_crc32(const std::vector<std::uint8_t>& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::uint8_t byte : bytes) {
    for (int bit = 0; bit < 8; ++bit) {
      const bool feedback = ((crc ^ (byte >> bit)) & 1u) != 0;
      crc = (crc >> 1) ^ (feedback ? 0xEDB88320u : 0u);
    }
  }
  return ~crc;
}

TEST(Link, Crc32IsTheCataloguesCheckValue) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32(reinterpret_cast<const std::uint8_t*>(check.data()), check.size()), 0xCBF43926u);
  EXPECT_EQ(bitwise_crc32({check.begin(), check.end()}), 0xCBF43926u);
}

TEST(Link, Crc32ContinuesAcrossPieces) {
  const std::vector<std::uint8_t> bytes{1, 2, 3, 4, 5, 6, 7};
  const std::uint32_t first = crc32(bytes.data(), 3);
  EXPECT_EQ(crc32(bytes.data() + 3, 4, first), crc32(bytes.data(), bytes.size()));
}

TEST(Link, RequestFrameLayout) {
  const std::vector<std::uint8_t> frame =
      encode_request(Command::WriteReg, 0x42, 0x00000020, {0x78, 0x56, 0x34, 0x12});
  // sync, command, tag, address (LE), length (LE), payload
  const std::vector<std::uint8_t> body{0x03, 0x42, 0x20, 0x00, 0x00, 0x00,
                                       0x04, 0x00, 0x78, 0x56, 0x34, 0x12};
  ASSERT_EQ(frame.size(), 1 + body.size() + 4);
  EXPECT_EQ(frame[0], 0xA5);
  EXPECT_EQ(std::vector<std::uint8_t>(frame.begin() + 1, frame.end() - 4), body);
  const std::uint32_t crc = bitwise_crc32(body);
  EXPECT_EQ(frame[frame.size() - 4], crc & 0xFF);
  EXPECT_EQ(frame[frame.size() - 3], (crc >> 8) & 0xFF);
  EXPECT_EQ(frame[frame.size() - 2], (crc >> 16) & 0xFF);
  EXPECT_EQ(frame[frame.size() - 1], crc >> 24);
}

TEST(Link, EmptyPayloadAndLongAddress) {
  const std::vector<std::uint8_t> frame = encode_request(Command::Info, 1, 0xDEADBEEF, {});
  const std::vector<std::uint8_t> body{0x01, 0x01, 0xEF, 0xBE, 0xAD, 0xDE, 0x00, 0x00};
  ASSERT_EQ(frame.size(), 1 + body.size() + 4);
  EXPECT_EQ(std::vector<std::uint8_t>(frame.begin() + 1, frame.begin() + 9), body);
}

TEST(Link, PayloadBeyondTheLengthFieldIsRefused) {
  EXPECT_THROW(encode_request(Command::WriteMem, 1, 0, std::vector<std::uint8_t>(70000)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tpu::link
