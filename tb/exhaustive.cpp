// `make verify-exhaustive`: every one of the 2^32 bf16 x bf16 multiplier inputs
// and every one of the 2^32 fp32 -> bf16 rounder inputs, through the RTL and the
// reference model, each compared with the host-FPU oracle. One process takes
// one shard of the input space so that shards can run in parallel.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdint>

#include "Vbf16_mul_s0.h"
#include "Vfp32_to_bf16_s0.h"
#include "harness/unit_model.hpp"
#include "oracle/host_float.hpp"
#include "ref/numerics.hpp"

namespace {

namespace oracle = tpu::oracle;
namespace ref = tpu::ref;

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Exhaustive check of the bf16 multiplier and the fp32 -> bf16 rounder"};
  std::string unit;
  unsigned shard = 0, shards = 1;
  app.add_option("--unit", unit, "mul or round")
      ->required()
      ->check(CLI::IsMember({"mul", "round"}));
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
      const auto a = static_cast<ref::bf16_t>(input >> 16), b = static_cast<ref::bf16_t>(input);
      rtl->a_i = a;
      rtl->b_i = b;
      rtl->eval();
      t.compare(input, rtl->product_o, ref::mul_bf16(a, b), oracle::mul_bf16(a, b));
    });
  } else {
    tpu::harness::UnitModel<Vfp32_to_bf16_s0> rtl;
    tally = sweep("round", shard, shards, [&](Tally& t, std::uint32_t input) {
      rtl->value_i = input;
      rtl->eval();
      t.compare(input, rtl->value_o, ref::fp32_to_bf16(input), oracle::fp32_to_bf16(input));
    });
  }
  fmt::print("{} shard {}/{}: {} inputs, {} RTL mismatches, {} reference mismatches\n", unit, shard,
             shards, tally.checked, tally.rtl_mismatches, tally.ref_mismatches);
  return (tally.rtl_mismatches || tally.ref_mismatches) ? 1 : 0;
}
