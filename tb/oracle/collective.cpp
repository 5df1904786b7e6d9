#include "oracle/collective.hpp"

#include "oracle/operand_sets.hpp"

namespace tpu::oracle {

std::vector<fp32_t> ring_allreduce(const Tensors& g) {
  const std::size_t chips = g.size();
  const std::size_t n = g[0].size();
  std::vector<fp32_t> out(n);
  for (std::size_t c = 0; c < chips; ++c) {
    for (std::size_t v = c * n / chips; v < (c + 1) * n / chips; ++v) {
      fp32_t s = g[c][v];
      for (std::size_t k = 1; k < chips; ++k) s = add_fp32(s, g[(c + k) % chips][v]);
      out[v] = s;
    }
  }
  return out;
}

std::vector<fp32_t> ps_allreduce(const Tensors& g) {
  std::vector<fp32_t> out = g[0];
  for (std::size_t c = g.size() - 1; c >= 1; --c) {
    for (std::size_t v = 0; v < out.size(); ++v) out[v] = add_fp32(out[v], g[c][v]);
  }
  return out;
}

Tensors random_tensors(unsigned chips, std::size_t n, std::uint64_t seed) {
  OperandRng rng(seed);
  Tensors g(chips, std::vector<fp32_t>(n));
  for (auto& tensor : g) {
    for (auto& v : tensor) v = rng.fp32();
  }
  return g;
}

Tensors adversarial_tensors(unsigned chips, std::size_t n, std::uint64_t seed) {
  OperandRng rng(seed);
  Tensors g(chips, std::vector<fp32_t>(n));
  for (std::size_t v = 0; v < n; ++v) {
    const fp32_t x = rng.fp32();
    for (unsigned c = 0; c < chips; ++c) {
      switch ((v + c) % 7) {
        case 0:
          g[c][v] = rng.fp32();
          break;
        case 1:
          g[c][v] = (c % 2) ? x ^ 0x80000000u : x;
          break;
        case 2:
          g[c][v] = c == 0 ? 0x7F800000u : 0xFF800000u;
          break;
        case 3:
          g[c][v] = 0x00000001u + c;
          break;
        case 4:
          g[c][v] = 0x7F7FFFFFu;
          break;
        case 5:
          g[c][v] = (c % 2) ? 0x80000000u : 0x00000000u;
          break;
        default:
          g[c][v] = rng.fp32_pair_finite_normal().first;
          break;
      }
    }
  }
  return g;
}

}  // namespace tpu::oracle
