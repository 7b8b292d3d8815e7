// The special-case pooling kernels on CUDA, called by pool_cuda.cu: the sweeps for square 2/2,
// 3/2 and 3/1 windows (kernel/stride: every reference net's pooling; pool_sweep_cuda.cu), the
// lane kernels that narrow 3/1 and 3/2 planes take for max pooling (pool_lanes_cuda.cu,
// pool_lanes_s2_cuda.cu), small packed planes staged in shared memory (pool_planes_cuda.cu),
// passes by row vectors (pool_rows_cuda.cu) and global pooling
// (pool_global_cuda.cu). Only included by .cu files of the primitives library.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "primitives/pool.h"

namespace crema::prim::cuda {

// Launch the sweep for pd on stream s and return true, or return false (launching nothing) when
// pd's windows are not one of the swept shapes. Blend as in pool.h; launches are not checked.
template <typename T>
bool pool_fwd_sweep(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                    const TensorDesc& yd, T* y, T alpha, T beta);
// Backward, max and average (x and y are read by max only).
template <typename T>
bool pool_bwd_sweep(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* y,
                    const T* dy, const TensorDesc& xd, const T* x, T* dx, T alpha, T beta);

// Max forward and backward for 3 x 3 windows of stride 1 and pad 1 on planes at most 32 wide
// (the backward also on even widths up to 64 with rows on two-cell boundaries;
// pool_lanes_cuda.cu); same contract. The backward does not read y.
template <typename T>
bool pool_max_fwd_lanes(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                        const TensorDesc& yd, T* y, T alpha, T beta);
template <typename T>
bool pool_max_bwd_lanes(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                        const TensorDesc& xd, const T* x, T* dx, T alpha, T beta);
// Max forward and backward for 3 x 3 windows of stride 2 on planes of at most 32 two-column
// blocks (pool_lanes_s2_cuda.cu); same contract. The backward does not read y.
template <typename T>
bool pool_max_fwd_lanes_s2(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                           const TensorDesc& yd, T* y, T alpha, T beta);
template <typename T>
bool pool_max_bwd_lanes_s2(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                           const TensorDesc& xd, const T* x, T* dx, T alpha, T beta);

// Forward of 2 x 2 windows (max and average) and 3 x 3 average windows, stride 2 and no padding,
// by row vectors (pool_rows_cuda.cu) where the windows stay inside columns [0, W) but for a
// ceil-mode last one; same contract.
template <typename T>
bool pool_fwd_s2_rows(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                      const TensorDesc& yd, T* y, T alpha, T beta);
// Backward passes by vectors of dx rows, on rows of contiguous cells (pool_rows_cuda.cu); same
// contract. Max of 2 x 2 windows of stride 2 and no padding that tile the plane (H = 2P, W = 2Q;
// y is not read), and average of square 2/2 and 3/2 windows on even widths.
template <typename T>
bool pool_max_bwd_k2s2(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                       const TensorDesc& xd, const T* x, T* dx, T alpha, T beta);
template <typename T>
bool pool_avg_bwd_rows(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                       const TensorDesc& xd, T* dx, T alpha, T beta);

// Global pooling (one window covering each whole plane; pool_global_cuda.cu): forward of packed
// NCHW planes of at most 64 cells, average backward of planes with contiguous cells; same
// contract.
template <typename T>
bool pool_fwd_global(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                     const TensorDesc& yd, T* y, T alpha, T beta);
template <typename T>
bool pool_avg_bwd_global(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                         const TensorDesc& xd, T* dx, T alpha, T beta);

// Forward (max and average) and max backward of small packed planes through shared memory
// (pool_planes_cuda.cu); same contract. The backward does not read y.
template <typename T>
bool pool_fwd_planes(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                     const TensorDesc& yd, T* y, T alpha, T beta);
template <typename T>
bool pool_max_bwd_planes(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                         const TensorDesc& xd, const T* x, T* dx, T alpha, T beta);

// One cell, in row-major order, of the scan for a window's argmax (at: -1 until a cell is
// recorded; m starts at lowest()): the first cell of the window's maximum, the cell the CPU's
// backward finds as the first equal to the forward's y. A strict > records each new maximum at its
// first occurrence; a cell equal to lowest() counts while nothing is recorded, so a window whose
// cells all hold lowest() routes its gradient too. NaN (the kernels' padding) never compares
// greater or equal.
template <typename T>
__device__ __forceinline__ void scan_first_max(T v, int t, T& m, int& at) {
  if (v > m || (at < 0 && v == m)) {
    m = v;
    at = t;
  }
}

// V adjacent cells of a row, moved as one access (the caller checks the alignment).
template <typename T, int V>
struct alignas(sizeof(T) * V) Cells {
  T v[V];
};

template <typename T, int V>
__device__ __forceinline__ Cells<T, V> splat(T value) {
  Cells<T, V> c;
#pragma unroll
  for (int i = 0; i < V; ++i) c.v[i] = value;
  return c;
}

// Where a lane kernel's lane works: line `warp * per_warp + l` (band-major: band * planes +
// plane), whether that line exists (lanes past the last line or the warp's lines run the steps
// without loading or storing), its band, and its plane's image n and channel c.
struct LanePlace {
  bool valid;
  int band;
  int64_t n, c;
};

template <typename G>
__device__ __forceinline__ LanePlace lane_place(const G& g, int64_t warp, int l) {
  const int64_t line = warp * g.per_warp + l;
  const bool valid = l < g.per_warp && line < g.lines;
  const int64_t ln = valid ? line : 0;
  const int64_t band = ln / g.planes, plane = ln - band * g.planes;
  const int64_t n = plane / g.C;
  return LanePlace{valid, int(band), n, plane - n * g.C};
}

// Whether a plane's rows of x and of y span less than 2^31 elements: the lane kernels' row
// offsets are int.
inline bool rows_fit_int(const TensorDesc& xd, const TensorDesc& yd) {
  return int64_t(xd.h) * xd.stride_h < (int64_t(1) << 31) &&
         int64_t(yd.h) * yd.stride_h < (int64_t(1) << 31);
}

// Whether d's rows hold contiguous cells and every row starts on a v-cell boundary, in d's strides
// and at each pointer to a tensor of d: the condition of the kernels that move v cells (or a
// multiple) as one access.
template <typename T>
bool rows_on_cells(const TensorDesc& d, int v, std::initializer_list<const void*> ptrs) {
  bool ok = d.stride_w == 1;
  for (int64_t s : {d.stride_h, d.stride_c, d.stride_n}) ok = ok && s % v == 0;
  for (const void* p : ptrs) ok = ok && reinterpret_cast<uintptr_t>(p) % (v * sizeof(T)) == 0;
  return ok;
}

// The launch plan both lane kernels share: fills g's plane and stride fields from xd and yd, and
// cuts each plane's `rows` steps into bands so that about 2^13 warps run (unless `whole`: one
// band), `per_warp` lines (a line: one plane's band) to a warp. Row strides are stored as int:
// the callers have checked rows_fit_int.
template <typename G>
void plan_lanes(G& g, const TensorDesc& xd, const TensorDesc& yd, int rows, int per_warp,
                bool whole = false) {
  constexpr int64_t kLaneWarps = int64_t(1) << 13;
  g.C = xd.c;
  g.H = xd.h;
  g.W = xd.w;
  g.xn = xd.stride_n;
  g.xc = xd.stride_c;
  g.xh = int(xd.stride_h);
  g.xw = xd.stride_w;
  g.yn = yd.stride_n;
  g.yc = yd.stride_c;
  g.yh = int(yd.stride_h);
  g.yw = yd.stride_w;
  g.planes = int64_t(xd.n) * xd.c;
  g.per_warp = per_warp;
  const int64_t plane_warps = (g.planes + per_warp - 1) / per_warp;
  const int64_t bands =
      whole ? 1 : std::clamp<int64_t>((kLaneWarps + plane_warps - 1) / plane_warps, 1, rows);
  g.band = int((rows + bands - 1) / bands);
  g.lines = g.planes * ((rows + g.band - 1) / g.band);
  g.warps = (g.lines + per_warp - 1) / per_warp;
}

}  // namespace crema::prim::cuda
