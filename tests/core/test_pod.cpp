// Pods (docs/pod.md): the ring all-reduce N-REDUCE on the reference model, against the host FPU;
// on pods of functional models and of Verilator models of tpu_top, against the reference, for
// 2, 3, 4, 5 and 8 chips, random and adversarial values, sizes of one value to more than the
// accumulators hold, slow and narrow links; and the errors a pod can stop with.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "backends/rtl_pod.hpp"
#include "core_harness.hpp"
#include "oracle/collective.hpp"
#include "tpu/numerics/collective.hpp"
#include "tpu/pod.hpp"
#include "tpu/program.hpp"

namespace tpu::testing {
namespace {

using oracle::Tensors;

Tensors adversarial(unsigned chips, std::size_t n, std::uint64_t seed) {
  return oracle::adversarial_tensors(chips, n, seed);
}
Tensors random_tensors(unsigned chips, std::size_t n, std::uint64_t seed) {
  return oracle::random_tensors(chips, n, seed);
}

TEST(RefPod, ChunksFollowTheContract) {
  EXPECT_EQ(num::chunk_start(10, 4, 0), 0u);
  EXPECT_EQ(num::chunk_start(10, 4, 1), 2u);
  EXPECT_EQ(num::chunk_start(10, 4, 2), 5u);
  EXPECT_EQ(num::chunk_start(10, 4, 3), 7u);
  EXPECT_EQ(num::chunk_start(10, 4, 4), 10u);
  // Fewer values than chips: empty chunks, each value in the chunk that holds it.
  for (std::uint64_t n : {1u, 2u, 3u, 7u, 8u, 9u, 1000u}) {
    for (unsigned chips : {2u, 3u, 5u, 8u}) {
      for (std::uint64_t v = 0; v < n; ++v) {
        const unsigned c = num::chunk_of(n, chips, v);
        EXPECT_LE(num::chunk_start(n, chips, c), v);
        EXPECT_GT(num::chunk_start(n, chips, c + 1), v);
      }
    }
  }
}

TEST(RefPod, MatchesTheHostFpu) {
  for (unsigned chips : {2u, 3u, 4u, 5u, 8u}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{97}, std::size_t{4099}}) {
      for (const Tensors& g :
           {random_tensors(chips, n, 11 * chips + n), adversarial(chips, n, 13 * chips + n)}) {
        EXPECT_EQ(num::ring_allreduce(g), oracle::ring_allreduce(g)) << chips << " chips, " << n;
      }
    }
  }
}

TEST(RefPod, PassesDoNotChangeTheBits) {
  const Tensors g = adversarial(5, 1001, 7);
  const std::vector<num::fp32_t> whole = num::ring_allreduce(g);
  std::vector<num::fp32_t> pieces;
  for (std::size_t first = 0; first < 1001; first += 96) {
    const std::size_t length = std::min<std::size_t>(96, 1001 - first);
    Tensors part;
    for (const auto& t : g) part.emplace_back(t.begin() + first, t.begin() + first + length);
    const auto sums = num::ring_allreduce(part, 1001, first);
    pieces.insert(pieces.end(), sums.begin(), sums.end());
  }
  EXPECT_EQ(pieces, whole);
}

// Every chip ends with the reference's bits.
void expect_allreduce(Pod& pod, const Tensors& g, const std::string& what) {
  const std::vector<num::fp32_t> expected = num::ring_allreduce(g);
  AllreduceStats stats;
  const Tensors sums = run_allreduce(pod, g, &stats);
  ASSERT_EQ(sums.size(), g.size());
  for (std::size_t c = 0; c < sums.size(); ++c) {
    EXPECT_EQ(sums[c], expected) << what << ": chip " << c << " of " << g.size();
  }
}

TEST(ModelPod, AllreduceMatchesTheReference) {
  const HardwareConfig config = config_named("4x4_m1a1");
  for (unsigned chips : {2u, 3u, 4u, 5u, 8u}) {
    // 3001 values are 751 rows: more than the 256 accumulator rows, so several passes.
    for (std::size_t n : {std::size_t{1}, std::size_t{37}, std::size_t{3001}}) {
      auto pod = make_model_pod(config, chips, allreduce_memory_bytes(config, chips, n));
      expect_allreduce(*pod, adversarial(chips, n, chips * 100 + n), "model");
    }
  }
}

std::unique_ptr<sim::RtlPod> rtl_pod(const std::string& core, unsigned chips, std::size_t n,
                                     LinkTiming link = {}) {
  sim::RtlPodOptions options;
  options.link = link;
  options.memory_bytes = allreduce_memory_bytes(config_named(core), chips, n);
  options.link_timeout = 20000;
  return std::make_unique<sim::RtlPod>(config_named(core), chips, options);
}

TEST(RtlPod, AllreduceMatchesTheReference) {
  for (unsigned chips : {2u, 3u, 4u, 5u, 8u}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{16 * 9 + 5}}) {
      auto pod = rtl_pod("16x16", chips, n);
      expect_allreduce(*pod, adversarial(chips, n, chips * 1000 + n), "rtl 16x16 adversarial");
      expect_allreduce(*pod, random_tensors(chips, n, chips * 2000 + n), "rtl 16x16 random");
    }
  }
}

// The parameter-server baseline: its own fold (the host FPU's agrees), on row-wide and on narrow,
// slow links, one pass and several.
TEST(RtlPod, ParameterServerMatchesItsFold) {
  for (unsigned chips : {2u, 3u, 4u, 5u}) {
    for (const auto& [core, n, link] :
         {std::tuple{"16x16", std::size_t{16 * 7 + 5}, LinkTiming{}},
          std::tuple{"4x4_m1a1", std::size_t{1100}, LinkTiming{5, 0.5}}}) {
      const Tensors g = adversarial(chips, n, chips * 4000 + n);
      const std::vector<num::fp32_t> expected = num::ps_allreduce(g);
      EXPECT_EQ(expected, oracle::ps_allreduce(g));
      auto rtl = rtl_pod(core, chips, n, link);
      auto model = make_model_pod(config_named(core), chips,
                                  allreduce_memory_bytes(config_named(core), chips, n));
      for (Pod* pod : {static_cast<Pod*>(rtl.get()), model.get()}) {
        const Tensors sums = run_allreduce(*pod, g, nullptr, true);
        for (std::size_t c = 0; c < chips; ++c) {
          EXPECT_EQ(sums[c], expected)
              << pod->name() << " " << core << ": chip " << c << " of " << chips;
        }
      }
    }
  }
}

// Links of two lanes (a row in two beats), room for 3 rows, pipelined adders; a slow, long wire;
// more values than the accumulators hold (several passes).
TEST(RtlPod, NarrowSlowLinksAndSeveralPasses) {
  const LinkTiming slow{7, 0.5};
  for (unsigned chips : {2u, 3u, 5u}) {
    for (std::size_t n : {std::size_t{13}, std::size_t{1100}}) {
      auto pod = rtl_pod("4x4_m1a1", chips, n, slow);
      expect_allreduce(*pod, adversarial(chips, n, chips * 3000 + n), "rtl 4x4_m1a1");
    }
  }
}

// The same bits whatever the latency and bandwidth.
TEST(RtlPod, TimingDoesNotChangeTheBits) {
  const Tensors g = random_tensors(4, 16 * 20 + 3, 99);
  for (const LinkTiming link : {LinkTiming{1, 1.0}, LinkTiming{40, 1.0}, LinkTiming{3, 0.25}}) {
    auto pod = rtl_pod("16x16", 4, g[0].size(), link);
    expect_allreduce(*pod, g,
                     fmt::format("latency {} bandwidth {}", link.latency, link.beats_per_cycle));
  }
}

// Each chip's program: ALLREDUCE of `rows` accumulator rows with these fields, then HALT.
void load_allreduce(Pod& pod, unsigned chip, std::uint32_t rows, std::uint32_t total,
                    std::uint32_t offset) {
  isa::ProgramBuilder program(pod.config());
  isa::AllreduceArgs sum;
  sum.rows = rows;
  sum.total = total;
  sum.offset = offset;
  pod.chip(chip).memory().write_array(0, program.allreduce(sum).halt().bytes());
}

std::vector<RunResult> run_both(Pod& model, Pod& rtl, unsigned count) {
  const std::vector<RunResult> from_model = model.run(0, count);
  const std::vector<RunResult> from_rtl = rtl.run(0, count);
  for (std::size_t c = 0; c < from_rtl.size(); ++c) {
    EXPECT_EQ(from_rtl[c].error, from_model[c].error) << "chip " << c;
    EXPECT_EQ(from_rtl[c].done, from_model[c].done) << "chip " << c;
  }
  return from_rtl;
}

TEST(RtlPod, ChipsThatDisagreeStopWithPodMismatch) {
  auto rtl = rtl_pod("16x16", 3, 64);
  auto model = make_model_pod(config_named("16x16"), 3, 1 << 16);
  for (Pod* pod : {static_cast<Pod*>(rtl.get()), model.get()}) {
    load_allreduce(*pod, 0, 2, 32, 0);
    load_allreduce(*pod, 1, 2, 31, 0);  // another total
    load_allreduce(*pod, 2, 2, 32, 0);
  }
  const auto results = run_both(*model, *rtl, 2);
  // Chip 1 sees chip 0's header, chip 2 chip 1's: both differ from their own.
  EXPECT_EQ(results[1].error, regs::Error::PodMismatch);
  EXPECT_EQ(results[2].error, regs::Error::PodMismatch);
  EXPECT_EQ(results[0].error, regs::Error::LinkTimeout);
  EXPECT_EQ(results[1].error_pc, 0u);
}

TEST(RtlPod, AChipThatStopsLeavesTheOthersToTimeOut) {
  auto rtl = rtl_pod("16x16", 4, 64);
  auto model = make_model_pod(config_named("16x16"), 4, 1 << 16);
  for (Pod* pod : {static_cast<Pod*>(rtl.get()), model.get()}) {
    for (unsigned c = 1; c < 4; ++c) load_allreduce(*pod, c, 2, 32, 0);
    isa::ProgramBuilder halt_only(pod->config());
    halt_only.sync();
    pod->chip(0).memory().write_array(0, halt_only.halt().bytes());
  }
  const auto results = run_both(*model, *rtl, 2);
  EXPECT_TRUE(results[0].ok());
  for (unsigned c = 1; c < 4; ++c) EXPECT_EQ(results[c].error, regs::Error::LinkTimeout);
}

TEST(RtlPod, AChipOutsideAPodStopsWithPodConfig) {
  for (const char* core : {"16x16", "4x4_m1a1"}) {
    CoreHarness harness(config_named(core));
    isa::ProgramBuilder program(config_named(core));
    isa::AllreduceArgs sum;
    sum.rows = 1;
    sum.total = 4;
    const BothResults results = harness.run(program.allreduce(sum).halt().instructions());
    EXPECT_EQ(results.rtl.error, regs::Error::PodConfig) << core;
    EXPECT_EQ(results.model.error, regs::Error::PodConfig) << core;
  }
}

TEST(RtlPod, CoresWithoutLinksRejectAllreduce) {
  isa::Instruction in(isa::Opcode::Allreduce);
  in.set_rows(1).set_total(1);
  for (const char* core : {"8x8_bus4", "4x4_seq", "1x1_seq"}) {
    const HardwareConfig config = config_named(core);
    EXPECT_EQ(isa::check(in, config), regs::Error::IllegalOpcode) << core;
    CoreHarness harness(config);
    const BothResults results = harness.run({in, isa::Instruction(isa::Opcode::Halt)});
    EXPECT_EQ(results.rtl.error, regs::Error::IllegalOpcode) << core;
    EXPECT_EQ(results.model.error, regs::Error::IllegalOpcode) << core;
  }
}

// Link counters: every chip sends its header and 2 (N - 1) chunks' rows.
TEST(RtlPod, CountsLinkBeats) {
  const unsigned chips = 4;
  const std::size_t n = 16 * 64;  // 64 rows: 16 a chunk
  auto pod = rtl_pod("16x16", chips, n);
  AllreduceStats stats;
  run_allreduce(*pod, random_tensors(chips, n, 5), &stats);
  EXPECT_EQ(stats.link_beats, 1u + 2u * (chips - 1) * 16u);
  EXPECT_TRUE(stats.has_cycles);
  EXPECT_GT(stats.reduce_cycles, 2u * (chips - 1) * 16u);
}

}  // namespace
}  // namespace tpu::testing
