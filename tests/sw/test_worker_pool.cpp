// The functional model's thread pool: every task of a job runs exactly once, jobs of every size
// follow each other (with workers that spin, sleep and come late to a job), and a task's
// exception reaches the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tpu/worker_pool.hpp"

namespace tpu {
namespace {

TEST(WorkerPool, EveryTaskOfEveryJobRunsOnce) {
  for (const unsigned threads : {1u, 2u, 4u}) {
    WorkerPool pool(threads);
    std::vector<std::atomic<int>> runs(64);
    for (std::size_t job = 0; job < 3000; ++job) {
      const std::size_t count = 1 + job * 7 % 64;
      for (std::size_t t = 0; t < count; ++t) runs[t] = 0;
      pool.run(count, [&](std::size_t t) { ++runs[t]; });
      for (std::size_t t = 0; t < count; ++t) {
        ASSERT_EQ(runs[t], 1) << threads << " threads, job " << job << ", task " << t;
      }
      // Now and then a pause long enough for the workers to fall asleep.
      if (job % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

TEST(WorkerPool, ATasksExceptionReachesTheCaller) {
  WorkerPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(8,
                        [&](std::size_t t) {
                          ++ran;
                          if (t == 5) throw std::runtime_error("task 5");
                        }),
               std::runtime_error);
  EXPECT_EQ(ran, 8);                         // the other tasks still ran
  pool.run(3, [&](std::size_t) { ++ran; });  // and the pool goes on
  EXPECT_EQ(ran, 11);
}

}  // namespace
}  // namespace tpu
