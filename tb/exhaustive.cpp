// `make verify-exhaustive`: every one of the 2^32 bf16 x bf16 multiplier inputs
// and every one of the 2^32 fp32 -> bf16 rounder inputs, through the RTL and the
// reference model, each compared with the host-FPU oracle; and every one of the
// 2^32 fp32 inputs of sigmoid, tanh, gelu, exp, reciprocal and reciprocal
// square root, through the RTL and the reference model (bit for bit), with the
// reference model's error measured against the double-precision oracle; and every one of the
// 2^32 inputs of the vector unit's conversions, fp32 to int32 and int32 to fp32 (ELTWISE quant and
// dequant by 1.0), through the RTL's lane and the reference model, against the host's. One
// process takes one shard of the input space so that shards can run in parallel.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <deque>

#include "Vact_func.h"
#include "Vact_func_tpu_pkg.h"
#include "Vbf16_mul_s0.h"
#include "Vfp32_to_bf16_s0.h"
#include "Vvector_lane.h"
#include "harness/unit_model.hpp"
#include "oracle/activation.hpp"
#include "oracle/eltwise.hpp"
#include "oracle/host_float.hpp"
#include "tpu/numerics/activation.hpp"
#include "tpu/numerics/float.hpp"

namespace {

namespace oracle = tpu::oracle;
namespace num = tpu::num;

struct Tally {
  std::uint64_t checked = 0;
  std::uint64_t rtl_mismatches = 0;
  std::uint64_t ref_mismatches = 0;

  void report_first(const char* who, std::uint64_t input, std::uint32_t got, std::uint32_t want,
                    std::uint64_t count) const {
    if (count <= 5)
      fmt::print("  {} mismatch: input 0x{:08x} got 0x{:x} want 0x{:x}\n", who, input, got, want);
  }
  void compare(std::uint64_t input, std::uint32_t rtl, std::uint32_t model, std::uint32_t want) {
    ++checked;
    if (rtl != want) report_first("RTL", input, rtl, want, ++rtl_mismatches);
    if (model != want) report_first("reference", input, model, want, ++ref_mismatches);
  }
};

// The high 16 bits of the 32-bit input select the shard's slices; progress is
// printed every 1/16 of the shard.
template <typename Check>
Tally sweep(const char* unit_name, unsigned shard, unsigned shards, Check check) {
  Tally tally;
  const std::uint32_t first = static_cast<std::uint32_t>((65536ull * shard) / shards);
  const std::uint32_t last = static_cast<std::uint32_t>((65536ull * (shard + 1)) / shards);
  const std::uint32_t span = last - first;
  for (std::uint32_t high = first; high < last; ++high) {
    for (std::uint32_t low = 0; low < 65536; ++low) check(tally, (high << 16) | low);
    const std::uint32_t done = high - first + 1;
    if (span >= 16 && done % (span / 16) == 0) {
      fmt::print("{} shard {}/{}: {:3.0f}%\n", unit_name, shard, shards, 100.0 * done / span);
      std::fflush(stdout);
    }
  }
  return tally;
}

// The activation function unit is pipelined: an input fed with one clock comes
// out ActFuncLatency clocks later and is compared then with the reference
// model's result, computed when it went in. The unit's initial state does not
// matter: only the outputs of fed inputs are compared.
class ActStream {
 public:
  ActStream() { rtl_->en_i = 1; }

  void feed(Tally& tally, unsigned func, std::uint32_t x, std::uint32_t reference) {
    push(tally, {func, x, reference, true});
  }
  // Clocks the last inputs out, with uncompared identity operations behind them.
  void drain(Tally& tally) {
    for (unsigned n = 1; n < kLatency; ++n) push(tally, {0, 0, 0, false});
  }

 private:
  struct Operation {
    unsigned func;
    std::uint32_t x;
    std::uint32_t reference;
    bool compared;
  };

  void push(Tally& tally, const Operation& op) {
    rtl_->func_i = static_cast<std::uint8_t>(op.func);
    rtl_->x_i = op.x;
    rtl_.clock();
    in_flight_.push_back(op);
    if (in_flight_.size() < kLatency) return;
    const Operation done = in_flight_.front();
    in_flight_.pop_front();
    if (done.compared && rtl_->y_o != done.reference)
      tally.report_first("RTL", done.x, rtl_->y_o, done.reference, ++tally.rtl_mismatches);
  }

  static constexpr unsigned kLatency = Vact_func_tpu_pkg::ActFuncLatency;
  tpu::harness::UnitModel<Vact_func> rtl_;
  std::deque<Operation> in_flight_;
};

// The reference model's error for one function against the double-precision
// oracle: the distance in bf16 ulps after N-OUT, and the relative error of the
// fp32 result where the flush does not decide it (|f(x)| >= 2^-125).
class ActError {
 public:
  // Returns the distance in bf16 ulps.
  int add(std::uint32_t x, std::uint32_t result, double truth) {
    const int ulps =
        oracle::bf16_ulp_distance(num::fp32_to_bf16(result), oracle::round_real_to_bf16(truth));
    if (ulps > max_ulps_) {
      max_ulps_ = ulps;
      worst_ulp_input_ = x;
    }
    // From 2^128 (1 - 2^-25) on the overflow to infinity decides it.
    const double overflow = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
    if (std::fabs(truth) >= std::ldexp(1.0, -125) && std::fabs(truth) < overflow) {
      const double relative = std::fabs((oracle::as_float(result) - truth) / truth);
      if (relative > max_relative_) {
        max_relative_ = relative;
        worst_relative_input_ = x;
      }
    }
    return ulps;
  }

  // One line per function; scripts/verify_exhaustive.sh takes the worst over
  // the shards from these.
  void print(const char* name) const {
    fmt::print("act worst {}: ulp {} at 0x{:08x}, relative 2^{:.2f} at 0x{:08x}\n", name, max_ulps_,
               worst_ulp_input_, std::log2(max_relative_), worst_relative_input_);
  }

 private:
  int max_ulps_ = 0;
  std::uint32_t worst_ulp_input_ = 0;
  double max_relative_ = 0;
  std::uint32_t worst_relative_input_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Exhaustive check of the bf16 multiplier, the fp32 -> bf16 rounder and the approximated "
      "functions of the activation function unit, and the vector unit's conversions"};
  std::string unit;
  unsigned shard = 0, shards = 1;
  app.add_option("--unit", unit, "mul, round, act or convert")
      ->required()
      ->check(CLI::IsMember({"mul", "round", "act", "convert"}));
  app.add_option("--shards", shards, "number of shards")->check(CLI::Range(1u, 65536u));
  app.add_option("--shard", shard, "this process's shard, 0-based");
  CLI11_PARSE(app, argc, argv);
  if (shard >= shards) {
    fmt::print(stderr, "exhaustive: --shard must be below --shards\n");
    return 2;
  }

  Tally tally;
  if (unit == "mul") {
    tpu::harness::UnitModel<Vbf16_mul_s0> rtl;
    tally = sweep("mul", shard, shards, [&](Tally& t, std::uint32_t input) {
      const auto a = static_cast<num::bf16_t>(input >> 16), b = static_cast<num::bf16_t>(input);
      rtl->a_i = a;
      rtl->b_i = b;
      rtl->eval();
      t.compare(input, rtl->product_o, num::mul_bf16(a, b), oracle::mul_bf16(a, b));
    });
  } else if (unit == "round") {
    tpu::harness::UnitModel<Vfp32_to_bf16_s0> rtl;
    tally = sweep("round", shard, shards, [&](Tally& t, std::uint32_t input) {
      rtl->value_i = input;
      rtl->eval();
      t.compare(input, rtl->value_o, num::fp32_to_bf16(input), oracle::fp32_to_bf16(input));
    });
  } else if (unit == "convert") {
    // x as an fp32 quantised by 1.0 (its value rounded to an int32), and as an int32
    // dequantised by 1.0 (rounded to fp32, the product exact): two results an input.
    tpu::harness::UnitModel<Vvector_lane> rtl;
    constexpr num::fp32_t kOne = 0x3F800000u;
    const auto lane = [&](tpu::isa::VectorOp op, bool int32, std::uint32_t x) {
      rtl->op_i = static_cast<std::uint8_t>(op);
      rtl->int32_i = int32;
      rtl->a_i = x;
      rtl->b_i = kOne;
      rtl->eval();
      return rtl->result_o;
    };
    tally = sweep("convert", shard, shards, [&](Tally& t, std::uint32_t input) {
      const auto as_int = static_cast<std::int32_t>(input);
      t.compare(input, lane(tpu::isa::VectorOp::Quant, false, input),
                static_cast<std::uint32_t>(num::fp32_to_int32(num::mul_fp32(input, kOne))),
                oracle::eltwise_lane(tpu::isa::VectorOp::Quant, false, input, kOne));
      t.compare(input, lane(tpu::isa::VectorOp::Dequant, true, input), num::int32_to_fp32(as_int),
                oracle::eltwise_lane(tpu::isa::VectorOp::Dequant, true, input, kOne));
    });
  } else {
    // The RTL must equal the reference model bit for bit; the reference model
    // must be within 1 bf16 ulp of the oracle (a "reference mismatch" is more).
    struct Smooth {
      num::ActFunc func;
      const char* name;
      double (*truth)(std::uint32_t);
      ActError error;
    };
    Smooth functions[] = {{num::ActFunc::kSigmoid, "sigmoid", oracle::sigmoid_double, {}},
                          {num::ActFunc::kTanh, "tanh", oracle::tanh_double, {}},
                          {num::ActFunc::kGelu, "gelu", oracle::gelu_double, {}},
                          {num::ActFunc::kExp, "exp", oracle::exp_double, {}},
                          {num::ActFunc::kRecip, "recip", oracle::recip_double, {}},
                          {num::ActFunc::kRsqrt, "rsqrt", oracle::rsqrt_double, {}}};
    ActStream rtl;
    tally = sweep("act", shard, shards, [&](Tally& t, std::uint32_t input) {
      ++t.checked;
      const bool nan = num::canon_in_fp32(input) == num::kCanonicalNanFp32;
      for (Smooth& f : functions) {
        const auto func = static_cast<unsigned>(f.func);
        const std::uint32_t result = num::act_func(func, input, 0);
        rtl.feed(t, func, input, result);
        const double truth = nan ? 0.0 : f.truth(input);
        if (nan || std::isnan(truth)) {  // rsqrt below zero
          if (result != num::kCanonicalNanFp32)
            t.report_first(f.name, input, result, num::kCanonicalNanFp32, ++t.ref_mismatches);
          continue;
        }
        if (f.error.add(input, result, truth) > 1)
          t.report_first(f.name, input, num::fp32_to_bf16(result),
                         oracle::round_real_to_bf16(truth), ++t.ref_mismatches);
      }
    });
    rtl.drain(tally);
    for (const Smooth& f : functions) f.error.print(f.name);
  }
  fmt::print("{} shard {}/{}: {} inputs, {} RTL mismatches, {} reference mismatches\n", unit, shard,
             shards, tally.checked, tally.rtl_mismatches, tally.ref_mismatches);
  return (tally.rtl_mismatches || tally.ref_mismatches) ? 1 : 0;
}
