// The seed of a test's random vectors: TPU_TEST_SEED if set, else a fixed
// default, so every run is repeatable. Recorded in the test's XML output and
// printed, so a failing run can be repeated with the same vectors.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>

#include "oracle/operand_sets.hpp"

namespace tpu::test {

inline constexpr std::uint64_t kDefaultTestSeed = 20240611;

inline std::uint64_t test_seed() {
  const std::uint64_t seed = oracle::seed_from_env(kDefaultTestSeed);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  std::cout << "[ seed     ] TPU_TEST_SEED=" << seed << '\n';
  return seed;
}

}  // namespace tpu::test
