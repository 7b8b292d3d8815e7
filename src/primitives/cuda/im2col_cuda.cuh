// Internal: the im2col / col2im kernels on CUDA for a batch of images, shared by the im2col
// primitive (im2col_cuda.cu) and the CUDA convolution (conv_cuda.cu). Geometry as the CPU's
// ConvGeom; the patch matrix of image i, row (c*R + r)*S + s, column p*Q + q sits at
// col[i * col_image + row * col_ld + p*Q + q], so one layout parameter pair covers both the
// per-image layout (col_image = C*R*S*P*Q, col_ld = P*Q) and images side by side
// (col_image = P*Q, col_ld = B*P*Q).
#pragma once

#include <algorithm>
#include <string>

#include "primitives/cpu/im2col_cpu.h"
#include "primitives/cuda/cuda_index.cuh"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {

using cpu::ConvGeom;

// In both kernels a block visits the planes (image, channel) blockIdx.y, blockIdx.y + gridDim.y,
// ... and its threads take consecutive positions of a plane, so the divisions that place a
// thread happen once per thread and plane, not per element: with a division per coordinate per
// element, the index math, not memory, bounded these memory-bound kernels.

// One thread per (image, channel, output position) writes the position's R*S patch-matrix
// entries, coalesced over positions. Reads of x are strided by the conv stride and served mostly
// from cache (each x element is read R*S times).
template <typename T>
__global__ void im2col_kernel(ConvGeom g, int planes, const T* __restrict__ x, int64_t x_image,
                              T* col, int64_t col_image, int64_t col_ld, T alpha, T beta) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= g.p * g.q) return;
  const int p = j / g.q, q = j - p * g.q;
  const int h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
  const bool copy = alpha == T(1) && beta == T(0);
  for (int t = blockIdx.y; t < planes; t += gridDim.y) {
    const int img = t / g.c, c = t - img * g.c;
    const T* xc = x + img * x_image + int64_t(c) * g.h * g.w;
    T* out = col + img * col_image + int64_t(c) * g.r * g.s * col_ld + j;
    for (int r = 0; r < g.r; ++r) {
      const int hh = h0 + r * g.dilation_h;
      const bool row_in = hh >= 0 && hh < g.h;
      for (int s = 0; s < g.s; ++s, out += col_ld) {
        const int ww = w0 + s * g.dilation_w;
        const T v = row_in && ww >= 0 && ww < g.w ? xc[hh * g.w + ww] : T(0);
        *out = copy ? v : blend_rn(v, alpha, beta, out);
      }
    }
  }
}

// One thread per x element gathers every patch-matrix entry that im2col read from it, in the
// CPU's (r, s) order and roundings: x = beta * x + sum alpha * col. No atomics; deterministic.
// This is the strided case; col2im_unit_kernel below takes unit strides.
template <typename T>
__global__ void col2im_kernel(ConvGeom g, int planes, const T* __restrict__ col, int64_t col_image,
                              int64_t col_ld, T* x, int64_t x_image, T alpha, T beta) {
  const int hw = g.h * g.w;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= hw) return;
  const int hh = e / g.w, ww = e - hh * g.w;
  for (int t = blockIdx.y; t < planes; t += gridDim.y) {
    const int img = t / g.c, c = t - img * g.c;
    T* out = x + img * x_image + int64_t(c) * hw + e;
    T v = beta == T(0) ? T(0) : beta == T(1) ? *out : mul_rn(beta, *out);
    const T* cc = col + img * col_image + int64_t(c) * g.r * g.s * col_ld;
    for (int r = 0; r < g.r; ++r) {
      const int hn = hh + g.pad_h - r * g.dilation_h;
      if (hn < 0) break;  // decreases with r
      if (hn % g.stride_h != 0) continue;
      const int p = hn / g.stride_h;
      if (p >= g.p) continue;
      for (int s = 0; s < g.s; ++s) {
        const int wn = ww + g.pad_w - s * g.dilation_w;
        if (wn < 0) break;
        if (wn % g.stride_w != 0) continue;
        const int q = wn / g.stride_w;
        if (q >= g.q) continue;
        const T cv = cc[int64_t(r * g.s + s) * col_ld + p * g.q + q];
        v = add_rn(v, alpha == T(1) ? cv : mul_rn(alpha, cv));
      }
    }
    *out = v;
  }
}

// Taps t in [0, taps) whose output index pos - t * dil lies in [0, count): the range [*lo, *hi).
__device__ __forceinline__ void unit_taps(int pos, int dil, int count, int taps, int* lo, int* hi) {
  const int over = pos - count + 1;  // t * dil >= over
  *lo = over > 0 ? (over + dil - 1) / dil : 0;
  *hi = min(taps, pos / dil + 1);
}

// The same sum for unit strides (the 3 x 3 and 5 x 5 backward data of the reference nets).
// Tap (r, s) of x position (h, w) reads output position (h + pad_h - r dil_h,
// w + pad_w - s dil_w); the taps that land inside the output form one rectangle, found once per
// thread, so the tap loop has no branch on the data path. With the kernel size known at compile
// time (KR, KS > 0: 3 x 3 and 5 x 5) the loop unrolls into predicated loads that are all in
// flight before the adds that need them; the branchy loop above waited on one load per tap
// (lenet:conv2's 25 taps: 16.6 us in ncu, 12.1 us here).
template <typename T, int KR, int KS>
__global__ void col2im_unit_kernel(ConvGeom g, int planes, const T* __restrict__ col,
                                   int64_t col_image, int64_t col_ld, T* x, int64_t x_image,
                                   T alpha, T beta) {
  const int R = KR > 0 ? KR : g.r, S = KS > 0 ? KS : g.s;
  const int hw = g.h * g.w;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= hw) return;
  const int hh = e / g.w, ww = e - hh * g.w;
  const int hp = hh + g.pad_h, wp = ww + g.pad_w;
  int r0, r1, s0, s1;
  unit_taps(hp, g.dilation_h, g.p, R, &r0, &r1);
  unit_taps(wp, g.dilation_w, g.q, S, &s0, &s1);
  // Tap (r, s) sits at (r S + s) col_ld + (hp - r dil_h) Q + (wp - s dil_w) of the plane's
  // patch rows: a step in r or s moves by a fixed amount.
  const int64_t step_r = int64_t(S) * col_ld - int64_t(g.dilation_h) * g.q;
  const int64_t step_s = col_ld - g.dilation_w;
  for (int t = blockIdx.y; t < planes; t += gridDim.y) {
    const int img = t / g.c, c = t - img * g.c;
    T* out = x + img * x_image + int64_t(c) * hw + e;
    T v = beta == T(0) ? T(0) : beta == T(1) ? *out : mul_rn(beta, *out);
    const T* cc = col + img * col_image + int64_t(c) * R * S * col_ld + int64_t(hp) * g.q + wp;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r < r0 || r >= r1) continue;
#pragma unroll
      for (int s = 0; s < S; ++s) {
        if (s < s0 || s >= s1) continue;
        const T cv = cc[r * step_r + s * step_s];
        v = add_rn(v, alpha == T(1) ? cv : mul_rn(alpha, cv));
      }
    }
    *out = v;
  }
}

// The grid of both kernels: positions of a plane over x (blocks of up to kBlock threads, fewer
// for small planes so that threads are not left idle), planes over y. Both kernels index within
// an input plane (H x W) and an output plane (P x Q) in 32 bits; the planes' count and offsets
// are 64-bit.
inline void plane_grid(const ConvGeom& g, int64_t positions, int64_t planes, dim3* grid,
                       dim3* block) {
  constexpr int64_t kLimit = int64_t(1) << 31;
  if (int64_t(g.h) * g.w >= kLimit || int64_t(g.p) * g.q >= kLimit || planes >= kLimit)
    throw PrimError("im2col/col2im on CUDA: planes of " + std::to_string(g.h) + "x" +
                    std::to_string(g.w) + " inputs and " + std::to_string(g.p) + "x" +
                    std::to_string(g.q) + " outputs, " + std::to_string(planes) +
                    " of them: a plane of 2^31 elements or more, or 2^31 planes, is not supported");
  const int threads = int(std::min<int64_t>(kBlock, (positions + 31) / 32 * 32));
  *block = dim3(unsigned(threads));
  *grid = dim3(unsigned((positions + threads - 1) / threads),
               unsigned(std::min<int64_t>(planes, 65535)));
}

template <typename T>
void launch_im2col(cudaStream_t st, const ConvGeom& g, int batch, const T* x, int64_t x_image,
                   T* col, int64_t col_image, int64_t col_ld, T alpha = T(1), T beta = T(0)) {
  const int64_t positions = int64_t(g.p) * g.q, planes = int64_t(batch) * g.c;
  if (positions == 0 || planes == 0 || g.r == 0 || g.s == 0) return;
  dim3 grid, block;
  plane_grid(g, positions, planes, &grid, &block);
  im2col_kernel<T>
      <<<grid, block, 0, st>>>(g, int(planes), x, x_image, col, col_image, col_ld, alpha, beta);
  check_launch("im2col_kernel");
}

template <typename T>
void launch_col2im(cudaStream_t st, const ConvGeom& g, int batch, const T* col, int64_t col_image,
                   int64_t col_ld, T* x, int64_t x_image, T alpha = T(1), T beta = T(0)) {
  const int64_t positions = int64_t(g.h) * g.w, planes = int64_t(batch) * g.c;
  if (positions == 0 || planes == 0) return;
  dim3 grid, block;
  plane_grid(g, positions, planes, &grid, &block);
  const bool unit = g.stride_h == 1 && g.stride_w == 1;
  if (unit && g.r == 3 && g.s == 3)
    col2im_unit_kernel<T, 3, 3>
        <<<grid, block, 0, st>>>(g, int(planes), col, col_image, col_ld, x, x_image, alpha, beta);
  else if (unit && g.r == 5 && g.s == 5)
    col2im_unit_kernel<T, 5, 5>
        <<<grid, block, 0, st>>>(g, int(planes), col, col_image, col_ld, x, x_image, alpha, beta);
  else if (unit)
    col2im_unit_kernel<T, 0, 0>
        <<<grid, block, 0, st>>>(g, int(planes), col, col_image, col_ld, x, x_image, alpha, beta);
  else
    col2im_kernel<T>
        <<<grid, block, 0, st>>>(g, int(planes), col, col_image, col_ld, x, x_image, alpha, beta);
  check_launch("col2im_kernel");
}

}  // namespace crema::prim::cuda
