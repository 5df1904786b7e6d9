// A serial port of this computer (a board's USB UART, /dev/ttyUSB0 and the like), opened with
// libserialport at 8N1 without flow control.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tpu/link.hpp"

namespace tpu::link {

// Throws LinkError, naming the port and the reason, when it cannot be opened or set up.
std::unique_ptr<SerialPort> open_serial_port(const std::string& path, std::uint32_t baud);

}  // namespace tpu::link
