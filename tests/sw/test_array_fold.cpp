// The functional model's fast fold (host float: the portable path's explicit N-IN, flush and NaN
// rules, the vector paths' flush-to-zero modes) against the reference model's soft-float mac,
// bit for bit, on every path this CPU runs: operands around every boundary, special values and
// seeds, and random rows with cancellation.
#include <gtest/gtest.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <tuple>

#include "common/test_seed.hpp"
#include "oracle/operand_sets.hpp"
#include "tpu/array_fold.hpp"
#include "tpu/numerics/activation.hpp"

namespace tpu {
namespace {

// The same fold with num::mac over acts.size() values of k; weight (k, j) at tile[k * dim + j].
std::vector<num::fp32_t> reference_fold(const std::vector<num::bf16_t>& acts,
                                        const std::vector<num::bf16_t>& tile,
                                        std::vector<num::fp32_t> sums, std::size_t dim) {
  for (std::size_t j = 0; j < dim; ++j) {
    num::fp32_t s = num::canon_in_fp32(sums[j]);
    for (std::size_t k = 0; k < acts.size(); ++k) s = num::mac(s, acts[k], tile[k * dim + j]);
    sums[j] = s;
  }
  return sums;
}

// bf16 lanes as the fold takes them.
std::vector<float> operands_of(const std::vector<num::bf16_t>& lanes) {
  std::vector<float> out(lanes.size());
  detail::fold_operands(lanes.data(), lanes.size(), out.data());
  return out;
}

// The weights as host memory holds them: little-endian bf16 lanes, or int8 bytes.
std::vector<std::uint8_t> host_bytes(const std::vector<num::bf16_t>& lanes) {
  std::vector<std::uint8_t> bytes(2 * lanes.size());
  for (std::size_t e = 0; e < lanes.size(); ++e) {
    bytes[2 * e] = static_cast<std::uint8_t>(lanes[e]);
    bytes[2 * e + 1] = static_cast<std::uint8_t>(lanes[e] >> 8);
  }
  return bytes;
}

// `rows` rows folded on `path` against `tiles` tiles (a K loop of k_len = tiles x dim), each row
// checked against the reference, the weights given both as the fold's floats and as host memory's
// bf16 lanes: the activations and weights from `bf16`, the seeds from `seed`; every third row's
// lanes in pairs that cancel.
void check_rows(detail::FoldPath path, std::size_t dim, std::size_t rows, std::size_t tiles,
                const std::function<num::bf16_t()>& bf16,
                const std::function<num::fp32_t()>& seed) {
  const std::size_t k_len = tiles * dim;
  std::vector<num::bf16_t> acts(rows * k_len), tile(k_len * dim);
  std::vector<num::fp32_t> sums(rows * dim);
  for (auto& a : acts) a = bf16();
  for (auto& w : tile) w = bf16();
  for (auto& s : sums) s = seed();
  for (std::size_t row = 0; row < rows; row += 3) {
    // Pairs that cancel: lane k + 1 repeats lane k against the negated weight.
    for (std::size_t k = 0; k + 1 < k_len; k += 2)
      acts[row * k_len + k + 1] = acts[row * k_len + k];
  }
  if (rows > 0) {
    for (std::size_t k = 0; k + 1 < k_len; k += 4) {
      for (std::size_t j = 0; j < dim; ++j) {
        tile[(k + 1) * dim + j] = static_cast<num::bf16_t>(tile[k * dim + j] ^ 0x8000);
      }
    }
  }
  // As a K loop's unified-buffer rows lie: each tile's rows one after the other, the tiles' rows
  // a few rows apart.
  const std::size_t tile_stride = (rows + 3) * dim;
  const std::vector<float> row_operands = operands_of(acts);
  std::vector<float> laid_out(tiles * tile_stride, 0.0f);
  for (std::size_t t = 0; t < tiles; ++t) {
    for (std::size_t r = 0; r < rows; ++r) {
      std::copy_n(&row_operands[r * k_len + t * dim], dim, &laid_out[t * tile_stride + r * dim]);
    }
  }
  std::vector<num::fp32_t> got = sums, got_in_place = sums;
  detail::fold_rows(path, {laid_out.data(), tile_stride}, operands_of(tile).data(), tiles,
                    got.data(), rows, dim);
  const std::vector<std::uint8_t> in_host_memory = host_bytes(tile);
  detail::fold_rows(path, {laid_out.data(), tile_stride},
                    detail::HostBf16Weights{in_host_memory.data()}, tiles, got_in_place.data(),
                    rows, dim);
  ASSERT_EQ(got_in_place, got) << detail::fold_path_name(path) << ", dim " << dim << ", " << tiles
                               << " tiles, " << rows << " rows: host memory's weights";
  for (std::size_t row = 0; row < rows; ++row) {
    const std::vector<num::bf16_t> row_acts(
        acts.begin() + static_cast<std::ptrdiff_t>(row * k_len),
        acts.begin() + static_cast<std::ptrdiff_t>((row + 1) * k_len));
    const std::vector<num::fp32_t> seeds(
        sums.begin() + static_cast<std::ptrdiff_t>(row * dim),
        sums.begin() + static_cast<std::ptrdiff_t>((row + 1) * dim));
    const std::vector<num::fp32_t> row_got(
        got.begin() + static_cast<std::ptrdiff_t>(row * dim),
        got.begin() + static_cast<std::ptrdiff_t>((row + 1) * dim));
    ASSERT_EQ(row_got, reference_fold(row_acts, tile, seeds, dim))
        << detail::fold_path_name(path) << ", dim " << dim << ", " << tiles << " tiles, row " << row
        << " of " << rows;
  }
}

// Every path this CPU runs (the vector ones forced, as TPU_FOLD_PATH can), every array size from
// 1 to 256 (below a path's vector width it folds as the portable path does), row counts around
// the kernels' blocks of four, eight and sixteen, one tile and a K loop of three.
TEST(ArrayFold, MixedOperandsMatchReferenceOnEveryPath) {
  oracle::OperandRng rng(test::test_seed());
  for (const detail::FoldPath path : detail::available_fold_paths()) {
    for (std::size_t dim : {1u, 4u, 8u, 16u, 32u, 64u, 256u}) {
      for (std::size_t rows : {1u, 3u, 4u, 7u, 9u, 15u, 16u, 17u, 64u}) {
        for (std::size_t tiles : {1u, 3u}) {
          check_rows(
              path, dim, rows, tiles, [&] { return rng.bf16(); }, [&] { return rng.fp32(); });
        }
      }
    }
  }
}

TEST(ArrayFold, FlushAndOverflowBoundariesMatchReferenceOnEveryPath) {
  oracle::OperandRng rng(test::test_seed() + 1);
  // Exponents near the product's flush (sum 128) and overflow (sum 382) boundaries; seeds of
  // every kind (fp32(): subnormals and NaNs among them, exponents near 2^-126).
  for (const detail::FoldPath path : detail::available_fold_paths()) {
    for (auto [lo, hi] :
         {std::pair{1u, 70u}, std::pair{55u, 75u}, std::pair{185u, 200u}, std::pair{120u, 135u}}) {
      for (std::size_t dim : {8u, 16u, 32u}) {
        check_rows(
            path, dim, 250, 2, [&] { return rng.bf16_with_exponent(lo, hi); },
            [&] { return rng.fp32(); });
      }
    }
  }
}

// Sums and products that are exactly representable as subnormals still flush: 1.5 x 2^-126 -
// 2^-126 = 2^-127 (+0), -1.5 x 2^-126 + 2^-126 (-0, then only -0 products), 2^-64 x 2^-64 =
// 2^-128 (a product: +0, so the seed 2^-126 stays), on every path.
TEST(ArrayFold, ExactSubnormalResultsFlush) {
  for (const detail::FoldPath path : detail::available_fold_paths()) {
    constexpr std::size_t kDim = 16;
    std::vector<num::bf16_t> tile(kDim * kDim, 0), acts(kDim, 0);
    acts[0] = 0x3F80;                                         // 1
    for (std::size_t j = 0; j < kDim; ++j) tile[j] = 0x8080;  // W[0][j] = -2^-126
    std::vector<num::fp32_t> sums(kDim, 0x00C00000);          // 1.5 x 2^-126
    std::vector<num::fp32_t> want(kDim, 0x00000000);
    // Column 1: W[0][1] = 2^-126 onto -1.5 x 2^-126, its other weights -0: the -0 stays.
    tile[1] = 0x0080;
    for (std::size_t k = 1; k < kDim; ++k) tile[k * kDim + 1] = 0x8000;
    sums[1] = 0x80C00000;
    want[1] = 0x80000000;
    // Column 2: 2^-64 x 2^-64 onto 2^-126.
    acts[1] = 0x1F80;  // 2^-64
    tile[2] = 0;
    tile[kDim + 2] = 0x1F80;
    sums[2] = 0x00800000;
    want[2] = 0x00800000;
    const std::vector<float> operands = operands_of(acts);
    detail::fold_rows(path, {operands.data(), 0}, operands_of(tile).data(), 1, sums.data(), 1,
                      kDim);
    EXPECT_EQ(sums, want) << detail::fold_path_name(path);
  }
}

// int8 (Q-MAC): the products of int8 values at both ends of their range, the sums wrapping, on
// every path against int64 arithmetic modulo 2^32; K loops of one and three tiles.
TEST(ArrayFold, Int8SumsWrapOnEveryPath) {
  oracle::OperandRng rng(test::test_seed() + 2);
  const auto int8 = [&] {
    const std::uint64_t pick = rng.uniform(0, 9);
    return pick == 0 ? -128 : pick == 1 ? 127 : static_cast<int>(rng.uniform(0, 255)) - 128;
  };
  for (const detail::FoldPath path : detail::available_fold_paths()) {
    for (std::size_t dim : {1u, 4u, 8u, 16u, 64u}) {
      for (std::size_t tiles : {1u, 3u}) {
        const std::size_t rows = 21, tile_stride = (rows + 2) * dim;
        std::vector<std::int32_t> acts(tiles * tile_stride), weights(tiles * dim * dim);
        for (auto& a : acts) a = int8();
        for (auto& w : weights) w = int8();
        std::vector<num::fp32_t> sums(rows * dim);
        for (auto& s : sums) s = static_cast<num::fp32_t>(rng.uniform(0, 0xFFFFFFFFu));
        std::vector<num::fp32_t> want = sums;
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t j = 0; j < dim; ++j) {
            std::int64_t sum = want[r * dim + j];
            for (std::size_t t = 0; t < tiles; ++t) {
              for (std::size_t k = 0; k < dim; ++k) {
                sum += std::int64_t{acts[t * tile_stride + r * dim + k]} *
                       weights[(t * dim + k) * dim + j];
              }
            }
            want[r * dim + j] = static_cast<num::fp32_t>(static_cast<std::uint64_t>(sum));
          }
        }
        std::vector<num::fp32_t> in_place = sums;
        detail::fold_rows_int8(path, {acts.data(), tile_stride}, weights.data(), tiles, sums.data(),
                               rows, dim);
        ASSERT_EQ(sums, want) << detail::fold_path_name(path) << ", dim " << dim << ", " << tiles
                              << " tiles";
        // The weights as host memory holds them: one byte each.
        std::vector<std::uint8_t> bytes(weights.size());
        for (std::size_t e = 0; e < bytes.size(); ++e) {
          bytes[e] = static_cast<std::uint8_t>(weights[e]);
        }
        detail::fold_rows_int8(path, {acts.data(), tile_stride},
                               detail::HostInt8Weights{bytes.data()}, tiles, in_place.data(), rows,
                               dim);
        ASSERT_EQ(in_place, want) << detail::fold_path_name(path) << ", dim " << dim << ", "
                                  << tiles << " tiles: host memory's weights";
      }
    }
  }
}

// The vector unit's and the activation unit's lane arithmetic (sums, products, comparisons, relu,
// rounding to bf16) against the reference, bit for bit: adder pairs that cancel, round and flush;
// products whose exponents meet near 2^-126 (both sides of the subnormal grid's reach to 2^-126)
// and the overflow; specials of every kind; with the host's flush-to-zero and denormals-are-zero
// modes off and on (a caller may set them).
TEST(HostLanes, AddMulAndRoundingMatchReference) {
  oracle::OperandRng rng(test::test_seed() + 3);
  constexpr std::size_t kLanes = 4096;
  std::vector<num::fp32_t> a(kLanes), b(kLanes);
  for (std::size_t j = 0; j < kLanes; ++j) {
    if (j % 3 == 2) {
      // Exponents that sum near the product's flush (about 2^-126) or its overflow.
      const std::uint64_t e = rng.uniform(1, 125), f = 127 - e + rng.uniform(0, 2) - 1;
      const bool high = j % 2 == 0;
      a[j] = static_cast<num::fp32_t>(rng.uniform(0, 0x807FFFFFu) & 0x807FFFFFu) |
             static_cast<num::fp32_t>((high ? 254 - e / 2 : e) << 23);
      b[j] = static_cast<num::fp32_t>(rng.uniform(0, 0x807FFFFFu) & 0x807FFFFFu) |
             static_cast<num::fp32_t>((high ? 127 + e / 2 : f) << 23);
    } else {
      std::tie(a[j], b[j]) = rng.fp32_pair();
    }
  }
  // Products at the subnormal grid's reach: (1 - 2^-24) x 2^-126 = 2^-126 - 2^-150 rounds to
  // 2^-126, (1 - 2^-23) x 2^-126 = 2^-126 - 2^-149 lies below it and flushes; and a subnormal
  // operand, +0 after N-IN.
  a[0] = 0x3F800000u;  // 1
  b[0] = 0x007FFFFFu;  // subnormal: N-IN makes it +0
  a[1] = 0x3F7FFFFFu;  // 1 - 2^-24
  b[1] = 0x00800000u;  // 2^-126
  a[2] = 0x3F7FFFFEu;  // 1 - 2^-23
  b[2] = 0x00800000u;
  // relu6's bound: 6, the next value above it, +inf.
  a[3] = 0x40C00000u;
  a[4] = 0x40C00001u;
  a[5] = 0x7F800000u;
  std::vector<num::fp32_t> sum(kLanes), difference(kLanes), product(kLanes), larger(kLanes),
      smaller(kLanes), identity(a), relu(a), relu6(a);
  std::vector<num::bf16_t> rounded(kLanes);
  for (const bool host_flushes : {false, true}) {
#if defined(__x86_64__)
    const unsigned saved = _mm_getcsr();
    if (host_flushes) _mm_setcsr(saved | (1u << 15) | (1u << 6));
#else
    if (host_flushes) continue;
#endif
    detail::add_lanes(a.data(), b.data(), sum.data(), kLanes);
    detail::add_lanes(a.data(), b.data(), difference.data(), kLanes, true);
    detail::mul_lanes(a.data(), b.data(), product.data(), kLanes);
    detail::round_to_bf16(a.data(), rounded.data(), kLanes);
    detail::max_lanes(a.data(), b.data(), larger.data(), kLanes);
    detail::max_lanes(a.data(), b.data(), smaller.data(), kLanes, true);
    identity = a;
    relu = a;
    relu6 = a;
    detail::relu_lanes(identity.data(), kLanes, false);
    detail::relu_lanes(relu.data(), kLanes, true);
    detail::relu_lanes(relu6.data(), kLanes, false, true);
#if defined(__x86_64__)
    _mm_setcsr(saved);
#endif
    for (std::size_t j = 0; j < kLanes; ++j) {
      ASSERT_EQ(sum[j], num::add_fp32(a[j], b[j])) << std::hex << a[j] << " + " << b[j];
      ASSERT_EQ(difference[j], num::add_fp32(a[j], b[j] ^ 0x80000000u))
          << std::hex << a[j] << " - " << b[j];
      ASSERT_EQ(product[j], num::mul_fp32(a[j], b[j])) << std::hex << a[j] << " x " << b[j];
      ASSERT_EQ(rounded[j], num::fp32_to_bf16(a[j])) << std::hex << a[j];
      ASSERT_EQ(larger[j], num::max_fp32(a[j], b[j])) << std::hex << a[j] << " max " << b[j];
      ASSERT_EQ(smaller[j], num::min_fp32(a[j], b[j])) << std::hex << a[j] << " min " << b[j];
      ASSERT_EQ(identity[j], num::act_func(0, a[j], 0)) << std::hex << a[j];
      ASSERT_EQ(relu[j], num::act_func(1, a[j], 0)) << std::hex << "relu " << a[j];
      ASSERT_EQ(relu6[j], num::act_func(2, a[j], 0)) << std::hex << "relu6 " << a[j];
    }
  }
}

// The host's own modes are the caller's again after a fold.
TEST(ArrayFold, TheHostsModesAreRestored) {
  const float tiny = 0x1p-140f;
  for (const detail::FoldPath path : detail::available_fold_paths()) {
    std::vector<float> acts(16, 1.0f);
    std::vector<num::fp32_t> sums(16, 0);
    detail::fold_rows(path, {acts.data(), 0}, std::vector<float>(256, 1.0f).data(), 1, sums.data(),
                      1, 16);
    volatile float x = tiny;
    EXPECT_EQ(x * 2.0f, 0x1p-139f) << detail::fold_path_name(path);  // subnormal, not flushed
  }
}

TEST(ArrayFold, APathCanBeChosen) {
  EXPECT_EQ(detail::available_fold_paths().front(), detail::FoldPath::Portable);
  ASSERT_EQ(setenv("TPU_FOLD_PATH", "portable", 1), 0);
  EXPECT_EQ(detail::default_fold_path(), detail::FoldPath::Portable);
  ASSERT_EQ(setenv("TPU_FOLD_PATH", "sse9", 1), 0);
  EXPECT_THROW(detail::default_fold_path(), std::runtime_error);
  ASSERT_EQ(unsetenv("TPU_FOLD_PATH"), 0);
  EXPECT_EQ(detail::default_fold_path(), detail::available_fold_paths().back());
}

}  // namespace
}  // namespace tpu
