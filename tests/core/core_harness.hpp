// Runs one program on the RTL backend and on the functional model from the
// same host memory, and compares everything a program can show: how it
// stopped, the instructions it completed and every byte of host memory.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/rtl_backend.hpp"
#include "tpu/isa.hpp"
#include "tpu/model.hpp"
#include "tpu/program.hpp"

namespace tpu::testing {

// The tpu_top configurations sim/CMakeLists.txt compiles.
HardwareConfig config_named(const std::string& name);

struct BothResults {
  RunResult rtl;
  RunResult model;
};

class CoreHarness {
 public:
  explicit CoreHarness(const HardwareConfig& config, const sim::RtlOptions& options = {},
                       std::size_t memory_bytes = 1u << 20);

  // The same bytes into both backends' host memory.
  void write(std::uint64_t addr, const std::vector<std::uint8_t>& bytes);
  template <typename T>
  void write_array(std::uint64_t addr, const std::vector<T>& values) {
    rtl_->memory().write_array(addr, values);
    model_->memory().write_array(addr, values);
  }

  // Places the program at `prog_addr`, runs it on both and checks that they
  // agree on how it stopped (status, error, error PC) and, when the stop is
  // precise (not a bus error), on the instructions completed and every byte
  // of host memory.
  BothResults run(const std::vector<isa::Instruction>& program, std::uint32_t prog_addr = 0,
                  bool precise = true);
  // Runs `count` instructions at `prog_addr` as they already lie in memory.
  BothResults run_in_place(std::uint32_t prog_addr, std::uint32_t count, bool precise = true);

  sim::RtlBackend& rtl() { return *rtl_; }
  FunctionalModel& model() { return *model_; }
  const HardwareConfig& config() const { return config_; }

 private:
  HardwareConfig config_;
  std::unique_ptr<sim::RtlBackend> rtl_;
  std::unique_ptr<FunctionalModel> model_;
};

}  // namespace tpu::testing
