// The CUDA `winograd` row of the convolution table: F(4x4, 3x3) (conv_winograd.h) in three
// steps per chunk of images and group: a transform kernel writes the 36 transformed positions of
// each patch (V) or gradient tile, cuBLAS multiplies the 36 pairs in one strided-batched GEMM in
// strict precision (whatever the math mode: the transforms already cost accuracy), and a second
// kernel turns the products into output tiles (blend, bias, ReLU) or filter gradients. Threads
// walk tiles innermost, so each of the 36 planes of V and M is written and read in runs.
#include <algorithm>

#include "primitives/common/dtype_visit.h"
#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_winograd.h"

namespace crema::prim::cuda {
namespace {

namespace wg = winograd;

// The transformed tiles of `planes` planes of b images (batch stride `image`), out[e][plane][col]
// with col = image * tiles + tile: V of the input's h x w planes, or with kGrad D of the 4x4
// tiles of the gradient's p x q planes.
template <bool kGrad, typename T>
__global__ void tiles_kernel(wg::Geo g, int planes, int b, int64_t image, const T* __restrict__ in,
                             T* __restrict__ out) {
  const int64_t tiles = g.tiles(), cols = tiles * b;
  const int64_t plane_size = kGrad ? int64_t(g.p) * g.q : int64_t(g.h) * g.w;
  CREMA_CUDA_LOOP(i, int64_t(planes) * cols) {
    const int64_t c = i / cols, col = i % cols, img = col / tiles, t = col % tiles;
    const T* plane = in + img * image + c * plane_size;
    const int th = int(t / g.tiles_w), tw = int(t % g.tiles_w);
    T tile[wg::kPoints];
    if constexpr (kGrad)
      wg::grad_tile(g, plane, th, tw, tile);
    else
      wg::input_tile(g, plane, th, tw, tile);
#pragma unroll
    for (int e = 0; e < wg::kPoints; ++e) out[(e * int64_t(planes) + c) * cols + col] = tile[e];
  }
}

// U[gi][e][o][c] = G w G^T of the filter from input c to output o: forward W[gi*co + o][c],
// backward data W[gi*ci + c][o] turned by 180 degrees (cg: the filter's channels per group).
template <typename T>
__global__ void filter_kernel(int groups, int co, int ci, int cg, bool data_grad,
                              const T* __restrict__ w, T* __restrict__ u) {
  const int64_t per_group = int64_t(co) * ci;
  CREMA_CUDA_LOOP(i, groups * per_group) {
    const int64_t gi = i / per_group, oc = i % per_group, o = oc / ci, c = oc % ci;
    const int64_t k = data_grad ? gi * ci + c : gi * co + o, ch = data_grad ? o : c;
    T tile[wg::kPoints];
    wg::filter_tile(w + (k * cg + ch) * 9, data_grad, tile);
#pragma unroll
    for (int e = 0; e < wg::kPoints; ++e) u[(gi * wg::kPoints + e) * per_group + oc] = tile[e];
  }
}

// out = alpha * (A^T M A) + beta * out, + bias, ReLU: the co output planes [o0, o0 + co) of b
// images from M[e][o][col].
template <typename T>
__global__ void output_kernel(wg::Geo g, int co, int o0, int b, int64_t out_image,
                              const T* __restrict__ m, T* out, T alpha, T beta,
                              const T* __restrict__ bias, bool relu) {
  const int64_t tiles = g.tiles(), cols = tiles * b;
  CREMA_CUDA_LOOP(i, int64_t(co) * cols) {
    const int64_t o = i / cols, col = i % cols, img = col / tiles, t = col % tiles;
    T prod[wg::kPoints], tile[wg::kTile * wg::kTile];
#pragma unroll
    for (int e = 0; e < wg::kPoints; ++e) prod[e] = m[(e * int64_t(co) + o) * cols + col];
    wg::output_tile(prod, tile);
    const int y0 = int(t / g.tiles_w) * wg::kTile, x0 = int(t % g.tiles_w) * wg::kTile;
    T* plane = out + img * out_image + (o0 + o) * int64_t(g.p) * g.q;
    const T add = bias ? bias[o0 + o] : T(0);
    for (int r = 0; r < wg::kTile && y0 + r < g.p; ++r)
      for (int q = 0; q < wg::kTile && x0 + q < g.q; ++q) {
        T& y = plane[int64_t(y0 + r) * g.q + x0 + q];
        T v = alpha * tile[r * wg::kTile + q];
        if (beta != T(0)) v += beta * y;
        if (bias) v += add;
        y = relu && !(v > T(0)) ? T(0) : v;
      }
  }
}

// dw = alpha * (G^T M G) + beta * dw for every filter (k, c) of every group, M[gi][e][k][c].
template <typename T>
__global__ void filter_grad_kernel(int64_t filters, int64_t per_group, const T* __restrict__ m,
                                   T* dw, T alpha, T beta) {
  CREMA_CUDA_LOOP(i, filters) {
    const int64_t gi = i / per_group, kc = i % per_group;
    T sums[wg::kPoints], g[9];
#pragma unroll
    for (int e = 0; e < wg::kPoints; ++e) sums[e] = m[(gi * wg::kPoints + e) * per_group + kc];
    wg::filter_grad_tile(sums, g);
#pragma unroll
    for (int j = 0; j < 9; ++j)
      dw[i * 9 + j] = beta == T(0) ? alpha * g[j] : alpha * g[j] + beta * dw[i * 9 + j];
  }
}

template <typename T>
class WinogradCuda {
 public:
  WinogradCuda(Handle& h, const ConvProblem& p) : h_(h), p_(p), st_(stream_of(h)) {}

  // Forward (x into y) and backward data (dy into dx): U, then per chunk and group V, the 36
  // GEMMs M[e] = U[e] V[e], and the output tiles.
  void forward_like(const wg::Pass& s, bool data_grad, const T* in, const T* w, T* out, Blend blend,
                    const T* bias, bool relu) {
    const wg::Plan pl = wg::plan(s, sizeof(T), h_.workspace_budget());
    T* u = static_cast<T*>(h_.workspace(sizeof(T) * size_t(pl.total())));
    T* v = u + pl.filter;
    T* m = v + pl.inputs;
    const int ci = s.ci, co = s.co;
    const int64_t group_u = int64_t(wg::kPoints) * co * ci;
    filter_kernel<<<grid_for(s.groups * int64_t(co) * ci), kBlock, 0, st_>>>(
        s.groups, co, ci, p_.wd.c, data_grad, w, u);
    check_launch("winograd filter_kernel");
    for (int n0 = 0; n0 < s.n; n0 += pl.chunk) {
      const int b = std::min(pl.chunk, s.n - n0);
      const int64_t cols = s.g.tiles() * b;
      for (int gi = 0; gi < s.groups; ++gi) {
        const T* in_g = in + n0 * s.in_image + int64_t(gi) * ci * s.g.h * s.g.w;
        tiles_kernel<false>
            <<<grid_for(ci * cols), kBlock, 0, st_>>>(s.g, ci, b, s.in_image, in_g, v);
        check_launch("winograd tiles_kernel");
        gemm_rm<T>(h_, MathMode::kFP32, co, int(cols), ci, T(1),
                   {u + gi * group_u, ci, int64_t(co) * ci}, {v, int(cols), ci * cols}, T(0), m,
                   int(cols), co * cols, wg::kPoints);
        output_kernel<<<grid_for(co * cols), kBlock, 0, st_>>>(
            s.g, co, gi * co, b, s.out_image, m, out + n0 * s.out_image, T(blend.alpha),
            T(blend.beta), bias, relu);
        check_launch("winograd output_kernel");
      }
    }
  }

  // dW = G^T [sum of (A dy A^T) . (B^T d B)] G: per chunk and group the 36 GEMMs M[e] += D[e]
  // V[e]^T, then the filter gradients.
  void bwd_filter(const T* x, const T* dy, T* dw, Blend blend) {
    const wg::Pass s = wg::bwd_filter_pass(p_);
    const wg::Plan pl = wg::plan(s, sizeof(T), h_.workspace_budget());
    T* sums = static_cast<T*>(h_.workspace(sizeof(T) * size_t(pl.total())));
    T* v = sums + pl.filter;
    T* d = v + pl.inputs;
    const int cg = s.ci, kg = s.co;
    const int64_t per_group = int64_t(kg) * cg;
    for (int n0 = 0; n0 < s.n; n0 += pl.chunk) {
      const int b = std::min(pl.chunk, s.n - n0);
      const int64_t cols = s.g.tiles() * b;
      for (int gi = 0; gi < s.groups; ++gi) {
        const T* x_g = x + n0 * s.in_image + int64_t(gi) * cg * s.g.h * s.g.w;
        const T* dy_g = dy + n0 * s.out_image + int64_t(gi) * kg * s.g.p * s.g.q;
        tiles_kernel<false>
            <<<grid_for(cg * cols), kBlock, 0, st_>>>(s.g, cg, b, s.in_image, x_g, v);
        check_launch("winograd tiles_kernel");
        tiles_kernel<true>
            <<<grid_for(kg * cols), kBlock, 0, st_>>>(s.g, kg, b, s.out_image, dy_g, d);
        check_launch("winograd tiles_kernel");
        gemm_rm<T>(h_, MathMode::kFP32, kg, cg, int(cols), T(1), {d, int(cols), kg * cols},
                   {v, int(cols), cg * cols, true}, n0 == 0 ? T(0) : T(1),
                   sums + gi * wg::kPoints * per_group, cg, per_group, wg::kPoints);
      }
    }
    const int64_t filters = s.groups * per_group;
    filter_grad_kernel<<<grid_for(filters), kBlock, 0, st_>>>(filters, per_group, sums, dw,
                                                              T(blend.alpha), T(blend.beta));
    check_launch("winograd filter_grad_kernel");
  }

 private:
  Handle& h_;
  const ConvProblem& p_;
  cudaStream_t st_;
};

void fwd(Handle& h, const ConvProblem& p, const void* x, const void* w, void* y, Blend blend,
         const ConvEpilogue& ep) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    WinogradCuda<T>(h, p).forward_like(wg::forward_pass(p), false, static_cast<const T*>(x),
                                       static_cast<const T*>(w), static_cast<T*>(y), blend,
                                       static_cast<const T*>(ep.bias), ep.relu);
  });
}

void bwd_data(Handle& h, const ConvProblem& p, const void* w, const void* dy, void* dx,
              Blend blend) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_data", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    WinogradCuda<T>(h, p).forward_like(wg::bwd_data_pass(p), true, static_cast<const T*>(dy),
                                       static_cast<const T*>(w), static_cast<T*>(dx), blend,
                                       nullptr, false);
  });
}

void bwd_filter(Handle& h, const ConvProblem& p, const void* x, const void* dy, void* dw,
                Blend blend) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_filter", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    WinogradCuda<T>(h, p).bwd_filter(static_cast<const T*>(x), static_cast<const T*>(dy),
                                     static_cast<T*>(dw), blend);
  });
}

size_t workspace(Handle& h, const ConvProblem& p) {
  return wg::workspace_bytes(p, h.workspace_budget());
}

}  // namespace

const ConvImpl kConvWinograd{
    ConvAlgo::kWinograd, Device::kCUDA, wg::unsupported, workspace, fwd, bwd_data, bwd_filter};

}  // namespace crema::prim::cuda
