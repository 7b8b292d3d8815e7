// Pooling on CUDA, max and average, with the window rules of pool_ops.h (the same as the CPU).
//
// Main path (windows under 64 cells, tiles that fit in shared memory), one kernel per direction:
//   Forward: a block owns a tile of outputs of one or more planes, loads the x region under it
//   into shared memory with coalesced rows, then each thread pools one output from shared memory.
//   Bytes: x read once (plus a halo of kernel - stride rows/cols per tile, ~5% for 3x3/2, mostly
//   from L2) and y written once: caffenet:pool1 256x96x55x55 f32 moves 297 + 72 MB = 0.12 ms at
//   3 TB/s.
//   Backward: a block owns a tile of inputs. It loads the x region under every window covering
//   the tile (max only), finds each covering window's argmax in shared memory (the first x equal
//   to y in row-major order, as the CPU) and stores it with dy; then each input sums, in the
//   CPU's (p, q) order starting from beta * dx, the dy of the windows that chose it (average: of
//   all covering windows, dy pre-divided as the CPU does). No atomics, no workspace, every dx
//   written by exactly one thread. Bytes for max: x, y, dy read once (halo outputs are read by
//   two tiles), dx written once: caffenet:pool1 297 + 72 + 72 + 297 MB = 0.25 ms at 3 TB/s;
//   average: dy read, dx written.
// Fallback (windows of 64 cells and more in the forward, or a tile too large for shared memory):
//   forward one thread (or one warp, for large windows) per output; max backward stores each
//   window's argmax in the workspace and then gathers per input.
#include <algorithm>
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
  // The in-plane strides as 32-bit ints for the tiled kernels (used only when every in-plane
  // offset fits in an int).
  int ixh, ixw, iyh, iyw;
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

// ---- tiled kernels --------------------------------------------------------------------------

// A block is 32 x 8 threads: x runs along a tile row (coalesced over w for NCHW), y over the
// rows of the tile and of its planes.
constexpr int kTileW = 32, kTileRows = 8;
// Dynamic shared memory a tile may use (with the static plane offsets, under the 48 KiB that
// needs no opt-in), and the most planes a block takes.
constexpr size_t kTileSmem = 40 * 1024;
constexpr int kMaxGroup = 256;

// Calls f(gl, r, c) for every cell (row r, column c) of gn planes of rows x cols, spread over the
// block: a warp along each row when rows are wide (coalesced, no divisions per cell), else
// flattened so narrow rows (global pooling's 1 x 1 outputs, 7-wide planes) keep all lanes busy.
template <typename F>
__device__ __forceinline__ void for_cells(int gn, int rows, int cols, F f) {
  if (cols >= kTileW / 2) {
    for (int gr = threadIdx.y; gr < gn * rows; gr += kTileRows) {
      const int gl = gr / rows, r = gr - gl * rows;
      for (int c = threadIdx.x; c < cols; c += kTileW) f(gl, r, c);
    }
  } else if (cols > 0) {
    const int per_plane = rows * cols;
    for (int e = threadIdx.y * kTileW + threadIdx.x; e < gn * per_plane; e += kTileW * kTileRows) {
      const int gl = e / per_plane, rc = e - gl * per_plane, r = rc / cols;
      f(gl, r, rc - r * cols);
    }
  }
}

// The element offsets of the group's planes in x (and dx) and y (and dy), once per group.
__device__ __forceinline__ void plane_offsets(const Geo& g, int64_t plane0, int gn, int64_t* xo,
                                              int64_t* yo) {
  for (int e = threadIdx.y * kTileW + threadIdx.x; e < gn; e += kTileW * kTileRows) {
    xo[e] = plane_off(plane0 + e, g.C, g.xn, g.xc);
    yo[e] = plane_off(plane0 + e, g.C, g.yn, g.yc);
  }
}

// One call's tiling, decided on the host. th x tw are outputs per tile (forward) or inputs per
// tile (backward); np x nq bound the outputs whose windows cover a backward tile; xh x xw bound
// the x region under a tile (xw is the shared-memory row pitch).
struct Tiles {
  int th, tw, tiles_h, tiles_w;
  int group;       // planes per block
  int64_t groups;  // ceil(planes / group)
  int np, nq, xh, xw;
};

template <typename T, bool kMax>
__global__ void __launch_bounds__(kTileW* kTileRows)
    fwd_tile_kernel(Geo g, Tiles t, int64_t planes, const T* __restrict__ x, T* __restrict__ y,
                    T alpha, T beta) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);
  const int ti = int(blockIdx.x) / t.tiles_w, tj = int(blockIdx.x) - ti * t.tiles_w;
  const int p0 = ti * t.th, q0 = tj * t.tw;
  const int p1 = min(p0 + t.th, g.P), q1 = min(q0 + t.tw, g.Q);
  // The x region under the tile's windows, clipped to the input (empty when the windows lie past
  // it, CEIL rounding with stride > kernel).
  const int r0 = max(0, p0 * g.sh - g.ph), c0 = max(0, q0 * g.sw - g.pw);
  const int rows = min(g.H, (p1 - 1) * g.sh - g.ph + g.kh) - r0;
  const int cols = min(g.W, (q1 - 1) * g.sw - g.pw + g.kw) - c0;
  __shared__ int64_t xo[kMaxGroup], yo[kMaxGroup];
  const int tp = p1 - p0, tq = q1 - q0;
  for (int64_t pg = blockIdx.y; pg < t.groups; pg += gridDim.y) {
    const int64_t plane0 = pg * t.group;
    const int gn = int(min(int64_t(t.group), planes - plane0));
    __syncthreads();  // the previous group is done with the shared arrays
    plane_offsets(g, plane0, gn, xo, yo);
    __syncthreads();
    for_cells(gn, rows, cols, [&](int gl, int r, int c) {
      xs[(gl * t.xh + r) * t.xw + c] = __ldg(x + xo[gl] + (r0 + r) * g.ixh + (c0 + c) * g.ixw);
    });
    __syncthreads();
    for_cells(gn, tp, tq, [&](int gl, int pl, int ql) {
      const int p = p0 + pl, q = q0 + ql;
      const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
      const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
      const T* xr = xs + gl * t.xh * t.xw;  // xr[(i - r0) * xw + j - c0] is x(i, j)
      T v = T(0);  // an empty window (past the input) pools to 0, as on the CPU
      if (a.lo < a.hi && b.lo < b.hi) {
        if (kMax) {
          T m = std::numeric_limits<T>::lowest();
          for (int i = a.lo; i < a.hi; ++i)
            for (int j = b.lo; j < b.hi; ++j) {
              const T u = xr[(i - r0) * t.xw + (j - c0)];
              m = u > m ? u : m;
            }
          v = m;
        } else {
          T sum = T(0);
          for (int i = a.lo; i < a.hi; ++i)
            for (int j = b.lo; j < b.hi; ++j) sum += xr[(i - r0) * t.xw + (j - c0)];
          v = sum / T(pool_ops::divisor_of(g.mode, a, b));
        }
      }
      blend_store(y + yo[gl] + p * g.iyh + q * g.iyw, v, alpha, beta);
    });
  }
}

// Shared memory of a backward tile: per plane of the group, the x region (max only), then the
// covering windows' dy (max) or pre-divided alpha * dy (average), then their argmax (max only),
// as an index into the plane's x region, -1 for none.
size_t bwd_smem_per_plane(const Tiles& t, bool is_max, size_t elem) {
  const size_t outs = size_t(t.np) * t.nq;
  return (is_max ? size_t(t.xh) * t.xw * elem + outs * sizeof(int) : 0) + outs * elem;
}

template <typename T, bool kMax>
__global__ void __launch_bounds__(kTileW* kTileRows)
    bwd_tile_kernel(Geo g, Tiles t, int64_t planes, const T* __restrict__ x,
                    const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx, T alpha,
                    T beta) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int outs = t.np * t.nq;
  T* xs = reinterpret_cast<T*>(smem_raw);
  T* gs = xs + (kMax ? t.group * t.xh * t.xw : 0);
  int* as = reinterpret_cast<int*>(gs + t.group * outs);
  const int ti = int(blockIdx.x) / t.tiles_w, tj = int(blockIdx.x) - ti * t.tiles_w;
  const int i0 = ti * t.th, j0 = tj * t.tw;
  const int i1 = min(i0 + t.th, g.H), j1 = min(j0 + t.tw, g.W);
  // The windows covering any input of the tile: [p0, p1) x [q0, q1), possibly empty.
  int p0, p1, q0, q1, unused;
  pool_ops::covering(i0, g.kh, g.ph, g.sh, g.P, &p0, &unused);
  pool_ops::covering(i1 - 1, g.kh, g.ph, g.sh, g.P, &unused, &p1);
  pool_ops::covering(j0, g.kw, g.pw, g.sw, g.Q, &q0, &unused);
  pool_ops::covering(j1 - 1, g.kw, g.pw, g.sw, g.Q, &unused, &q1);
  const int np = max(p1 - p0, 0), nq = max(q1 - q0, 0);
  // The x region under those windows (each lies inside the input: it covers a tile input).
  const int r0 = max(0, p0 * g.sh - g.ph), c0 = max(0, q0 * g.sw - g.pw);
  const int rows = np > 0 ? min(g.H, (p1 - 1) * g.sh - g.ph + g.kh) - r0 : 0;
  const int cols = nq > 0 ? min(g.W, (q1 - 1) * g.sw - g.pw + g.kw) - c0 : 0;
  const int rows_in = i1 - i0, cols_in = j1 - j0;
  __shared__ int64_t xo[kMaxGroup], yo[kMaxGroup];
  for (int64_t pg = blockIdx.y; pg < t.groups; pg += gridDim.y) {
    const int64_t plane0 = pg * t.group;
    const int gn = int(min(int64_t(t.group), planes - plane0));
    __syncthreads();  // the previous group is done with the shared arrays
    plane_offsets(g, plane0, gn, xo, yo);
    __syncthreads();
    if (kMax) {
      for_cells(gn, rows, cols, [&](int gl, int r, int c) {
        xs[(gl * t.xh + r) * t.xw + c] = __ldg(x + xo[gl] + (r0 + r) * g.ixh + (c0 + c) * g.ixw);
      });
      __syncthreads();
    }
    // Each covering window: its dy, and for max the argmax found in the shared x region.
    for_cells(gn, np, nq, [&](int gl, int pl, int ql) {
      const int p = p0 + pl, q = q0 + ql;
      const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
      const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
      const int o = (gl * t.np + pl) * t.nq + ql;
      const int64_t yi = yo[gl] + p * g.iyh + q * g.iyw;
      const T gy = __ldg(dy + yi);
      if (kMax) {
        const T m = __ldg(y + yi);
        const T* xr = xs + gl * t.xh * t.xw;
        int at = -1;
        // Reverse row-major scan with selects: the last hit kept is the first in scan order.
        for (int i = a.hi - 1; i >= a.lo; --i)
          for (int j = b.hi - 1; j >= b.lo; --j) {
            const int e = (i - r0) * t.xw + (j - c0);
            at = xr[e] == m ? e : at;
          }
        as[o] = at;
        gs[o] = gy;
      } else {
        // An empty window covers no input and is never read; guard the division anyway.
        const int d = pool_ops::divisor_of(g.mode, a, b);
        gs[o] = d > 0 ? alpha * gy / T(d) : T(0);
      }
    });
    __syncthreads();
    // Each input of the tile: the windows covering it, in increasing (p, q) order as the CPU.
    for_cells(gn, rows_in, cols_in, [&](int gl, int il, int jl) {
      const int i = i0 + il, j = j0 + jl;
      int pa, pb, qa, qb;
      pool_ops::covering(i, g.kh, g.ph, g.sh, g.P, &pa, &pb);
      pool_ops::covering(j, g.kw, g.pw, g.sw, g.Q, &qa, &qb);
      T* out = dx + xo[gl] + i * g.ixh + j * g.ixw;
      const int base = gl * t.np * t.nq;  // window (p, q) is at base + (p - p0) * nq + q - q0
      T acc = beta == T(0) ? T(0) : beta * *out;
      if (kMax) {
        const int self = (i - r0) * t.xw + (j - c0);
        for (int p = pa; p < pb; ++p)
          for (int q = qa; q < qb; ++q)
            if (as[base + (p - p0) * t.nq + (q - q0)] == self)
              acc += alpha * gs[base + (p - p0) * t.nq + (q - q0)];
      } else {
        for (int p = pa; p < pb; ++p)
          for (int q = qa; q < qb; ++q) acc += gs[base + (p - p0) * t.nq + (q - q0)];
      }
      *out = acc;
    });
  }
}

// ceil(n / cap) tiles of as equal a size as possible.
void split_even(int n, int cap, int* tile, int* tiles) {
  *tiles = (n + cap - 1) / cap;
  *tile = (n + *tiles - 1) / *tiles;
}

// Fills the plane grouping of t: small planes share a block until it has about `target` work
// items, within the shared memory (`per_plane` bytes each); false when one plane does not fit.
bool group_planes(Tiles* t, int64_t planes, int cells, int target, size_t per_plane) {
  if (per_plane > kTileSmem) return false;
  int64_t group = std::max(1, target / std::max(cells, 1));
  group = std::min<int64_t>(
      {group, planes, int64_t(kMaxGroup), int64_t(kTileSmem / std::max<size_t>(per_plane, 1))});
  t->group = int(std::max<int64_t>(group, 1));
  t->groups = (planes + t->group - 1) / t->group;
  return true;
}

dim3 tile_grid(const Tiles& t) {
  return dim3(unsigned(t.tiles_h) * unsigned(t.tiles_w),
              unsigned(std::min<int64_t>(t.groups, 65535)));
}

Geo geo_of(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  return Geo{xd.c,
             xd.h,
             xd.w,
             yd.h,
             yd.w,
             pd.kernel_h,
             pd.kernel_w,
             pd.pad_h,
             pd.pad_w,
             pd.stride_h,
             pd.stride_w,
             pd.mode,
             xd.stride_n,
             xd.stride_c,
             xd.stride_h,
             xd.stride_w,
             yd.stride_n,
             yd.stride_c,
             yd.stride_h,
             yd.stride_w,
             int(xd.stride_h),
             int(xd.stride_w),
             int(yd.stride_h),
             int(yd.stride_w)};
}

// Whether every in-plane offset of both tensors fits in an int (the tiled kernels' indexing).
bool plane_fits_int32(const TensorDesc& xd, const TensorDesc& yd) {
  auto fits = [](const TensorDesc& d) {
    return d.stride_h >= 0 && d.stride_w >= 0 &&
           int64_t(d.h) * d.stride_h + int64_t(d.w) * d.stride_w <
               int64_t(std::numeric_limits<int32_t>::max());
  };
  return fits(xd) && fits(yd);
}

// Forward tiles: up to 32 output columns by 256 outputs, x region under them.
bool plan_fwd(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd, size_t elem,
              Tiles* t) {
  split_even(yd.w, kTileW, &t->tw, &t->tiles_w);
  split_even(yd.h, std::max(1, (kTileW * kTileRows) / t->tw), &t->th, &t->tiles_h);
  t->np = t->nq = 0;
  t->xh = std::min(xd.h, (t->th - 1) * pd.stride_h + pd.kernel_h);
  t->xw = std::min(xd.w, (t->tw - 1) * pd.stride_w + pd.kernel_w);
  return group_planes(t, int64_t(xd.n) * xd.c, t->th * t->tw, kTileW * kTileRows,
                      size_t(t->xh) * t->xw * elem);
}

// Backward tiles: up to 32 input columns by 512 inputs; np x nq bound the windows covering
// them (their starts lie in an interval of th + kernel - 1 positions).
bool plan_bwd(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd, size_t elem,
              Tiles* t) {
  split_even(xd.w, kTileW, &t->tw, &t->tiles_w);
  const int target = 2 * kTileW * kTileRows;
  split_even(xd.h, std::max(1, target / t->tw), &t->th, &t->tiles_h);
  t->np = std::min(yd.h, (t->th + pd.kernel_h - 1 + pd.stride_h - 1) / pd.stride_h);
  t->nq = std::min(yd.w, (t->tw + pd.kernel_w - 1 + pd.stride_w - 1) / pd.stride_w);
  t->xh = std::min(xd.h, (t->np - 1) * pd.stride_h + pd.kernel_h);
  t->xw = std::min(xd.w, (t->nq - 1) * pd.stride_w + pd.kernel_w);
  return group_planes(t, int64_t(xd.n) * xd.c, t->th * t->tw, target,
                      bwd_smem_per_plane(*t, pd.mode == PoolMode::kMax, elem));
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
  Tiles t;
  if (int64_t(pd.kernel_h) * pd.kernel_w >= kWarpWindow) {
    warp_kernel<T, false>
        <<<warp_grid(total), kBlock, 0, s>>>(g, total, x, y, alpha, beta, nullptr, nullptr);
  } else if (plane_fits_int32(xd, yd) && plan_fwd(pd, xd, yd, sizeof(T), &t)) {
    const size_t smem = size_t(t.group) * t.xh * t.xw * sizeof(T);
    const int64_t planes = int64_t(xd.n) * xd.c;
    const dim3 block(kTileW, kTileRows);
    if (pd.mode == PoolMode::kMax)
      fwd_tile_kernel<T, true><<<tile_grid(t), block, smem, s>>>(g, t, planes, x, y, alpha, beta);
    else
      fwd_tile_kernel<T, false><<<tile_grid(t), block, smem, s>>>(g, t, planes, x, y, alpha, beta);
  } else if (fits_int32(total)) {
    fwd_kernel<T, int32_t><<<grid_for(total), kBlock, 0, s>>>(g, int32_t(total), x, y, alpha, beta);
  } else {
    fwd_kernel<T, int64_t><<<grid_for(total), kBlock, 0, s>>>(g, total, x, y, alpha, beta);
  }
  check_launch("pool_fwd");
}

template <typename T>
void bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const T* y, const T* dy,
         const TensorDesc& xd, const T* x, T* dx, Blend b) {
  const Geo g = geo_of(pd, xd, yd);
  const int64_t outputs = yd.count(), inputs = xd.count();
  const T alpha = T(b.alpha), beta = T(b.beta);
  const bool is_max = pd.mode == PoolMode::kMax;
  cudaStream_t s = stream_of(h);
  Tiles t;
  if (plane_fits_int32(xd, yd) && plan_bwd(pd, xd, yd, sizeof(T), &t)) {
    const size_t smem = size_t(t.group) * bwd_smem_per_plane(t, is_max, sizeof(T));
    const int64_t planes = int64_t(xd.n) * xd.c;
    const dim3 block(kTileW, kTileRows);
    if (is_max)
      bwd_tile_kernel<T, true>
          <<<tile_grid(t), block, smem, s>>>(g, t, planes, x, y, dy, dx, alpha, beta);
    else
      bwd_tile_kernel<T, false>
          <<<tile_grid(t), block, smem, s>>>(g, t, planes, x, y, dy, dx, alpha, beta);
    check_launch("pool_bwd");
    return;
  }
  int* argmax = nullptr;
  if (is_max) {
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
