// A pod of Verilator models in one process (docs/pod.md): N RtlBackends of one core
// configuration with links, joined in a ring by wires of configurable latency and bandwidth, and
// clocked together, a cycle at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "backends/rtl_backend.hpp"
#include "tpu/pod.hpp"

namespace tpu::sim {

// One direction of the wire between two chips: beats one way, credits back, each arriving
// `latency` cycles after it left. Below one beat per cycle, credits are handed back no faster
// than the bandwidth allows, which paces the sender to it. The two ends may live in different
// processes (the MPI pod): each end uses its own half.
class LinkWire {
 public:
  LinkWire(const LinkTiming& timing, unsigned beats_per_row);

  // A beat that left the sender in cycle `sent`.
  void push_beat(std::uint64_t sent, const LinkBeat& beat);
  // The receiver's credit output in a cycle; true when a credit leaves it in that cycle.
  bool pace_credit(bool returned);
  // A credit that left the receiver in cycle `sent`.
  void push_credit(std::uint64_t sent);
  // What arrives in cycle `now`: the beat for the receiver, the credit for the sender.
  LinkBeat beat_at(std::uint64_t now);
  bool credit_at(std::uint64_t now);
  // Nothing in flight, and no credit held back.
  bool empty() const { return beats_.empty() && credits_.empty() && owed_credits_ == 0; }

 private:
  LinkTiming timing_;
  unsigned beats_per_row_;
  std::deque<std::pair<std::uint64_t, LinkBeat>> beats_;
  std::deque<std::uint64_t> credits_;
  unsigned owed_credits_ = 0;  // returned by the receiver, held back by the bandwidth
  double tokens_ = 0;
};

struct RtlPodOptions {
  LinkTiming link;
  std::size_t memory_bytes = 64u << 20;  // host memory per chip
  std::uint32_t link_timeout = regs::kLinkTimeoutReset;
  std::uint64_t max_cycles = 1ull << 32;
};

class RtlPod final : public Pod {
 public:
  RtlPod(const HardwareConfig& config, unsigned chips, const RtlPodOptions& options = {});

  std::string name() const override { return "rtl"; }
  const HardwareConfig& config() const override { return config_; }
  unsigned size() const override { return static_cast<unsigned>(chips_.size()); }
  std::vector<unsigned> local_chips() const override;
  Backend& chip(unsigned position) override { return *chips_.at(position); }
  std::vector<RunResult> run(std::uint32_t prog_addr, std::uint32_t count) override;

  RtlBackend& rtl_chip(unsigned position) { return *chips_.at(position); }
  std::uint64_t cycle() const { return now_; }

 private:
  HardwareConfig config_;
  RtlPodOptions options_;
  std::vector<std::unique_ptr<RtlBackend>> chips_;
  std::vector<LinkWire> wires_;  // wires_[i]: from chip i to chip i + 1
  std::uint64_t now_ = 0;
};

}  // namespace tpu::sim
