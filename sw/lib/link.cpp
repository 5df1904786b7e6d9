#include "tpu/link.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <limits>

namespace tpu::link {

namespace {

constexpr std::size_t kRequestHeader = 9;  // sync, command, tag, address, length
constexpr std::size_t kReplyHeader = 5;    // sync, status, tag, length
constexpr std::size_t kCrcBytes = 4;
constexpr unsigned kBitsPerChar = 10;  // start, eight data bits, stop

const char* command_name(Command command) {
  switch (command) {
    case Command::Info:
      return "INFO";
    case Command::ReadReg:
      return "READ_REG";
    case Command::WriteReg:
      return "WRITE_REG";
    case Command::ReadMem:
      return "READ_MEM";
    case Command::WriteMem:
      return "WRITE_MEM";
  }
  return "an unknown command";
}

void put_le(std::vector<std::uint8_t>& bytes, std::uint32_t value, unsigned count) {
  for (unsigned b = 0; b < count; ++b) bytes.push_back(static_cast<std::uint8_t>(value >> (8 * b)));
}

std::uint32_t get_le(const std::uint8_t* bytes, unsigned count) {
  std::uint32_t value = 0;
  for (unsigned b = 0; b < count; ++b) value |= std::uint32_t{bytes[b]} << (8 * b);
  return value;
}

// The request did not reach the board whole: it did nothing, so it may always be sent again.
bool not_carried_out(Status status) {
  return status == Status::Corrupt || status == Status::Timeout;
}

}  // namespace

std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t crc) {
  while (size > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = static_cast<std::uint32_t>(::crc32(crc, data, chunk));
    data += chunk;
    size -= chunk;
  }
  return crc;
}

std::vector<std::uint8_t> encode_request(Command command, std::uint8_t tag, std::uint32_t address,
                                         const std::vector<std::uint8_t>& payload) {
  if (payload.size() > std::numeric_limits<std::uint16_t>::max()) {
    throw std::invalid_argument(
        fmt::format("a payload of {} bytes does not fit a request frame", payload.size()));
  }
  std::vector<std::uint8_t> frame{kRequestSync, static_cast<std::uint8_t>(command), tag};
  put_le(frame, address, 4);
  put_le(frame, static_cast<std::uint32_t>(payload.size()), 2);
  frame.insert(frame.end(), payload.begin(), payload.end());
  put_le(frame, crc32(frame.data() + 1, frame.size() - 1), kCrcBytes);
  return frame;
}

LinkClient::LinkClient(SerialPort& port, const LinkOptions& options)
    : port_(port), options_(options) {
  if (options_.baud == 0) throw LinkError("the baud rate must be above 0");
  // Until the INFO record says otherwise, replies are assumed as long as the protocol allows.
  info_.max_payload = kMaxPayload;
  info_ = read_info();
}

BoardInfo LinkClient::read_info() {
  const Reply reply = transact(Command::Info, 0, {}, true);
  if (reply.payload.size() < kInfoVersionOffset + kInfoVersionBytes) {
    throw LinkError(fmt::format("{}: the board's INFO record has {} bytes", port_.name(),
                                reply.payload.size()));
  }
  const std::uint8_t* record = reply.payload.data();
  BoardInfo info;
  info.version = get_le(record + kInfoVersionOffset, kInfoVersionBytes);
  if (info.version != kVersion || reply.payload.size() != kInfoBytes) {
    throw LinkError(fmt::format("{}: the board speaks version {} of the host link, this program {}",
                                port_.name(), info.version, kVersion));
  }
  info.max_payload = get_le(record + kInfoMaxPayloadOffset, kInfoMaxPayloadBytes);
  info.mem_bytes = get_le(record + kInfoMemBytesOffset, kInfoMemBytesBytes);
  info.clock_hz = get_le(record + kInfoClockHzOffset, kInfoClockHzBytes);
  info.baud = get_le(record + kInfoBaudOffset, kInfoBaudBytes);
  if (info.max_payload == 0) {
    throw LinkError(fmt::format("{}: the board's INFO record gives no payload size", port_.name()));
  }
  return info;
}

std::uint32_t LinkClient::read_register(std::uint32_t offset) {
  const Reply reply = transact(Command::ReadReg, offset, {}, true);
  if (reply.payload.size() != 4) {
    throw LinkError(fmt::format("{}: READ_REG at 0x{:03X} returned {} bytes", port_.name(), offset,
                                reply.payload.size()));
  }
  return get_le(reply.payload.data(), 4);
}

void LinkClient::write_register(std::uint32_t offset, std::uint32_t value, bool repeatable) {
  std::vector<std::uint8_t> payload;
  put_le(payload, value, 4);
  transact(Command::WriteReg, offset, payload, repeatable);
}

void LinkClient::read_memory(std::uint32_t address, std::uint8_t* data, std::size_t size) {
  for (std::size_t done = 0; done < size;) {
    const auto chunk =
        static_cast<std::uint32_t>(std::min<std::size_t>(size - done, info_.max_payload));
    std::vector<std::uint8_t> payload;
    put_le(payload, chunk, 2);
    const auto at = static_cast<std::uint32_t>(address + done);
    const Reply reply = transact(Command::ReadMem, at, payload, true);
    if (reply.payload.size() != chunk) {
      throw LinkError(fmt::format("{}: READ_MEM of {} bytes at 0x{:X} returned {}", port_.name(),
                                  chunk, at, reply.payload.size()));
    }
    std::copy(reply.payload.begin(), reply.payload.end(), data + done);
    done += chunk;
  }
}

void LinkClient::write_memory(std::uint32_t address, const std::uint8_t* data, std::size_t size) {
  for (std::size_t done = 0; done < size;) {
    const std::size_t chunk = std::min<std::size_t>(size - done, info_.max_payload);
    const std::vector<std::uint8_t> payload(data + done, data + done + chunk);
    transact(Command::WriteMem, static_cast<std::uint32_t>(address + done), payload, true);
    done += chunk;
  }
}

Reply LinkClient::transact(Command command, std::uint32_t address,
                           const std::vector<std::uint8_t>& payload, bool repeatable) {
  // The longest reply this request can get: READ_MEM's bytes, or an INFO record.
  std::size_t reply_max = command == Command::ReadMem ? info_.max_payload : kInfoBytes;
  reply_max = std::max<std::size_t>(reply_max, 4);
  const std::string what = fmt::format("{} at 0x{:X}", command_name(command), address);
  std::string problem;
  for (unsigned attempt = 0; attempt <= options_.retries; ++attempt) {
    // Tag 0 is what the board answers when a request broke off before its tag: never ours.
    if (next_tag_ == 0) next_tag_ = 1;
    const std::uint8_t tag = next_tag_++;
    Reply reply;
    const Outcome outcome = attempt_once(encode_request(command, tag, address, payload), tag,
                                         reply_max, reply, problem);
    if (outcome == Outcome::Ok) return reply;
    if (outcome == Outcome::Rejected && !not_carried_out(reply.status)) {
      throw LinkError(fmt::format("{}: the board rejected {}: {} ({})", port_.name(), what,
                                  status_name(reply.status), status_doc(reply.status)));
    }
    const bool may_repeat = repeatable || outcome == Outcome::Rejected;
    if (!may_repeat) {
      throw LinkError(fmt::format("{}: {}: {}; it may or may not have been carried out",
                                  port_.name(), what, problem));
    }
    resynchronise();
  }
  throw LinkError(
      fmt::format("{}: {}: {} ({} attempts)", port_.name(), what, problem, options_.retries + 1));
}

LinkClient::Outcome LinkClient::attempt_once(const std::vector<std::uint8_t>& frame,
                                             std::uint8_t tag, std::size_t reply_max, Reply& reply,
                                             std::string& problem) {
  port_.write(frame.data(), frame.size());
  ++requests_;
  // The request and the longest reply on the line, the board's wait before it answers a request
  // that broke off, and the time the port may add.
  const double wait_ms = line_ms(frame.size() + kReplyHeader + reply_max + kCrcBytes) +
                         line_ms(kFrameTimeoutBits / kBitsPerChar) + options_.reply_timeout_ms;
  const double deadline = port_.elapsed_ms() + wait_ms;
  while (true) {
    // Anything before the sync byte is noise, or the rest of an earlier reply.
    std::uint8_t sync = 0;
    do {
      if (!read_exact(&sync, 1, deadline)) {
        problem = fmt::format(
            "no reply within {:.0f} ms (is the board programmed, and its line at "
            "{} baud?)",
            wait_ms, options_.baud);
        return Outcome::NoReply;
      }
    } while (sync != kReplySync);

    std::uint8_t header[kReplyHeader] = {kReplySync};
    if (!read_exact(header + 1, kReplyHeader - 1, deadline)) {
      problem = "the reply broke off in its header";
      return Outcome::Damaged;
    }
    const std::size_t length = get_le(header + 3, 2);
    if (length > info_.max_payload) {
      problem = fmt::format("a reply claimed {} bytes of payload", length);
      return Outcome::Damaged;
    }
    std::vector<std::uint8_t> rest(length + kCrcBytes);
    if (!read_exact(rest.data(), rest.size(), deadline)) {
      problem = "the reply broke off before its end";
      return Outcome::Damaged;
    }
    std::uint32_t crc = crc32(header + 1, kReplyHeader - 1);
    crc = crc32(rest.data(), length, crc);
    if (crc != get_le(rest.data() + length, kCrcBytes)) {
      problem = "the reply's CRC did not match (a damaged line?)";
      return Outcome::Damaged;
    }
    reply.status = static_cast<Status>(header[1]);
    reply.tag = header[2];
    reply.payload.assign(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(length));
    // A reply with another tag answers an earlier request that was given up on, unless the
    // board could not read the tag of this one.
    if (reply.tag != tag && !not_carried_out(reply.status)) continue;
    if (reply.status == Status::Ok) return Outcome::Ok;
    problem = fmt::format("the board answered {} ({})", status_name(reply.status),
                          status_doc(reply.status));
    return Outcome::Rejected;
  }
}

bool LinkClient::read_exact(std::uint8_t* data, std::size_t size, double deadline_ms) {
  std::size_t done = 0;
  while (done < size) {
    const double left = deadline_ms - port_.elapsed_ms();
    if (left <= 0) return false;
    done += port_.read(data + done, size - done, static_cast<unsigned>(left) + 1);
  }
  return true;
}

void LinkClient::resynchronise() {
  // The board answers a broken request after kFrameTimeoutBits quiet bit times; wait for that
  // answer, and for the line to stay quiet, then drop it all.
  const double quiet_ms = line_ms(2 * kFrameTimeoutBits / kBitsPerChar + kReplyHeader + kCrcBytes) +
                          options_.reply_timeout_ms;
  std::uint8_t sink[256];
  while (port_.read(sink, sizeof sink, static_cast<unsigned>(quiet_ms) + 1) > 0) {
  }
  port_.discard_input();
}

double LinkClient::line_ms(std::size_t bytes) const {
  return static_cast<double>(bytes) * kBitsPerChar * 1000.0 / options_.baud;
}

}  // namespace tpu::link
