// The host end of the UART link to an FPGA board (docs/link.md, rtl/defs/link.toml): request and
// reply frames with their CRC, and a client that reads and writes the core's registers and the
// board's memory through any SerialPort (a real one, or the board's simulation in sim/backends).
//
// Every failure is a LinkError with a one-line message: the board rejecting a request (with the
// status it gave), a reply that never came, or a reply that arrived damaged. Requests the board
// did not carry out (CORRUPT, TIMEOUT), and requests that may be repeated without harm, are
// retried first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/link_defs.hpp"

namespace tpu::link {

class LinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A byte stream to the board.
class SerialPort {
 public:
  virtual ~SerialPort() = default;
  virtual std::string name() const = 0;
  // Hands every byte to the line.
  virtual void write(const std::uint8_t* data, std::size_t size) = 0;
  // Up to `size` bytes, waiting at most `timeout_ms` in all; returns how many arrived.
  virtual std::size_t read(std::uint8_t* data, std::size_t size, unsigned timeout_ms) = 0;
  // Drops every byte that has arrived and not been read.
  virtual void discard_input() = 0;
  // Milliseconds since the port was opened: wall-clock time, or simulated time.
  virtual double elapsed_ms() const = 0;
};

// zlib's crc32 of `size` bytes, continuing from `crc` (0 to start).
std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t crc = 0);

// The bytes of a request frame. Throws std::invalid_argument when the payload is longer than
// the 16-bit length field holds.
std::vector<std::uint8_t> encode_request(Command command, std::uint8_t tag, std::uint32_t address,
                                         const std::vector<std::uint8_t>& payload);

struct Reply {
  Status status = Status::Ok;
  std::uint8_t tag = 0;
  std::vector<std::uint8_t> payload;
};

// The board's INFO record.
struct BoardInfo {
  unsigned version = 0;
  unsigned max_payload = 0;
  std::uint32_t mem_bytes = 0;
  std::uint32_t clock_hz = 0;
  std::uint32_t baud = 0;
};

struct LinkOptions {
  std::uint32_t baud = 1'000'000;   // the line's rate: how long frames take
  unsigned reply_timeout_ms = 100;  // after the request's last byte, beyond the reply's own time
  unsigned retries = 2;             // further attempts of a request that may be repeated
};

class LinkClient {
 public:
  // Reads the board's INFO record; throws LinkError if there is no board, or it speaks another
  // protocol version.
  LinkClient(SerialPort& port, const LinkOptions& options);

  const BoardInfo& info() const { return info_; }
  BoardInfo read_info();

  std::uint32_t read_register(std::uint32_t offset);
  // `repeatable`: writing the value twice does no harm (not so for CTRL's START), so the write
  // is retried when its reply is lost.
  void write_register(std::uint32_t offset, std::uint32_t value, bool repeatable = true);
  // Any number of bytes, in requests of at most max_payload bytes.
  void read_memory(std::uint32_t address, std::uint8_t* data, std::size_t size);
  void write_memory(std::uint32_t address, const std::uint8_t* data, std::size_t size);

  // One request and its reply, as the board gave it (tests send malformed requests with it).
  // Retries as described above; any status other than OK is a LinkError.
  Reply transact(Command command, std::uint32_t address, const std::vector<std::uint8_t>& payload,
                 bool repeatable);

  // Requests sent, counting every attempt.
  std::uint64_t requests() const { return requests_; }

 private:
  enum class Outcome { Ok, Rejected, NoReply, Damaged };
  Outcome attempt_once(const std::vector<std::uint8_t>& frame, std::uint8_t tag,
                       std::size_t reply_max, Reply& reply, std::string& problem);
  bool read_exact(std::uint8_t* data, std::size_t size, double deadline_ms);
  // Waits until the board has given up on a broken request, then drops what arrived.
  void resynchronise();
  // Milliseconds the line takes for `bytes` characters of ten bits.
  double line_ms(std::size_t bytes) const;

  SerialPort& port_;
  LinkOptions options_;
  BoardInfo info_;
  std::uint8_t next_tag_ = 1;
  std::uint64_t requests_ = 0;
};

}  // namespace tpu::link
