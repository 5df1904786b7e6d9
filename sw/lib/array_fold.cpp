#include "tpu/array_fold.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#define TPU_FOLD_X86 1
#endif

namespace tpu::detail {
namespace {

constexpr float kMinNormal = 0x1p-126f;

float bits_to_float(num::fp32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

num::fp32_t float_to_bits(float f) {
  num::fp32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Below 2^-126: a zero of the value's sign (NaN compares false and stays).
float flush(float x) {
  return std::fabs(x) < kMinNormal ? std::copysign(0.0f, x) : x;
}

// One row, the flushes explicit: the portable path.
void fold_row(const FoldActs<float>& acts, const float* weights, std::size_t tiles,
              num::fp32_t* sums, std::size_t dim) {
  // Up to 256 columns (the largest array): sums live in floats meanwhile.
  float s[256];
  for (std::size_t j = 0; j < dim; ++j) s[j] = bits_to_float(num::canon_in_fp32(sums[j]));
  for (std::size_t t = 0; t < tiles; ++t) {
    const float* a_t = acts.first + t * acts.tile_stride;
    for (std::size_t k = 0; k < dim; ++k) {
      const float a = a_t[k];
      const float* w = &weights[(t * dim + k) * dim];
      // Column by column this is the fold's next step; the loop over columns is independent
      // work, which the compiler may vectorise (no reordering of any one column's additions:
      // -ffp-contract=off, no -ffast-math).
      for (std::size_t j = 0; j < dim; ++j) s[j] = flush(s[j] + flush(a * w[j]));
    }
  }
  for (std::size_t j = 0; j < dim; ++j) {
    sums[j] = std::isnan(s[j]) ? num::kCanonicalNanFp32 : float_to_bits(s[j]);
  }
}

// One int8 row: exact products, sums wrapping modulo 2^32.
void fold_row_int8(const FoldActs<std::int32_t>& acts, const std::int32_t* weights,
                   std::size_t tiles, num::fp32_t* sums, std::size_t dim) {
  for (std::size_t t = 0; t < tiles; ++t) {
    const std::int32_t* a_t = acts.first + t * acts.tile_stride;
    for (std::size_t k = 0; k < dim; ++k) {
      const auto a = static_cast<std::uint32_t>(a_t[k]);
      if (a == 0) continue;
      const std::int32_t* w = &weights[(t * dim + k) * dim];
      for (std::size_t j = 0; j < dim; ++j) sums[j] += a * static_cast<std::uint32_t>(w[j]);
    }
  }
}

#ifdef TPU_FOLD_X86

// Flush-to-zero and denormals-are-zero (MXCSR bits 15 and 6) while it lives, the caller's modes
// restored after: a product or sum below 2^-126 becomes a zero of its sign (N-MUL, N-ADD), and
// so does a subnormal seed entering an add (N-IN).
class FlushToZero {
 public:
  FlushToZero() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtz | kDaz); }
  ~FlushToZero() { _mm_setcsr(saved_); }
  FlushToZero(const FlushToZero&) = delete;
  FlushToZero& operator=(const FlushToZero&) = delete;

 private:
  static constexpr unsigned kFtz = 1u << 15, kDaz = 1u << 6;
  unsigned saved_;
};

// The vector kernels, one per instruction set: Rows rows at once, Vectors vectors of columns
// from `col`, the sums in registers across the whole fold. Products and sums are separate
// instructions (no FMA: N-MAC is unfused), the order of each column's sums that of k.
template <int Rows, int Vectors>
__attribute__((target("avx2"))) void avx2_block(const FoldActs<float>& acts, const float* weights,
                                                std::size_t tiles, num::fp32_t* sums,
                                                std::size_t dim, std::size_t col) {
  __m256 s[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      s[r][v] = _mm256_loadu_ps(reinterpret_cast<const float*>(sums + r * dim + col + 8 * v));
    }
  }
  for (std::size_t t = 0; t < tiles; ++t) {
    const float* a_t = acts.first + t * acts.tile_stride;
    const float* w_t = weights + t * dim * dim + col;
    for (std::size_t k = 0; k < dim; ++k) {
      __m256 w[Vectors];
      for (int v = 0; v < Vectors; ++v) w[v] = _mm256_loadu_ps(w_t + k * dim + 8 * v);
      for (int r = 0; r < Rows; ++r) {
        const __m256 a = _mm256_broadcast_ss(a_t + r * dim + k);
        for (int v = 0; v < Vectors; ++v) {
          s[r][v] = _mm256_add_ps(s[r][v], _mm256_mul_ps(a, w[v]));
        }
      }
    }
  }
  const __m256 nan = _mm256_castsi256_ps(_mm256_set1_epi32(num::kCanonicalNanFp32));
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      const __m256 unordered = _mm256_cmp_ps(s[r][v], s[r][v], _CMP_UNORD_Q);
      _mm256_storeu_ps(reinterpret_cast<float*>(sums + r * dim + col + 8 * v),
                       _mm256_blendv_ps(s[r][v], nan, unordered));
    }
  }
}

template <int Rows, int Vectors>
__attribute__((target("avx512f"))) void avx512_block(const FoldActs<float>& acts,
                                                     const float* weights, std::size_t tiles,
                                                     num::fp32_t* sums, std::size_t dim,
                                                     std::size_t col) {
  __m512 s[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) s[r][v] = _mm512_loadu_ps(sums + r * dim + col + 16 * v);
  }
  for (std::size_t t = 0; t < tiles; ++t) {
    const float* a_t = acts.first + t * acts.tile_stride;
    const float* w_t = weights + t * dim * dim + col;
    for (std::size_t k = 0; k < dim; ++k) {
      __m512 w[Vectors];
      for (int v = 0; v < Vectors; ++v) w[v] = _mm512_loadu_ps(w_t + k * dim + 16 * v);
      for (int r = 0; r < Rows; ++r) {
        const __m512 a = _mm512_set1_ps(a_t[r * dim + k]);
        for (int v = 0; v < Vectors; ++v) {
          s[r][v] = _mm512_add_ps(s[r][v], _mm512_mul_ps(a, w[v]));
        }
      }
    }
  }
  const __m512 nan = _mm512_castsi512_ps(_mm512_set1_epi32(num::kCanonicalNanFp32));
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      const __mmask16 unordered = _mm512_cmp_ps_mask(s[r][v], s[r][v], _CMP_UNORD_Q);
      _mm512_storeu_ps(sums + r * dim + col + 16 * v,
                       _mm512_mask_blend_ps(unordered, s[r][v], nan));
    }
  }
}

// The int8 kernels: the same blocks, int32 lanes, products and sums wrapping.
template <int Rows, int Vectors>
__attribute__((target("avx2"))) void avx2_int8_block(const FoldActs<std::int32_t>& acts,
                                                     const std::int32_t* weights, std::size_t tiles,
                                                     num::fp32_t* sums, std::size_t dim,
                                                     std::size_t col) {
  __m256i s[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      s[r][v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums + r * dim + col + 8 * v));
    }
  }
  for (std::size_t t = 0; t < tiles; ++t) {
    const std::int32_t* a_t = acts.first + t * acts.tile_stride;
    const std::int32_t* w_t = weights + t * dim * dim + col;
    for (std::size_t k = 0; k < dim; ++k) {
      __m256i w[Vectors];
      for (int v = 0; v < Vectors; ++v) {
        w[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w_t + k * dim + 8 * v));
      }
      for (int r = 0; r < Rows; ++r) {
        const __m256i a = _mm256_set1_epi32(a_t[r * dim + k]);
        for (int v = 0; v < Vectors; ++v) {
          s[r][v] = _mm256_add_epi32(s[r][v], _mm256_mullo_epi32(a, w[v]));
        }
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + r * dim + col + 8 * v), s[r][v]);
    }
  }
}

template <int Rows, int Vectors>
__attribute__((target("avx512f"))) void avx512_int8_block(const FoldActs<std::int32_t>& acts,
                                                          const std::int32_t* weights,
                                                          std::size_t tiles, num::fp32_t* sums,
                                                          std::size_t dim, std::size_t col) {
  __m512i s[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      s[r][v] = _mm512_loadu_si512(sums + r * dim + col + 16 * v);
    }
  }
  for (std::size_t t = 0; t < tiles; ++t) {
    const std::int32_t* a_t = acts.first + t * acts.tile_stride;
    const std::int32_t* w_t = weights + t * dim * dim + col;
    for (std::size_t k = 0; k < dim; ++k) {
      __m512i w[Vectors];
      for (int v = 0; v < Vectors; ++v) w[v] = _mm512_loadu_si512(w_t + k * dim + 16 * v);
      for (int r = 0; r < Rows; ++r) {
        const __m512i a = _mm512_set1_epi32(a_t[r * dim + k]);
        for (int v = 0; v < Vectors; ++v) {
          s[r][v] = _mm512_add_epi32(s[r][v], _mm512_mullo_epi32(a, w[v]));
        }
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) _mm512_storeu_si512(sums + r * dim + col + 16 * v, s[r][v]);
  }
}

// No modes for integer sums.
struct NoModes {};

// The rows in blocks of four (eight where the array is one vector wide, so that eight sums are
// in flight either way, then one at a time), the columns in blocks of two vectors of `width`
// values (one where the array is one vector wide): Block<Rows, Vectors>(acts, weights, tiles,
// sums, dim, col), with the host's modes Modes set meanwhile.
template <std::size_t Width, typename Modes, typename T, typename Block4x2, typename Block8x1,
          typename Block1x2, typename Block1x1>
void vector_fold(const FoldActs<T>& acts, const T* weights, std::size_t tiles, num::fp32_t* sums,
                 std::size_t rows, std::size_t dim, Block4x2 b42, Block8x1 b81, Block1x2 b12,
                 Block1x1 b11) {
  const Modes modes;
  (void)modes;
  const bool two = dim >= 2 * Width;
  const std::size_t block = two ? 4 : 8;
  std::size_t r = 0;
  for (; r + block <= rows; r += block) {
    for (std::size_t col = 0; col < dim; col += two ? 2 * Width : Width) {
      (two ? b42 : b81)(acts.rows_from(r, dim), weights, tiles, sums + r * dim, dim, col);
    }
  }
  for (; r < rows; ++r) {
    for (std::size_t col = 0; col < dim; col += two ? 2 * Width : Width) {
      (two ? b12 : b11)(acts.rows_from(r, dim), weights, tiles, sums + r * dim, dim, col);
    }
  }
}

#endif  // TPU_FOLD_X86

// The kernels of a mode: its portable row and, on x86, each vector path's blocks and the host's
// modes they need.
struct FloatFold {
  using Value = float;
  static constexpr auto row = &fold_row;
#ifdef TPU_FOLD_X86
  using Modes = FlushToZero;
  template <int Rows, int Vectors>
  static constexpr auto avx2 = &avx2_block<Rows, Vectors>;
  template <int Rows, int Vectors>
  static constexpr auto avx512 = &avx512_block<Rows, Vectors>;
#endif
};

struct Int8Fold {
  using Value = std::int32_t;
  static constexpr auto row = &fold_row_int8;
#ifdef TPU_FOLD_X86
  using Modes = NoModes;
  template <int Rows, int Vectors>
  static constexpr auto avx2 = &avx2_int8_block<Rows, Vectors>;
  template <int Rows, int Vectors>
  static constexpr auto avx512 = &avx512_int8_block<Rows, Vectors>;
#endif
};

// fold_rows and fold_rows_int8 on the path: a vector path runs arrays at least one of its vectors
// wide; a smaller one, the portable path.
template <typename Mode>
void fold_on(FoldPath path, const FoldActs<typename Mode::Value>& acts,
             const typename Mode::Value* weights, std::size_t tiles, num::fp32_t* sums,
             std::size_t rows, std::size_t dim) {
#ifdef TPU_FOLD_X86
  using Modes = typename Mode::Modes;
  if (path == FoldPath::Avx512 && dim >= 16) {
    vector_fold<16, Modes>(acts, weights, tiles, sums, rows, dim, Mode::template avx512<4, 2>,
                           Mode::template avx512<8, 1>, Mode::template avx512<1, 2>,
                           Mode::template avx512<1, 1>);
    return;
  }
  if (path != FoldPath::Portable && dim >= 8) {
    vector_fold<8, Modes>(acts, weights, tiles, sums, rows, dim, Mode::template avx2<4, 2>,
                          Mode::template avx2<8, 1>, Mode::template avx2<1, 2>,
                          Mode::template avx2<1, 1>);
    return;
  }
#else
  (void)path;
#endif
  for (std::size_t r = 0; r < rows; ++r) {
    Mode::row(acts.rows_from(r, dim), weights, tiles, sums + r * dim, dim);
  }
}

bool cpu_has(FoldPath path) {
#ifdef TPU_FOLD_X86
  switch (path) {
    case FoldPath::Portable:
      return true;
    case FoldPath::Avx2:
      return __builtin_cpu_supports("avx2");
    case FoldPath::Avx512:
      return __builtin_cpu_supports("avx512f");
  }
  return false;
#else
  return path == FoldPath::Portable;
#endif
}

}  // namespace

const char* fold_path_name(FoldPath path) {
  switch (path) {
    case FoldPath::Portable:
      return "portable";
    case FoldPath::Avx2:
      return "avx2";
    case FoldPath::Avx512:
      return "avx512";
  }
  return "?";
}

std::vector<FoldPath> available_fold_paths() {
  std::vector<FoldPath> paths;
  for (const FoldPath path : {FoldPath::Portable, FoldPath::Avx2, FoldPath::Avx512}) {
    if (cpu_has(path)) paths.push_back(path);
  }
  return paths;
}

FoldPath default_fold_path() {
  const char* forced = std::getenv("TPU_FOLD_PATH");
  if (forced == nullptr || *forced == '\0') return available_fold_paths().back();
  for (const FoldPath path : {FoldPath::Portable, FoldPath::Avx2, FoldPath::Avx512}) {
    if (std::string(forced) != fold_path_name(path)) continue;
    if (!cpu_has(path)) {
      throw std::runtime_error(std::string("TPU_FOLD_PATH=") + forced +
                               ": this CPU does not run that path");
    }
    return path;
  }
  throw std::runtime_error(std::string("TPU_FOLD_PATH=") + forced +
                           ": not a path (portable, avx2, avx512)");
}

void fold_operands(const num::bf16_t* lanes, std::size_t count, float* out) {
  // Branch-free, so that the compiler vectorises it: the exponent's zero keeps the sign alone.
  for (std::size_t i = 0; i < count; ++i) {
    const num::fp32_t x = lanes[i];
    const num::fp32_t keep = (x & 0x7F80u) == 0 ? 0x8000u : 0xFFFFu;
    out[i] = bits_to_float((x & keep) << 16);
  }
}

void fold_rows(FoldPath path, const FoldActs<float>& acts, const float* weights, std::size_t tiles,
               num::fp32_t* sums, std::size_t rows, std::size_t dim) {
  fold_on<FloatFold>(path, acts, weights, tiles, sums, rows, dim);
}

void fold_rows_int8(FoldPath path, const FoldActs<std::int32_t>& acts, const std::int32_t* weights,
                    std::size_t tiles, num::fp32_t* sums, std::size_t rows, std::size_t dim) {
  fold_on<Int8Fold>(path, acts, weights, tiles, sums, rows, dim);
}

}  // namespace tpu::detail
