// Max backward of 2 x 2 windows of stride 2 and no padding that tile their planes (H = 2P and
// W = 2Q: LeNet's pools, VGG's). The windows are disjoint and cover every cell once, so the pass
// is element-wise: a thread takes V adjacent windows of a window row, loads their two input rows
// as 2V-cell vectors and their V dy as one, finds each window's first maximum from x (y is not
// read), and stores both rows of dx as 2V-cell vectors. The sweep (pool_sweep_cuda.cu), which
// these windows took before, reads y besides, and loads and stores a column block's cells one at
// a time, two columns apart: lenet:pool1's backward ran 0.0080 ms there, 0.0056 here (66-78% ->
// 97-102% of a copy of its bytes; docs/benchmarks.md).
// Results equal the CPU's bit for bit: each cell is beta * dx, plus alpha * dy where it is its
// window's first maximum in row-major order (the first cell equal to y, which the CPU looks for).
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/cuda_util.cuh"
#include "primitives/fast_div.h"
#include "primitives/pool_sweep.cuh"

namespace crema::prim::cuda {
namespace {

struct K2Geo {
  int C, P, QV;  // QV: groups of V windows per window row
  int64_t xn, xc, yn, yc;
  int xh, yh;     // row strides; a plane's rows span less than 2^31 elements
  uint32_t work;  // planes * P * QV, under 2^31
  FastDiv by_qv, by_p, by_c;
};

// beta * dx of 2V cells, or 0 without reading dx when beta is 0.
template <typename T, int V>
__device__ __forceinline__ Cells<T, 2 * V> primed(const T* dx, T beta) {
  if (beta == T(0)) return splat<T, 2 * V>(T(0));
  Cells<T, 2 * V> v = *reinterpret_cast<const Cells<T, 2 * V>*>(dx);
#pragma unroll
  for (int e = 0; e < 2 * V; ++e) v.v[e] = beta * v.v[e];
  return v;
}

template <typename T, int V>
__global__ void max_bwd_k2s2_kernel(K2Geo g, const T* __restrict__ x, const T* __restrict__ dy,
                                    T* dx, T alpha, T beta) {
  using Row = Cells<T, 2 * V>;
  CREMA_CUDA_LOOP(i, g.work) {
    const uint32_t t = uint32_t(i), pr = g.by_qv.div(t), plane = g.by_p.div(pr),
                   n = g.by_c.div(plane);
    const int qv = int(t - pr * g.QV), p = int(pr - plane * g.P), c = int(plane - n * g.C);
    const int64_t xo = n * g.xn + c * g.xc + int64_t(2 * p) * g.xh + 2 * V * qv;
    const Row top = *reinterpret_cast<const Row*>(x + xo);
    const Row bottom = *reinterpret_cast<const Row*>(x + xo + g.xh);
    const Cells<T, V> d =
        *reinterpret_cast<const Cells<T, V>*>(dy + n * g.yn + c * g.yc + p * g.yh + V * qv);
    Row out[2] = {primed<T, V>(dx + xo, beta), primed<T, V>(dx + xo + g.xh, beta)};
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const T cell[4] = {top.v[2 * u], top.v[2 * u + 1], bottom.v[2 * u], bottom.v[2 * u + 1]};
      T m = std::numeric_limits<T>::lowest();
      int at = -1;
#pragma unroll
      for (int k = 0; k < 4; ++k) scan_first_max(cell[k], k, m, at);
        // Static indices keep out in registers.
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (at == k) out[k / 2].v[2 * u + k % 2] += alpha * d.v[u];
    }
    *reinterpret_cast<Row*>(dx + xo) = out[0];
    *reinterpret_cast<Row*>(dx + xo + g.xh) = out[1];
  }
}

// Whether V windows per thread fit: rows of contiguous cells, every row of x and dx starting on a
// 2V-cell boundary and every row of dy on a V-cell one, in the descriptors and at the pointers.
template <typename T, int V>
bool fits(const TensorDesc& xd, const TensorDesc& yd, const void* x, const void* dx,
          const void* dy) {
  bool ok = xd.stride_w == 1 && yd.stride_w == 1 && yd.w % V == 0 &&
            reinterpret_cast<uintptr_t>(x) % (2 * V * sizeof(T)) == 0 &&
            reinterpret_cast<uintptr_t>(dx) % (2 * V * sizeof(T)) == 0 &&
            reinterpret_cast<uintptr_t>(dy) % (V * sizeof(T)) == 0;
  for (int64_t s : {xd.stride_h, xd.stride_c, xd.stride_n}) ok = ok && s % (2 * V) == 0;
  for (int64_t s : {yd.stride_h, yd.stride_c, yd.stride_n}) ok = ok && s % V == 0;
  return ok && int64_t(yd.n) * yd.c * yd.h * (yd.w / V) < (int64_t(1) << 31);
}

}  // namespace

template <typename T>
bool pool_max_bwd_k2s2(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                       const TensorDesc& xd, const T* x, T* dx, T alpha, T beta) {
  if (pd.mode != PoolMode::kMax || pd.kernel_h != 2 || pd.kernel_w != 2 || pd.stride_h != 2 ||
      pd.stride_w != 2 || pd.pad_h != 0 || pd.pad_w != 0 || xd.h != 2 * yd.h || xd.w != 2 * yd.w ||
      yd.h < 1 || yd.w < 1 || !rows_fit_int(xd, yd))
    return false;
  auto launch = [&](auto v) {
    constexpr int V = decltype(v)::value;
    const int64_t work = int64_t(yd.n) * yd.c * yd.h * (yd.w / V);
    K2Geo g{yd.c,        yd.h,        yd.w / V,         xd.stride_n,      xd.stride_c,
            yd.stride_n, yd.stride_c, int(xd.stride_h), int(yd.stride_h), uint32_t(work)};
    g.by_qv = FastDiv(uint32_t(g.QV));
    g.by_p = FastDiv(uint32_t(g.P));
    g.by_c = FastDiv(uint32_t(g.C));
    max_bwd_k2s2_kernel<T, V><<<grid_for(work), kBlock, 0, s>>>(g, x, dy, dx, alpha, beta);
    return true;
  };
  // Two windows per thread (16-byte rows of f32) where they fit, else one.
  if (fits<T, 2>(xd, yd, x, dx, dy)) return launch(std::integral_constant<int, 2>{});
  if (fits<T, 1>(xd, yd, x, dx, dy)) return launch(std::integral_constant<int, 1>{});
  return false;
}

#define CREMA_POOL_K2S2(T)                                                                       \
  template bool pool_max_bwd_k2s2<T>(cudaStream_t, const PoolDesc&, const TensorDesc&, const T*, \
                                     const TensorDesc&, const T*, T*, T, T);
CREMA_POOL_K2S2(float)
CREMA_POOL_K2S2(double)
#undef CREMA_POOL_K2S2

}  // namespace crema::prim::cuda
