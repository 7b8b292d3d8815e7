// The direct row's forward for small ungrouped layers (conv_impl.h, direct_fwd_tiles): the input
// window of one image and the filters of KT output channels staged in shared memory, any stride,
// padding and dilation. LeNet's conv1 (1 input channel, 20 outputs, 5x5, 64 images) is 18.4 M
// multiply-adds and 3 MB of output: im2col + GEMM takes three kernels (the unfolded batch, the
// GEMM, the scatter of its side-by-side result into NCHW planes; 17.0 us in TF32 on an H200), the
// plain direct kernel one but with a thread per output element reloading its taps from global
// memory through 64-bit index arithmetic (31 us). Here one kernel reads each input once from L2
// and writes y once, bias and ReLU fused: 10.1 us (cuDNN 9.1).
//
// Block (tile kt, image n): output channels kt*KT .. kt*KT + KT-1. Its window is the input rows
// and columns its outputs read, zero where they fall in the padding, so the tap loop has no
// bounds checks. A thread owns PT output pixels (pixel j, j + threads, ...: the stores of a warp
// coalesce) and the KT channels of each: per tap one shared load of x for each pixel and one
// (broadcast) of w for each channel feed KT x PT multiply-adds. Taps are added in the CPU direct
// loops' order (c, r, s) with the same separate roundings, so the result equals the plain direct
// kernel's bit for bit (a padding tap adds a product of +-0, which leaves any sum unchanged).
#include <algorithm>

#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_impl.h"

namespace crema::prim::cuda {
namespace {

constexpr int kKT = 4;  // output channels a thread adds to
constexpr int kPT = 4;  // output pixels a thread adds to
constexpr int kMaxThreads = 256;
constexpr size_t kSharedBytes = 48 * 1024;

struct FwdTileGeo {
  int c, h, w, k, p, q, r, s;
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  int wh, ww;  // the window: rows and columns the outputs read, padding included
  int64_t xsn, xsc, xsh, xsw, ysn, ysc, ysh, ysw;
};

FwdTileGeo geo_of(const ConvProblem& p) {
  const ConvDesc& cd = p.cd;
  FwdTileGeo g;
  g.c = p.xd.c, g.h = p.xd.h, g.w = p.xd.w, g.k = p.wd.k, g.p = p.yd.h, g.q = p.yd.w;
  g.r = p.wd.r, g.s = p.wd.s;
  g.pad_h = cd.pad_h, g.pad_w = cd.pad_w, g.stride_h = cd.stride_h, g.stride_w = cd.stride_w;
  g.dil_h = cd.dilation_h, g.dil_w = cd.dilation_w;
  g.wh = (g.p - 1) * g.stride_h + (g.r - 1) * g.dil_h + 1;
  g.ww = (g.q - 1) * g.stride_w + (g.s - 1) * g.dil_w + 1;
  g.xsn = p.xd.stride_n, g.xsc = p.xd.stride_c, g.xsh = p.xd.stride_h, g.xsw = p.xd.stride_w;
  g.ysn = p.yd.stride_n, g.ysc = p.yd.stride_c, g.ysh = p.yd.stride_h, g.ysw = p.yd.stride_w;
  return g;
}

// Shared elements a block stages: the window of every input channel and KT filters.
int64_t staged_elems(const FwdTileGeo& g) {
  return int64_t(g.c) * g.wh * g.ww + int64_t(kKT) * g.c * g.r * g.s;
}

template <typename T>
__global__ void __launch_bounds__(kMaxThreads)
    fwd_tiles_kernel(FwdTileGeo g, const T* __restrict__ x, const T* __restrict__ w, T* y, T alpha,
                     T beta, const T* __restrict__ bias, bool relu) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int plane = g.wh * g.ww, crs = g.c * g.r * g.s;
  T* xs = reinterpret_cast<T*>(smem);  // [c][wh][ww]
  T* ws = xs + int64_t(g.c) * plane;   // [KT][c][r][s]
  const int k0 = blockIdx.x * kKT, kn = min(kKT, g.k - k0);
  const int n = blockIdx.y;
  const T* xn = x + n * g.xsn;
  for (int i = threadIdx.x; i < g.c * plane; i += blockDim.x) {
    const int c = i / plane, rest = i - c * plane;
    const int ih = rest / g.ww - g.pad_h, iw = rest % g.ww - g.pad_w;
    xs[i] =
        ih >= 0 && ih < g.h && iw >= 0 && iw < g.w ? xn[c * g.xsc + ih * g.xsh + iw * g.xsw] : T(0);
  }
  for (int i = threadIdx.x; i < kn * crs; i += blockDim.x) ws[i] = w[int64_t(k0) * crs + i];
  __syncthreads();
  const int pq = g.p * g.q;
  for (int base = threadIdx.x; base < pq; base += blockDim.x * kPT) {
    int at[kPT];  // each pixel's first tap in the window (0 for a pixel past the plane)
#pragma unroll
    for (int i = 0; i < kPT; ++i) {
      const int j = base + i * blockDim.x;
      at[i] = j < pq ? j / g.q * g.stride_h * g.ww + j % g.q * g.stride_w : 0;
    }
    T acc[kKT][kPT];
#pragma unroll
    for (int kk = 0; kk < kKT; ++kk)
#pragma unroll
      for (int i = 0; i < kPT; ++i) acc[kk][i] = T(0);
    int tap = 0;
    for (int c = 0; c < g.c; ++c)
      for (int r = 0; r < g.r; ++r) {
        const T* row = xs + c * plane + r * g.dil_h * g.ww;
        for (int s = 0; s < g.s; ++s, ++tap) {
          T xv[kPT];
#pragma unroll
          for (int i = 0; i < kPT; ++i) xv[i] = row[at[i] + s * g.dil_w];
#pragma unroll
          for (int kk = 0; kk < kKT; ++kk) {
            const T wv = ws[kk * crs + tap];
#pragma unroll
            for (int i = 0; i < kPT; ++i) acc[kk][i] = add_rn(acc[kk][i], mul_rn(wv, xv[i]));
          }
        }
      }
#pragma unroll
    for (int i = 0; i < kPT; ++i) {
      const int j = base + i * blockDim.x;
      if (j >= pq) continue;
      T* out = y + n * g.ysn + int64_t(j / g.q) * g.ysh + int64_t(j % g.q) * g.ysw;
#pragma unroll
      for (int kk = 0; kk < kKT; ++kk) {
        if (kk >= kn) continue;
        T* o = out + int64_t(k0 + kk) * g.ysc;
        T v = blend_rn(acc[kk][i], alpha, beta, o);
        if (bias) v = add_rn(v, bias[k0 + kk]);
        if (relu) v = v > T(0) ? v : T(0);
        *o = v;
      }
    }
  }
}

}  // namespace

bool direct_fwd_tiles(const ConvProblem& p) {
  return p.cd.groups == 1 && p.xd.n <= 65535 &&
         staged_elems(geo_of(p)) * int64_t(dtype_size(p.xd.dtype)) <= int64_t(kSharedBytes);
}

template <typename T>
void direct_fwd_tiles_run(Handle& h, const ConvProblem& p, const T* x, const T* w, T* y,
                          Blend blend, const T* bias, bool relu) {
  const FwdTileGeo g = geo_of(p);
  const int pq = g.p * g.q;
  const int threads = std::min(kMaxThreads, ((pq + kPT - 1) / kPT + 31) / 32 * 32);
  const dim3 grid(unsigned((g.k + kKT - 1) / kKT), unsigned(p.xd.n));
  fwd_tiles_kernel<T>
      <<<grid, unsigned(threads), size_t(staged_elems(g)) * sizeof(T), stream_of(h)>>>(
          g, x, w, y, T(blend.alpha), T(blend.beta), bias, relu);
  check_launch("fwd_tiles_kernel");
}

template void direct_fwd_tiles_run<float>(Handle&, const ConvProblem&, const float*, const float*,
                                          float*, Blend, const float*, bool);
template void direct_fwd_tiles_run<double>(Handle&, const ConvProblem&, const double*,
                                           const double*, double*, Blend, const double*, bool);

}  // namespace crema::prim::cuda
