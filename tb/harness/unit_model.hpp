// A Verilator model of one unit (an arithmetic or function unit, the DMA's burst
// splitter, or a combinational one such as the vector unit's lane) with its context,
// random initial values and, where it has a clock, reset applied.
#pragma once

#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "backends/verilated_context.hpp"
#include "verilated.h"

namespace tpu::harness {

// Whether the unit has a clock enable (the pipelined arithmetic units do).
template <typename VUnit, typename = void>
struct HasEnable : std::false_type {};
template <typename VUnit>
struct HasEnable<VUnit, std::void_t<decltype(std::declval<VUnit&>().en_i)>> : std::true_type {};

// Whether the unit has a clock and reset (all but the combinational ones do).
template <typename VUnit, typename = void>
struct HasClock : std::false_type {};
template <typename VUnit>
struct HasClock<VUnit, std::void_t<decltype(std::declval<VUnit&>().clk_i)>> : std::true_type {};

template <typename VUnit>
class UnitModel {
 public:
  explicit UnitModel(std::uint32_t random_init_seed = 1)
      : context_(sim::make_context(random_init_seed)) {
    unit_ = std::make_unique<VUnit>(context_.get(), "unit");
    if constexpr (HasClock<VUnit>::value) {
      unit_->clk_i = 0;
      if constexpr (HasEnable<VUnit>::value) unit_->en_i = 1;
      // The model only resets on a falling edge of rst_ni that it sees.
      unit_->rst_ni = 1;
      unit_->eval();
      unit_->rst_ni = 0;
      unit_->eval();
      unit_->rst_ni = 1;
    }
    unit_->eval();
  }
  ~UnitModel() { unit_->final(); }
  UnitModel(const UnitModel&) = delete;
  UnitModel& operator=(const UnitModel&) = delete;

  VUnit* operator->() { return unit_.get(); }

  void clock() {
    static_assert(HasClock<VUnit>::value, "a combinational unit has no clock");
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

}  // namespace tpu::harness
