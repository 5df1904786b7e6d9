// An FPGA board in simulation, behind the same SerialPort the `serial` backend uses for a real
// one: a Verilator model of tpu_board (the board's RTL without its PLL and pins, built with the
// parameters of fpga/<board>/board.toml) with a model of the UART line on both sides. Bytes the
// host writes become bits on uart_rx_i at the host's own bit rate (Baud exactly, which the
// board's whole-cycle bit period only approximates, as on a real board); uart_tx_o is sampled
// back into bytes the way a USB UART does. Time is the board's: read() and elapsed_ms() count
// simulated clock cycles at the board's ClockHz.
//
// Tests break the line on purpose: flipped bits in a request or a reply, a request cut short, a
// character without its stop bit, a dead line.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/board_model.hpp"
#include "tpu/link.hpp"

namespace tpu::sim {

struct SimBoardOptions {
  std::string board;                   // empty: the first compiled board
  std::uint32_t random_init_seed = 1;  // initial register and RAM contents
  std::string trace_path;              // FST waveform of every cycle, if set
};

class SimulatedBoard final : public link::SerialPort {
 public:
  explicit SimulatedBoard(const SimBoardOptions& options = {});

  std::string name() const override { return "sim:" + params_.name; }
  void write(const std::uint8_t* data, std::size_t size) override;
  std::size_t read(std::uint8_t* data, std::size_t size, unsigned timeout_ms) override;
  void discard_input() override { received_.clear(); }
  double elapsed_ms() const override;

  const BoardParams& params() const { return params_; }
  std::uint64_t cycle() const { return cycle_; }

  // Faults, applied to the next write() (requests) or to the bytes the board sends from now on
  // (replies); each applies once.
  void flip_request_bits(std::size_t index, std::uint8_t mask);
  void cut_request_after(std::size_t bytes);
  void drop_request_stop_bit(std::size_t index);
  void flip_reply_bits(std::size_t index, std::uint8_t mask);
  // While dead, nothing the board sends reaches the host.
  void set_reply_line_dead(bool dead) { reply_line_dead_ = dead; }

 private:
  // A character on the host's transmit line: its byte, and whether its stop bit is sent.
  struct Character {
    std::uint8_t byte;
    bool stop_bit;
  };

  void step();
  void drive_line();
  void sample_line(bool level);

  BoardParams params_;
  std::unique_ptr<BoardModel> model_;
  double cycles_per_bit_;
  std::uint64_t cycle_ = 0;

  // Host -> board: characters waiting, and the bit being sent (0 start, 1-8 data, 9 stop).
  std::deque<Character> to_send_;
  int send_bit_ = -1;  // -1: line idle
  double send_bit_end_ = 0;

  // Board -> host: a character being sampled, from the cycle its start bit began.
  bool receiving_ = false;
  bool last_level_ = true;
  std::uint64_t receive_start_ = 0;
  unsigned receive_bit_ = 0;
  std::uint8_t receive_byte_ = 0;
  std::deque<std::uint8_t> received_;

  // Armed faults.
  std::vector<std::pair<std::size_t, std::uint8_t>> request_flips_;
  std::size_t request_cut_ = std::numeric_limits<std::size_t>::max();
  std::size_t request_no_stop_ = std::numeric_limits<std::size_t>::max();
  std::vector<std::pair<std::size_t, std::uint8_t>> reply_flips_;
  std::size_t reply_bytes_seen_ = 0;
  bool reply_line_dead_ = false;
};

}  // namespace tpu::sim
