// Streams weight tiles, activation rows and partial-sum seeds through a tpu_mxu
// model and collects the result rows, with optional random stalls on every
// stream. It checks the stream protocol as it goes (joined acts and seeds, the
// `last` marker on the right rows, no result without a request) and stops with
// an error if the model hangs.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "harness/mxu_model.hpp"

namespace tpu::harness {

// One weight tile and the activation rows that use it.
struct TileJob {
  std::vector<bf16_t> weights;  // rows x cols, row-major: weights[k * cols + j]
  std::vector<bf16_t> acts;     // m x rows: acts[i * rows + k]
  std::vector<fp32_t> seeds;    // m x cols, used when seed_from is empty
  // Take the seeds from the results of an earlier job (a running sum across
  // K tiles, N-ORDER); its rows are fed back as they come out.
  std::optional<std::size_t> seed_from;
  std::size_t m = 0;
};

// Probabilities per cycle that a stream holds back (a producer offers nothing,
// or the consumer is not ready).
struct StallProfile {
  double weight_gap = 0.0;
  double act_gap = 0.0;
  double seed_gap = 0.0;
  double result_block = 0.0;
  std::uint64_t seed = 1;
  bool any() const { return weight_gap > 0 || act_gap > 0 || seed_gap > 0 || result_block > 0; }
};

struct StreamStats {
  std::uint64_t cycles = 0;       // first weight beat to last result, inclusive
  std::uint64_t result_rows = 0;  // rows of results (one per activation row)
  std::uint64_t macs = 0;         // rows x cols MACs per activation row
  double macs_per_cycle() const { return cycles ? double(macs) / double(cycles) : 0.0; }
};

struct StreamResult {
  std::vector<std::vector<fp32_t>> results;  // per job, m x cols
  StreamStats stats;
};

class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Resets the model, streams every job and returns the results. Throws
// ProtocolError on a protocol violation or a hang, AssertionFailure if an RTL
// assertion fires, std::invalid_argument for jobs of the wrong shape.
StreamResult run_stream(MxuModel& model, const std::vector<TileJob>& jobs,
                        const StallProfile& stalls = {});

}  // namespace tpu::harness
