// Pooling on CUDA, max and average, with the window rules of pool_ops.h (the same as the CPU).
// Forward: one thread per output (a warp per output for large windows such as global pooling).
// Backward without atomics, so it is deterministic: each input element gathers, in the CPU's
// (p, q) order, from the output windows covering it. Max backward first stores each window's
// argmax (the first maximum in row-major order, found by comparing x with y as the CPU does) as
// an int per output in the workspace, so the gather only compares indices.
// Traffic: forward reads x once (windows overlap in cache) and writes y; max backward reads x,
// y, writes the argmax (4 bytes per output), then reads argmax and dy per covering window and
// writes dx; average backward reads dy per covering window and writes dx.
#include <climits>
#include <cstdint>
#include <limits>

#include "primitives/cuda_util.cuh"
#include "primitives/pool.h"
#include "primitives/pool_ops.h"

namespace crema::prim::cuda {
namespace {

using pool_ops::Span;
using pool_ops::span_of;

// Geometry passed by value to every kernel.
struct Geo {
  int C, H, W, P, Q;
  int kh, kw, ph, pw, sh, sw;
  PoolMode mode;
  int64_t xn, xc, xh, xw;  // x (and dx) element strides
  int64_t yn, yc, yh, yw;  // y (and dy) element strides
};

// Windows of at least this many cells get a warp per output instead of a thread.
constexpr int kWarpWindow = 64;

// Splits a flat output index (n, c, p, q) into the plane and the in-plane position.
template <typename I>
__device__ __forceinline__ void split(I idx, int Q, int P, I* plane, int* p, int* q) {
  const I pq = I(P) * Q;
  *plane = idx / pq;
  const int e = int(idx - *plane * pq);
  *p = e / Q;
  *q = e - *p * Q;
}

template <typename I>
__device__ __forceinline__ int64_t plane_off(I plane, int C, int64_t sn, int64_t sc) {
  const I n = plane / C;
  return int64_t(n) * sn + int64_t(plane - n * C) * sc;
}

template <typename T, typename I>
__global__ void fwd_kernel(Geo g, I total, const T* __restrict__ x, T* y, T alpha, T beta) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int p, q;
    split(idx, g.Q, g.P, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T* xp = x + plane_off(plane, g.C, g.xn, g.xc);
    T v = T(0);  // an empty window (past the input) pools to 0, as on the CPU
    if (a.lo < a.hi && b.lo < b.hi) {
      if (g.mode == PoolMode::kMax) {
        T m = std::numeric_limits<T>::lowest();
        for (int i = a.lo; i < a.hi; ++i)
          for (int j = b.lo; j < b.hi; ++j) {
            const T u = xp[i * g.xh + j * g.xw];
            m = u > m ? u : m;
          }
        v = m;
      } else {
        T s = T(0);
        for (int i = a.lo; i < a.hi; ++i)
          for (int j = b.lo; j < b.hi; ++j) s += xp[i * g.xh + j * g.xw];
        v = s / T(pool_ops::divisor_of(g.mode, a, b));
      }
    }
    blend_store(y + plane_off(plane, g.C, g.yn, g.yc) + p * g.yh + q * g.yw, v, alpha, beta);
  }
}

// One warp per output for large windows: the lanes stride over the window's cells in row-major
// order and combine with shuffles. Max is exact in any order; the average's sum is reassociated.
// With store_argmax, writes the first row-major cell equal to y instead (max backward).
template <typename T, bool kArgmax>
__global__ void warp_kernel(Geo g, int64_t total, const T* __restrict__ x, T* y, T alpha, T beta,
                            const T* __restrict__ y_in, int* argmax) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t idx = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; idx < total;
       idx += warps) {
    int64_t plane;
    int p, q;
    split(idx, g.Q, g.P, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T* xp = x + plane_off(plane, g.C, g.xn, g.xc);
    const int64_t yo = plane_off(plane, g.C, g.yn, g.yc) + p * g.yh + q * g.yw;
    const int ww = b.hi - b.lo;
    const int cells = (a.hi - a.lo) * (ww > 0 ? ww : 0);
    if (kArgmax) {
      const T m = y_in[yo];
      int first = INT_MAX;
      for (int e = lane; e < cells; e += 32) {
        const int i = a.lo + e / ww, j = b.lo + e % ww;
        if (xp[i * g.xh + j * g.xw] == m) {
          first = i * g.W + j;  // cells ascend per lane, so the lane's first hit is its smallest
          break;
        }
      }
      for (int o = 16; o > 0; o >>= 1) first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
      if (lane == 0) argmax[idx] = first == INT_MAX ? -1 : first;
    } else {
      const bool is_max = g.mode == PoolMode::kMax;
      T v = is_max ? std::numeric_limits<T>::lowest() : T(0);
      for (int e = lane; e < cells; e += 32) {
        const T u = xp[(a.lo + e / ww) * g.xh + (b.lo + e % ww) * g.xw];
        v = is_max ? (u > v ? u : v) : v + u;
      }
      for (int o = 16; o > 0; o >>= 1) {
        const T u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? (u > v ? u : v) : v + u;
      }
      if (lane == 0) {
        if (cells == 0)
          v = T(0);
        else if (!is_max)
          v = v / T(pool_ops::divisor_of(g.mode, a, b));
        blend_store(y + yo, v, alpha, beta);
      }
    }
  }
}

// Max backward, step 1: the in-plane index (i * W + j) of each window's first maximum in
// row-major order, or -1 when no input equals y (an empty window, or NaN).
template <typename T, typename I>
__global__ void argmax_kernel(Geo g, I total, const T* __restrict__ x, const T* __restrict__ y,
                              int* argmax) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int p, q;
    split(idx, g.Q, g.P, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T* xp = x + plane_off(plane, g.C, g.xn, g.xc);
    const T m = y[plane_off(plane, g.C, g.yn, g.yc) + p * g.yh + q * g.yw];
    int at = -1;
    for (int i = a.lo; i < a.hi && at < 0; ++i)
      for (int j = b.lo; j < b.hi; ++j)
        if (xp[i * g.xh + j * g.xw] == m) {
          at = i * g.W + j;
          break;
        }
    argmax[idx] = at;
  }
}

// Step 2 (and the whole of average backward): each input element sums the gradients of the
// windows covering it, in increasing (p, q) order as the CPU accumulates them, starting from
// beta * dx. No two threads write the same element.
template <typename T, typename I>
__global__ void gather_kernel(Geo g, I total, const T* __restrict__ dy,
                              const int* __restrict__ argmax, T* dx, T alpha, T beta) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int i, j;
    split(idx, g.W, g.H, &plane, &i, &j);
    int p0, p1, q0, q1;
    pool_ops::covering(i, g.kh, g.ph, g.sh, g.P, &p0, &p1);
    pool_ops::covering(j, g.kw, g.pw, g.sw, g.Q, &q0, &q1);
    T* out = dx + plane_off(plane, g.C, g.xn, g.xc) + i * g.xh + j * g.xw;
    const T* gy = dy + plane_off(plane, g.C, g.yn, g.yc);
    T acc = beta == T(0) ? T(0) : beta * *out;
    if (g.mode == PoolMode::kMax) {
      const int* am = argmax + int64_t(plane) * g.P * g.Q;
      const int self = i * g.W + j;
      for (int p = p0; p < p1; ++p)
        for (int q = q0; q < q1; ++q)
          if (am[p * g.Q + q] == self) acc += alpha * gy[p * g.yh + q * g.yw];
    } else {
      for (int p = p0; p < p1; ++p) {
        const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
        for (int q = q0; q < q1; ++q) {
          const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
          acc += alpha * gy[p * g.yh + q * g.yw] / T(pool_ops::divisor_of(g.mode, a, b));
        }
      }
    }
    *out = acc;
  }
}

Geo geo_of(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  return Geo{xd.c,        xd.h,        xd.w,        yd.h,        yd.w,
             pd.kernel_h, pd.kernel_w, pd.pad_h,    pd.pad_w,    pd.stride_h,
             pd.stride_w, pd.mode,     xd.stride_n, xd.stride_c, xd.stride_h,
             xd.stride_w, yd.stride_n, yd.stride_c, yd.stride_h, yd.stride_w};
}

bool fits_int32(int64_t n) { return n < int64_t(std::numeric_limits<int32_t>::max()); }

unsigned warp_grid(int64_t outputs) { return grid_for(outputs * 32); }

template <typename T>
void fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const T* x, const TensorDesc& yd,
         T* y, Blend b) {
  const Geo g = geo_of(pd, xd, yd);
  const int64_t total = yd.count();
  const T alpha = T(b.alpha), beta = T(b.beta);
  cudaStream_t s = stream_of(h);
  if (int64_t(pd.kernel_h) * pd.kernel_w >= kWarpWindow)
    warp_kernel<T, false>
        <<<warp_grid(total), kBlock, 0, s>>>(g, total, x, y, alpha, beta, nullptr, nullptr);
  else if (fits_int32(total))
    fwd_kernel<T, int32_t><<<grid_for(total), kBlock, 0, s>>>(g, int32_t(total), x, y, alpha, beta);
  else
    fwd_kernel<T, int64_t><<<grid_for(total), kBlock, 0, s>>>(g, total, x, y, alpha, beta);
  check_launch("pool_fwd");
}

template <typename T>
void bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const T* y, const T* dy,
         const TensorDesc& xd, const T* x, T* dx, Blend b) {
  const Geo g = geo_of(pd, xd, yd);
  const int64_t outputs = yd.count(), inputs = xd.count();
  cudaStream_t s = stream_of(h);
  int* argmax = nullptr;
  if (pd.mode == PoolMode::kMax) {
    argmax = static_cast<int*>(h.workspace(size_t(outputs) * sizeof(int)));
    if (int64_t(pd.kernel_h) * pd.kernel_w >= kWarpWindow)
      warp_kernel<T, true>
          <<<warp_grid(outputs), kBlock, 0, s>>>(g, outputs, x, nullptr, T(0), T(0), y, argmax);
    else if (fits_int32(outputs))
      argmax_kernel<T, int32_t>
          <<<grid_for(outputs), kBlock, 0, s>>>(g, int32_t(outputs), x, y, argmax);
    else
      argmax_kernel<T, int64_t><<<grid_for(outputs), kBlock, 0, s>>>(g, outputs, x, y, argmax);
    check_launch("pool_bwd argmax");
  }
  const T alpha = T(b.alpha), beta = T(b.beta);
  if (fits_int32(inputs))
    gather_kernel<T, int32_t>
        <<<grid_for(inputs), kBlock, 0, s>>>(g, int32_t(inputs), dy, argmax, dx, alpha, beta);
  else
    gather_kernel<T, int64_t>
        <<<grid_for(inputs), kBlock, 0, s>>>(g, inputs, dy, argmax, dx, alpha, beta);
  check_launch("pool_bwd");
}

}  // namespace

void pool_fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
              const TensorDesc& yd, void* y, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    fwd(h, pd, xd, static_cast<const double*>(x), yd, static_cast<double*>(y), blend);
  else
    fwd(h, pd, xd, static_cast<const float*>(x), yd, static_cast<float*>(y), blend);
}

void pool_bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y, const void* dy,
              const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    bwd(h, pd, yd, static_cast<const double*>(y), static_cast<const double*>(dy), xd,
        static_cast<const double*>(x), static_cast<double*>(dx), blend);
  else
    bwd(h, pd, yd, static_cast<const float*>(y), static_cast<const float*>(dy), xd,
        static_cast<const float*>(x), static_cast<float*>(dx), blend);
}

}  // namespace crema::prim::cuda
