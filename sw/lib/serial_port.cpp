#include "tpu/serial_port.hpp"

#include <fmt/format.h>
#include <libserialport.h>

#include <chrono>

namespace tpu::link {

namespace {

// libserialport's description of its last failure.
std::string last_error() {
  char* message = sp_last_error_message();
  std::string text = message ? message : "unknown error";
  sp_free_error_message(message);
  return text;
}

class LibSerialPort final : public SerialPort {
 public:
  LibSerialPort(const std::string& path, std::uint32_t baud)
      : path_(path), baud_(baud), opened_(std::chrono::steady_clock::now()) {
    if (sp_get_port_by_name(path.c_str(), &port_) != SP_OK) {
      throw LinkError(fmt::format("{}: no such serial port", path));
    }
    if (sp_open(port_, SP_MODE_READ_WRITE) != SP_OK) {
      const std::string reason = last_error();
      sp_free_port(port_);
      throw LinkError(fmt::format("{}: cannot open: {}", path, reason));
    }
    const bool configured =
        sp_set_baudrate(port_, static_cast<int>(baud)) == SP_OK && sp_set_bits(port_, 8) == SP_OK &&
        sp_set_parity(port_, SP_PARITY_NONE) == SP_OK && sp_set_stopbits(port_, 1) == SP_OK &&
        sp_set_flowcontrol(port_, SP_FLOWCONTROL_NONE) == SP_OK;
    if (!configured) {
      const std::string reason = last_error();
      close();
      throw LinkError(fmt::format("{}: cannot set {} baud, 8N1: {}", path, baud, reason));
    }
    sp_flush(port_, SP_BUF_BOTH);
  }
  ~LibSerialPort() override { close(); }
  LibSerialPort(const LibSerialPort&) = delete;
  LibSerialPort& operator=(const LibSerialPort&) = delete;

  std::string name() const override { return path_; }

  void write(const std::uint8_t* data, std::size_t size) override {
    // Ten bits a byte at the line's rate, and a second for the operating system.
    const auto timeout = static_cast<unsigned>(size * 10 * 1000 / baud_ + 1000);
    const sp_return written = sp_blocking_write(port_, data, size, timeout);
    if (written < 0) throw LinkError(fmt::format("{}: write failed: {}", path_, last_error()));
    if (static_cast<std::size_t>(written) != size) {
      throw LinkError(
          fmt::format("{}: wrote {} of {} bytes in {} ms", path_, written, size, timeout));
    }
  }

  std::size_t read(std::uint8_t* data, std::size_t size, unsigned timeout_ms) override {
    // A timeout of 0 would wait for ever.
    const sp_return got = sp_blocking_read(port_, data, size, timeout_ms == 0 ? 1 : timeout_ms);
    if (got < 0) throw LinkError(fmt::format("{}: read failed: {}", path_, last_error()));
    return static_cast<std::size_t>(got);
  }

  void discard_input() override { sp_flush(port_, SP_BUF_INPUT); }

  double elapsed_ms() const override {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - opened_)
        .count();
  }

 private:
  void close() {
    if (!port_) return;
    sp_close(port_);
    sp_free_port(port_);
    port_ = nullptr;
  }

  std::string path_;
  std::uint32_t baud_;
  std::chrono::steady_clock::time_point opened_;
  sp_port* port_ = nullptr;
};

}  // namespace

std::unique_ptr<SerialPort> open_serial_port(const std::string& path, std::uint32_t baud) {
  if (baud == 0) throw LinkError(fmt::format("{}: the baud rate must be above 0", path));
  return std::make_unique<LibSerialPort>(path, baud);
}

}  // namespace tpu::link
