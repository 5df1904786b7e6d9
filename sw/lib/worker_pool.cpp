#include "tpu/worker_pool.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tpu {
namespace {

// How long an idle worker looks for the next job before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

WorkerPool::WorkerPool(unsigned threads) {
  for (unsigned t = 1; t < threads; ++t) workers_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

unsigned WorkerPool::host_threads() {
  const char* given = std::getenv("TPU_MODEL_THREADS");
  if (given != nullptr && *given != '\0') {
    char* end = nullptr;
    const unsigned long value = std::strtoul(given, &end, 10);
    if (*end != '\0' || value < 1 || value > 1024) {
      throw std::runtime_error(std::string("TPU_MODEL_THREADS=") + given +
                               ": not a thread count (1 to 1024)");
    }
    return static_cast<unsigned>(value);
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? cores : 1;
}

bool WorkerPool::claim(std::size_t& index) {
  // One compare-and-swap on the job's count and next index together: a worker still looking at
  // a finished job (all its indices taken) can claim nothing, and what it claims of a newer job
  // is that job's index, for that job's task.
  std::uint64_t tasks = tasks_;
  while ((tasks & 0xFFFFFFFFu) < tasks >> 32) {
    if (tasks_.compare_exchange_weak(tasks, tasks + 1)) {
      index = tasks & 0xFFFFFFFFu;
      return true;
    }
  }
  return false;
}

void WorkerPool::take_tasks() {
  for (std::size_t index = 0; claim(index);) {
    try {
      (*task_)(index);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    ++finished_;
  }
}

void WorkerPool::work() {
  std::uint64_t seen = 0;
  while (true) {
    const auto give_up = std::chrono::steady_clock::now() + kSpin;
    for (unsigned spins = 0; job_ == seen && !stopping_; ++spins) {
      // Mostly the processor's pause, which leaves the core to a sibling thread; now and then
      // the clock, and the scheduler's turn to whatever else waits for this core.
      if (spins % 64 == 63) {
        if (std::chrono::steady_clock::now() >= give_up) break;
        std::this_thread::yield();
      }
      pause();
    }
    if (job_ == seen && !stopping_) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleeping_;
      wake_.wait(lock, [&] { return stopping_ || job_ != seen; });
      --sleeping_;
    }
    if (stopping_) return;
    seen = job_;
    take_tasks();
  }
}

void WorkerPool::run(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  if (count > 0xFFFFFFFFu) throw std::invalid_argument("WorkerPool::run: over 2^32 - 1 tasks");
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    error_ = nullptr;
  }
  // Every index of the job before is taken and finished: no worker adds to these any more.
  task_ = &task;
  finished_ = 0;
  tasks_ = std::uint64_t{count} << 32;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++job_;
    if (sleeping_ > 0) wake_.notify_all();
  }
  take_tasks();
  for (unsigned spins = 0; finished_ < count; ++spins) {
    if (spins % 64 == 63) std::this_thread::yield();
    pause();
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

}  // namespace tpu
