#include "tpu/worker_pool.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tpu {

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

void WorkerPool::take_tasks() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (next_ < count_) {
    const std::size_t index = next_++;
    lock.unlock();
    try {
      (*task_)(index);
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      lock.unlock();
    }
    lock.lock();
    if (++finished_ == count_) done_.notify_all();
  }
}

void WorkerPool::work() {
  std::uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || job_ != seen; });
      if (stopping_) return;
      seen = job_;
    }
    take_tasks();
  }
}

void WorkerPool::run(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    count_ = count;
    next_ = finished_ = 0;
    error_ = nullptr;
    ++job_;
  }
  wake_.notify_all();
  take_tasks();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return finished_ == count_; });
  task_ = nullptr;
  count_ = 0;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace tpu
