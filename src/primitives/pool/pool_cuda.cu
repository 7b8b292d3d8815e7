// Pooling on CUDA, the table's last row ("window"): any window, with the window rules of pool_ops.h
// (the same as the CPU). The rows before it in pool.cpp's table take special shapes, each in its
// own file: global pooling (pool_global_cuda.cu), row vectors (pool_rows_cuda.cu), small planes
// staged in shared memory (pool_planes_cuda.cu), lane kernels for max 3/1 and 3/2 windows
// (pool_lanes_cuda.cu, pool_lanes_s2_cuda.cu) and column sweeps for square 2/2, 3/2 and 3/1 windows
// (pool_sweep_cuda.cu). Forward: one thread per output (a warp per output for large windows such as
// global pooling). Backward without atomics, so it is deterministic: each input element gathers, in
// the CPU's (p, q) order, from the output windows covering it. Max backward first stores each
// window's argmax (the first maximum in row-major order, found by comparing x with y as the CPU
// does) in the workspace, so the gather only compares indices (recomputing it per input instead
// measured slower: the warp waits for its slowest lane's tie scan). Placing an element takes five
// to seven divisions (flat index -> plane, row, column; plane -> image, channel; the covering
// windows); as ~20-instruction software divisions they made these memory-bound kernels
// instruction-bound, so tensors under 2^31 elements divide by FastDiv (fast_div.h) and walk windows
// with pointer increments, 64-bit products only per plane. Traffic: forward reads x (windows
// overlap in cache) and writes y; max backward reads x and y, writes the argmax (an int per output:
// the in-plane index; on packed NHWC tensors a byte: the place in the window), then reads argmax
// and dy per covering window and writes dx; average backward reads dy per covering window and
// writes dx. This row also takes bf16 and f16 data (computed in fp32), as does the sweep row; the
// other special-shape rows refuse it. On channels-last tensors the threads take a pixel's channels
// in turn (adjacent threads, adjacent values), on packed NHWC ones packs of up to 16 bytes of them
// (the *_pack kernels).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/common/batch_slices.h"
#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_pack.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_cuda.cuh"
#include "primitives/pool/pool_ops.h"

namespace crema::prim::cuda {
namespace {

using pool_ops::Span;
using pool_ops::span_of;

// Division for the 64-bit index path (tensors of 2^31 elements or more).
struct PlainDiv {
  int64_t d;
  PlainDiv() = default;
  explicit PlainDiv(int64_t divisor) : d(divisor) {}
  __device__ __forceinline__ int64_t div(int64_t n) const { return n / d; }
};

template <typename I>
using Div = std::conditional_t<std::is_same_v<I, uint32_t>, FastDiv, PlainDiv>;

// The sizes and windows every kernel's geometry starts with.
struct Window {
  int C, H, W, P, Q;
  int kh, kw, ph, pw, sh, sw;
  PoolMode mode;
};

Window window_of(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  return Window{xd.c,        xd.h,     xd.w,     yd.h,        yd.w,        pd.kernel_h,
                pd.kernel_w, pd.pad_h, pd.pad_w, pd.stride_h, pd.stride_w, pd.mode};
}

// Geometry passed by value to every kernel; I is the flat index type (uint32_t or int64_t).
template <typename I>
struct Geo : Window {
  int64_t xn, xc, xh, xw;  // x (and dx) element strides
  int64_t yn, yc, yh, yw;  // y (and dy) element strides
  Div<I> by_c, by_q, by_pq, by_w, by_hw;
  FastDiv by_sh, by_sw;  // the covering windows of an input (gather)
  bool channels_last;    // x and y hold a pixel's channels adjacent: threads take channels
};

// Windows of at least this many cells get a warp per output instead of a thread.
constexpr int kWarpWindow = 64;

// Splits a flat index over planes of rows x cols (by_plane: rows x cols cells) into the plane
// and the in-plane position: plane-major, or channels last pixel-major with the channel fastest,
// so that adjacent threads read and write adjacent values of channels-last tensors (plane-major,
// a warp's loads lie C values apart: ResNet-50's channels-last pool1 backward took 2.8 ms).
template <typename I, typename D>
__device__ __forceinline__ void split(I idx, const D& by_cols, const D& by_plane, const D& by_c,
                                      bool channels_last, I* plane, int* r, int* c) {
  if (channels_last) {
    const I pix = I(by_c.div(idx)), ch = idx - pix * I(by_c.d);
    const I n = I(by_plane.div(pix)), e = pix - n * I(by_plane.d);
    *r = int(by_cols.div(e));
    *c = int(e - I(*r) * I(by_cols.d));
    *plane = n * I(by_c.d) + ch;
    return;
  }
  *plane = I(by_plane.div(idx));
  const I e = idx - *plane * I(by_plane.d);
  *r = int(by_cols.div(e));
  *c = int(e - I(*r) * I(by_cols.d));
}

template <typename I, typename D>
__device__ __forceinline__ int64_t plane_off(I plane, const D& by_c, int64_t sn, int64_t sc) {
  const I n = I(by_c.div(plane));
  return int64_t(n) * sn + int64_t(plane - n * I(by_c.d)) * sc;
}

template <typename T, typename I, typename M = MathOf<T>>
__global__ void fwd_kernel(Geo<I> g, I total, const T* __restrict__ x, T* y, M alpha, M beta) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int p, q;
    split(idx, g.by_q, g.by_pq, g.by_c, g.channels_last, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T* row = x + plane_off(plane, g.by_c, g.xn, g.xc) + a.lo * g.xh + b.lo * g.xw;
    M v = M(0);  // an empty window (past the input) pools to 0, as on the CPU
    if (a.lo < a.hi && b.lo < b.hi) {
      const bool is_max = g.mode == PoolMode::kMax;
      M m = is_max ? std::numeric_limits<M>::lowest() : M(0);
      for (int i = a.lo; i < a.hi; ++i, row += g.xh) {
        const T* cell = row;
        for (int j = b.lo; j < b.hi; ++j, cell += g.xw) {
          const M u = load_as_float(*cell);
          m = is_max ? (u > m ? u : m) : m + u;
        }
      }
      v = is_max ? m : m / M(pool_ops::divisor_of(g.mode, a, b));
    }
    blend_store(y + plane_off(plane, g.by_c, g.yn, g.yc) + p * g.yh + q * g.yw, v, alpha, beta);
  }
}

// One warp per output for large windows: the lanes stride over the window's cells in row-major
// order and combine with shuffles. Max is exact in any order; the average's sum is reassociated.
// With kArgmax, writes the first row-major cell equal to y instead (max backward).
template <typename T, bool kArgmax, typename M = MathOf<T>>
__global__ void warp_kernel(Geo<int64_t> g, int64_t total, const T* __restrict__ x, T* y, M alpha,
                            M beta, const T* __restrict__ y_in, int* argmax) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t idx = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; idx < total;
       idx += warps) {
    int64_t plane;
    int p, q;
    split(idx, g.by_q, g.by_pq, g.by_c, g.channels_last, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T* xp = x + plane_off(plane, g.by_c, g.xn, g.xc);
    const int64_t yo = plane_off(plane, g.by_c, g.yn, g.yc) + p * g.yh + q * g.yw;
    const int ww = b.hi - b.lo;
    const int cells = (a.hi - a.lo) * (ww > 0 ? ww : 0);
    if (kArgmax) {
      const M m = load_as_float(y_in[yo]);
      int first = INT_MAX;
      for (int e = lane; e < cells; e += 32) {
        const int i = a.lo + e / ww, j = b.lo + e % ww;
        if (M(load_as_float(xp[i * g.xh + j * g.xw])) == m) {
          first = i * g.W + j;  // cells ascend per lane, so the lane's first hit is its smallest
          break;
        }
      }
      for (int o = 16; o > 0; o >>= 1) first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
      if (lane == 0) argmax[idx] = first == INT_MAX ? -1 : first;
    } else {
      const bool is_max = g.mode == PoolMode::kMax;
      M v = is_max ? std::numeric_limits<M>::lowest() : M(0);
      for (int e = lane; e < cells; e += 32) {
        const M u = load_as_float(xp[(a.lo + e / ww) * g.xh + (b.lo + e % ww) * g.xw]);
        v = is_max ? (u > v ? u : v) : v + u;
      }
      for (int o = 16; o > 0; o >>= 1) {
        const M u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? (u > v ? u : v) : v + u;
      }
      if (lane == 0) {
        if (cells == 0)
          v = M(0);
        else if (!is_max)
          v = v / M(pool_ops::divisor_of(g.mode, a, b));
        blend_store(y + yo, v, alpha, beta);
      }
    }
  }
}

// Max backward, step 1: the in-plane index (i * W + j) of each window's first maximum in
// row-major order, or -1 when no input equals y (an empty window, or NaN).
template <typename T, typename I, typename M = MathOf<T>>
__global__ void argmax_kernel(Geo<I> g, I total, const T* __restrict__ x, const T* __restrict__ y,
                              int* argmax) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int p, q;
    split(idx, g.by_q, g.by_pq, g.by_c, g.channels_last, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const M m = load_as_float(y[plane_off(plane, g.by_c, g.yn, g.yc) + p * g.yh + q * g.yw]);
    const T* row = x + plane_off(plane, g.by_c, g.xn, g.xc) + a.lo * g.xh + b.lo * g.xw;
    int at = -1;
    for (int i = a.lo; i < a.hi && at < 0; ++i, row += g.xh) {
      const T* cell = row;
      for (int j = b.lo; j < b.hi; ++j, cell += g.xw)
        if (M(load_as_float(*cell)) == m) {
          at = i * g.W + j;
          break;
        }
    }
    argmax[idx] = at;
  }
}

// The outputs whose windows cover input index i along one axis: [*lo, *hi), clipped to
// [0, out). Window o covers o * stride - pad + [0, kernel).
__device__ __forceinline__ void covering(int i, int kernel, int pad, const FastDiv& by_stride,
                                         int out, int* lo, int* hi) {
  const int first = i + pad - kernel + 1;  // the smallest window start that still covers i
  const int l = first <= 0 ? 0 : int(by_stride.div(uint32_t(first + int(by_stride.d) - 1)));
  const int u = int(by_stride.div(uint32_t(i + pad))) + 1;
  *lo = l;
  *hi = u < out ? u : out;
}

// Step 2 (and the whole of average backward): each input element sums the gradients of the
// windows covering it, in increasing (p, q) order as the CPU accumulates them, starting from
// beta * dx. No two threads write the same element.
template <typename T, typename I, typename M = MathOf<T>>
__global__ void gather_kernel(Geo<I> g, I total, const T* __restrict__ dy,
                              const int* __restrict__ argmax, T* dx, M alpha, M beta) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int i, j;
    split(idx, g.by_w, g.by_hw, g.by_c, g.channels_last, &plane, &i, &j);
    int p0, p1, q0, q1;
    covering(i, g.kh, g.ph, g.by_sh, g.P, &p0, &p1);
    covering(j, g.kw, g.pw, g.by_sw, g.Q, &q0, &q1);
    T* out = dx + plane_off(plane, g.by_c, g.xn, g.xc) + i * g.xh + j * g.xw;
    const T* gy = dy + plane_off(plane, g.by_c, g.yn, g.yc);
    M acc = beta == M(0) ? M(0) : beta * M(load_as_float(*out));
    if (g.mode == PoolMode::kMax) {
      // The argmax of window (p, q) at am[p * ap + q * aq]: in the outputs' thread order.
      const int* am;
      int64_t ap = g.Q, aq = 1;
      if (g.channels_last) {
        const I n = I(g.by_c.div(plane));
        am = argmax + int64_t(n) * g.P * g.Q * g.C + int64_t(plane - n * I(g.by_c.d));
        ap = int64_t(g.Q) * g.C;
        aq = g.C;
      } else {
        am = argmax + int64_t(plane) * g.P * g.Q;
      }
      const int self = i * g.W + j;
      const int np = p1 - p0, nq = q1 - q0;
      if (np <= 2 && nq <= 2) {
        // At most 2 x 2 windows (stride at least half the kernel; the square 2/2 and 3/2 ones
        // take the sweep instead, so here rectangular or other strides): all their loads are
        // issued before any is used. Loading dy only after its argmax compared equal chained two
        // dependent loads per window and left the kernel latency-bound.
        int at[4];
        M g4[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int p = p0 + (k >> 1), q = q0 + (k & 1);
          const bool covers = (k >> 1) < np && (k & 1) < nq;
          at[k] = covers ? am[p * ap + q * aq] : -1;  // -1 never equals self
          g4[k] = covers ? M(load_as_float(gy[p * g.yh + q * g.yw])) : M(0);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k)  // (p, q) row-major, the CPU's order
          if (at[k] == self) acc += alpha * g4[k];
      } else {
        for (int p = p0; p < p1; ++p)
          for (int q = q0; q < q1; ++q)
            if (am[p * ap + q * aq] == self)
              acc += alpha * M(load_as_float(gy[p * g.yh + q * g.yw]));
      }
    } else {
      for (int p = p0; p < p1; ++p) {
        const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
        for (int q = q0; q < q1; ++q) {
          const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
          acc += alpha * M(load_as_float(gy[p * g.yh + q * g.yw])) /
                 M(pool_ops::divisor_of(g.mode, a, b));
        }
      }
    }
    *out = store_from_float<T>(acc);
  }
}

// ---- Packed channels-last tensors in packs: a thread takes V adjacent channels of a pixel ------
// (V dividing C, every pointer aligned to V values, below 2^31 elements, windows under
// kWarpWindow cells), with the arithmetic of the kernels above per channel, so results are theirs
// bit for bit. Channel by channel, the index arithmetic (placing an element and its covering
// windows: eight divisions) was most of the work: ResNet-50's channels-last pool1 took 1.8 ms
// backward with a thread per value.
struct PackGeo : Window {
  FastDiv by_packs, by_q, by_p, by_w, by_h, by_sh, by_sw;  // by_packs: C / V packs a pixel
};

// Pack k's pixel (n, r, c) on planes of rows x cols (by_cols, by_rows) and its first channel.
template <int V>
__device__ __forceinline__ void place_pack(uint32_t k, const FastDiv& by_packs,
                                           const FastDiv& by_cols, const FastDiv& by_rows,
                                           uint32_t* n, int* r, int* c, int* c0) {
  const uint32_t pix = by_packs.div(k), t = by_cols.div(pix);
  *c0 = int(k - pix * by_packs.d) * V;
  *c = int(pix - t * by_cols.d);
  *n = by_rows.div(t);
  *r = int(t - *n * by_rows.d);
}

// Output pack k: its image, output pixel, first channel and window, and x's cell (i, j) of that
// pack.
struct OutPack {
  uint32_t n;
  int p, q, c0;
  Span a, b;
  template <typename T>
  __device__ const T* cell(const T* x, const PackGeo& g, int i, int j) const {
    return x + ((int64_t(n) * g.H + i) * g.W + j) * g.C + c0;
  }
};

template <int V>
__device__ __forceinline__ OutPack out_pack(const PackGeo& g, uint32_t k) {
  OutPack o;
  place_pack<V>(k, g.by_packs, g.by_q, g.by_p, &o.n, &o.p, &o.q, &o.c0);
  o.a = span_of(o.p, g.H, g.kh, g.ph, g.sh);
  o.b = span_of(o.q, g.W, g.kw, g.pw, g.sw);
  return o;
}

template <typename T, int V, typename M = MathOf<T>>
__global__ void fwd_pack_kernel(PackGeo g, uint32_t packs, const T* __restrict__ x, T* y, M alpha,
                                M beta) {
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < packs; k += blockDim.x * gridDim.x) {
    const OutPack o = out_pack<V>(g, k);
    const Span &a = o.a, &b = o.b;
    M v[V];
    const bool is_max = g.mode == PoolMode::kMax;
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = is_max ? std::numeric_limits<M>::lowest() : M(0);
    for (int i = a.lo; i < a.hi; ++i)
      for (int j = b.lo; j < b.hi; ++j) {
        M u[V];
        load_pack<V>(o.cell(x, g, i, j), u);
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] = is_max ? (u[e] > v[e] ? u[e] : v[e]) : v[e] + u[e];
      }
    const bool empty = !(a.lo < a.hi && b.lo < b.hi);
    const M div = M(pool_ops::divisor_of(g.mode, a, b));
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = empty ? M(0) : is_max ? v[e] : v[e] / div;
    blend_store_pack<V>(y + int64_t(k) * V, v, alpha, beta);
  }
}

// Cell (i, j)'s place in window (p, q), counted row-major from the window's corner (which may lie
// in the padding): below kh * kw, so under kWarpWindow.
__device__ __forceinline__ int cell_in_window(const Window& g, int p, int q, int i, int j) {
  return (i - p * g.sh + g.ph) * g.kw + (j - q * g.sw + g.pw);
}

// The pack path's argmax: per channel of the pack, the place in its window (cell_in_window) of
// argmax_kernel's first maximum, one byte (kNoCell where no input equals y), at argmax[V k + e].
// A byte instead of an int per output: VGG-16's channels-last pool1 took 196 MiB of workspace at
// batch 64 with ints, the most of any layer.
constexpr uint8_t kNoCell = 0xff;

template <typename T, int V, typename M = MathOf<T>>
__global__ void argmax_pack_kernel(PackGeo g, uint32_t packs, const T* __restrict__ x,
                                   const T* __restrict__ y, uint8_t* argmax) {
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < packs; k += blockDim.x * gridDim.x) {
    const OutPack o = out_pack<V>(g, k);
    M m[V];
    load_pack<V>(y + int64_t(k) * V, m);
    Pack<V, uint8_t> at;
#pragma unroll
    for (int e = 0; e < V; ++e) at.v[e] = kNoCell;
    for (int i = o.a.lo; i < o.a.hi; ++i)
      for (int j = o.b.lo; j < o.b.hi; ++j) {
        M u[V];
        load_pack<V>(o.cell(x, g, i, j), u);
        const uint8_t cell = uint8_t(cell_in_window(g, o.p, o.q, i, j));
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (at.v[e] == kNoCell && u[e] == m[e]) at.v[e] = cell;
      }
    *reinterpret_cast<Pack<V, uint8_t>*>(argmax + int64_t(k) * V) = at;
  }
}

// gather_kernel per channel of the pack: the covering windows in (p, q) order.
template <typename T, int V, typename M = MathOf<T>>
__global__ void gather_pack_kernel(PackGeo g, uint32_t packs, const T* __restrict__ dy,
                                   const uint8_t* __restrict__ argmax, T* dx, M alpha, M beta) {
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < packs; k += blockDim.x * gridDim.x) {
    uint32_t n;
    int i, j, c0;
    place_pack<V>(k, g.by_packs, g.by_w, g.by_h, &n, &i, &j, &c0);
    int p0, p1, q0, q1;
    covering(i, g.kh, g.ph, g.by_sh, g.P, &p0, &p1);
    covering(j, g.kw, g.pw, g.by_sw, g.Q, &q0, &q1);
    M acc[V];
    if (beta == M(0)) {
#pragma unroll
      for (int e = 0; e < V; ++e) acc[e] = M(0);
    } else {
      load_pack<V>(dx + int64_t(k) * V, acc);
#pragma unroll
      for (int e = 0; e < V; ++e) acc[e] = beta * acc[e];
    }
    for (int p = p0; p < p1; ++p)
      for (int q = q0; q < q1; ++q) {
        const int64_t o = ((int64_t(n) * g.P + p) * g.Q + q) * g.C + c0;
        M d[V];
        load_pack<V>(dy + o, d);
        if (g.mode == PoolMode::kMax) {
          const Pack<V, uint8_t> at = *reinterpret_cast<const Pack<V, uint8_t>*>(argmax + o);
          const int self = cell_in_window(g, p, q, i, j);
#pragma unroll
          for (int e = 0; e < V; ++e)
            if (at.v[e] == self) acc[e] += alpha * d[e];
        } else {
          const M div = M(pool_ops::divisor_of(g.mode, span_of(p, g.H, g.kh, g.ph, g.sh),
                                               span_of(q, g.W, g.kw, g.pw, g.sw)));
#pragma unroll
          for (int e = 0; e < V; ++e) acc[e] += alpha * d[e] / div;
        }
      }
    store_pack<V>(dx + int64_t(k) * V, acc);
  }
}

// The widest pack (up to 16 bytes, at least 2 values) a call takes, or 0.
template <typename T>
int pack_width(const PoolArgs& a, std::initializer_list<const void*> ptrs) {
  const TensorDesc &xd = a.xd, &yd = a.yd;
  if (!xd.is_packed_nhwc() || !yd.is_packed_nhwc() ||
      int64_t(a.pd.kernel_h) * a.pd.kernel_w >= kWarpWindow || xd.count() >= (int64_t(1) << 31) ||
      yd.count() >= (int64_t(1) << 31))
    return 0;
  const int v = widest_pack_dividing<T>(xd.c, ptrs);
  return v >= 2 ? v : 0;
}

template <int V>
PackGeo pack_geo(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  return PackGeo{window_of(pd, xd, yd),          FastDiv(uint32_t(xd.c / V)),
                 FastDiv(uint32_t(yd.w)),        FastDiv(uint32_t(yd.h)),
                 FastDiv(uint32_t(xd.w)),        FastDiv(uint32_t(xd.h)),
                 FastDiv(uint32_t(pd.stride_h)), FastDiv(uint32_t(pd.stride_w))};
}

template <typename I>
Geo<I> geo_of(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  using D = Div<I>;
  return Geo<I>{window_of(pd, xd, yd),
                xd.stride_n,
                xd.stride_c,
                xd.stride_h,
                xd.stride_w,
                yd.stride_n,
                yd.stride_c,
                yd.stride_h,
                yd.stride_w,
                D(xd.c),
                D(yd.w),
                D(int64_t(yd.h) * yd.w),
                D(xd.w),
                D(int64_t(xd.h) * xd.w),
                FastDiv(uint32_t(pd.stride_h)),
                FastDiv(uint32_t(pd.stride_w)),
                channels_last(xd, yd)};
}

// Whether a flat index over n elements, and the window arithmetic on it, stays below 2^31 (the
// FastDiv range).
bool fits_int32(int64_t n) { return n < int64_t(std::numeric_limits<int32_t>::max()); }

unsigned warp_grid(int64_t outputs) { return grid_for(outputs * 32); }

template <typename T>
void fwd(const PoolArgs& a, const Typed<T>& t) {
  const PoolDesc& pd = a.pd;
  const TensorDesc &xd = a.xd, &yd = a.yd;
  const int64_t total = yd.count();
  if (const int v = pack_width<T>(a, {t.x, t.out}))
    return with_width<kVecWidth<T>, 2>(v, [&](auto w) {
      constexpr int V = decltype(w)::value;
      const uint32_t packs = uint32_t(total / V);
      fwd_pack_kernel<T, V><<<grid_for(packs), kBlock, 0, t.s>>>(pack_geo<V>(pd, xd, yd), packs,
                                                                 t.x, t.out, t.alpha, t.beta);
    });
  if (int64_t(pd.kernel_h) * pd.kernel_w >= kWarpWindow)
    warp_kernel<T, false><<<warp_grid(total), kBlock, 0, t.s>>>(
        geo_of<int64_t>(pd, xd, yd), total, t.x, t.out, t.alpha, t.beta, nullptr, nullptr);
  else if (fits_int32(total))
    fwd_kernel<T, uint32_t><<<grid_for(total), kBlock, 0, t.s>>>(
        geo_of<uint32_t>(pd, xd, yd), uint32_t(total), t.x, t.out, t.alpha, t.beta);
  else
    fwd_kernel<T, int64_t><<<grid_for(total), kBlock, 0, t.s>>>(geo_of<int64_t>(pd, xd, yd), total,
                                                                t.x, t.out, t.alpha, t.beta);
}

template <typename T>
void bwd_batch(Handle& h, const PoolArgs& a, const Typed<T>& t) {
  const PoolDesc& pd = a.pd;
  const TensorDesc &xd = a.xd, &yd = a.yd;
  const int64_t outputs = yd.count(), inputs = xd.count();
  const bool narrow = fits_int32(inputs) && fits_int32(outputs);
  if (const int v = pack_width<T>(a, {t.x, t.y, t.dy, t.out}))
    return with_width<kVecWidth<T>, 2>(v, [&](auto w) {
      constexpr int V = decltype(w)::value;
      uint8_t* argmax = nullptr;
      if (pd.mode == PoolMode::kMax) {
        argmax = static_cast<uint8_t*>(h.workspace(size_t(outputs)));
        argmax_pack_kernel<T, V><<<grid_for(outputs / V), kBlock, 0, t.s>>>(
            pack_geo<V>(pd, xd, yd), uint32_t(outputs / V), t.x, t.y, argmax);
        check_launch("pool_bwd argmax");
      }
      gather_pack_kernel<T, V><<<grid_for(inputs / V), kBlock, 0, t.s>>>(
          pack_geo<V>(pd, xd, yd), uint32_t(inputs / V), t.dy, argmax, t.out, t.alpha, t.beta);
    });
  int* argmax = nullptr;
  if (pd.mode == PoolMode::kMax) {
    argmax = static_cast<int*>(h.workspace(size_t(outputs) * sizeof(int)));
    if (int64_t(pd.kernel_h) * pd.kernel_w >= kWarpWindow)
      warp_kernel<T, true><<<warp_grid(outputs), kBlock, 0, t.s>>>(
          geo_of<int64_t>(pd, xd, yd), outputs, t.x, nullptr, MathOf<T>(0), MathOf<T>(0), t.y,
          argmax);
    else if (narrow)
      argmax_kernel<T, uint32_t><<<grid_for(outputs), kBlock, 0, t.s>>>(
          geo_of<uint32_t>(pd, xd, yd), uint32_t(outputs), t.x, t.y, argmax);
    else
      argmax_kernel<T, int64_t><<<grid_for(outputs), kBlock, 0, t.s>>>(geo_of<int64_t>(pd, xd, yd),
                                                                       outputs, t.x, t.y, argmax);
    check_launch("pool_bwd argmax");
  }
  if (narrow)
    gather_kernel<T, uint32_t><<<grid_for(inputs), kBlock, 0, t.s>>>(
        geo_of<uint32_t>(pd, xd, yd), uint32_t(inputs), t.dy, argmax, t.out, t.alpha, t.beta);
  else
    gather_kernel<T, int64_t><<<grid_for(inputs), kBlock, 0, t.s>>>(
        geo_of<int64_t>(pd, xd, yd), inputs, t.dy, argmax, t.out, t.alpha, t.beta);
}

// The max backward's argmax takes the workspace a byte (pack path) or an int per output: VGG-16's
// channels-last pool1 49 MiB at batch 64, its largest workspace in BF16. Past kSliceBytes it runs
// over slices of the batch, as few as keep each slice's argmax within it (an image's gradient is
// its own).
template <typename T>
void bwd(Handle& h, const PoolArgs& a, const Typed<T>& t) {
  if (!a.is_max()) return bwd_batch(h, a, t);
  const TensorDesc &xd = a.xd, &yd = a.yd;
  const int n = xd.n;
  const int64_t image_bytes =
      yd.count() / n * (pack_width<T>(a, {t.x, t.y, t.dy, t.out}) ? 1 : int64_t(sizeof(int)));
  if (image_bytes * n <= kSliceBytes) return bwd_batch(h, a, t);
  const int per = even_slice(n, kSliceBytes / image_bytes);
  for (int n0 = 0; n0 < n; n0 += per) {
    TensorDesc xs = xd, ys = yd;
    xs.n = ys.n = std::min(per, n - n0);
    const int64_t xo = n0 * xd.stride_n, yo = n0 * yd.stride_n;
    const Typed<T> ts{t.s, t.x + xo, t.y + yo, t.dy + yo, t.out + xo, t.alpha, t.beta};
    bwd_batch(h, PoolArgs{a.pass, a.pd, xs, ys, ts.x, ts.y, ts.dy, ts.out, a.blend}, ts);
  }
}

void run(Handle& h, const PoolArgs& a) {
  run_typed(kAllTypes, h, a, [&](const auto& t) { a.forward() ? fwd(a, t) : bwd(h, a, t); });
}

// The max backward's argmax holds in-plane indices (i * W + j) as int: a plane of 2^31 cells or
// more has none. Every other call runs here, with 64-bit indices past 2^31 elements.
const char* unsupported(const PoolArgs& a) {
  if (!a.forward() && a.is_max() && int64_t(a.xd.h) * a.xd.w > int64_t(INT_MAX))
    return "max backward over planes of 2^31 cells or more";
  return nullptr;
}

}  // namespace

const PoolImpl kPoolWindow{PoolAlgo::kWindow, Device::kCUDA, unsupported, nullptr, run};

}  // namespace crema::prim::cuda
