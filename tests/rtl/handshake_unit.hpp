// What the tests of the sequential core's multi-cycle units (tpu_seq_add, tpu_seq_act) share: the
// unit's Verilator model with valid/ready handshakes on both sides, a fast generator for the
// per-cycle choices of a test (stalls, scrambled inputs), and a stream that offers inputs and
// takes results with random stalls, checking each against the reference model.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>

#include "backends/verilated_context.hpp"
#include "mismatch_log.hpp"

namespace tpu::test {

// The unit's Verilator model in its context (random initial register values), reset, with
// in_valid_i and out_ready_i low. UnitModel (tb/harness) drives an en_i these units do not have.
template <typename VUnit>
class HandshakeUnit {
 public:
  explicit HandshakeUnit(std::uint32_t random_init_seed)
      : context_(sim::make_context(random_init_seed)),
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
  VUnit& model() { return *unit_; }

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

// Mismatches of the unit's results against the reference. `Unit` describes the unit under test:
// its model and input, how the reference computes the result, how to drive and read its ports
// (see the tests' AddUnit and ActUnit).
template <typename Unit>
class Mismatches : public MismatchLog {
 public:
  void check(std::uint32_t got, const typename Unit::Input& in) {
    MismatchLog::check(got, Unit::expected(in),
                       [&](std::ostream& out) { Unit::describe(out, in); });
  }
};

// Offers inputs one after the other and takes the results, both with random stalls, and checks
// each result against the reference model's for its input. Half the inputs are offered while
// the previous value is still in flight, the other half only once in_ready_o is high; outside an
// offer the inputs carry random values with in_valid_i low. An offered input stays until taken,
// a result must stay unchanged until taken, and a value that takes more than Unit::kMaxCycles
// fails the test instead of hanging it.
template <typename Unit>
class HandshakeStream {
 public:
  using Input = typename Unit::Input;

  explicit HandshakeStream(std::uint64_t seed, unsigned stall_percent = 20)
      : unit_(static_cast<std::uint32_t>(seed)), rng_(seed), stall_percent_(stall_percent) {}

  void feed(const Input& in) {
    if (rng_.percent(50))
      while (!unit_->in_ready_o) cycle(nullptr);
    while (rng_.percent(stall_percent_)) cycle(nullptr);
    while (!cycle(&in)) {
    }
  }
  // Takes the results still in flight.
  void drain() {
    while (!in_flight_.empty()) cycle(nullptr);
  }

  const Mismatches<Unit>& mismatches() const { return mismatches_; }
  unsigned max_cycles() const { return max_cycles_; }
  double mean_cycles() const {
    return delivered_ == 0 ? 0.0
                           : static_cast<double>(busy_cycles_) / static_cast<double>(delivered_);
  }

 private:
  // One clock cycle; true if `offer` was taken.
  bool cycle(const Input* offer) {
    if (offer != nullptr) {
      unit_->in_valid_i = 1;
      Unit::offer(unit_.model(), *offer);
    } else {
      unit_->in_valid_i = 0;
      Unit::scramble(unit_.model(), rng_.next());
    }
    const bool out_ready = !rng_.percent(stall_percent_);
    unit_->out_ready_i = out_ready;

    const bool taken = offer != nullptr && unit_->in_ready_o;
    const std::uint32_t result = Unit::result(unit_.model());
    if (unit_->out_valid_o) {
      if (in_flight_.empty()) throw std::runtime_error("a result without an input");
      if (waiting_ && result != waiting_value_)
        throw std::runtime_error("the result changed while out_valid_o waited for out_ready_i");
      if (!waiting_) record_latency();
      waiting_ = !out_ready;
      waiting_value_ = result;
      if (out_ready) {
        mismatches_.check(result, in_flight_.front());
        in_flight_.pop_front();
        ++delivered_;
      }
    } else if (!in_flight_.empty() && ++busy_ > Unit::kMaxCycles) {
      throw std::runtime_error("no result " + std::to_string(Unit::kMaxCycles) +
                               " cycles after the input was taken");
    }
    if (taken) {
      if (!in_flight_.empty()) throw std::runtime_error("an input taken while one is in flight");
      in_flight_.push_back(*offer);
      busy_ = 0;
    }
    if (offer != nullptr && !taken && in_flight_.empty() && !unit_->out_valid_o)
      throw std::runtime_error("nothing in flight, but in_ready_o is low");
    // Nothing taken and nothing delivered for this long: the unit hangs with nothing in flight.
    stuck_ = taken || (unit_->out_valid_o && out_ready) ? 0 : stuck_ + 1;
    if (stuck_ > Unit::kMaxCycles) throw std::runtime_error("no progress, nothing in flight");
    unit_.clock();
    return taken;
  }

  void record_latency() {
    max_cycles_ = std::max(max_cycles_, busy_ + 1);
    busy_cycles_ += busy_ + 1;
  }

  HandshakeUnit<typename Unit::Model> unit_;
  Xorshift rng_;
  unsigned stall_percent_;
  std::deque<Input> in_flight_;
  unsigned busy_ = 0;   // cycles since the value in flight was taken
  unsigned stuck_ = 0;  // cycles since the last input was taken or result delivered
  bool waiting_ = false;
  std::uint32_t waiting_value_ = 0;
  Mismatches<Unit> mismatches_;
  unsigned max_cycles_ = 0;
  std::uint64_t busy_cycles_ = 0;
  std::uint64_t delivered_ = 0;
};

// Runs the clock until out_valid_o, with out_ready_i low; returns the cycles taken.
template <typename VUnit>
unsigned wait_for_result(HandshakeUnit<VUnit>& unit, unsigned max_cycles) {
  unit->out_ready_i = 0;
  for (unsigned cycles = 1; cycles <= max_cycles; ++cycles) {
    unit.clock();
    if (unit->out_valid_o) return cycles;
  }
  throw std::runtime_error("no result within " + std::to_string(max_cycles) + " cycles");
}

// A result stays at the output, with out_valid_o high and in_ready_o low, for as long as
// out_ready_i is low; an input offered meanwhile (`second`) is taken only once the result of
// `first` has been.
template <typename Unit>
void expect_result_held_until_taken(const typename Unit::Input& first,
                                    const typename Unit::Input& second) {
  HandshakeUnit<typename Unit::Model> unit(7);
  ASSERT_TRUE(unit->in_ready_o);
  ASSERT_FALSE(unit->out_valid_o);
  unit->in_valid_i = 1;
  Unit::offer(unit.model(), first);
  unit.clock();
  // The second input is offered from here on, while the first is in flight.
  Unit::offer(unit.model(), second);
  ASSERT_FALSE(unit->in_ready_o);
  wait_for_result(unit, Unit::kMaxCycles);
  for (int cycle = 0; cycle < 50; ++cycle) {
    ASSERT_TRUE(unit->out_valid_o) << "cycle " << cycle;
    ASSERT_FALSE(unit->in_ready_o) << "cycle " << cycle;
    ASSERT_EQ(Unit::result(unit.model()), Unit::expected(first)) << "cycle " << cycle;
    unit.clock();
  }
  unit->out_ready_i = 1;
  unit.clock();  // the first result is taken
  ASSERT_FALSE(unit->out_valid_o);
  ASSERT_TRUE(unit->in_ready_o);
  unit.clock();  // the second input is taken
  unit->in_valid_i = 0;
  ASSERT_FALSE(unit->in_ready_o);
  wait_for_result(unit, Unit::kMaxCycles);
  EXPECT_EQ(Unit::result(unit.model()), Unit::expected(second));
}

}  // namespace tpu::test
