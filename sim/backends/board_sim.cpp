#include "backends/board_sim.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tpu::sim {

namespace {

constexpr int kStartBit = 0;
constexpr int kStopBit = 9;

const BoardParams& find_board(const std::string& name) {
  const std::vector<BoardParams>& boards = compiled_boards();
  if (boards.empty()) throw std::invalid_argument("no board simulation is compiled in");
  if (name.empty()) return boards.front();
  const auto board = std::find_if(boards.begin(), boards.end(),
                                  [&](const BoardParams& params) { return params.name == name; });
  if (board == boards.end()) {
    std::string names;
    for (const BoardParams& params : boards) names += (names.empty() ? "" : ", ") + params.name;
    throw std::invalid_argument("no simulation of board '" + name + "' (there is: " + names + ")");
  }
  return *board;
}

}  // namespace

SimulatedBoard::SimulatedBoard(const SimBoardOptions& options)
    : params_(find_board(options.board)),
      model_(make_board_model(params_.name, options.random_init_seed)),
      cycles_per_bit_(static_cast<double>(params_.clock_hz) / params_.baud) {
  if (!options.trace_path.empty()) model_->open_trace(options.trace_path);
  model_->set_uart_rx(true);
  model_->set_reset(true);
  for (int cycle = 0; cycle < 2; ++cycle) model_->clock();
  model_->set_reset(false);
}

double SimulatedBoard::elapsed_ms() const {
  return static_cast<double>(cycle_) * 1000.0 / params_.clock_hz;
}

void SimulatedBoard::write(const std::uint8_t* data, std::size_t size) {
  for (std::size_t i = 0; i < std::min(size, request_cut_); ++i) {
    std::uint8_t byte = data[i];
    for (const auto& [index, mask] : request_flips_) {
      if (index == i) byte ^= mask;
    }
    to_send_.push_back({byte, i != request_no_stop_});
  }
  request_flips_.clear();
  request_cut_ = std::numeric_limits<std::size_t>::max();
  request_no_stop_ = std::numeric_limits<std::size_t>::max();
}

std::size_t SimulatedBoard::read(std::uint8_t* data, std::size_t size, unsigned timeout_ms) {
  const auto limit =
      cycle_ + static_cast<std::uint64_t>(std::ceil(timeout_ms * (params_.clock_hz / 1000.0)));
  while (received_.size() < size && cycle_ < limit) step();
  const std::size_t count = std::min(size, received_.size());
  std::copy_n(received_.begin(), count, data);
  received_.erase(received_.begin(), received_.begin() + static_cast<std::ptrdiff_t>(count));
  return count;
}

void SimulatedBoard::flip_request_bits(std::size_t index, std::uint8_t mask) {
  request_flips_.emplace_back(index, mask);
}

void SimulatedBoard::cut_request_after(std::size_t bytes) {
  request_cut_ = bytes;
}

void SimulatedBoard::drop_request_stop_bit(std::size_t index) {
  request_no_stop_ = index;
}

void SimulatedBoard::flip_reply_bits(std::size_t index, std::uint8_t mask) {
  reply_flips_.emplace_back(reply_bytes_seen_ + index, mask);
}

void SimulatedBoard::step() {
  drive_line();
  model_->clock();
  ++cycle_;
  sample_line(model_->uart_tx());
}

// The host's transmitter: one bit every cycles_per_bit_ cycles of the board's clock, on a
// timeline of its own (not rounded to the board's whole-cycle bit period).
void SimulatedBoard::drive_line() {
  if (send_bit_ >= 0 && static_cast<double>(cycle_) >= send_bit_end_) {
    send_bit_end_ += cycles_per_bit_;
    if (++send_bit_ > kStopBit) {
      to_send_.pop_front();
      send_bit_ = to_send_.empty() ? -1 : kStartBit;
    }
  }
  if (send_bit_ < 0 && !to_send_.empty()) {
    send_bit_ = kStartBit;
    send_bit_end_ = static_cast<double>(cycle_) + cycles_per_bit_;
  }
  bool level = true;
  if (send_bit_ == kStartBit) {
    level = false;
  } else if (send_bit_ > kStartBit && send_bit_ < kStopBit) {
    level = (to_send_.front().byte >> (send_bit_ - 1)) & 1;
  } else if (send_bit_ == kStopBit) {
    level = to_send_.front().stop_bit;
  }
  model_->set_uart_rx(level);
}

// The host's receiver: a falling edge starts a character, and bit k is sampled in its middle,
// (k + 1/2) bit times after the edge.
void SimulatedBoard::sample_line(bool level) {
  if (!receiving_) {
    if (last_level_ && !level) {
      receiving_ = true;
      receive_start_ = cycle_;
      receive_bit_ = kStartBit;
      receive_byte_ = 0;
    }
    last_level_ = level;
    return;
  }
  last_level_ = level;
  const double middle =
      static_cast<double>(receive_start_) + (receive_bit_ + 0.5) * cycles_per_bit_;
  if (static_cast<double>(cycle_) < middle) return;
  if (receive_bit_ == kStartBit && level) {
    receiving_ = false;  // a glitch, not a start bit
    return;
  }
  if (receive_bit_ > kStartBit && receive_bit_ < kStopBit) {
    receive_byte_ |= static_cast<std::uint8_t>(level) << (receive_bit_ - 1);
  }
  if (receive_bit_++ < kStopBit) return;
  // A character without its stop bit is delivered too, as a USB UART does; the CRC catches it.
  receiving_ = false;
  std::uint8_t byte = receive_byte_;
  for (const auto& [index, mask] : reply_flips_) {
    if (index == reply_bytes_seen_) byte ^= mask;
  }
  ++reply_bytes_seen_;
  if (!reply_line_dead_) received_.push_back(byte);
}

}  // namespace tpu::sim
