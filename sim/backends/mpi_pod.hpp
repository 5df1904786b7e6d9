// A pod with one chip per MPI rank (docs/pod.md): rank i of MPI_COMM_WORLD simulates chip i, a
// Verilator model of tpu_top, and the links between neighbouring ranks are MPI messages.
//
// The ranks keep in lockstep without meeting every cycle: a beat or credit that leaves in cycle
// t arrives in cycle t + L (L the link latency), so each rank simulates L cycles on what it has,
// then swaps what left in them with its two neighbours: every arrival of the next L cycles is
// then at hand. The cycles and the bits are those of the one-process pod (RtlPod) with the same
// links. A run ends when every rank's chip has stopped and nothing is in flight, which the ranks
// agree on once per window of L cycles.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/rtl_pod.hpp"

namespace tpu::sim {

class MpiPod final : public Pod {
 public:
  // Initialises MPI if it is not yet (and finalises it at exit).
  MpiPod(const HardwareConfig& config, const RtlPodOptions& options);

  std::string name() const override { return "mpi"; }
  const HardwareConfig& config() const override { return config_; }
  unsigned size() const override { return size_; }
  std::vector<unsigned> local_chips() const override { return {rank_}; }
  Backend& chip(unsigned position) override;
  std::vector<RunResult> run(std::uint32_t prog_addr, std::uint32_t count) override;

  bool reports() const override { return rank_ == 0; }
  std::vector<std::vector<num::fp32_t>> gather(
      const std::vector<std::vector<num::fp32_t>>& local) override;
  std::uint64_t max_over_chips(std::uint64_t value) override;

 private:
  // Swaps the window's departures with the neighbours and files their arrivals.
  void exchange();

  HardwareConfig config_;
  RtlPodOptions options_;
  unsigned rank_ = 0;
  unsigned size_ = 0;
  std::unique_ptr<RtlBackend> chip_;
  LinkWire in_;   // from the previous rank: its beats, the credits this chip returns
  LinkWire out_;  // to the next rank: the credits it returns
  std::vector<std::uint32_t> beats_out_;    // (cycle, head, words) of the beats this window
  std::vector<std::uint64_t> credits_out_;  // cycles of the credits this window
  std::uint64_t now_ = 0;
};

}  // namespace tpu::sim
