// A fixed set of threads that runs the tasks of one job at a time: the functional model's
// products, row blocks on every core of the host (docs/perf/model.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tpu {

class WorkerPool {
 public:
  // `threads` in all, the caller of run() among them (1: no thread of its own).
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Runs task(0) .. task(count - 1), on the pool's threads and the caller's, and returns once
  // all have; rethrows the first exception a task threw.
  void run(std::size_t count, const std::function<void(std::size_t)>& task);

  // The threads a pool of the host takes: TPU_MODEL_THREADS where set (1 or more), else the
  // host's cores. std::runtime_error with one line for a value that is not a count.
  static unsigned host_threads();

 private:
  void work();
  bool claim(std::size_t& index);  // the next index of the current job, if any is left
  void take_tasks();               // runs tasks of the current job until none is left

  std::vector<std::thread> workers_;
  // A job's tasks are handed out and counted with atomics; a worker that finds no job waits a
  // little for the next (a model's MATMULs follow each other within microseconds, far sooner
  // than a sleeping thread wakes), then sleeps on `wake_`.
  std::mutex mutex_;
  std::condition_variable wake_;
  unsigned sleeping_ = 0;  // workers waiting on wake_ (under mutex_)
  std::atomic<const std::function<void(std::size_t)>*> task_{nullptr};
  // The job's task count (the upper 32 bits) and next index to hand out (the lower), claimed
  // together (claim()); and how many of its tasks have finished.
  std::atomic<std::uint64_t> tasks_{0};
  std::atomic<std::size_t> finished_{0};
  std::atomic<std::uint64_t> job_{0};  // bumped for each run(): a worker takes part in each once
  std::atomic<bool> stopping_{false};
  std::exception_ptr error_;  // under mutex_
};

}  // namespace tpu
