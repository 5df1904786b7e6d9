#include "backends/mpi_pod.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <stdexcept>

namespace tpu::sim {
namespace {

// MPI for the life of the process, once: finalised at exit if this program started it.
class MpiSession {
 public:
  static void ensure() { static MpiSession session; }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  MpiSession() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      MPI_Init(nullptr, nullptr);
      owned_ = true;
    }
  }
  ~MpiSession() {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (owned_ && !finalised) MPI_Finalize();
  }
  bool owned_ = false;
};

constexpr int kTagBeats = 1;
constexpr int kTagCredits = 2;

// Sends `out` to one neighbour and receives from the other, sizes first.
template <typename T>
std::vector<T> swap(const std::vector<T>& out, int to, int from, int tag, MPI_Datatype type) {
  unsigned long long out_size = out.size();
  unsigned long long in_size = 0;
  MPI_Sendrecv(&out_size, 1, MPI_UNSIGNED_LONG_LONG, to, tag, &in_size, 1, MPI_UNSIGNED_LONG_LONG,
               from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::vector<T> in(in_size);
  MPI_Sendrecv(out.data(), static_cast<int>(out.size()), type, to, tag, in.data(),
               static_cast<int>(in.size()), type, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return in;
}

}  // namespace

MpiPod::MpiPod(const HardwareConfig& config, const RtlPodOptions& options)
    : config_(config),
      options_(options),
      in_(options.link, config.link_lanes ? config.dim / config.link_lanes : 1),
      out_(options.link, config.link_lanes ? config.dim / config.link_lanes : 1) {
  MpiSession::ensure();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rank_ = static_cast<unsigned>(rank);
  size_ = static_cast<unsigned>(size);
  check_pod(config, size_);
  RtlOptions chip_options;
  chip_options.memory_bytes = options.memory_bytes;
  chip_options.random_init_seed = rank_ + 1;  // as chip `rank` of the one-process pod
  chip_ = std::make_unique<RtlBackend>(config, chip_options);
  chip_->set_pod(rank_, size_, options.link_timeout);
}

Backend& MpiPod::chip(unsigned position) {
  if (position != rank_) {
    throw std::out_of_range(fmt::format("chip {} runs on another MPI rank", position));
  }
  return *chip_;
}

void MpiPod::exchange() {
  const int next = static_cast<int>((rank_ + 1) % size_);
  const int previous = static_cast<int>((rank_ + size_ - 1) % size_);
  const auto beats = swap(beats_out_, next, previous, kTagBeats, MPI_UINT32_T);
  const auto credits = swap(credits_out_, previous, next, kTagCredits, MPI_UINT64_T);
  const std::size_t words = config_.link_lanes;
  for (std::size_t at = 0; at + 3 + words <= beats.size(); at += 3 + words) {
    LinkBeat beat;
    beat.valid = true;
    beat.head = beats[at + 2] != 0;
    beat.data.assign(beats.begin() + static_cast<std::ptrdiff_t>(at + 3),
                     beats.begin() + static_cast<std::ptrdiff_t>(at + 3 + words));
    in_.push_beat(std::uint64_t{beats[at]} | std::uint64_t{beats[at + 1]} << 32, beat);
  }
  for (std::uint64_t sent : credits) out_.push_credit(sent);
  beats_out_.clear();
  credits_out_.clear();
}

std::vector<RunResult> MpiPod::run(std::uint32_t prog_addr, std::uint32_t count) {
  chip_->start(prog_addr, count);
  const std::uint64_t limit = now_ + options_.max_cycles;
  for (;;) {
    bool sent = false;
    for (unsigned c = 0; c < options_.link.latency; ++c) {
      LinkIn in;
      in.rx = in_.beat_at(now_);
      in.tx_credit = out_.credit_at(now_);
      chip_->tick(in);
      const LinkOut& out = chip_->link_outputs();
      if (out.tx.valid) {
        beats_out_.push_back(static_cast<std::uint32_t>(now_));
        beats_out_.push_back(static_cast<std::uint32_t>(now_ >> 32));
        beats_out_.push_back(out.tx.head ? 1 : 0);
        beats_out_.insert(beats_out_.end(), out.tx.data.begin(), out.tx.data.end());
        sent = true;
      }
      if (in_.pace_credit(out.rx_credit)) {
        credits_out_.push_back(now_);
        sent = true;
      }
      ++now_;
    }
    exchange();
    int done = chip_->stopped() && !sent && in_.empty() && out_.empty() ? 1 : 0;
    int all_done = 0;
    MPI_Allreduce(&done, &all_done, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all_done) break;
    if (now_ > limit) {
      throw std::runtime_error(fmt::format("rank {}: the pod did not stop within {} cycles", rank_,
                                           options_.max_cycles));
    }
  }
  return {chip_->finish()};
}

std::vector<std::vector<num::fp32_t>> MpiPod::gather(
    const std::vector<std::vector<num::fp32_t>>& local) {
  const std::vector<num::fp32_t>& mine = local.at(0);
  std::vector<num::fp32_t> all(rank_ == 0 ? mine.size() * size_ : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT32_T, all.data(),
             static_cast<int>(mine.size()), MPI_UINT32_T, 0, MPI_COMM_WORLD);
  std::vector<std::vector<num::fp32_t>> tensors;
  for (unsigned r = 0; rank_ == 0 && r < size_; ++r) {
    tensors.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(r * mine.size()),
                         all.begin() + static_cast<std::ptrdiff_t>((r + 1) * mine.size()));
  }
  return tensors;
}

std::uint64_t MpiPod::max_over_chips(std::uint64_t value) {
  unsigned long long mine = value, most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

}  // namespace tpu::sim
