// The DMA's burst splitter (tpu_axi_bursts) against an independent model of
// the AXI4 rules it follows: rows narrower than the bus as narrow beats, rows
// that follow each other in memory as one run, runs cut at MaxBurst beats and
// at every 4 KiB boundary, the last burst of a transfer marked. Random
// transfers (many near a boundary) with the engine taking bursts at random.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "Vaxi_bursts_b32.h"
#include "Vaxi_bursts_b8.h"
#include "common/test_seed.hpp"
#include "harness/unit_model.hpp"

namespace {

using tpu::harness::UnitModel;

struct Transfer {
  std::uint32_t addr;
  std::uint32_t stride;
  std::uint16_t rows;
  std::uint8_t row_log2;
};

struct Burst {
  std::uint32_t addr;
  std::uint32_t beats;
  unsigned size;
  bool last;
  bool operator==(const Burst& other) const {
    return addr == other.addr && beats == other.beats && size == other.size && last == other.last;
  }
};

std::ostream& operator<<(std::ostream& out, const Burst& b) {
  return out << "{addr 0x" << std::hex << b.addr << std::dec << ", " << b.beats << " beats of 2^"
             << b.size << (b.last ? ", last}" : "}");
}

// The bursts AXI4 allows for a transfer, as long as the rules let them be.
std::vector<Burst> expected_bursts(const Transfer& t, unsigned bus_log2, std::uint32_t max_burst) {
  const unsigned size = std::min<unsigned>(t.row_log2, bus_log2);
  const std::uint64_t beat = 1ull << size;
  const std::uint64_t row_bytes = 1ull << t.row_log2;
  const bool contiguous = t.rows == 1 || t.stride == row_bytes;
  std::vector<Burst> bursts;
  const std::uint32_t runs = contiguous ? 1 : t.rows;
  const std::uint64_t run_bytes = contiguous ? row_bytes * t.rows : row_bytes;
  for (std::uint32_t run = 0; run < runs; ++run) {
    std::uint32_t at = t.addr + run * t.stride;
    for (std::uint64_t left = run_bytes; left > 0;) {
      const std::uint64_t to_boundary = 4096 - at % 4096;
      const std::uint64_t bytes = std::min({left, max_burst * beat, to_boundary});
      bursts.push_back({at, static_cast<std::uint32_t>(bytes / beat), size, false});
      at += static_cast<std::uint32_t>(bytes);
      left -= bytes;
    }
  }
  bursts.back().last = true;
  return bursts;
}

Transfer random_transfer(std::mt19937_64& rng, unsigned max_row_log2, unsigned bus_log2) {
  Transfer t{};
  t.row_log2 = static_cast<std::uint8_t>(rng() % (max_row_log2 + 1));
  const std::uint32_t beat = 1u << std::min<unsigned>(t.row_log2, bus_log2);
  const std::uint32_t row_bytes = 1u << t.row_log2;
  const std::uint64_t most_rows[] = {1, 8, 300, 4000};
  t.rows = static_cast<std::uint16_t>(1 + rng() % most_rows[rng() % 4]);
  t.addr = static_cast<std::uint32_t>(rng());
  // Half of them start a few beats short of a 4 KiB boundary.
  if (rng() % 2) {
    t.addr = 4096u * static_cast<std::uint32_t>(rng() % 1024) -
             beat * static_cast<std::uint32_t>(rng() % 40);
  }
  t.addr &= ~(beat - 1);
  t.stride = (rng() % 2) ? row_bytes : beat * static_cast<std::uint32_t>(rng() % 70);
  return t;
}

// Offers a transfer on the command port, no burst taken yet.
template <typename VBursts>
void offer_transfer(UnitModel<VBursts>& unit, const Transfer& t) {
  unit->cmd_addr_i = t.addr;
  unit->cmd_stride_i = t.stride;
  unit->cmd_rows_i = t.rows;
  unit->cmd_row_log2_i = t.row_log2;
  unit->cmd_valid_i = 1;
  unit->burst_take_i = 0;
}

// Hands the splitter one transfer and collects the bursts it offers, taking
// each when the coin says so; checks nothing is offered before or after.
template <typename VBursts>
std::vector<Burst> run_transfer(UnitModel<VBursts>& unit, const Transfer& t, std::mt19937_64& rng,
                                unsigned take_percent) {
  unit->abort_i = 0;
  offer_transfer(unit, t);
  unit->eval();
  EXPECT_TRUE(unit->cmd_ready_o) << "the splitter is busy between transfers";
  EXPECT_FALSE(unit->burst_valid_o) << "a burst offered before its transfer";
  unit.clock();
  unit->cmd_valid_i = 0;

  std::vector<Burst> bursts;
  for (std::uint64_t cycle = 0; cycle < 1'000'000; ++cycle) {
    unit->burst_take_i = rng() % 100 < take_percent;
    unit->eval();
    if (!unit->burst_valid_o) break;
    EXPECT_FALSE(unit->cmd_ready_o) << "ready for a transfer while offering a burst";
    if (unit->burst_take_i) {
      bursts.push_back(
          {unit->burst_addr_o, unit->burst_beats_o, unit->burst_size_o, unit->burst_last_o != 0});
    }
    unit.clock();
  }
  EXPECT_FALSE(unit->burst_valid_o) << "the transfer did not end";
  return bursts;
}

template <typename VBursts>
void check_random_transfers(unsigned bus_log2, std::uint32_t max_burst, unsigned max_row_log2,
                            std::uint64_t seed) {
  UnitModel<VBursts> unit;
  std::mt19937_64 rng(seed);
  std::uint64_t bursts = 0, at_boundary = 0;
  for (int n = 0; n < 20'000; ++n) {
    const Transfer t = random_transfer(rng, max_row_log2, bus_log2);
    const std::vector<Burst> want = expected_bursts(t, bus_log2, max_burst);
    const std::vector<Burst> got = run_transfer(unit, t, rng, n % 3 == 0 ? 100 : 60);
    ASSERT_EQ(got, want) << "transfer " << n << ": addr 0x" << std::hex << t.addr << " stride 0x"
                         << t.stride << std::dec << ", " << t.rows << " rows of 2^" << t.row_log2
                         << " bytes";
    bursts += got.size();
    for (const Burst& b : got) at_boundary += (b.addr + (b.beats << b.size)) % 4096 == 0;
  }
  // The transfers must have exercised what they are for.
  EXPECT_GT(bursts, 200'000u);
  EXPECT_GT(at_boundary, 5'000u);
}

TEST(RtlAxiBursts, NarrowBusRandomTransfersFollowTheRules) {
  check_random_transfers<Vaxi_bursts_b8>(3, 8, 7, tpu::test::test_seed());
}

TEST(RtlAxiBursts, WideBusShortBurstsRandomTransfersFollowTheRules) {
  check_random_transfers<Vaxi_bursts_b32>(5, 3, 9, tpu::test::test_seed() + 1);
}

// An abort drops the rest of a transfer; the next one starts clean.
TEST(RtlAxiBursts, AbortDropsTheRestOfATransfer) {
  UnitModel<Vaxi_bursts_b8> unit;
  std::mt19937_64 rng(tpu::test::test_seed());
  const Transfer first{0x1ff0, 0x100, 50, 5};
  offer_transfer(unit, first);
  unit.clock();
  unit->cmd_valid_i = 0;
  unit->burst_take_i = 1;
  for (int i = 0; i < 5; ++i) unit.clock();
  unit->abort_i = 1;
  unit->eval();
  EXPECT_FALSE(unit->burst_valid_o);
  EXPECT_FALSE(unit->cmd_ready_o);
  unit.clock();
  const Transfer second{0x3000, 8, 9, 3};
  EXPECT_EQ(run_transfer(unit, second, rng, 100), expected_bursts(second, 3, 8));
}

}  // namespace
