#include "backends/axi_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace tpu::sim {
namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

AxiMemory::AxiMemory(HostMemory& memory, unsigned bus_bytes, const AxiTiming& timing)
    : memory_(memory), bus_bytes_(bus_bytes), timing_(timing), rng_(timing.seed) {
  if (bus_bytes == 0 || bus_bytes > 64 || (bus_bytes & (bus_bytes - 1)) != 0) {
    throw std::invalid_argument("AXI bus width must be a power of two up to 64 bytes");
  }
  if (!(timing.beats_per_cycle > 0.0 && timing.beats_per_cycle <= 1.0)) {
    throw std::invalid_argument("AXI bandwidth must be in (0, 1] beats per cycle");
  }
  for (double p : {timing.ar_stall, timing.aw_stall, timing.w_stall, timing.r_gap, timing.b_gap}) {
    if (!(p >= 0.0 && p < 1.0)) {
      throw std::invalid_argument("AXI stall probabilities must be in [0, 1)");
    }
  }
  if (timing.max_reads_in_flight == 0 || timing.max_writes_in_flight == 0) {
    throw std::invalid_argument("AXI memory must accept at least one burst");
  }
  out_.rdata.assign(bus_bytes_, 0);
  prepare_outputs();
}

void AxiMemory::add_read_error_window(std::uint64_t begin, std::uint64_t end) {
  read_errors_.emplace_back(begin, end);
}

void AxiMemory::add_write_error_window(std::uint64_t begin, std::uint64_t end) {
  write_errors_.emplace_back(begin, end);
}

void AxiMemory::reset() {
  reads_.clear();
  writes_.clear();
  responses_.clear();
  last_ar_waiting_ = last_aw_waiting_ = last_w_waiting_ = false;
  out_.rvalid = false;
  out_.bvalid = false;
  prepare_outputs();
}

bool AxiMemory::idle() const {
  return reads_.empty() && writes_.empty() && responses_.empty();
}

bool AxiMemory::chance(double probability) {
  return probability > 0.0 && coin_(rng_) < probability;
}

bool AxiMemory::in_error_window(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& windows,
                                std::uint64_t addr, unsigned bytes) const {
  if (!memory_.contains(addr, bytes)) return true;
  return std::any_of(windows.begin(), windows.end(),
                     [&](const auto& w) { return addr < w.second && w.first < addr + bytes; });
}

void AxiMemory::check_burst(const char* channel, std::uint32_t addr, unsigned len, unsigned size,
                            unsigned burst) const {
  const std::string where = std::string(channel) + " at " + hex(addr) + ": ";
  if (burst != 1) throw AxiProtocolError(where + "only INCR bursts are expected");
  if ((1u << size) > bus_bytes_) throw AxiProtocolError(where + "beat wider than the bus");
  if (addr % (1u << size) != 0) throw AxiProtocolError(where + "address not aligned to the beat");
  const std::uint64_t bytes = std::uint64_t{len + 1} << size;
  if ((addr % 4096) + bytes > 4096) throw AxiProtocolError(where + "burst crosses 4 KiB");
}

void AxiMemory::clock(const AxiMasterSignals& in) {
  // Stability: what a master offered and the slave did not take must be offered again.
  if (last_ar_waiting_ && (!in.arvalid || in.araddr != last_in_.araddr ||
                           in.arlen != last_in_.arlen || in.arid != last_in_.arid)) {
    throw AxiProtocolError("AR withdrawn or changed before it was accepted");
  }
  if (last_aw_waiting_ &&
      (!in.awvalid || in.awaddr != last_in_.awaddr || in.awlen != last_in_.awlen)) {
    throw AxiProtocolError("AW withdrawn or changed before it was accepted");
  }
  if (last_w_waiting_ && (!in.wvalid || in.wdata != last_in_.wdata || in.wstrb != last_in_.wstrb ||
                          in.wlast != last_in_.wlast)) {
    throw AxiProtocolError("W withdrawn or changed before it was accepted");
  }

  const bool ar_fire = in.arvalid && out_.arready;
  const bool r_fire = out_.rvalid && in.rready;
  const bool aw_fire = in.awvalid && out_.awready;
  const bool w_fire = in.wvalid && out_.wready;
  const bool b_fire = out_.bvalid && in.bready;
  last_ar_waiting_ = in.arvalid && !out_.arready;
  last_aw_waiting_ = in.awvalid && !out_.awready;
  last_w_waiting_ = in.wvalid && !out_.wready;
  last_in_ = in;

  if (r_fire) {
    Burst& burst = reads_.front();
    ++traffic_.read_beats;
    read_tokens_ -= 1.0;
    if (++burst.beat > burst.len) reads_.pop_front();
  }
  if (ar_fire) {
    check_burst("AR", in.araddr, in.arlen, in.arsize, in.arburst);
    reads_.push_back(
        {in.arid, in.araddr, in.arlen, in.arsize, 0, cycle_ + 1 + timing_.read_latency, false});
    ++traffic_.read_bursts;
  }
  if (b_fire) responses_.pop_front();
  if (w_fire) {
    Burst& burst = writes_.front();
    const unsigned beat_bytes = 1u << burst.size;
    const std::uint64_t addr = std::uint64_t{burst.addr} + std::uint64_t{burst.beat} * beat_bytes;
    const unsigned lane0 = static_cast<unsigned>(addr % bus_bytes_);
    const std::uint64_t allowed = ((beat_bytes >= 64) ? ~0ull : ((1ull << beat_bytes) - 1))
                                  << lane0;
    if ((in.wstrb & ~allowed) != 0) {
      throw AxiProtocolError("W at " + hex(addr) + ": strobes outside the beat's byte lanes");
    }
    if (in.wlast != (burst.beat == burst.len)) {
      throw AxiProtocolError("W at " + hex(addr) + ": WLAST does not mark the burst's last beat");
    }
    if (in.wstrb != 0) {
      if (in_error_window(write_errors_, addr, beat_bytes)) {
        burst.error = true;
      } else {
        for (unsigned b = 0; b < beat_bytes; ++b) {
          if (in.wstrb >> (lane0 + b) & 1) memory_.data()[addr + b] = in.wdata[lane0 + b];
        }
      }
    }
    ++traffic_.write_beats;
    write_tokens_ -= 1.0;
    if (++burst.beat > burst.len) {
      burst.ready_cycle = cycle_ + 1 + timing_.write_latency;
      responses_.push_back(burst);
      writes_.pop_front();
    }
  }
  if (aw_fire) {
    check_burst("AW", in.awaddr, in.awlen, in.awsize, in.awburst);
    writes_.push_back({in.awid, in.awaddr, in.awlen, in.awsize, 0, 0, false});
    ++traffic_.write_bursts;
  }

  ++cycle_;
  read_tokens_ = std::min(1.0, read_tokens_ + timing_.beats_per_cycle);
  write_tokens_ = std::min(1.0, write_tokens_ + timing_.beats_per_cycle);
  prepare_outputs();
}

void AxiMemory::prepare_outputs() {
  // Read data: the front burst's next beat, once its latency has passed.
  const bool r_was_waiting = out_.rvalid && !last_in_.rready;
  if (!r_was_waiting) {
    out_.rvalid = false;
    if (!reads_.empty() && reads_.front().ready_cycle <= cycle_ && read_tokens_ >= 1.0 &&
        !chance(timing_.r_gap)) {
      const Burst& burst = reads_.front();
      const unsigned beat_bytes = 1u << burst.size;
      const std::uint64_t addr = std::uint64_t{burst.addr} + std::uint64_t{burst.beat} * beat_bytes;
      const unsigned lane0 = static_cast<unsigned>(addr % bus_bytes_);
      // Lanes outside the beat carry noise: a master must not use them.
      for (auto& byte : out_.rdata) byte = static_cast<std::uint8_t>(rng_());
      const bool error = in_error_window(read_errors_, addr, beat_bytes);
      if (!error) {
        for (unsigned b = 0; b < beat_bytes; ++b) {
          out_.rdata[lane0 + b] = memory_.data()[addr + b];
        }
      }
      out_.rvalid = true;
      out_.rid = burst.id;
      out_.rresp = error ? 2u : 0u;
      out_.rlast = burst.beat == burst.len;
    }
  }

  const bool b_was_waiting = out_.bvalid && !last_in_.bready;
  if (!b_was_waiting) {
    out_.bvalid = false;
    if (!responses_.empty() && responses_.front().ready_cycle <= cycle_ && !chance(timing_.b_gap)) {
      out_.bvalid = true;
      out_.bid = responses_.front().id;
      out_.bresp = responses_.front().error ? 2u : 0u;
    }
  }

  out_.arready = reads_.size() < timing_.max_reads_in_flight && !chance(timing_.ar_stall);
  out_.awready = writes_.size() + responses_.size() < timing_.max_writes_in_flight &&
                 !chance(timing_.aw_stall);
  out_.wready = !writes_.empty() && write_tokens_ >= 1.0 && !chance(timing_.w_stall);
}

}  // namespace tpu::sim
