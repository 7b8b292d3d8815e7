// Local Response Normalization on CUDA, with the s^-beta functors of lrn_ops.h (shared with the
// CPU). Across channels: one thread per (n, h, w) column, coalesced over h * w, slides the
// channel window down the column (add the channel entering, subtract the one leaving) in the
// CPU's order. Backward needs the window sum of dy * y / scale over channels, which depends only
// on the same column, so one thread does both passes: the first stores R = dy * y / scale in
// the workspace, the second slides over R (and again over x^2 to recover the scale) and writes
// dx. Within a channel: one thread per pixel sums its clipped n x n window directly (the reads
// overlap in cache); backward is two kernels, R first, then its window sums.
// Traffic per element: across forward ~8 bytes (x, y; the leaving channel is re-read from
// cache), backward ~28 (x twice, y, dy twice, R written and read, dx).
#include <cstdint>

#include "primitives/cuda_util.cuh"
#include "primitives/lrn.h"
#include "primitives/lrn_ops.h"

namespace crema::prim::cuda {
namespace {

struct Geo {
  int64_t columns;  // n * h * w
  int64_t hw;
  int C, H, W, r;
};

template <typename T, typename NegPow>
__global__ void across_fwd_kernel(Geo g, NegPow neg_pow, T k, T a, const T* __restrict__ x, T* y,
                                  T alpha, T beta) {
  CREMA_CUDA_LOOP(col, g.columns) {
    const int64_t n = col / g.hw, pos = col - n * g.hw;
    const T* xc = x + n * g.C * g.hw + pos;
    T* yc = y + n * g.C * g.hw + pos;
    T acc = T(0);
    for (int c = 0; c <= min(g.r, g.C - 1); ++c) acc += xc[c * g.hw] * xc[c * g.hw];
    for (int c = 0; c < g.C; ++c) {
      const T v = xc[c * g.hw];
      blend_store(yc + c * g.hw, v * neg_pow(lrn_ops::scale_of(k, a, acc)), alpha, beta);
      if (c + g.r + 1 < g.C) {
        const T e = xc[(c + g.r + 1) * g.hw];
        acc += e * e;
      }
      if (c - g.r >= 0) {
        const T l = xc[(c - g.r) * g.hw];
        acc -= l * l;
      }
    }
  }
}

template <typename T, typename NegPow>
__global__ void across_bwd_kernel(Geo g, NegPow neg_pow, T k, T a, T cc, const T* __restrict__ y,
                                  const T* dy, const T* __restrict__ x, T* dx, T* R, T alpha,
                                  T beta) {
  CREMA_CUDA_LOOP(col, g.columns) {
    const int64_t n = col / g.hw, pos = col - n * g.hw;
    const int64_t base = n * g.C * g.hw + pos;
    const T* xc = x + base;
    const T* yc = y + base;
    const T* gc = dy + base;  // may be dx itself: each element is read before it is written
    T* rc = R + base;
    T* oc = dx + base;
    const int first = min(g.r, g.C - 1);
    // Pass 1: R_c = dy_c * y_c / scale_c.
    T acc = T(0);
    for (int c = 0; c <= first; ++c) acc += xc[c * g.hw] * xc[c * g.hw];
    for (int c = 0; c < g.C; ++c) {
      rc[c * g.hw] = gc[c * g.hw] * yc[c * g.hw] / lrn_ops::scale_of(k, a, acc);
      if (c + g.r + 1 < g.C) {
        const T e = xc[(c + g.r + 1) * g.hw];
        acc += e * e;
      }
      if (c - g.r >= 0) {
        const T l = xc[(c - g.r) * g.hw];
        acc -= l * l;
      }
    }
    // Pass 2: the same slide over x^2 recovers each scale; a second one over R gives the sum.
    acc = T(0);
    T sr = T(0);
    for (int c = 0; c <= first; ++c) {
      acc += xc[c * g.hw] * xc[c * g.hw];
      sr += rc[c * g.hw];
    }
    for (int c = 0; c < g.C; ++c) {
      const T xv = xc[c * g.hw];
      const T v = gc[c * g.hw] * neg_pow(lrn_ops::scale_of(k, a, acc)) - cc * xv * sr;
      blend_store(oc + c * g.hw, v, alpha, beta);
      if (c + g.r + 1 < g.C) {
        const T e = xc[(c + g.r + 1) * g.hw];
        acc += e * e;
        sr += rc[(c + g.r + 1) * g.hw];
      }
      if (c - g.r >= 0) {
        const T l = xc[(c - g.r) * g.hw];
        acc -= l * l;
        sr -= rc[(c - g.r) * g.hw];
      }
    }
  }
}

// Sum of f(in) over pixel (i, j)'s window of radius r, clipped to the H x W plane.
template <bool kSquare, typename T>
__device__ __forceinline__ T window_sum(const T* plane, int H, int W, int r, int i, int j) {
  const int i0 = max(i - r, 0), i1 = min(i + r, H - 1);
  const int j0 = max(j - r, 0), j1 = min(j + r, W - 1);
  T s = T(0);
  for (int ii = i0; ii <= i1; ++ii)
    for (int jj = j0; jj <= j1; ++jj) {
      const T v = plane[int64_t(ii) * W + jj];
      s += kSquare ? v * v : v;
    }
  return s;
}

template <typename T, typename NegPow>
__global__ void within_fwd_kernel(Geo g, int64_t total, NegPow neg_pow, T k, T a,
                                  const T* __restrict__ x, T* y, T alpha, T beta) {
  CREMA_CUDA_LOOP(idx, total) {
    const int64_t plane = idx / g.hw;
    const int e = int(idx - plane * g.hw), i = e / g.W, j = e - i * g.W;
    const T s = k + a * window_sum<true>(x + plane * g.hw, g.H, g.W, g.r, i, j);
    blend_store(y + idx, x[idx] * neg_pow(s), alpha, beta);
  }
}

template <typename T>
__global__ void within_r_kernel(Geo g, int64_t total, T k, T a, const T* __restrict__ y,
                                const T* __restrict__ dy, const T* __restrict__ x, T* R) {
  CREMA_CUDA_LOOP(idx, total) {
    const int64_t plane = idx / g.hw;
    const int e = int(idx - plane * g.hw), i = e / g.W, j = e - i * g.W;
    const T s = k + a * window_sum<true>(x + plane * g.hw, g.H, g.W, g.r, i, j);
    R[idx] = dy[idx] * y[idx] / s;
  }
}

// dy may be dx: each thread reads its own dy element only, before writing it.
template <typename T, typename NegPow>
__global__ void within_dx_kernel(Geo g, int64_t total, NegPow neg_pow, T k, T a, T cc, const T* dy,
                                 const T* __restrict__ x, const T* __restrict__ R, T* dx, T alpha,
                                 T beta) {
  CREMA_CUDA_LOOP(idx, total) {
    const int64_t plane = idx / g.hw;
    const int e = int(idx - plane * g.hw), i = e / g.W, j = e - i * g.W;
    const T s = k + a * window_sum<true>(x + plane * g.hw, g.H, g.W, g.r, i, j);
    const T sr = window_sum<false>(R + plane * g.hw, g.H, g.W, g.r, i, j);
    blend_store(dx + idx, dy[idx] * neg_pow(s) - cc * x[idx] * sr, alpha, beta);
  }
}

Geo geo_of(const LrnDesc& ld, const TensorDesc& d) {
  const int64_t hw = int64_t(d.h) * d.w;
  return Geo{d.n * hw, hw, d.c, d.h, d.w, ld.local_size / 2};
}

template <typename T>
void fwd(Handle& h, const LrnDesc& ld, const TensorDesc& d, const T* x, T* y, Blend b) {
  const Geo g = geo_of(ld, d);
  const T alpha = T(b.alpha), beta = T(b.beta), k = T(ld.k);
  cudaStream_t s = stream_of(h);
  lrn_ops::visit_neg_pow<T>(ld.beta, [&](auto neg_pow) {
    if (ld.mode == LrnMode::kAcrossChannels) {
      const T a = T(ld.alpha / ld.local_size);
      across_fwd_kernel<<<grid_for(g.columns), kBlock, 0, s>>>(g, neg_pow, k, a, x, y, alpha, beta);
    } else {
      const T a = T(ld.alpha / (double(ld.local_size) * ld.local_size));
      const int64_t total = d.count();
      within_fwd_kernel<<<grid_for(total), kBlock, 0, s>>>(g, total, neg_pow, k, a, x, y, alpha,
                                                           beta);
    }
  });
  check_launch("lrn_fwd");
}

template <typename T>
void bwd(Handle& h, const LrnDesc& ld, const TensorDesc& d, const T* y, const T* dy, const T* x,
         T* dx, Blend b) {
  const Geo g = geo_of(ld, d);
  const int64_t total = d.count();
  const T alpha = T(b.alpha), beta = T(b.beta), k = T(ld.k);
  T* R = static_cast<T*>(h.workspace(size_t(total) * sizeof(T)));
  cudaStream_t s = stream_of(h);
  lrn_ops::visit_neg_pow<T>(ld.beta, [&](auto neg_pow) {
    if (ld.mode == LrnMode::kAcrossChannels) {
      const T a = T(ld.alpha / ld.local_size);
      const T cc = T(2 * ld.alpha * ld.beta / ld.local_size);
      across_bwd_kernel<<<grid_for(g.columns), kBlock, 0, s>>>(g, neg_pow, k, a, cc, y, dy, x, dx,
                                                               R, alpha, beta);
      check_launch("lrn_bwd");
    } else {
      const double nn = double(ld.local_size) * ld.local_size;
      const T a = T(ld.alpha / nn), cc = T(2 * ld.alpha * ld.beta / nn);
      within_r_kernel<<<grid_for(total), kBlock, 0, s>>>(g, total, k, a, y, dy, x, R);
      check_launch("lrn_bwd");
      within_dx_kernel<<<grid_for(total), kBlock, 0, s>>>(g, total, neg_pow, k, a, cc, dy, x, R, dx,
                                                          alpha, beta);
      check_launch("lrn_bwd");
    }
  });
}

}  // namespace

void lrn_fwd(Handle& h, const LrnDesc& ld, const TensorDesc& xd, const void* x, const TensorDesc&,
             void* y, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    fwd(h, ld, xd, static_cast<const double*>(x), static_cast<double*>(y), blend);
  else
    fwd(h, ld, xd, static_cast<const float*>(x), static_cast<float*>(y), blend);
}

void lrn_bwd(Handle& h, const LrnDesc& ld, const TensorDesc&, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    bwd(h, ld, xd, static_cast<const double*>(y), static_cast<const double*>(dy),
        static_cast<const double*>(x), static_cast<double*>(dx), blend);
  else
    bwd(h, ld, xd, static_cast<const float*>(y), static_cast<const float*>(dy),
        static_cast<const float*>(x), static_cast<float*>(dx), blend);
}

}  // namespace crema::prim::cuda
