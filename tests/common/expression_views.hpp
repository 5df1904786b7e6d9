// The rows an expression (tpu/vector_expression.hpp) reads from and writes into views of the
// core's memory, as its tests lay them out and read them back: the values of each row, and
// whether the bytes after each row, up to the next, still hold what was there before.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tpu/host_memory.hpp"
#include "tpu/numerics/float.hpp"
#include "tpu/vector_expression.hpp"

namespace tpu::test {

struct ViewRows {
  std::vector<num::fp32_t> values;  // bf16 rows widened
  bool gaps_kept = true;            // every byte between the rows still `filler`
};

inline ViewRows read_view(const HostMemory& memory, const ExpressionView& view, std::uint64_t rows,
                          std::uint32_t length, bool bf16, std::uint8_t filler) {
  ViewRows out;
  const std::uint32_t row_bytes = length * (bf16 ? 2 : 4);
  for (std::uint64_t r = 0; r < rows; ++r) {
    const std::uint64_t at = view.addr + r * view.pitch;
    if (bf16) {
      for (const num::bf16_t v : memory.read_array<num::bf16_t>(at, length)) {
        out.values.push_back(num::fp32_t{v} << 16);
      }
    } else {
      const std::vector<num::fp32_t> values = memory.read_array<num::fp32_t>(at, length);
      out.values.insert(out.values.end(), values.begin(), values.end());
    }
    for (const std::uint8_t byte :
         memory.read_array<std::uint8_t>(at + row_bytes, view.pitch - row_bytes)) {
      out.gaps_kept = out.gaps_kept && byte == filler;
    }
  }
  return out;
}

// Writes `values` (rows x length fp32 values) into the view, a row at a time.
inline void write_view(HostMemory& memory, const ExpressionView& view,
                       const std::vector<num::fp32_t>& values, std::uint64_t rows,
                       std::uint32_t length) {
  for (std::uint64_t r = 0; r < rows; ++r) {
    memory.write_array(view.addr + r * view.pitch,
                       std::vector<num::fp32_t>(&values[r * length], &values[(r + 1) * length]));
  }
}

// Expects the view to hold `want` (bf16 rows widened), every byte between its rows still
// `filler`.
inline void expect_view(const HostMemory& memory, const ExpressionView& view, std::uint64_t rows,
                        std::uint32_t length, bool bf16, std::uint8_t filler,
                        const std::vector<num::fp32_t>& want) {
  const ViewRows got = read_view(memory, view, rows, length, bf16, filler);
  EXPECT_EQ(got.values, want);
  EXPECT_TRUE(got.gaps_kept);
}

}  // namespace tpu::test
