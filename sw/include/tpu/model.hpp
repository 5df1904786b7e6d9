// The functional model of the TPU core: runs a program one instruction at a time, exactly as
// docs/isa.md ("Semantics", "Weight tiles", "Errors") defines it, with the arithmetic of the
// numerics library (tpu/numerics, bit for bit what the RTL computes). It has no notion of time:
// RunResult::counters is always empty.
//
// Differences from the RTL that a program cannot rely on either way:
// - Memories start as zeros (the RTL's start random); uninitialized_reads() counts reads of rows
//   nothing has written, so a test can show that a program never reads garbage.
// - A bus error (a host access outside memory()) leaves the failing instruction without any
//   effect; on the RTL, part of it (and of instructions running beside it) may have happened.
// - Instructions are fetched one at a time: only an instruction the program reaches can fail to
//   be fetched (BUS_READ, ERROR_PC its index).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "tpu/array_fold.hpp"
#include "tpu/backend.hpp"
#include "tpu/host_memory.hpp"
#include "tpu/isa.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/worker_pool.hpp"

namespace tpu {

// One lane of ELTWISE (N-VEC of docs/numerics.md) as the core computes it: fp32, or with `int32`
// int32 lanes (wrapping sums and products, signed max and min).
num::fp32_t eltwise_lane(isa::VectorOp op, bool int32, num::fp32_t a, num::fp32_t b);

class FunctionalModel final : public Backend {
 public:
  // Throws std::invalid_argument when isa::validate_config() rejects `config`, and
  // std::runtime_error for a TPU_FOLD_PATH this CPU does not run (detail::default_fold_path) or
  // a TPU_MODEL_THREADS that is not a count (WorkerPool::host_threads). MATMUL's rows run on
  // that many threads where they are many.
  FunctionalModel(const HardwareConfig& config, std::size_t host_bytes);

  std::string name() const override { return "model"; }
  const HardwareConfig& config() const override { return config_; }
  HostMemory& memory() override { return memory_; }
  // Each run starts with an empty weight FIFO; the UB and the accumulators keep their contents.
  // RunResult::instructions counts the instructions completed before HALT or the failing one,
  // SYNC included and HALT not, like the RTL's INSTRUCTIONS counter. A chip alone runs an
  // ALLREDUCE as a chip whose neighbours never answer: POD_CONFIG without a pod position
  // (set_pod), else LINK_TIMEOUT. In a pod (make_model_pod), the pod runs the chips together.
  RunResult run(std::uint32_t prog_addr, std::uint32_t count) override;

  // The POD register: this chip's position on the ring and the number of chips.
  void set_pod(unsigned id, unsigned size) {
    pod_id_ = id;
    pod_size_ = size;
  }

  // Step by step, for a pod: begin() starts a run; advance() executes instructions until the run
  // stops (HALT or an error: false) or the next instruction is an ALLREDUCE that has passed its
  // checks (true), which the pod then completes on every chip (finish_collective) or fails
  // (fail); result() is the run's outcome so far.
  void begin(std::uint32_t prog_addr, std::uint32_t count);
  bool advance();
  const isa::Instruction& collective() const { return current_; }
  // The values of the ALLREDUCE waiting in advance(): lanes of its rows whose flat index is below
  // `total`, iteration by iteration, row by row (their flat indices into `flat`); and writing the
  // sums back in their place.
  std::vector<num::fp32_t> collective_values(std::vector<std::uint64_t>* flat = nullptr) const;
  void finish_collective(const std::vector<num::fp32_t>& sums);
  // Stops the run at the waiting ALLREDUCE (which counts as issued) with a collective's error.
  void fail(regs::Error error, std::string detail);
  const RunResult& result() const { return result_; }

  // How MATMUL's products and sums run on this host: the code path and the threads.
  detail::FoldPath fold_path() const { return fold_path_; }
  unsigned fold_threads() const { return fold_threads_; }

  // Why the last run stopped with an error, in one line; empty if it reached HALT.
  const std::string& error_detail() const { return error_detail_; }

  // Copies of one row; std::out_of_range names a row outside the memory.
  std::vector<num::bf16_t> ub_row(std::uint32_t row) const;
  std::vector<num::fp32_t> acc_row(std::uint32_t row) const;
  // Row reads (by MATMUL, ACTIVATE, WRITE_HOST) of UB or ACC rows that no instruction has written
  // since construction, one per row read.
  std::uint64_t uninitialized_reads() const { return uninitialized_reads_; }

 private:
  // Weight (k, j) at [k * dim + j]. 16-bit lanes: bf16, or a sign-extended int8.
  using Tile = std::vector<num::bf16_t>;

  // Step 7 of "Errors": the weight-tile accounting, before the instruction issues.
  isa::CheckResult account_weights(const isa::Instruction& in) const;
  void execute(const isa::Instruction& in);
  void read_host(const isa::Instruction& in);
  // bf16 rows of 2 * dim bytes, or int8 rows of dim bytes sign-extended into the lanes; with
  // `transposed` (READ_WEIGHTS T) each the tile's column; into `tile` (D x D lanes).
  void load_tile(std::uint64_t host_addr, std::uint32_t stride, std::uint32_t rows, bool int8,
                 bool transposed, num::bf16_t* tile) const;
  void read_weights(const isa::Instruction& in);
  void matmul(const isa::Instruction& in);
  // MATMUL's products (`tiles` its weights from the FIFO; none: it fetches them) by `fold`
  // (detail::fold_rows or fold_rows_int8), rows over the pool's threads where they are many, the
  // activations from `shadow` (the unified buffer as the fold takes it; lanes k >= k_valid
  // `past_k_valid`), `convert` making the fold's weights of a tile's lanes. Fetched whole tiles
  // that lie one after the other are folded where they lie in host memory, not converted, on
  // the AVX-512 path or for a few rows.
  template <typename T, typename Convert, typename Fold>
  void fold_matmul(const isa::Instruction& in, const std::vector<Tile>& tiles,
                   const std::vector<T>& shadow, T past_k_valid, Convert convert, Fold fold);
  // Unified-buffer rows [first, first + rows) have been written: their flags, and their values
  // as the folds take them.
  void ub_rows_written(std::uint64_t first, std::uint64_t rows);
  void activate(const isa::Instruction& in);
  void eltwise(const isa::Instruction& in);
  void requantize(const isa::Instruction& in);  // ACTIVATE with REQ
  void write_host(const isa::Instruction& in);
  bool stop(regs::Error error, std::uint32_t pc, std::string detail);
  // Calls f(flat index, element of acc_) for each lane of the waiting ALLREDUCE below `total`.
  template <typename F>
  void for_each_collective_lane(F&& f) const {
    for (std::uint64_t i = 0; i < current_.count(); ++i) {
      for (std::uint64_t r = 0; r < current_.rows(); ++r) {
        const std::uint64_t row = current_.addr_a() + i * current_.step_a() + r;
        for (std::uint64_t l = 0; l < dim_; ++l) {
          const std::uint64_t index = current_.offset() +
                                      i * std::uint64_t{current_.get(isa::kOffsetStep)} +
                                      r * dim_ + l;
          if (index < current_.total()) f(index, row * dim_ + l);
        }
      }
    }
  }

  void note_read(const std::vector<std::uint8_t>& written, std::uint64_t row) {
    if (!written[row]) ++uninitialized_reads_;
  }
  void note_reads(const std::vector<std::uint8_t>& written, std::uint64_t first,
                  std::uint64_t rows) {
    // Rows are written before they are read nearly always: a search for a zero first, which is
    // faster than counting them (a MATMUL looks at every row it reads).
    const std::uint8_t* from = written.data() + first;
    if (std::memchr(from, 0, rows) == nullptr) return;
    uninitialized_reads_ += static_cast<std::uint64_t>(std::count(from, from + rows, 0));
  }
  num::bf16_t* ub(std::uint64_t row) { return &ub_[row * dim_]; }
  num::fp32_t* acc(std::uint64_t row) { return &acc_[row * dim_]; }

  HardwareConfig config_;
  std::size_t dim_;
  HostMemory memory_;
  std::vector<num::bf16_t> ub_;
  std::vector<num::fp32_t> acc_;
  std::vector<std::uint8_t> ub_written_;
  std::vector<std::uint8_t> acc_written_;
  std::deque<Tile> weight_fifo_;  // tiles READ_WEIGHTS loaded and no MATMUL has used (U)
  detail::FoldPath fold_path_;    // how MATMUL's products and sums run on this host
  std::vector<float> ub_fold_;    // the unified buffer as the fold takes it (fold_operands)
  std::vector<std::int32_t> ub_int8_;  // ... and the int8 fold (the lanes' low bytes), with Int8
  unsigned fold_threads_;             // threads for MATMUL's rows
  std::unique_ptr<WorkerPool> pool_;  // with more than one thread
  std::uint64_t uninitialized_reads_ = 0;
  std::string error_detail_;
  unsigned pod_id_ = 0;
  unsigned pod_size_ = 0;
  // The run in progress (begin, advance).
  std::uint32_t prog_addr_ = 0;
  std::uint32_t prog_count_ = 0;
  std::uint32_t pc_ = 0;
  bool stopped_ = true;
  isa::Instruction current_;
  RunResult result_;
};

}  // namespace tpu
