// One lane of ELTWISE (N-VEC) as the host computes it, the independent expectation of the
// vector unit's tests and of make sim: fp32 by the host FPU's oracle (oracle/host_float.hpp),
// int32 by plain integer arithmetic.
#pragma once

#include <cstdint>

#include "oracle/host_float.hpp"
#include "tpu/isa.hpp"

namespace tpu::oracle {

inline fp32_t eltwise_lane(isa::VectorOp op, bool int32, fp32_t a, fp32_t b) {
  const auto sa = static_cast<std::int32_t>(a), sb = static_cast<std::int32_t>(b);
  switch (op) {
    case isa::VectorOp::Add:
      return int32 ? a + b : add_fp32(a, b);
    case isa::VectorOp::Sub:
      return int32 ? a - b : add_fp32(a, b ^ 0x80000000u);
    case isa::VectorOp::Mul:
      return int32 ? a * b : mul_fp32(a, b);
    case isa::VectorOp::Max:
      return int32 ? (sa > sb ? a : b) : max_min_fp32(a, b, true);
    case isa::VectorOp::Min:
      return int32 ? (sa < sb ? a : b) : max_min_fp32(a, b, false);
  }
  return 0;
}

}  // namespace tpu::oracle
