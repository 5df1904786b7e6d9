// A cycle-level AXI4 slave over a HostMemory: what tpu_top's AXI4 master talks
// to in simulation. Latency, bandwidth and random back-pressure are
// configurable; bytes outside the memory answer SLVERR, as do bytes in the
// error windows a test sets up. Read bursts are returned in the order they
// were accepted, without interleaving; write data wait for their address.
//
// The slave also checks the master's side of the protocol (4 KiB boundaries,
// beat sizes, aligned addresses, WLAST, stable values while waiting) and
// throws AxiProtocolError when it is broken.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <stdexcept>
#include <vector>

#include "tpu/host_memory.hpp"

namespace tpu::sim {

class AxiProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AxiTiming {
  unsigned read_latency = 8;     // cycles from an accepted AR to its first beat
  unsigned write_latency = 4;    // cycles from a burst's last W beat to its B
  double beats_per_cycle = 1.0;  // read and write data bandwidth, each (0 < b <= 1)
  double ar_stall = 0.0;         // probabilities, per cycle, that a ready is withheld
  double aw_stall = 0.0;
  double w_stall = 0.0;
  double r_gap = 0.0;  // ... or that a data beat or response is held back
  double b_gap = 0.0;
  unsigned max_reads_in_flight = 16;  // accepted read bursts not yet returned
  unsigned max_writes_in_flight = 16;
  std::uint64_t seed = 1;
};

// One cycle's values on the master's outputs (read after the model settles).
struct AxiMasterSignals {
  bool arvalid = false;
  std::uint32_t arid = 0, araddr = 0;
  unsigned arlen = 0, arsize = 0, arburst = 1;
  bool rready = false;
  bool awvalid = false;
  std::uint32_t awid = 0, awaddr = 0;
  unsigned awlen = 0, awsize = 0, awburst = 1;
  bool wvalid = false;
  std::vector<std::uint8_t> wdata;  // bus_bytes
  std::uint64_t wstrb = 0;
  bool wlast = false;
  bool bready = false;
};

// One cycle's values on the slave's outputs (driven before the model settles).
struct AxiSlaveSignals {
  bool arready = false;
  bool rvalid = false;
  std::uint32_t rid = 0;
  std::vector<std::uint8_t> rdata;  // bus_bytes
  unsigned rresp = 0;
  bool rlast = false;
  bool awready = false;
  bool wready = false;
  bool bvalid = false;
  std::uint32_t bid = 0;
  unsigned bresp = 0;
};

struct AxiTraffic {
  std::uint64_t read_bursts = 0, read_beats = 0;
  std::uint64_t write_bursts = 0, write_beats = 0;
};

class AxiMemory {
 public:
  AxiMemory(HostMemory& memory, unsigned bus_bytes, const AxiTiming& timing = {});

  // Bytes [begin, end) answer SLVERR, for error-injection tests.
  void add_read_error_window(std::uint64_t begin, std::uint64_t end);
  void add_write_error_window(std::uint64_t begin, std::uint64_t end);

  // The slave's outputs for this cycle.
  const AxiSlaveSignals& outputs() const { return out_; }
  // Completes the cycle: takes the handshakes that happened between the
  // master's `in` and outputs(), advances one clock and prepares the next
  // outputs.
  void clock(const AxiMasterSignals& in);
  // Drops all traffic in flight (the core was reset).
  void reset();

  bool idle() const;
  const AxiTraffic& traffic() const { return traffic_; }

 private:
  struct Burst {
    std::uint32_t id = 0, addr = 0;
    unsigned len = 0, size = 0;
    unsigned beat = 0;              // next beat
    std::uint64_t ready_cycle = 0;  // first cycle its data or response may go out
    bool error = false;             // write bursts: any beat failed
  };

  void check_burst(const char* channel, std::uint32_t addr, unsigned len, unsigned size,
                   unsigned burst) const;
  bool in_error_window(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& windows,
                       std::uint64_t addr, unsigned bytes) const;
  void prepare_outputs();
  bool chance(double probability);

  HostMemory& memory_;
  unsigned bus_bytes_;
  AxiTiming timing_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> coin_{0.0, 1.0};
  std::uint64_t cycle_ = 0;
  double read_tokens_ = 0, write_tokens_ = 0;

  std::deque<Burst> reads_;      // accepted, data not all returned; front is returning
  std::deque<Burst> writes_;     // accepted addresses; front takes W beats
  std::deque<Burst> responses_;  // bursts whose data are complete, B pending
  std::vector<std::pair<std::uint64_t, std::uint64_t>> read_errors_, write_errors_;

  AxiSlaveSignals out_;
  AxiMasterSignals last_in_;  // for the stability checks
  bool last_ar_waiting_ = false, last_aw_waiting_ = false, last_w_waiting_ = false;
  AxiTraffic traffic_;
};

}  // namespace tpu::sim
