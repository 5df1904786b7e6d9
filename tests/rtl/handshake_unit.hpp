// What the tests of the sequential core's multi-cycle units (tpu_seq_add, tpu_seq_act) share: the
// unit's Verilator model with valid/ready handshakes on both sides, and a fast generator for the
// per-cycle choices of a test (stalls, scrambled inputs).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "harness/verilated_context.hpp"

namespace tpu::test {

// The unit's Verilator model in its context (random initial register values), reset, with
// in_valid_i and out_ready_i low. UnitModel (tb/harness) drives an en_i these units do not have.
template <typename VUnit>
class HandshakeUnit {
 public:
  explicit HandshakeUnit(std::uint32_t random_init_seed)
      : context_(harness::make_context(random_init_seed)),
        unit_(std::make_unique<VUnit>(context_.get(), "unit")) {
    unit_->clk_i = 0;
    unit_->in_valid_i = 0;
    unit_->out_ready_i = 0;
    reset();
  }
  ~HandshakeUnit() { unit_->final(); }
  HandshakeUnit(const HandshakeUnit&) = delete;
  HandshakeUnit& operator=(const HandshakeUnit&) = delete;

  VUnit* operator->() { return unit_.get(); }

  // The model resets only on a falling edge of rst_ni that it sees. Two clocks in reset give the
  // assertions' sampled past values (random at first, like every register) the reset state.
  void reset() {
    unit_->rst_ni = 1;
    unit_->eval();
    unit_->rst_ni = 0;
    unit_->eval();
    clock();
    clock();
    unit_->rst_ni = 1;
    unit_->eval();
  }

  void clock() {
    unit_->clk_i = 1;
    unit_->eval();
    unit_->clk_i = 0;
    unit_->eval();
    if (context_->gotError()) throw std::runtime_error("RTL assertion failed");
  }

 private:
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<VUnit> unit_;
};

// A small, fast generator for the per-cycle choices (stalls, scrambled inputs).
class Xorshift {
 public:
  explicit Xorshift(std::uint64_t seed) : state_(seed | 1) {}
  std::uint64_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  bool percent(unsigned p) { return next() % 100 < p; }

 private:
  std::uint64_t state_;
};

}  // namespace tpu::test
