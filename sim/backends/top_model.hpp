// A Verilator model of tpu_top behind a small virtual interface, so that the
// RTL backend works with any compiled configuration (each is its own generated
// C++ class with ports of its own widths).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "backends/axi_memory.hpp"
#include "backends/verilated_context.hpp"
#include "tpu/backend.hpp"
#include "verilated.h"

namespace tpu::sim {

// Raised when an SVA assertion in the RTL fails.
class RtlAssertionFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The AXI4-Lite slave's inputs and outputs.
struct LiteIn {
  std::uint32_t awaddr = 0, wdata = 0, araddr = 0;
  unsigned wstrb = 0xF;
  bool awvalid = false, wvalid = false, bready = false, arvalid = false, rready = false;
};
struct LiteOut {
  bool awready = false, wready = false, bvalid = false, arready = false, rvalid = false;
  unsigned bresp = 0, rresp = 0;
  std::uint32_t rdata = 0;
};

// The inter-chip link ports (docs/pod.md): beats of LinkLanes 32-bit words (one word without
// links) and the credits that flow back.
struct LinkBeat {
  bool valid = false;
  bool head = false;
  std::vector<std::uint32_t> data;
};
struct LinkIn {
  LinkBeat rx;             // from the previous chip
  bool tx_credit = false;  // from the next chip
};
struct LinkOut {
  LinkBeat tx;             // to the next chip
  bool rx_credit = false;  // to the previous chip
};

class TopModel {
 public:
  virtual ~TopModel() = default;
  virtual void set_reset(bool active) = 0;
  virtual void set_inputs(const LiteIn& lite, const AxiSlaveSignals& axi) = 0;
  virtual void set_link_inputs(const LinkIn& link) = 0;
  virtual void link_outputs(LinkOut& link) const = 0;
  // Settles the combinational logic for the current inputs (clock low).
  virtual void settle() = 0;
  virtual void outputs(LiteOut& lite, AxiMasterSignals& axi) const = 0;
  virtual bool irq() const = 0;
  // One rising clock edge; throws RtlAssertionFailure if an assertion fired.
  virtual void clock() = 0;
  virtual void open_trace(const std::string& path) = 0;
};

template <typename VTop>
class VerilatedTop final : public TopModel {
 public:
  VerilatedTop(unsigned bus_bytes, std::uint32_t random_init_seed)
      : bus_bytes_(bus_bytes), context_(make_context(random_init_seed)) {
    top_ = std::make_unique<VTop>(context_.get(), "tpu_top");
    top_->clk_i = 0;
    top_->rst_ni = 1;
  }
  ~VerilatedTop() override {
    // Verilator 5.006 unregisters a model's scopes from the thread's current context, the one
    // created or evaluated last, which may belong to another model by now (or be gone: two
    // backends in one test then hung as the first went): make it this one's.
    Verilated::threadContextp(context_.get());
    waveform_.close();
    top_->final();
    top_.reset();
  }
  VerilatedTop(const VerilatedTop&) = delete;
  VerilatedTop& operator=(const VerilatedTop&) = delete;

  void set_reset(bool active) override { top_->rst_ni = !active; }

  void set_inputs(const LiteIn& lite, const AxiSlaveSignals& axi) override {
    top_->s_axil_awaddr = lite.awaddr;
    top_->s_axil_awprot = 0;
    top_->s_axil_awvalid = lite.awvalid;
    top_->s_axil_wdata = lite.wdata;
    top_->s_axil_wstrb = lite.wstrb;
    top_->s_axil_wvalid = lite.wvalid;
    top_->s_axil_bready = lite.bready;
    top_->s_axil_araddr = lite.araddr;
    top_->s_axil_arprot = 0;
    top_->s_axil_arvalid = lite.arvalid;
    top_->s_axil_rready = lite.rready;

    top_->m_axi_arready = axi.arready;
    top_->m_axi_rvalid = axi.rvalid;
    top_->m_axi_rid = axi.rid;
    top_->m_axi_rresp = axi.rresp;
    top_->m_axi_rlast = axi.rlast;
    set_bytes(top_->m_axi_rdata, axi.rdata);
    top_->m_axi_awready = axi.awready;
    top_->m_axi_wready = axi.wready;
    top_->m_axi_bvalid = axi.bvalid;
    top_->m_axi_bid = axi.bid;
    top_->m_axi_bresp = axi.bresp;
  }

  void settle() override {
    top_->eval();
    settled_ = true;
  }

  void outputs(LiteOut& lite, AxiMasterSignals& axi) const override {
    lite.awready = top_->s_axil_awready;
    lite.wready = top_->s_axil_wready;
    lite.bvalid = top_->s_axil_bvalid;
    lite.bresp = top_->s_axil_bresp;
    lite.arready = top_->s_axil_arready;
    lite.rvalid = top_->s_axil_rvalid;
    lite.rresp = top_->s_axil_rresp;
    lite.rdata = top_->s_axil_rdata;

    axi.arvalid = top_->m_axi_arvalid;
    axi.arid = top_->m_axi_arid;
    axi.araddr = top_->m_axi_araddr;
    axi.arlen = top_->m_axi_arlen;
    axi.arsize = top_->m_axi_arsize;
    axi.arburst = top_->m_axi_arburst;
    axi.rready = top_->m_axi_rready;
    axi.awvalid = top_->m_axi_awvalid;
    axi.awid = top_->m_axi_awid;
    axi.awaddr = top_->m_axi_awaddr;
    axi.awlen = top_->m_axi_awlen;
    axi.awsize = top_->m_axi_awsize;
    axi.awburst = top_->m_axi_awburst;
    axi.wvalid = top_->m_axi_wvalid;
    get_bytes(top_->m_axi_wdata, axi.wdata);
    axi.wstrb = static_cast<std::uint64_t>(top_->m_axi_wstrb);
    axi.wlast = top_->m_axi_wlast;
    axi.bready = top_->m_axi_bready;
  }

  bool irq() const override { return top_->irq_o; }

  void set_link_inputs(const LinkIn& link) override {
    top_->link_rx_valid_i = link.rx.valid;
    top_->link_rx_head_i = link.rx.head;
    set_words(top_->link_rx_data_i, link.rx.data);
    top_->link_tx_credit_i = link.tx_credit;
  }

  void link_outputs(LinkOut& link) const override {
    link.tx.valid = top_->link_tx_valid_o;
    link.tx.head = top_->link_tx_head_o;
    get_words(top_->link_tx_data_o, link.tx.data);
    link.rx_credit = top_->link_rx_credit_o;
  }

  // The falling edge is evaluated by the next settle(): nothing acts on it.
  void clock() override {
    if (!settled_) settle();
    settled_ = false;
    dump();
    top_->clk_i = 1;
    top_->eval();
    dump();
    top_->clk_i = 0;
    if (context_->gotError()) {
      throw RtlAssertionFailure("RTL assertion failed at time " + std::to_string(context_->time()));
    }
  }

  void open_trace(const std::string& path) override { waveform_.open(*top_, path); }

 private:
  // Data buses: up to 64 bits are integers, wider ones VlWide words.
  template <typename Port>
  void set_bytes(Port& port, const std::vector<std::uint8_t>& bytes) {
    if constexpr (std::is_integral_v<Port>) {
      std::uint64_t value = 0;
      for (unsigned b = 0; b < bus_bytes_; ++b) value |= std::uint64_t{bytes[b]} << (8 * b);
      port = static_cast<Port>(value);
    } else {
      for (unsigned w = 0; w < bus_bytes_ / 4; ++w) {
        port[w] = std::uint32_t{bytes[4 * w]} | std::uint32_t{bytes[4 * w + 1]} << 8 |
                  std::uint32_t{bytes[4 * w + 2]} << 16 | std::uint32_t{bytes[4 * w + 3]} << 24;
      }
    }
  }
  template <typename Port>
  void get_bytes(const Port& port, std::vector<std::uint8_t>& bytes) const {
    bytes.resize(bus_bytes_);
    if constexpr (std::is_integral_v<Port>) {
      const auto value = static_cast<std::uint64_t>(port);
      for (unsigned b = 0; b < bus_bytes_; ++b)
        bytes[b] = static_cast<std::uint8_t>(value >> (8 * b));
    } else {
      for (unsigned b = 0; b < bus_bytes_; ++b) {
        bytes[b] = static_cast<std::uint8_t>(port[b / 4] >> (8 * (b % 4)));
      }
    }
  }

  template <std::size_t N>
  static constexpr std::size_t wide_words(const VlWide<N>&) {
    return N;
  }
  // Link data: 32 bits an integer, 64 a wider one, more VlWide words.
  template <typename Port>
  static void set_words(Port& port, const std::vector<std::uint32_t>& words) {
    if constexpr (std::is_integral_v<Port>) {
      std::uint64_t value = 0;
      for (std::size_t w = 0; w < words.size() && w < sizeof(Port) / 4; ++w) {
        value |= std::uint64_t{words[w]} << (32 * w);
      }
      port = static_cast<Port>(value);
    } else {
      for (std::size_t w = 0; w < words.size() && w < wide_words(port); ++w) port[w] = words[w];
    }
  }
  template <typename Port>
  static void get_words(const Port& port, std::vector<std::uint32_t>& words) {
    if constexpr (std::is_integral_v<Port>) {
      words.resize(sizeof(Port) / 4);
      for (std::size_t w = 0; w < words.size(); ++w) {
        words[w] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(port) >> (32 * w));
      }
    } else {
      words.resize(wide_words(port));
      for (std::size_t w = 0; w < words.size(); ++w) words[w] = port[w];
    }
  }

  void dump() { waveform_.half_period(*context_); }

  unsigned bus_bytes_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<VTop> top_;
  Waveform waveform_;
  bool settled_ = false;
};

// Whether the model of one of tpu::core_configs() has waveform tracing compiled in
// (sim/models.cmake).
bool top_model_traces(const HardwareConfig& config);
// A fresh model of one of tpu::core_configs() (generated by sim/CMakeLists.txt);
// std::invalid_argument for any other configuration.
std::unique_ptr<TopModel> make_top_model(const HardwareConfig& config,
                                         std::uint32_t random_init_seed);

}  // namespace tpu::sim
