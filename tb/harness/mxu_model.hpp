// A running Verilator model of tpu_mxu behind a small virtual interface, so that
// drivers and tests work with any compiled configuration (each configuration is
// its own generated C++ class).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/verilated_context.hpp"
#include "harness/array_config.hpp"
#include "harness/lanes.hpp"
#include "tpu/numerics/float.hpp"
#include "verilated.h"

namespace tpu::harness {

using num::bf16_t;
using num::fp32_t;

// Raised when an SVA assertion in the RTL fails.
class AssertionFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MxuModel {
 public:
  virtual ~MxuModel() = default;
  virtual const ArrayConfig& config() const = 0;

  // Inputs for the current cycle.
  virtual void drive_weights(bool valid, const std::vector<bf16_t>& row) = 0;          // cols lanes
  virtual void drive_acts(bool valid, const std::vector<bf16_t>& row, bool last) = 0;  // rows lanes
  virtual void drive_seeds(bool valid, const std::vector<fp32_t>& row) = 0;            // cols lanes
  virtual void drive_res_ready(bool ready) = 0;

  // Settle the combinational outputs for the current inputs (clock low).
  virtual void settle() = 0;
  virtual bool wgt_ready() const = 0;
  virtual bool act_ready() const = 0;
  virtual bool seed_ready() const = 0;
  virtual bool res_valid() const = 0;
  virtual bool res_last() const = 0;
  virtual std::vector<fp32_t> res_data() const = 0;

  // One clock cycle; throws AssertionFailure if an assertion fired.
  virtual void clock() = 0;
  virtual void reset() = 0;
  virtual void open_trace(const std::string& path) = 0;
};

// Options for a model instance.
struct ModelOptions {
  // Seed for the random initial values of every register (--x-initial unique);
  // reset must then bring the design to a known state.
  std::uint32_t random_init_seed = 1;
};

template <typename VModel>
class VerilatedMxu final : public MxuModel {
 public:
  VerilatedMxu(const ArrayConfig& config, const ModelOptions& options)
      : config_(config), context_(sim::make_context(options.random_init_seed)) {
    model_ = std::make_unique<VModel>(context_.get(), "tpu_mxu");
    model_->clk_i = 0;
    model_->rst_ni = 1;
  }

  ~VerilatedMxu() override {
    waveform_.close();
    model_->final();
  }

  VerilatedMxu(const VerilatedMxu&) = delete;
  VerilatedMxu& operator=(const VerilatedMxu&) = delete;

  const ArrayConfig& config() const override { return config_; }

  void drive_weights(bool valid, const std::vector<bf16_t>& row) override {
    model_->wgt_valid_i = valid;
    for (unsigned c = 0; c < config_.cols; ++c) set_lane(model_->wgt_data_i, c, 16, row[c]);
  }
  void drive_acts(bool valid, const std::vector<bf16_t>& row, bool last) override {
    model_->act_valid_i = valid;
    model_->act_last_i = last;
    for (unsigned r = 0; r < config_.rows; ++r) set_lane(model_->act_data_i, r, 16, row[r]);
  }
  void drive_seeds(bool valid, const std::vector<fp32_t>& row) override {
    model_->seed_valid_i = valid;
    for (unsigned c = 0; c < config_.cols; ++c) set_lane(model_->seed_data_i, c, 32, row[c]);
  }
  void drive_res_ready(bool ready) override { model_->res_ready_i = ready; }

  void settle() override {
    model_->eval();
    settled_ = true;
  }
  bool wgt_ready() const override { return model_->wgt_ready_o; }
  bool act_ready() const override { return model_->act_ready_o; }
  bool seed_ready() const override { return model_->seed_ready_o; }
  bool res_valid() const override { return model_->res_valid_o; }
  bool res_last() const override { return model_->res_last_o; }
  std::vector<fp32_t> res_data() const override {
    std::vector<fp32_t> row(config_.cols);
    for (unsigned c = 0; c < config_.cols; ++c) row[c] = get_lane(model_->res_data_o, c, 32);
    return row;
  }

  // The falling edge is evaluated by the next settle(): nothing in the design
  // acts on it, and it saves an eval per cycle. Without a settle() since the
  // last edge, clock() settles first, or the model would never see the clock low.
  void clock() override {
    if (!settled_) settle();
    settled_ = false;
    dump();
    model_->clk_i = 1;
    model_->eval();
    dump();
    model_->clk_i = 0;
    if (context_->gotError()) {
      throw AssertionFailure("RTL assertion failed in configuration " + config_.name() +
                             " at time " + std::to_string(context_->time()));
    }
  }

  void reset() override {
    model_->wgt_valid_i = 0;
    model_->act_valid_i = 0;
    model_->seed_valid_i = 0;
    model_->res_ready_i = 0;
    // The model only resets on a falling edge of rst_ni that it sees.
    model_->rst_ni = 1;
    settle();
    model_->rst_ni = 0;
    for (int edge = 0; edge < 2; ++edge) {
      settle();
      clock();
    }
    model_->rst_ni = 1;
    settle();
  }

  void open_trace(const std::string& path) override { waveform_.open(*model_, path); }

 private:
  void dump() { waveform_.half_period(*context_); }

  ArrayConfig config_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<VModel> model_;
  sim::Waveform waveform_;
  bool settled_ = false;
};

// The configurations compiled into this program (generated by sim/CMakeLists.txt).
const std::vector<ArrayConfig>& compiled_configs();
// Whether that configuration's model has waveform tracing compiled in (sim/models.cmake).
bool model_traces(const ArrayConfig& config);
// A fresh model of one compiled configuration; throws std::invalid_argument if
// that configuration was not compiled.
std::unique_ptr<MxuModel> make_model(const ArrayConfig& config, const ModelOptions& options = {});

}  // namespace tpu::harness
