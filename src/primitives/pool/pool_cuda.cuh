// What the CUDA pooling rows share (pool_cuda.cu and the pool_*_cuda.cu files, one row each; the
// table is pool_impl.h): the typed view of a call, the argmax scan, row vectors, the lane
// kernels' placement and the alignment rules. Only included by .cu files of the primitives
// library.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_impl.h"

namespace crema::prim::cuda {

// A call with its data as T: the stream, x, y (backward), dy, the output (y forward, dx
// backward) and the blend factors in T's math type.
template <typename T>
struct Typed {
  cudaStream_t s;
  const T* x;
  const T* y;
  const T* dy;
  T* out;
  MathOf<T> alpha, beta;
};

// Runs f(Typed<T>) for a's data type among `types` (others throw PrimError), then checks the
// launch. The special-shape rows take f32 and f64 (run_typed without a list); the window and
// sweep rows also bf16 and f16.
template <typename... Ts, typename F>
void run_typed(DTypes<Ts...> types, Handle& h, const PoolArgs& a, F&& f) {
  const char* op = a.forward() ? "pool_fwd" : "pool_bwd";
  visit_dtype(types, a.xd.dtype, op, Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    f(Typed<T>{stream_of(h), static_cast<const T*>(a.x), static_cast<const T*>(a.y),
               static_cast<const T*>(a.dy), static_cast<T*>(a.out), MathOf<T>(a.blend.alpha),
               MathOf<T>(a.blend.beta)});
  });
  check_launch(op);
}
template <typename F>
void run_typed(Handle& h, const PoolArgs& a, F&& f) {
  run_typed(kFloatTypes, h, a, std::forward<F>(f));
}

// Why a special-shape row passes a call over: its kernels store f32 and f64 only.
inline const char* half_data(const PoolArgs& a) {
  return a.xd.dtype == DataType::kBFloat16 || a.xd.dtype == DataType::kFloat16 ? "bf16/f16 data"
                                                                               : nullptr;
}

// Whether x and y hold a pixel's channels adjacent (packed NHWC, or any strides with channel
// stride 1). A row that walks planes then gives way under kAuto to the window row (pool_cuda.cu):
// a plane's cells lie C values apart, where the window row's threads take adjacent channels
// (ResNet-50's channels-last pool1 in BF16 on an H100: 2.8 ms backward in the sweep).
inline bool channels_last(const TensorDesc& xd, const TensorDesc& yd) {
  return xd.c > 1 && xd.stride_c == 1 && yd.stride_c == 1;
}
inline const char* channels_last_slower(const PoolArgs& a) {
  return channels_last(a.xd, a.yd) ? "channels last" : nullptr;
}

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
inline bool rows_on_cells(const TensorDesc& d, int v, std::initializer_list<const void*> ptrs) {
  bool ok = d.stride_w == 1;
  for (int64_t s : {d.stride_h, d.stride_c, d.stride_n}) ok = ok && s % v == 0;
  for (const void* p : ptrs) ok = ok && aligned(p, v * dtype_size(d.dtype));
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
