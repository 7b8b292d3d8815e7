// Internal helpers of the CUDA BLAS, im2col and convolution kernels: element offsets of a strided
// 4-d tensor from a linear index, and products/sums rounded separately (no fused multiply-add)
// where the CPU computes the same expression with two roundings, so results agree bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "primitives/types.h"

namespace crema::prim::cuda {

// The sizes and strides of a TensorDesc, passed to kernels by value. Linear indices run over the
// logical N x C x H x W order with w fastest; offsets follow the strides.
struct StridedIndex {
  int n, c, h, w;
  int64_t sn, sc, sh, sw;
  int64_t count;

  explicit StridedIndex(const TensorDesc& d)
      : n(d.n),
        c(d.c),
        h(d.h),
        w(d.w),
        sn(d.stride_n),
        sc(d.stride_c),
        sh(d.stride_h),
        sw(d.stride_w),
        count(d.count()) {}

  // Offset of logical element i; *ch receives its channel. The index math runs in 32 bits when
  // the tensor allows it: 64-bit division costs several times more and would make memory-bound
  // kernels instruction-bound.
  __device__ __forceinline__ int64_t offset(int64_t i, int* ch) const {
    if (count < (int64_t(1) << 31)) return offset_t<uint32_t>(uint32_t(i), ch);
    return offset_t<int64_t>(i, ch);
  }

  // Offset of the j-th of the N*H*W elements of channel ch (w fastest, then h, then n).
  __device__ __forceinline__ int64_t channel_offset(int ch, int64_t j) const {
    if (count < (int64_t(1) << 31)) return channel_offset_t<uint32_t>(ch, uint32_t(j));
    return channel_offset_t<int64_t>(ch, j);
  }

 private:
  template <typename I>
  __device__ __forceinline__ int64_t offset_t(I i, int* ch) const {
    const I wi = i % I(w);
    I t = i / I(w);
    const I hi = t % I(h);
    t /= I(h);
    *ch = int(t % I(c));
    return int64_t(t / I(c)) * sn + int64_t(*ch) * sc + int64_t(hi) * sh + int64_t(wi) * sw;
  }

  template <typename I>
  __device__ __forceinline__ int64_t channel_offset_t(int ch, I j) const {
    const I wi = j % I(w);
    const I t = j / I(w);
    return int64_t(t / I(h)) * sn + int64_t(ch) * sc + int64_t(t % I(h)) * sh + int64_t(wi) * sw;
  }
};

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

// out = alpha * v + beta * out with the CPU's roundings; beta == 0 never reads out.
template <typename T>
__device__ __forceinline__ T blend_rn(T v, T alpha, T beta, const T* out) {
  return beta == T(0) ? mul_rn(alpha, v) : add_rn(mul_rn(alpha, v), mul_rn(beta, *out));
}

}  // namespace crema::prim::cuda
