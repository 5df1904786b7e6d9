#include "backends/rtl_pod.hpp"

#include <fmt/format.h>

#include <numeric>
#include <stdexcept>

namespace tpu::sim {

LinkWire::LinkWire(const LinkTiming& timing, unsigned beats_per_row)
    : timing_(timing), beats_per_row_(beats_per_row) {
  if (timing.latency < 1) throw std::invalid_argument("a link's latency is at least 1 cycle");
  if (!(timing.beats_per_cycle > 0 && timing.beats_per_cycle <= 1)) {
    throw std::invalid_argument("a link's bandwidth is above 0 and at most 1 beat per cycle");
  }
}

void LinkWire::push_beat(std::uint64_t sent, const LinkBeat& beat) {
  beats_.emplace_back(sent + timing_.latency, beat);
}

bool LinkWire::pace_credit(bool returned) {
  if (returned) ++owed_credits_;
  // A credit stands for a row of beats: hand it back once the bandwidth has carried them.
  tokens_ = std::min(tokens_ + timing_.beats_per_cycle, double(beats_per_row_));
  if (owed_credits_ == 0 || tokens_ < double(beats_per_row_) - 1e-9) return false;
  tokens_ -= beats_per_row_;
  --owed_credits_;
  return true;
}

void LinkWire::push_credit(std::uint64_t sent) {
  credits_.push_back(sent + timing_.latency);
}

LinkBeat LinkWire::beat_at(std::uint64_t now) {
  if (beats_.empty() || beats_.front().first > now) return {};
  LinkBeat beat = std::move(beats_.front().second);
  beats_.pop_front();
  return beat;
}

bool LinkWire::credit_at(std::uint64_t now) {
  if (credits_.empty() || credits_.front() > now) return false;
  credits_.pop_front();
  return true;
}

RtlPod::RtlPod(const HardwareConfig& config, unsigned chips, const RtlPodOptions& options)
    : config_(config), options_(options) {
  check_pod(config, chips);
  for (unsigned i = 0; i < chips; ++i) {
    RtlOptions chip_options;
    chip_options.memory_bytes = options.memory_bytes;
    chip_options.random_init_seed = i + 1;
    chips_.push_back(std::make_unique<RtlBackend>(config, chip_options));
    chips_.back()->set_pod(i, chips, options.link_timeout);
    wires_.emplace_back(options.link, config.dim / config.link_lanes);
  }
}

std::vector<unsigned> RtlPod::local_chips() const {
  std::vector<unsigned> all(size());
  std::iota(all.begin(), all.end(), 0u);
  return all;
}

std::vector<RunResult> RtlPod::run(std::uint32_t prog_addr, std::uint32_t count) {
  const unsigned n = size();
  // Each chip starts on its own (register writes, no link traffic), then all run together.
  for (auto& chip : chips_) chip->start(prog_addr, count);
  const std::uint64_t limit = now_ + options_.max_cycles;
  std::vector<LinkIn> in(n);
  for (;;) {
    for (unsigned i = 0; i < n; ++i) {
      in[i].rx = wires_[(i + n - 1) % n].beat_at(now_);
      in[i].tx_credit = wires_[i].credit_at(now_);
    }
    bool all_stopped = true;
    for (unsigned i = 0; i < n; ++i) {
      chips_[i]->tick(in[i]);
      all_stopped = all_stopped && chips_[i]->stopped();
    }
    for (unsigned i = 0; i < n; ++i) {
      const LinkOut& sender = chips_[i]->link_outputs();
      if (sender.tx.valid) wires_[i].push_beat(now_, sender.tx);
      if (wires_[i].pace_credit(chips_[(i + 1) % n]->link_outputs().rx_credit)) {
        wires_[i].push_credit(now_);
      }
    }
    ++now_;
    bool quiet = true;
    for (const LinkWire& wire : wires_) quiet = quiet && wire.empty();
    // Nothing may be left on a wire: the next START resets the links' ends.
    if (all_stopped && quiet) break;
    if (now_ > limit) {
      throw std::runtime_error(
          fmt::format("the pod did not stop within {} cycles", options_.max_cycles));
    }
  }
  std::vector<RunResult> results;
  for (auto& chip : chips_) results.push_back(chip->finish());
  return results;
}

}  // namespace tpu::sim
