// The skinny GEMM kernel (gemm_skinny_cpu.h): register tiles of 5 rows of A by 3 rows of B, each
// a 16-float vector per pair, accumulated over k. The vectors are GCC vector extensions, lowered
// to whatever the clone targets (one zmm, two ymm or four xmm registers); the function is cloned
// for AVX-512, AVX2+FMA and the baseline and picked at load time, since the portable baseline
// build would otherwise run it on SSE2 alone.
#include "primitives/cpu/gemm_skinny_cpu.h"

#include <algorithm>
#include <cstring>

namespace crema::prim::cpu {
namespace {

constexpr int kLanes = 16;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

constexpr int kTileRows = 5;  // rows of A per tile (batch 10: two tiles, no wasted row)
constexpr int kTileCols = 3;  // rows of B per tile
// 15 accumulators + 3 B vectors fit AVX-512's 32 registers; the AVX2 clone spills some of them.

[[gnu::always_inline]] inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

[[gnu::always_inline]] inline float lane_sum(Vec v) {
  float s = 0;
  for (int l = 0; l < kLanes; ++l) s += v[l];
  return s;
}

// One tile: sums[i][r] = dot(a[i], b[r]) over k.
[[gnu::always_inline]] inline void tile(const float* const* a, const float* const* b, int k,
                                        float sums[kTileRows][kTileCols]) {
  Vec acc[kTileRows][kTileCols] = {};
  int kk = 0;
  for (; kk + kLanes <= k; kk += kLanes) {
    Vec bv[kTileCols];
    for (int r = 0; r < kTileCols; ++r) bv[r] = load(b[r] + kk);
    for (int i = 0; i < kTileRows; ++i) {
      const Vec av = load(a[i] + kk);
      for (int r = 0; r < kTileCols; ++r) acc[i][r] += av * bv[r];
    }
  }
  for (int i = 0; i < kTileRows; ++i)
    for (int r = 0; r < kTileCols; ++r) {
      float s = lane_sum(acc[i][r]);
      for (int t = kk; t < k; ++t) s += a[i][t] * b[r][t];
      sums[i][r] = s;
    }
}

}  // namespace

// GCC makes the clones and their resolver. Clang 14 compiles the same attribute into one function
// for its first target, AVX-512 code that stops with SIGILL where the CPU lacks it: clang builds
// (the sanitizer build) keep the portable baseline.
#if defined(__clang__)
#define CREMA_SKINNY_CLONES
#else
#define CREMA_SKINNY_CLONES [[gnu::target_clones("avx512f", "avx2,fma", "default")]]
#endif

CREMA_SKINNY_CLONES void gemm_skinny_nt(int m, int j_begin, int j_end, int k, float alpha,
                                        const float* a, int lda, const float* b, int ldb,
                                        float beta, float* c, int ldc) {
  // B's rows outermost: each tile of them comes from memory once and stays in cache for all of A.
  for (int j = j_begin; j < j_end; j += kTileCols) {
    const int nb = std::min(kTileCols, j_end - j);
    const float* brows[kTileCols];
    // Likewise rows past j_end repeat the last one.
    for (int r = 0; r < kTileCols; ++r) brows[r] = b + int64_t(j + std::min(r, nb - 1)) * ldb;
    for (int i0 = 0; i0 < m; i0 += kTileRows) {
      // Rows past m repeat the last row: computed, never stored, so A needs no padded copy.
      const float* arows[kTileRows];
      for (int i = 0; i < kTileRows; ++i) arows[i] = a + int64_t(std::min(i0 + i, m - 1)) * lda;
      float sums[kTileRows][kTileCols];
      tile(arows, brows, k, sums);
      for (int i = 0; i < std::min(kTileRows, m - i0); ++i)
        for (int r = 0; r < nb; ++r) {
          float& out = c[int64_t(i0 + i) * ldc + j + r];
          out = beta == 0.0f ? alpha * sums[i][r] : alpha * sums[i][r] + beta * out;
        }
    }
  }
}

}  // namespace crema::prim::cpu
