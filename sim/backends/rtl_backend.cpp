#include "backends/rtl_backend.hpp"

#include <stdexcept>

namespace tpu::sim {

RtlBackend::RtlBackend(const HardwareConfig& config, const RtlOptions& options)
    : config_(config),
      options_(options),
      memory_(options.memory_bytes),
      axi_(memory_, config.bus_bytes, options.timing),
      top_(make_top_model(config, options.random_init_seed)) {
  if (!options.trace_path.empty()) top_->open_trace(options.trace_path);
  // The reset's falling edge must be seen by the model, so it starts high; the
  // memory model stays out of it (the core's outputs mean nothing until then).
  top_->set_inputs(lite_in_, axi_.outputs());
  top_->set_link_inputs(link_in_);
  top_->settle();
  top_->set_reset(true);
  for (int cycle = 0; cycle < 2; ++cycle) {
    top_->settle();
    top_->clock();
  }
  top_->set_reset(false);
}

void RtlBackend::step() {
  top_->set_inputs(lite_in_, axi_.outputs());
  top_->set_link_inputs(link_in_);
  top_->settle();
  top_->outputs(lite_out_, master_);
  top_->link_outputs(link_out_);
  irq_ = top_->irq();
  axi_.clock(master_);
  top_->clock();
  ++cycle_;
}

void RtlBackend::tick(const LinkIn& link) {
  link_in_ = link;
  step();
  link_in_ = LinkIn{};
}

void RtlBackend::write_register(std::uint32_t offset, std::uint32_t value, unsigned* resp,
                                unsigned strobes) {
  lite_in_.awaddr = offset;
  lite_in_.wdata = value;
  lite_in_.wstrb = strobes;
  lite_in_.awvalid = lite_in_.wvalid = true;
  lite_in_.bready = true;
  bool accepted = false;
  for (unsigned waited = 0;; ++waited) {
    if (waited > 1000) throw std::runtime_error("AXI4-Lite write got no response");
    top_->set_inputs(lite_in_, axi_.outputs());
    top_->set_link_inputs(link_in_);
    top_->settle();
    top_->outputs(lite_out_, master_);
    const bool address_taken = lite_in_.awvalid && lite_out_.awready && lite_out_.wready;
    const bool response = lite_out_.bvalid && accepted;
    const unsigned bresp = lite_out_.bresp;
    axi_.clock(master_);
    top_->clock();
    ++cycle_;
    if (address_taken) {
      accepted = true;
      lite_in_.awvalid = lite_in_.wvalid = false;
    }
    if (response) {
      lite_in_.bready = false;
      if (resp)
        *resp = bresp;
      else if (bresp != 0)
        throw std::runtime_error("register write at " + std::to_string(offset) +
                                 " answered SLVERR");
      return;
    }
  }
}

std::uint32_t RtlBackend::read_register(std::uint32_t offset, unsigned* resp) {
  lite_in_.araddr = offset;
  lite_in_.arvalid = true;
  lite_in_.rready = true;
  bool accepted = false;
  for (unsigned waited = 0;; ++waited) {
    if (waited > 1000) throw std::runtime_error("AXI4-Lite read got no response");
    top_->set_inputs(lite_in_, axi_.outputs());
    top_->set_link_inputs(link_in_);
    top_->settle();
    top_->outputs(lite_out_, master_);
    const bool address_taken = lite_in_.arvalid && lite_out_.arready;
    const bool response = lite_out_.rvalid && accepted;
    const LiteOut seen = lite_out_;
    axi_.clock(master_);
    top_->clock();
    ++cycle_;
    if (address_taken) {
      accepted = true;
      lite_in_.arvalid = false;
    }
    if (response) {
      lite_in_.rready = false;
      if (resp)
        *resp = seen.rresp;
      else if (seen.rresp != 0)
        throw std::runtime_error("register read at " + std::to_string(offset) + " answered SLVERR");
      return seen.rdata;
    }
  }
}

void RtlBackend::wait_for_irq() {
  const std::uint64_t limit = cycle_ + options_.max_cycles;
  while (true) {
    top_->set_inputs(lite_in_, axi_.outputs());
    top_->set_link_inputs(link_in_);
    top_->settle();
    if (top_->irq()) return;
    top_->outputs(lite_out_, master_);
    axi_.clock(master_);
    top_->clock();
    if (++cycle_ > limit) {
      throw std::runtime_error("the core did not stop within " +
                               std::to_string(options_.max_cycles) + " cycles");
    }
  }
}

void RtlBackend::start(std::uint32_t prog_addr, std::uint32_t count) {
  write_register(regs::kProgAddr, prog_addr);
  write_register(regs::kProgCount, count);
  write_register(regs::kCtrl, (1u << regs::kCtrlStartBit) | (1u << regs::kCtrlIrqEnableBit));
}

void RtlBackend::set_pod(unsigned id, unsigned size, std::uint32_t link_timeout) {
  write_register(regs::kPod, (id << regs::kPodIdLsb) | (size << regs::kPodSizeLsb));
  write_register(regs::kLinkTimeout, link_timeout);
}

RunResult RtlBackend::run(std::uint32_t prog_addr, std::uint32_t count) {
  start(prog_addr, count);
  wait_for_irq();
  return finish();
}

RunResult RtlBackend::finish() {
  RunResult result;
  const std::uint32_t status = read_register(regs::kStatus);
  result.done = (status >> regs::kStatusDoneBit) & 1;
  if ((status >> regs::kStatusErrorBit) & 1) {
    result.error = static_cast<regs::Error>(read_register(regs::kErrorCode));
    result.error_pc = read_register(regs::kErrorPc);
  }
  Counters counters{};
  for (std::size_t c = 0; c < counters.size(); ++c) {
    const std::uint32_t lo = read_register(regs::kCounters[c].offset);
    const std::uint32_t hi = read_register(regs::kCounters[c].offset + 4);
    counters[c] = (std::uint64_t{hi} << 32) | lo;
  }
  result.counters = counters;
  result.instructions = counters[regs::kCntInstructionsIndex];
  return result;
}

}  // namespace tpu::sim
