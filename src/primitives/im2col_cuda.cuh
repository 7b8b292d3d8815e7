// Internal: the im2col / col2im kernels on CUDA for a batch of images, shared by the im2col
// primitive (im2col_cuda.cu) and the CUDA convolution (conv_cuda.cu). Geometry as the CPU's
// ConvGeom; the patch matrix of image i, row (c*R + r)*S + s, column p*Q + q sits at
// col[i * col_image + row * col_ld + p*Q + q], so one layout parameter pair covers both the
// per-image layout (col_image = C*R*S*P*Q, col_ld = P*Q) and images side by side
// (col_image = P*Q, col_ld = B*P*Q).
#pragma once

#include "primitives/cuda_index.cuh"
#include "primitives/cuda_util.cuh"
#include "primitives/im2col_cpu.h"

namespace crema::prim::cuda {

using cpu::ConvGeom;

// One thread per patch-matrix element, columns fastest so the writes coalesce. Reads of x are
// strided by the conv stride and served mostly from cache (each x element is read R*S times).
// Index math runs in I: 32-bit unless the batch has 2^31 or more elements, since 64-bit division
// costs several times more and would make these memory-bound kernels instruction-bound.
template <typename T, typename I>
__global__ void im2col_kernel(ConvGeom g, int batch, const T* __restrict__ x, int64_t x_image,
                              T* col, int64_t col_image, int64_t col_ld, T alpha, T beta) {
  const int pq = g.p * g.q;
  const int rows = g.c * g.r * g.s;
  const int64_t total = int64_t(batch) * rows * pq;
  CREMA_CUDA_LOOP(i, total) {
    const I ii = I(i);
    const int j = int(ii % I(pq));
    const I t = ii / I(pq);
    const int row = int(t % I(rows));
    const int img = int(t / I(rows));
    const int q = j % g.q, p = j / g.q;
    const int s = row % g.s, cr = row / g.s;
    const int r = cr % g.r, c = cr / g.r;
    const int hh = p * g.stride_h - g.pad_h + r * g.dilation_h;
    const int ww = q * g.stride_w - g.pad_w + s * g.dilation_w;
    const T v = hh >= 0 && hh < g.h && ww >= 0 && ww < g.w
                    ? x[img * x_image + (int64_t(c) * g.h + hh) * g.w + ww]
                    : T(0);
    T* out = col + img * col_image + int64_t(row) * col_ld + j;
    if (alpha == T(1) && beta == T(0))
      *out = v;
    else
      *out = blend_rn(v, alpha, beta, out);
  }
}

// One thread per x element gathers every patch-matrix entry that im2col read from it, in the
// CPU's (r, s) order and roundings: x = beta * x + sum alpha * col. No atomics; deterministic.
template <typename T, typename I>
__global__ void col2im_kernel(ConvGeom g, int batch, const T* __restrict__ col, int64_t col_image,
                              int64_t col_ld, T* x, int64_t x_image, T alpha, T beta) {
  const int64_t hw = int64_t(g.h) * g.w;
  const int64_t total = int64_t(batch) * g.c * hw;
  CREMA_CUDA_LOOP(i, total) {
    const I ii = I(i);
    const int ww = int(ii % I(g.w));
    const I t = ii / I(g.w);
    const int hh = int(t % I(g.h));
    const I t2 = t / I(g.h);
    const int c = int(t2 % I(g.c));
    const int img = int(t2 / I(g.c));
    T* out = x + img * x_image + c * hw + int64_t(hh) * g.w + ww;
    T v = beta == T(0) ? T(0) : beta == T(1) ? *out : mul_rn(beta, *out);
    const T* cimg = col + img * col_image;
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
        const int row = (c * g.r + r) * g.s + s;
        const T cv = cimg[int64_t(row) * col_ld + int64_t(p) * g.q + q];
        v = add_rn(v, alpha == T(1) ? cv : mul_rn(alpha, cv));
      }
    }
    *out = v;
  }
}

template <typename T>
void launch_im2col(cudaStream_t st, const ConvGeom& g, int batch, const T* x, int64_t x_image,
                   T* col, int64_t col_image, int64_t col_ld, T alpha = T(1), T beta = T(0)) {
  const int64_t total = int64_t(batch) * g.c * g.r * g.s * g.p * g.q;
  if (total == 0) return;
  if (total < (int64_t(1) << 31))
    im2col_kernel<T, uint32_t><<<grid_for(total), kBlock, 0, st>>>(g, batch, x, x_image, col,
                                                                   col_image, col_ld, alpha, beta);
  else
    im2col_kernel<T, int64_t><<<grid_for(total), kBlock, 0, st>>>(g, batch, x, x_image, col,
                                                                  col_image, col_ld, alpha, beta);
  check_launch("im2col_kernel");
}

template <typename T>
void launch_col2im(cudaStream_t st, const ConvGeom& g, int batch, const T* col, int64_t col_image,
                   int64_t col_ld, T* x, int64_t x_image, T alpha = T(1), T beta = T(0)) {
  const int64_t total = int64_t(batch) * g.c * g.h * g.w;
  if (total == 0) return;
  if (total < (int64_t(1) << 31))
    col2im_kernel<T, uint32_t><<<grid_for(total), kBlock, 0, st>>>(g, batch, col, col_image, col_ld,
                                                                   x, x_image, alpha, beta);
  else
    col2im_kernel<T, int64_t><<<grid_for(total), kBlock, 0, st>>>(g, batch, col, col_image, col_ld,
                                                                  x, x_image, alpha, beta);
  check_launch("col2im_kernel");
}

}  // namespace crema::prim::cuda
