// The strided 1x1 convolution's two data movements (conv_gemm1x1_cuda.cu): the subsampled input
// x[:, :, ::sh, ::sw] gathered into a packed tensor of the output's plane size (forward and
// backward filter), and the subsampled gradient spread over dx with zeros where the stride skips
// (backward data). Image-packed NCHW moves values along rows; packed NHWC moves whole pixels, V
// adjacent channels a load. Below 2^31 elements (the row's rule).
#pragma once

#include <cstdint>

#include "primitives/common/fast_div.h"
#include "primitives/conv/conv_impl.h"
#include "primitives/cuda/cuda_pack.cuh"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {

// The subsampled input of image-packed x (N x C x H x W, batch stride sn): out packed
// N x C x P x Q, out[n][c][p][q] = x[n][c][p * sh][q * sw]. Below 2^31 elements (the row's rule).
template <typename T>
__global__ void gather_strided_kernel(uint32_t total, FastDiv q_div, FastDiv p_div, FastDiv c_div,
                                      int h, int w, int sh, int sw, int64_t sn,
                                      const T* __restrict__ x, T* __restrict__ out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const uint32_t t = q_div.div(i), q = i - t * q_div.d;
    const uint32_t t2 = p_div.div(t), p = t - t2 * p_div.d;
    const uint32_t n = c_div.div(t2), c = t2 - n * c_div.d;
    out[i] = x[int64_t(n) * sn + (int64_t(c) * h + int64_t(p) * sh) * w + int64_t(q) * sw];
  }
}

// dx = alpha * spread(dx_sub) + beta * dx over every element of image-packed dx: the subsampled
// gradient where the stride samples, zero elsewhere. A thread writes V consecutive values of a row
// (one 16- or 8-byte store where the rows allow): the kernel is a write of dx, and 2-byte stores
// would move a quarter of what the memory system takes per access.
// sub is f32 where dx is half-size (the gradient is rounded once, after the blend).
template <typename S, typename T, int V>
__global__ void spread_strided_kernel(uint32_t packs, FastDiv wv_div, FastDiv h_div, FastDiv c_div,
                                      int p_size, int q_size, FastDiv sh, FastDiv sw, int64_t sn,
                                      const S* __restrict__ sub, T* dx, MathOf<T> alpha,
                                      MathOf<T> beta) {
  using M = MathOf<T>;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += blockDim.x * gridDim.x) {
    const uint32_t t = wv_div.div(i), x0 = (i - t * wv_div.d) * V;
    const uint32_t t2 = h_div.div(t), y = t - t2 * h_div.d;
    const uint32_t n = c_div.div(t2), c = t2 - n * c_div.d;
    const uint32_t p = sh.div(y);
    const bool row_kept = p * sh.d == y && int(p) < p_size;
    const S* row = sub + ((int64_t(n) * c_div.d + c) * p_size + p) * q_size;
    M v[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const uint32_t x = x0 + e, q = sw.div(x);
      v[e] = row_kept && q * sw.d == x && int(q) < q_size ? M(load_as_float(row[q])) : M(0);
    }
    const int64_t off = int64_t(n) * sn + (int64_t(c) * h_div.d + y) * (wv_div.d * V) + x0;
    blend_store_pack<V>(dx + off, v, alpha, beta);
  }
}

// Channels last: out packed N x P x Q x C, out[n][p][q][:] = x[n][p sh][q sw][:], V channels a
// thread (cv: C / V packs a pixel).
template <typename T, int V>
__global__ void gather_pixels_kernel(uint32_t packs, FastDiv cv, FastDiv q_div, FastDiv p_div,
                                     int h, int w, int sh, int sw, const T* __restrict__ x,
                                     T* __restrict__ out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += blockDim.x * gridDim.x) {
    const uint32_t pix = cv.div(i), k = i - pix * cv.d;
    const uint32_t t = q_div.div(pix), q = pix - t * q_div.d;
    const uint32_t n = p_div.div(t), p = t - n * p_div.d;
    const int64_t src =
        ((int64_t(n) * h + int64_t(p) * sh) * w + int64_t(q) * sw) * (int64_t(cv.d) * V) +
        int64_t(k) * V;
    *reinterpret_cast<Pack<V, T>*>(out + int64_t(i) * V) =
        *reinterpret_cast<const Pack<V, T>*>(x + src);
  }
}

// Channels last: dx = alpha * spread(sub) + beta * dx over packed NHWC dx, sub packed
// N x P x Q x C; a thread writes V adjacent channels of one pixel (kept or zero as a whole).
template <typename S, typename T, int V>
__global__ void spread_pixels_kernel(uint32_t packs, FastDiv cv, FastDiv w_div, FastDiv h_div,
                                     FastDiv sh, FastDiv sw, int p_size, int q_size,
                                     const S* __restrict__ sub, T* dx, MathOf<T> alpha,
                                     MathOf<T> beta) {
  using M = MathOf<T>;
  constexpr int kS = V * sizeof(S) <= 16 ? V : int(16 / sizeof(S));  // values a load of sub
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += blockDim.x * gridDim.x) {
    const uint32_t pix = cv.div(i), k = i - pix * cv.d;
    const uint32_t t = w_div.div(pix), x = pix - t * w_div.d;
    const uint32_t n = h_div.div(t), y = t - n * h_div.d;
    const uint32_t p = sh.div(y), q = sw.div(x);
    M v[V];
    if (p * sh.d == y && q * sw.d == x && int(p) < p_size && int(q) < q_size) {
      const S* src =
          sub + ((int64_t(n) * p_size + p) * q_size + q) * (int64_t(cv.d) * V) + int64_t(k) * V;
#pragma unroll
      for (int e = 0; e < V; e += kS) {
        M part[kS];
        load_pack<kS>(src + e, part);
#pragma unroll
        for (int j = 0; j < kS; ++j) v[e + j] = part[j];
      }
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = M(0);
    }
    blend_store_pack<V>(dx + int64_t(i) * V, v, alpha, beta);
  }
}

template <typename T>
void gather_planes_strided(cudaStream_t st, const ConvProblem& p, const T* x, T* out) {
  const TensorDesc& xd = p.xd;
  const uint32_t total = uint32_t(int64_t(xd.n) * xd.c * p.yd.h * p.yd.w);
  if (total == 0) return;
  gather_strided_kernel<T><<<grid_for(total), kBlock, 0, st>>>(
      total, FastDiv(uint32_t(p.yd.w)), FastDiv(uint32_t(p.yd.h)), FastDiv(uint32_t(xd.c)), xd.h,
      xd.w, p.cd.stride_h, p.cd.stride_w, xd.stride_n, x, out);
  check_launch("gather_strided_kernel");
}

template <typename S, typename T, int V>
void launch_spread_planes(cudaStream_t st, const ConvProblem& p, const S* sub, T* dx, Blend b) {
  const TensorDesc& xd = p.xd;
  const uint32_t packs = uint32_t(xd.count() / V);
  if (packs == 0) return;
  spread_strided_kernel<S, T, V><<<grid_for(packs), kBlock, 0, st>>>(
      packs, FastDiv(uint32_t(xd.w / V)), FastDiv(uint32_t(xd.h)), FastDiv(uint32_t(xd.c)), p.yd.h,
      p.yd.w, FastDiv(uint32_t(p.cd.stride_h)), FastDiv(uint32_t(p.cd.stride_w)), xd.stride_n, sub,
      dx, MathOf<T>(b.alpha), MathOf<T>(b.beta));
  check_launch("spread_strided_kernel");
}

// The widest pack (16 bytes, 8, or one value) that divides dx's rows and images and its address.
template <typename S, typename T>
void spread_planes_strided(cudaStream_t st, const ConvProblem& p, const S* sub, T* dx, Blend b) {
  constexpr int kWide = kVecWidth<T>;
  const auto fits = [&](int v) {
    return p.xd.w % v == 0 && p.xd.stride_n % v == 0 && aligned(dx, size_t(v) * sizeof(T));
  };
  if (fits(kWide)) return launch_spread_planes<S, T, kWide>(st, p, sub, dx, b);
  if constexpr (kWide >= 4)
    if (fits(kWide / 2)) return launch_spread_planes<S, T, kWide / 2>(st, p, sub, dx, b);
  launch_spread_planes<S, T, 1>(st, p, sub, dx, b);
}

template <typename T, int V>
void launch_gather_pixels(cudaStream_t st, const ConvProblem& p, const T* x, T* out) {
  const TensorDesc& xd = p.xd;
  const uint32_t packs = uint32_t(int64_t(xd.n) * p.yd.h * p.yd.w * xd.c / V);
  gather_pixels_kernel<T, V><<<grid_for(packs), kBlock, 0, st>>>(
      packs, FastDiv(uint32_t(xd.c / V)), FastDiv(uint32_t(p.yd.w)), FastDiv(uint32_t(p.yd.h)),
      xd.h, xd.w, p.cd.stride_h, p.cd.stride_w, x, out);
  check_launch("gather_pixels_kernel");
}

template <typename S, typename T, int V>
void launch_spread_pixels(cudaStream_t st, const ConvProblem& p, const S* sub, T* dx, Blend b) {
  const TensorDesc& xd = p.xd;
  const uint32_t packs = uint32_t(xd.count() / V);
  spread_pixels_kernel<S, T, V><<<grid_for(packs), kBlock, 0, st>>>(
      packs, FastDiv(uint32_t(xd.c / V)), FastDiv(uint32_t(xd.w)), FastDiv(uint32_t(xd.h)),
      FastDiv(uint32_t(p.cd.stride_h)), FastDiv(uint32_t(p.cd.stride_w)), p.yd.h, p.yd.w, sub, dx,
      MathOf<T>(b.alpha), MathOf<T>(b.beta));
  check_launch("spread_pixels_kernel");
}

// x (p.xd: packed NCHW images or packed NHWC) subsampled into out, packed in the same layout.
template <typename T>
void gather_strided(cudaStream_t st, const ConvProblem& p, const T* x, T* out) {
  if (p.xd.count() == 0 || p.yd.count() == 0) return;
  if (!p.xd.is_packed_nhwc()) return gather_planes_strided(st, p, x, out);
  with_width<kVecWidth<T>>(widest_pack_dividing<T>(p.xd.c, {x, out}), [&](auto v) {
    launch_gather_pixels<T, decltype(v)::value>(st, p, x, out);
  });
}

// dx = alpha * spread(sub) + beta * dx, sub the subsampled gradient in dx's layout (f32 where dx
// is half-size: the gradient is rounded once, after the blend).
template <typename S, typename T>
void spread_strided(cudaStream_t st, const ConvProblem& p, const S* sub, T* dx, Blend b) {
  if (p.xd.count() == 0) return;
  if (!p.xd.is_packed_nhwc()) return spread_planes_strided(st, p, sub, dx, b);
  with_width<kVecWidth<T>>(widest_pack_dividing<T>(p.xd.c, {dx}), [&](auto v) {
    launch_spread_pixels<S, T, decltype(v)::value>(st, p, sub, dx, b);
  });
}

}  // namespace crema::prim::cuda
