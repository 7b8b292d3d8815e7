// ArgMax on CUDA: one thread per (outer, inner) position; adjacent threads take adjacent inner
// positions, so each channel row is read coalesced. top_k = 1 is one scan (>= keeps the last of
// equal maxima, as the CPU); top_k > 1 selects the ranks one after another, each rank the
// largest (value, channel) pair below the previous one in the CPU's order (value, then channel,
// descending): k scans of the C values, no scratch memory.
#include "primitives/argmax.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {
namespace {

// (v1, c1) ranks before (v2, c2): std::greater on (value, index) pairs.
template <typename T>
__device__ __forceinline__ bool before(T v1, int64_t c1, T v2, int64_t c2) {
  return v1 > v2 || (!(v2 > v1) && c1 > c2);
}

template <typename T>
__global__ void argmax_kernel(int64_t positions, int64_t C, int64_t inner, int64_t k,
                              int64_t ostride, const T* x, T* index, T* value) {
  CREMA_CUDA_LOOP(p, positions) {
    const int64_t o = p / inner, i = p - o * inner;
    const T* src = x + o * C * inner + i;
    const int64_t out = o * ostride + i;
    if (k == 1) {
      int64_t best = 0;
      T bv = src[0];
      for (int64_t c = 1; c < C; ++c) {
        const T v = src[c * inner];
        if (v >= bv) {
          best = c;
          bv = v;
        }
      }
      if (index) index[out] = T(best);
      if (value) value[out] = bv;
      continue;
    }
    T pv = T(0);
    int64_t pc = -1;  // no previous rank yet
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      T bv = T(0);
      for (int64_t c = 0; c < C; ++c) {
        const T v = src[c * inner];
        if (pc >= 0 && !before(pv, pc, v, c)) continue;  // ranked already
        if (best < 0 || before(v, c, bv, best)) {
          best = c;
          bv = v;
        }
      }
      if (best < 0) best = pc, bv = pv;  // unreachable for ordered (non-NaN) values
      if (index) index[out + j * inner] = T(best);
      if (value) value[out + j * inner] = bv;
      pv = bv;
      pc = best;
    }
  }
}

template <typename T>
void run(Handle& h, const ArgMaxDesc& ad, const void* x, void* index, void* value) {
  const int64_t positions = ad.outer * ad.inner;
  const int64_t ostride = ad.out_outer_stride ? ad.out_outer_stride : ad.top_k * ad.inner;
  argmax_kernel<T><<<grid_for(positions), kBlock, 0, stream_of(h)>>>(
      positions, ad.channels, ad.inner, ad.top_k, ostride, static_cast<const T*>(x),
      static_cast<T*>(index), static_cast<T*>(value));
  check_launch("argmax_fwd");
}

}  // namespace

void argmax_fwd(Handle& h, const ArgMaxDesc& ad, const void* x, void* index, void* value) {
  visit_dtype(kFloatTypes, ad.dtype, "argmax_fwd", Device::kCUDA,
              [&](auto tag) { run<typename decltype(tag)::type>(h, ad, x, index, value); });
}

}  // namespace crema::prim::cuda
