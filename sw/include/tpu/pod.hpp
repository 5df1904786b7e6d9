// A pod: chips joined in a one-way ring by inter-chip links (docs/pod.md), each with its own host
// memory, running programs together; ALLREDUCE sums accumulator rows across them (N-REDUCE of
// docs/numerics.md). Pods come as functional models (make_model_pod), as Verilator models in one
// process (Simulation::open_pod) and one chip per MPI rank (the mpi backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpu/backend.hpp"
#include "tpu/numerics/float.hpp"

namespace tpu {

class Pod {
 public:
  virtual ~Pod() = default;
  virtual std::string name() const = 0;
  virtual const HardwareConfig& config() const = 0;
  // Chips on the ring; position i sends to i + 1 and receives from i - 1 (mod size()).
  virtual unsigned size() const = 0;
  // The chips this process runs: every one, or under MPI its own.
  virtual std::vector<unsigned> local_chips() const = 0;
  // A local chip, as a backend of its own (its memory, its configuration).
  virtual Backend& chip(unsigned position) = 0;
  // Runs each local chip's program at prog_addr of its own memory, all chips together, until
  // every one has stopped; one result per local chip, in local_chips() order.
  virtual std::vector<RunResult> run(std::uint32_t prog_addr, std::uint32_t count) = 0;

  // Across processes (MPI): whether this process reports for the pod, every chip's tensor
  // gathered there (in position order; empty elsewhere), and the largest of a figure.
  virtual bool reports() const { return true; }
  virtual std::vector<std::vector<num::fp32_t>> gather(
      const std::vector<std::vector<num::fp32_t>>& local) {
    return local;
  }
  virtual std::uint64_t max_over_chips(std::uint64_t value) { return value; }
};

// A chip of a pod stopped with an error code.
class PodChipError : public std::runtime_error {
 public:
  PodChipError(unsigned chip, const RunResult& result);
  unsigned chip() const { return chip_; }
  const RunResult& result() const { return result_; }

 private:
  unsigned chip_;
  RunResult result_;
};

// std::invalid_argument unless `config` has links and a pod of `chips` chips is 2 .. 255 of them.
void check_pod(const HardwareConfig& config, unsigned chips);

// N functional models (2 .. 255 chips) of `config`, which must have links. ALLREDUCE completes
// once every chip has reached it; a chip whose previous chip reached another ALLREDUCE stops
// with POD_MISMATCH, and chips left waiting for a chip that stopped, with LINK_TIMEOUT.
std::unique_ptr<Pod> make_model_pod(const HardwareConfig& config, unsigned chips,
                                    std::size_t host_bytes);

// Link behaviour of a simulated pod's wires: latency in cycles, each way, and bandwidth as link
// beats per cycle (0 < b <= 1; below 1 the receiving end returns credits no faster).
struct LinkTiming {
  unsigned latency = 1;
  double beats_per_cycle = 1.0;
};

// What an all-reduce cost, from the chips' counters (empty on the functional model).
struct AllreduceStats {
  std::uint64_t values = 0;         // n
  unsigned passes = 0;              // ALLREDUCE instructions per chip
  std::uint64_t cycles = 0;         // the slowest chip's CYCLES, loads and stores included
  std::uint64_t reduce_cycles = 0;  // the slowest chip's cycles in its ALLREDUCEs alone
  std::uint64_t link_beats = 0;     // beats one chip sent (LINK_SENT_BEATS, headers included)
  std::uint64_t link_stall = 0;     // the most LINK_STALL cycles of any chip
  bool has_cycles = false;
};

// The ring all-reduce of the local chips' tensors (inputs[k] for local_chips()[k], flattened, all
// of one length) on `pod`: loaded into the accumulators, summed by ALLREDUCE in as many passes as
// the accumulators need (each pass a slice of every chip's chunk), stored back. Returns the sums
// each local chip holds, in the same order. Throws PodChipError when a chip stops with an error
// code. With `parameter_server`, ALLREDUCE's flag PS: the baseline the ring is measured against,
// whose sums are num::ps_allreduce's, not N-REDUCE's.
std::vector<std::vector<num::fp32_t>> run_allreduce(
    Pod& pod, const std::vector<std::vector<num::fp32_t>>& inputs, AllreduceStats* stats = nullptr,
    bool parameter_server = false);

// The host memory run_allreduce needs per chip for n values on a pod of `chips` chips.
std::size_t allreduce_memory_bytes(const HardwareConfig& config, unsigned chips,
                                   std::uint64_t values);

}  // namespace tpu
