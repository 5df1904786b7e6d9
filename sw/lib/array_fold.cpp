#include "tpu/array_fold.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#define TPU_FOLD_X86 1
#endif

// The lane loops below (operands of every unified-buffer row written, the vector unit's and the
// activation unit's arithmetic) built for each vector instruction set, the best chosen when the
// program loads.
#if defined(TPU_FOLD_X86) && defined(__ELF__)
#define TPU_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TPU_VECTOR_CLONES
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

// The vector kernels: Rows rows at once, Vectors vectors of Bytes bytes of columns from `col`,
// the sums in registers across the whole fold; written once in GCC's vector extensions, whose +
// and * are the instruction set's lane by lane (separate instructions, no FMA under
// -ffp-contract=off: N-MAC is unfused), each column's sums in the order of k. Lane is float, or
// uint32_t for int8 products (exact in int32, sums wrapping); a float sum that is NaN is stored
// as the canonical NaN. Inlined into one function per instruction set (avx2_block,
// avx512_block), which the target attribute lets use it.
template <typename Lane, int Bytes>
struct VectorOf;  // Lane lanes in Bytes bytes: the attribute takes no dependent type
template <>
struct VectorOf<float, 32> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<float, 64> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct VectorOf<std::uint32_t, 32> {
  typedef std::uint32_t type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<std::uint32_t, 64> {
  typedef std::uint32_t type __attribute__((vector_size(64)));
};
template <>
struct VectorOf<std::uint16_t, 16> {
  typedef std::uint16_t type __attribute__((vector_size(16)));
};
template <>
struct VectorOf<std::uint16_t, 32> {
  typedef std::uint16_t type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<std::int8_t, 8> {
  typedef std::int8_t type __attribute__((vector_size(8)));
};
template <>
struct VectorOf<std::int8_t, 16> {
  typedef std::int8_t type __attribute__((vector_size(16)));
};
template <>
struct VectorOf<std::int16_t, 16> {
  typedef std::int16_t type __attribute__((vector_size(16)));
};
template <>
struct VectorOf<std::int16_t, 32> {
  typedef std::int16_t type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<std::int32_t, 32> {
  typedef std::int32_t type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<std::int32_t, 64> {
  typedef std::int32_t type __attribute__((vector_size(64)));
};

// v = Bytes / 4 weights from element `at` on: copied where they are the fold's values
// already, widened from host memory's bf16 (the lanes' bits in the upper half) or int8 (sign-
// extended).
template <typename Lane, int Bytes, typename Weights>
[[gnu::always_inline]] inline void load_weights(Weights weights, std::size_t at,
                                                typename VectorOf<Lane, Bytes>::type& v) {
  constexpr int kLanes = Bytes / 4;
  if constexpr (std::is_same_v<Weights, HostBf16Weights>) {
    typename VectorOf<std::uint16_t, 2 * kLanes>::type narrow;
    std::memcpy(&narrow, weights.bytes + 2 * at, sizeof narrow);
    const auto wide = __builtin_convertvector(narrow, typename VectorOf<std::uint32_t, Bytes>::type)
                      << 16;
    std::memcpy(&v, &wide, Bytes);
  } else if constexpr (std::is_same_v<Weights, HostInt8Weights>) {
    typename VectorOf<std::int8_t, kLanes>::type narrow;
    std::memcpy(&narrow, weights.bytes + at, sizeof narrow);
    // Through int16: GCC widens int8 to int32 lanes in one step only lane by lane.
    const auto wide = __builtin_convertvector(
        __builtin_convertvector(narrow, typename VectorOf<std::int16_t, 2 * kLanes>::type),
        typename VectorOf<std::int32_t, Bytes>::type);
    std::memcpy(&v, &wide, Bytes);
  } else {
    std::memcpy(&v, weights + at, Bytes);
  }
}

template <typename Lane, int Bytes, int Rows, int Vectors, typename Value, typename Weights>
[[gnu::always_inline]] inline void fold_block(const FoldActs<Value>& acts, Weights weights,
                                              std::size_t tiles, num::fp32_t* sums, std::size_t dim,
                                              std::size_t col) {
  using Vector = typename VectorOf<Lane, Bytes>::type;
  using Bits = typename VectorOf<std::uint32_t, Bytes>::type;
  constexpr std::size_t kLanes = Bytes / sizeof(Lane);
  Vector s[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v)
      std::memcpy(&s[r][v], sums + r * dim + col + kLanes * v, Bytes);
  }
  for (std::size_t t = 0; t < tiles; ++t) {
    const Value* a_t = acts.first + t * acts.tile_stride;
    const std::size_t w_t = t * dim * dim + col;
    for (std::size_t k = 0; k < dim; ++k) {
      Vector w[Vectors];
      for (int v = 0; v < Vectors; ++v) {
        load_weights<Lane, Bytes>(weights, w_t + k * dim + kLanes * v, w[v]);
      }
      for (int r = 0; r < Rows; ++r) {
        const auto a = static_cast<Lane>(a_t[r * dim + k]);
        for (int v = 0; v < Vectors; ++v) s[r][v] = s[r][v] + a * w[v];
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      Bits bits;
      std::memcpy(&bits, &s[r][v], Bytes);
      if constexpr (std::is_floating_point_v<Lane>) {
        const auto nan_lanes = s[r][v] != s[r][v];  // all ones where the sum is NaN
        Bits unordered;
        std::memcpy(&unordered, &nan_lanes, Bytes);
        bits = (bits & ~unordered) | (unordered & num::kCanonicalNanFp32);
      }
      std::memcpy(sums + r * dim + col + kLanes * v, &bits, Bytes);
    }
  }
}

template <typename Lane, int Rows, int Vectors, typename Value, typename Weights>
__attribute__((target("avx2"))) void avx2_block(const FoldActs<Value>& acts, Weights weights,
                                                std::size_t tiles, num::fp32_t* sums,
                                                std::size_t dim, std::size_t col) {
  fold_block<Lane, 32, Rows, Vectors>(acts, weights, tiles, sums, dim, col);
}

template <typename Lane, int Rows, int Vectors, typename Value, typename Weights>
__attribute__((target("avx512f"))) void avx512_block(const FoldActs<Value>& acts, Weights weights,
                                                     std::size_t tiles, num::fp32_t* sums,
                                                     std::size_t dim, std::size_t col) {
  fold_block<Lane, 64, Rows, Vectors>(acts, weights, tiles, sums, dim, col);
}

// No modes for integer sums.
struct NoModes {};

// The kernels of one instruction set for a mode and a kind of weights: block<Rows, Vectors> folds
// Rows rows into Vectors vectors of Width columns.
template <typename Mode, typename Weights, bool Avx512>
struct Kernels {
  static constexpr std::size_t kWidth = Avx512 ? 16 : 8;
  template <int Rows, int Vectors>
  static void block(const FoldActs<typename Mode::Value>& acts, Weights weights, std::size_t tiles,
                    num::fp32_t* sums, std::size_t dim, std::size_t col) {
    if constexpr (Avx512) {
      Mode::template avx512<Weights, Rows, Vectors>(acts, weights, tiles, sums, dim, col);
    } else {
      Mode::template avx2<Weights, Rows, Vectors>(acts, weights, tiles, sums, dim, col);
    }
  }
};

// The rows in blocks as large as the instruction set has room for beside the weights (16 sums
// in registers with AVX-512's 32, 8 with AVX2's 16, so that each weight vector loaded, and
// widened from bf16 or int8, serves that many products), then the rows left in halves of that
// (each block's sums in flight at once, not one row's after another), then one at a time; the
// columns in blocks of two vectors (one where the array is one vector wide; up to eight for a
// row alone), with the host's modes Modes set meanwhile.
template <typename K, typename Modes, typename T, typename Weights>
void vector_fold(const FoldActs<T>& acts, Weights weights, std::size_t tiles, num::fp32_t* sums,
                 std::size_t rows, std::size_t dim) {
  const Modes modes;
  (void)modes;
  constexpr int kSums = K::kWidth == 16 ? 16 : 8;
  std::size_t r = 0;
  const auto blocks = [&](auto rows_a_block, auto vectors) {
    constexpr int kRows = decltype(rows_a_block)::value, kVectors = decltype(vectors)::value;
    for (; r + kRows <= rows; r += kRows) {
      for (std::size_t col = 0; col < dim; col += kVectors * K::kWidth) {
        K::template block<kRows, kVectors>(acts.rows_from(r, dim), weights, tiles, sums + r * dim,
                                           dim, col);
      }
    }
  };
  using std::integral_constant;
  if (dim >= 2 * K::kWidth) {
    blocks(integral_constant<int, kSums / 2>{}, integral_constant<int, 2>{});
    blocks(integral_constant<int, kSums / 4>{}, integral_constant<int, 2>{});
    // A row alone: as many vectors at once as a wide array has (up to 8), whose sums' chains of
    // additions then overlap, where two would wait on their adds' latency (a batch of one).
    if (dim >= 8 * K::kWidth) {
      blocks(integral_constant<int, 1>{}, integral_constant<int, 8>{});
    } else if (dim >= 4 * K::kWidth) {
      blocks(integral_constant<int, 1>{}, integral_constant<int, 4>{});
    } else {
      blocks(integral_constant<int, 1>{}, integral_constant<int, 2>{});
    }
  } else {
    blocks(integral_constant<int, kSums>{}, integral_constant<int, 1>{});
    blocks(integral_constant<int, kSums / 2>{}, integral_constant<int, 1>{});
    blocks(integral_constant<int, kSums / 4>{}, integral_constant<int, 1>{});
    blocks(integral_constant<int, 1>{}, integral_constant<int, 1>{});
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
  template <typename Weights, int Rows, int Vectors>
  static constexpr auto avx2 = &avx2_block<float, Rows, Vectors, float, Weights>;
  template <typename Weights, int Rows, int Vectors>
  static constexpr auto avx512 = &avx512_block<float, Rows, Vectors, float, Weights>;
#endif
};

struct Int8Fold {
  using Value = std::int32_t;
  static constexpr auto row = &fold_row_int8;
#ifdef TPU_FOLD_X86
  using Modes = NoModes;
  template <typename Weights, int Rows, int Vectors>
  static constexpr auto avx2 = &avx2_block<std::uint32_t, Rows, Vectors, std::int32_t, Weights>;
  template <typename Weights, int Rows, int Vectors>
  static constexpr auto avx512 = &avx512_block<std::uint32_t, Rows, Vectors, std::int32_t, Weights>;
#endif
};

// The portable path's weights: host memory's lanes widened into the fold's values first.
std::vector<float> widened(HostBf16Weights weights, std::size_t count) {
  std::vector<num::bf16_t> lanes(count);
  for (std::size_t e = 0; e < count; ++e) {
    lanes[e] = static_cast<num::bf16_t>(weights.bytes[2 * e] | (weights.bytes[2 * e + 1] << 8));
  }
  std::vector<float> values(count);
  fold_operands(lanes.data(), count, values.data());
  return values;
}
std::vector<std::int32_t> widened(HostInt8Weights weights, std::size_t count) {
  std::vector<std::int32_t> values(count);
  for (std::size_t e = 0; e < count; ++e) values[e] = static_cast<std::int8_t>(weights.bytes[e]);
  return values;
}

// fold_rows and fold_rows_int8 on the path: a vector path runs arrays at least one of its vectors
// wide; a smaller one, the portable path.
template <typename Mode, typename Weights>
void fold_on(FoldPath path, const FoldActs<typename Mode::Value>& acts, Weights weights,
             std::size_t tiles, num::fp32_t* sums, std::size_t rows, std::size_t dim) {
#ifdef TPU_FOLD_X86
  using Modes = typename Mode::Modes;
  if (path == FoldPath::Avx512 && dim >= 16) {
    vector_fold<Kernels<Mode, Weights, true>, Modes>(acts, weights, tiles, sums, rows, dim);
    return;
  }
  if (path != FoldPath::Portable && dim >= 8) {
    vector_fold<Kernels<Mode, Weights, false>, Modes>(acts, weights, tiles, sums, rows, dim);
    return;
  }
#else
  (void)path;
#endif
  if constexpr (std::is_pointer_v<Weights>) {
    for (std::size_t r = 0; r < rows; ++r) {
      Mode::row(acts.rows_from(r, dim), weights, tiles, sums + r * dim, dim);
    }
  } else {
    fold_on<Mode>(FoldPath::Portable, acts, widened(weights, tiles * dim * dim).data(), tiles, sums,
                  rows, dim);
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

TPU_VECTOR_CLONES void fold_operands(const num::bf16_t* lanes, std::size_t count, float* out) {
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

void fold_rows(FoldPath path, const FoldActs<float>& acts, HostBf16Weights weights,
               std::size_t tiles, num::fp32_t* sums, std::size_t rows, std::size_t dim) {
  fold_on<FloatFold>(path, acts, weights, tiles, sums, rows, dim);
}

void fold_rows_int8(FoldPath path, const FoldActs<std::int32_t>& acts, HostInt8Weights weights,
                    std::size_t tiles, num::fp32_t* sums, std::size_t rows, std::size_t dim) {
  fold_on<Int8Fold>(path, acts, weights, tiles, sums, rows, dim);
}

TPU_VECTOR_CLONES void add_lanes(const num::fp32_t* a, const num::fp32_t* b, num::fp32_t* out,
                                 std::size_t n, bool subtract) {
  const num::fp32_t negate = subtract ? 0x80000000u : 0u;
  const num::fp32_t* __restrict x = a;
  const num::fp32_t* __restrict y = b;
  num::fp32_t* __restrict sums = out;
  for (std::size_t j = 0; j < n; ++j) {
    // N-IN, the exact sum rounded once, then its flush (N-IN's selects do it): a sum of normal
    // values below 2^-126 is exact, so no mode of the host changes it.
    const float sum =
        bits_to_float(num::canon_in_fp32(x[j])) + bits_to_float(num::canon_in_fp32(y[j] ^ negate));
    sums[j] = num::canon_in_fp32(float_to_bits(sum));
  }
}

TPU_VECTOR_CLONES void mul_lanes(const num::fp32_t* a, const num::fp32_t* b, num::fp32_t* out,
                                 std::size_t n) {
  const num::fp32_t* __restrict x = a;
  const num::fp32_t* __restrict y = b;
  num::fp32_t* __restrict products = out;
  // The products, and in the same pass whether one of them is a zero of two normal numbers.
  num::fp32_t flushed_nonzero = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const float product =
        bits_to_float(num::canon_in_fp32(x[j])) * bits_to_float(num::canon_in_fp32(y[j]));
    const num::fp32_t bits = num::canon_in_fp32(float_to_bits(product));
    products[j] = bits;
    flushed_nonzero |=
        (bits & 0x7FFFFFFFu) == 0 && (x[j] & 0x7F800000u) != 0 && (y[j] & 0x7F800000u) != 0;
  }
  if (flushed_nonzero == 0) return;
  // A zero product of two normal numbers lies below 2^-126, where the contract rounds to the
  // subnormal grid, which reaches 2^-126 from just below it (the host's product rounds there as
  // well, unless the caller set its flush-to-zero mode): such products, rare, are the reference's.
  for (std::size_t j = 0; j < n; ++j) {
    if ((products[j] & 0x7FFFFFFFu) == 0 && (x[j] & 0x7F800000u) != 0 &&
        (y[j] & 0x7F800000u) != 0) {
      products[j] = num::mul_fp32(x[j], y[j]);
    }
  }
}

TPU_VECTOR_CLONES void max_lanes(const num::fp32_t* a, const num::fp32_t* b, num::fp32_t* out,
                                 std::size_t n, bool smaller) {
  const num::fp32_t* __restrict x = a;
  const num::fp32_t* __restrict y = b;
  num::fp32_t* __restrict chosen = out;
  for (std::size_t j = 0; j < n; ++j) {
    const num::fp32_t p = num::canon_in_fp32(x[j]), q = num::canon_in_fp32(y[j]);
    // The values' order as unsigned keys: negative ones reversed below the positive ones.
    const num::fp32_t key_p = (p & 0x80000000u) != 0 ? ~p : p | 0x80000000u;
    const num::fp32_t key_q = (q & 0x80000000u) != 0 ? ~q : q | 0x80000000u;
    const bool nan = p == num::kCanonicalNanFp32 || q == num::kCanonicalNanFp32;
    const num::fp32_t pick = (key_p >= key_q) != smaller ? p : q;
    chosen[j] = nan ? num::kCanonicalNanFp32 : pick;
  }
}

TPU_VECTOR_CLONES void relu_lanes(num::fp32_t* values, std::size_t n, bool relu, bool relu6) {
  const num::fp32_t negative_to_zero = relu || relu6 ? 0x80000000u : 0u;
  // relu6's 6 (+inf included) as an unsigned bound on the non-negative values' bits.
  const num::fp32_t top = relu6 ? 0x40C00000u : 0xFFFFFFFFu;
  for (std::size_t j = 0; j < n; ++j) {
    const num::fp32_t x = num::canon_in_fp32(values[j]);
    const num::fp32_t clamped = std::min((x & negative_to_zero) != 0 ? 0u : x, top);
    values[j] = x == num::kCanonicalNanFp32 ? x : clamped;
  }
}

TPU_VECTOR_CLONES void round_to_bf16(const num::fp32_t* in, num::bf16_t* out, std::size_t n) {
  // num::fp32_to_bf16's rounding in integer steps without branches, which the compiler
  // vectorises: to nearest even (infinity past the top), a subnormal to a zero of its sign, a
  // NaN canonical.
  for (std::size_t j = 0; j < n; ++j) {
    const num::fp32_t x = in[j];
    const num::fp32_t nearest_even = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
    const num::fp32_t value = (x & 0x7F800000u) == 0 ? (x >> 16) & 0x8000u : nearest_even;
    out[j] =
        static_cast<num::bf16_t>((x & 0x7FFFFFFFu) > 0x7F800000u ? num::kCanonicalNanBf16 : value);
  }
}

}  // namespace tpu::detail
