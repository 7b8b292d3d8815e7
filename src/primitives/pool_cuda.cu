// Pooling on CUDA, max and average, with the window rules of pool_ops.h (the same as the CPU).
// Square windows of the reference nets (2/2, 3/2, 3/1: kernel/stride) take the sweep kernels
// below: a thread walks down one column of a plane with the input rows in a register ring, so x
// is loaded about once per thread instead of K x K times per output, and the max backward is a
// single pass without a workspace or atomics (a thread owns an S x S-block column of dx and adds
// the gradients of the windows reaching it in the CPU's order). Other shapes:
// Forward: one thread per output (a warp per output for large windows such as global pooling).
// Backward without atomics, so it is deterministic: each input element gathers, in the CPU's
// (p, q) order, from the output windows covering it. Max backward first stores each window's
// argmax (the first maximum in row-major order, found by comparing x with y as the CPU does) as
// an int per output in the workspace, so the gather only compares indices (recomputing it per
// input instead measured slower: the warp waits for its slowest lane's tie scan).
// Placing an element takes five to seven divisions (flat index -> plane, row, column; plane ->
// image, channel; the covering windows); as ~20-instruction software divisions they made these
// memory-bound kernels instruction-bound, so tensors under 2^31 elements divide by FastDiv
// (fast_div.h) and walk windows with pointer increments, 64-bit products only per plane.
// Traffic: forward reads x (windows overlap in cache) and writes y; the sweep max backward reads
// x, y and dy once and writes dx (caffenet:pool1 at batch 256: 738 MB); the two-pass one also
// writes and reads the argmax (4 bytes per output); average backward reads dy per covering
// window and writes dx. The sweeps are bound by L2 traffic (ncu: L2 86%, DRAM 56%): a warp's
// column loads are strided by S, so each moves twice the sectors it uses.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/cuda_util.cuh"
#include "primitives/fast_div.h"
#include "primitives/pool.h"
#include "primitives/pool_ops.h"

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

// Geometry passed by value to every kernel; I is the flat index type (uint32_t or int64_t).
template <typename I>
struct Geo {
  int C, H, W, P, Q;
  int kh, kw, ph, pw, sh, sw;
  PoolMode mode;
  int64_t xn, xc, xh, xw;  // x (and dx) element strides
  int64_t yn, yc, yh, yw;  // y (and dy) element strides
  Div<I> by_c, by_q, by_pq, by_w, by_hw;
  FastDiv by_sh, by_sw;  // the covering windows of an input (gather)
};

// Windows of at least this many cells get a warp per output instead of a thread.
constexpr int kWarpWindow = 64;

// Splits a flat index over planes of rows x cols into the plane and the in-plane position.
template <typename I, typename D>
__device__ __forceinline__ void split(I idx, const D& by_cols, const D& by_plane, I* plane, int* r,
                                      int* c) {
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

template <typename T, typename I>
__global__ void fwd_kernel(Geo<I> g, I total, const T* __restrict__ x, T* y, T alpha, T beta) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int p, q;
    split(idx, g.by_q, g.by_pq, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T* row = x + plane_off(plane, g.by_c, g.xn, g.xc) + a.lo * g.xh + b.lo * g.xw;
    T v = T(0);  // an empty window (past the input) pools to 0, as on the CPU
    if (a.lo < a.hi && b.lo < b.hi) {
      const bool is_max = g.mode == PoolMode::kMax;
      T m = is_max ? std::numeric_limits<T>::lowest() : T(0);
      for (int i = a.lo; i < a.hi; ++i, row += g.xh) {
        const T* cell = row;
        for (int j = b.lo; j < b.hi; ++j, cell += g.xw)
          m = is_max ? (*cell > m ? *cell : m) : m + *cell;
      }
      v = is_max ? m : m / T(pool_ops::divisor_of(g.mode, a, b));
    }
    blend_store(y + plane_off(plane, g.by_c, g.yn, g.yc) + p * g.yh + q * g.yw, v, alpha, beta);
  }
}

// One warp per output for large windows: the lanes stride over the window's cells in row-major
// order and combine with shuffles. Max is exact in any order; the average's sum is reassociated.
// With kArgmax, writes the first row-major cell equal to y instead (max backward).
template <typename T, bool kArgmax>
__global__ void warp_kernel(Geo<int64_t> g, int64_t total, const T* __restrict__ x, T* y, T alpha,
                            T beta, const T* __restrict__ y_in, int* argmax) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t idx = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; idx < total;
       idx += warps) {
    int64_t plane;
    int p, q;
    split(idx, g.by_q, g.by_pq, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T* xp = x + plane_off(plane, g.by_c, g.xn, g.xc);
    const int64_t yo = plane_off(plane, g.by_c, g.yn, g.yc) + p * g.yh + q * g.yw;
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
__global__ void argmax_kernel(Geo<I> g, I total, const T* __restrict__ x, const T* __restrict__ y,
                              int* argmax) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int p, q;
    split(idx, g.by_q, g.by_pq, &plane, &p, &q);
    const Span a = span_of(p, g.H, g.kh, g.ph, g.sh);
    const Span b = span_of(q, g.W, g.kw, g.pw, g.sw);
    const T m = y[plane_off(plane, g.by_c, g.yn, g.yc) + p * g.yh + q * g.yw];
    const T* row = x + plane_off(plane, g.by_c, g.xn, g.xc) + a.lo * g.xh + b.lo * g.xw;
    int at = -1;
    for (int i = a.lo; i < a.hi && at < 0; ++i, row += g.xh) {
      const T* cell = row;
      for (int j = b.lo; j < b.hi; ++j, cell += g.xw)
        if (*cell == m) {
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
template <typename T, typename I>
__global__ void gather_kernel(Geo<I> g, I total, const T* __restrict__ dy,
                              const int* __restrict__ argmax, T* dx, T alpha, T beta) {
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += I(blockDim.x) * gridDim.x) {
    I plane;
    int i, j;
    split(idx, g.by_w, g.by_hw, &plane, &i, &j);
    int p0, p1, q0, q1;
    covering(i, g.kh, g.ph, g.by_sh, g.P, &p0, &p1);
    covering(j, g.kw, g.pw, g.by_sw, g.Q, &q0, &q1);
    T* out = dx + plane_off(plane, g.by_c, g.xn, g.xc) + i * g.xh + j * g.xw;
    const T* gy = dy + plane_off(plane, g.by_c, g.yn, g.yc);
    T acc = beta == T(0) ? T(0) : beta * *out;
    if (g.mode == PoolMode::kMax) {
      const int* am = argmax + int64_t(plane) * g.P * g.Q;
      const int self = i * g.W + j;
      const int np = p1 - p0, nq = q1 - q0;
      if (np <= 2 && nq <= 2) {
        // At most 2 x 2 windows (stride at least half the kernel: every reference net's max
        // pooling): all their loads are issued before any is used. Loading dy only after its
        // argmax compared equal chained two dependent loads per window and left the kernel
        // latency-bound.
        int at[4];
        T g4[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int p = p0 + (k >> 1), q = q0 + (k & 1);
          const bool covers = (k >> 1) < np && (k & 1) < nq;
          at[k] = covers ? am[p * g.Q + q] : -1;  // -1 never equals self
          g4[k] = covers ? gy[p * g.yh + q * g.yw] : T(0);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k)  // (p, q) row-major, the CPU's order
          if (at[k] == self) acc += alpha * g4[k];
      } else {
        for (int p = p0; p < p1; ++p)
          for (int q = q0; q < q1; ++q)
            if (am[p * g.Q + q] == self) acc += alpha * gy[p * g.yh + q * g.yw];
      }
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

// ---- Sweep kernels: square K x K windows of stride S on both axes (the reference nets' 2/2,
// 3/2 and 3/1 pooling). A thread owns one column of a plane (one output column forward, one
// column block backward) and walks down it, keeping the K input rows its windows need in a
// register ring: each step loads only the min(S, K) rows the next window row adds, instead of
// K x K cells per output. Planes with few columns are cut into bands of rows so that enough
// threads run.

// Geometry of a sweep launch: `rows` x `cols` steps per plane (output rows and columns forward,
// block rows and columns backward), bands of `band` rows.
struct SweepGeo {
  int C, H, W, P, Q, ph, pw;
  int64_t xn, xc, xh, xw;
  int64_t yn, yc, yh, yw;
  int64_t planes;
  int rows, cols, band;
  int64_t threads;  // planes * cols * bands
};

// The thread's column, its plane's x/dx and y/dy offsets and its band [r0, r1).
struct SweepItem {
  int col, r0, r1;
  int64_t xo, yo;
};

__device__ __forceinline__ SweepItem sweep_item(const SweepGeo& g, int64_t idx) {
  const int64_t line = idx / g.cols;  // band * planes + plane
  const int64_t band = line / g.planes, plane = line - band * g.planes;
  const int64_t n = plane / g.C, c = plane - n * g.C;
  const int r0 = int(band) * g.band;
  return SweepItem{int(idx - line * g.cols), r0, min(r0 + g.band, g.rows), n * g.xn + c * g.xc,
                   n * g.yn + c * g.yc};
}

// Input row `row`, columns c0 .. c0 + N - 1, into dst; cells outside the input read `fill`.
template <int N, typename T>
__device__ __forceinline__ void load_row(const SweepGeo& g, const T* xp, int row, int c0, T fill,
                                         T (&dst)[N]) {
  const bool in_row = row >= 0 && row < g.H;
  const T* r = xp + row * g.xh;
#pragma unroll
  for (int t = 0; t < N; ++t) {
    const int col = c0 + t;
    dst[t] = in_row && col >= 0 && col < g.W ? r[col * g.xw] : fill;
  }
}

// The K input rows of one window row, columns c0 .. c0 + N - 1. Window row p + 1 starts S rows
// further down: it keeps K - S of these rows and adds R = min(S, K), which fetch() loads into
// `next` a step ahead (so two steps' loads are in flight) and advance() moves in.
template <int K, int S, int N, typename T>
struct RowRing {
  static constexpr int R = S < K ? S : K;
  T rows[K][N];
  T next[R][N];

  __device__ __forceinline__ void load(const SweepGeo& g, const T* xp, int row0, int c0, T fill) {
#pragma unroll
    for (int d = 0; d < K; ++d) load_row(g, xp, row0 + d, c0, fill, rows[d]);
  }
  // Loads the rows window row starting at input row `row0` adds.
  __device__ __forceinline__ void fetch(const SweepGeo& g, const T* xp, int row0, int c0, T fill) {
#pragma unroll
    for (int d = 0; d < R; ++d) load_row(g, xp, row0 + K - R + d, c0, fill, next[d]);
  }
  __device__ __forceinline__ void advance() {
#pragma unroll
    for (int d = 0; d < K; ++d)
#pragma unroll
      for (int t = 0; t < N; ++t) rows[d][t] = d + S < K ? rows[d + S][t] : next[d - (K - R)][t];
  }
};

// Forward: thread (band, plane, q) computes y[p][q] for p in its band. Pads and cells past the
// input hold the fold's identity (lowest for max, 0 for the average's row-major sum), so the
// result equals the clipped window's, bit for bit.
template <typename T, int K, int S>
__global__ void fwd_sweep_kernel(SweepGeo g, PoolMode mode, const T* __restrict__ x, T* y, T alpha,
                                 T beta) {
  const bool is_max = mode == PoolMode::kMax;
  const T fill = is_max ? std::numeric_limits<T>::lowest() : T(0);
  CREMA_CUDA_LOOP(idx, g.threads) {
    const SweepItem it = sweep_item(g, idx);
    const T* xp = x + it.xo;
    const int q = it.col, c0 = q * S - g.pw;
    const pool_ops::Span b = span_of(q, g.W, K, g.pw, S);
    RowRing<K, S, K, T> ring;
    ring.load(g, xp, it.r0 * S - g.ph, c0, fill);
    for (int p = it.r0; p < it.r1; ++p) {
      ring.fetch(g, xp, (p + 1) * S - g.ph, c0, fill);
      T v = fill;
#pragma unroll
      for (int d = 0; d < K; ++d)
#pragma unroll
        for (int t = 0; t < K; ++t) {
          const T u = ring.rows[d][t];
          v = is_max ? (u > v ? u : v) : v + u;
        }
      const pool_ops::Span a = span_of(p, g.H, K, g.ph, S);
      if (a.lo >= a.hi || b.lo >= b.hi)
        v = T(0);
      else if (!is_max)
        v = v / T(pool_ops::divisor_of(mode, a, b));
      blend_store(y + it.yo + p * g.yh + q * g.yw, v, alpha, beta);
      ring.advance();
    }
  }
}

// Max backward in one pass, no workspace. Input rows and columns are cut into blocks of S:
// block r holds input rows [r * S - ph, r * S - ph + S), and the windows whose cells reach block
// r are rows r - M + 1 .. r (M = (K - 1) / S + 1); likewise for columns. Thread (band, plane, b)
// owns column block b and, at step p, finds the argmax of windows (p, b - M + 1 .. b) (the first
// cell equal to y in row-major order, as on the CPU; cells outside the input hold NaN, which
// equals nothing) and adds alpha * dy to its accumulator of the block that argmax falls in, if
// that block is in column b. Block row p is then complete (later windows start below it) and is
// stored. Each cell thus receives beta * dx and then its windows' gradients in (p, q) order, the
// CPU's sum exactly. A band [r0, r1) starts M - 1 window rows early to collect what they add to
// its first block rows.
// f32 is bounded to three blocks per SM (at most 85 registers, no spill; unbounded the 3 x 3
// kernels take 96, two blocks); f64 would spill under that bound.
template <typename T, int K, int S>
__global__ void __launch_bounds__(kBlock, sizeof(T) == 4 ? 3 : 1)
    max_bwd_sweep_kernel(SweepGeo g, const T* __restrict__ x, const T* __restrict__ y,
                         const T* __restrict__ dy, T* dx, T alpha, T beta) {
  constexpr int M = (K - 1) / S + 1;  // windows per axis reaching one block
  constexpr int N = (M - 1) * S + K;  // columns those M windows span
  const T nan = std::numeric_limits<T>::quiet_NaN();
  CREMA_CUDA_LOOP(idx, g.threads) {
    const SweepItem it = sweep_item(g, idx);
    const T* xp = x + it.xo;
    T* dp = dx + it.xo;
    const int b = it.col, q0 = b - M + 1, c0 = q0 * S - g.pw, bc = b * S - g.pw;
    // Window row p's y (NaN where there is no window: it matches no cell) and alpha * dy.
    auto outputs = [&](int p, T(&ym)[M], T(&gm)[M]) {
#pragma unroll
      for (int w = 0; w < M; ++w) {
        const int q = q0 + w;
        const bool ok = p < g.P && q >= 0 && q < g.Q;
        const int64_t o = it.yo + p * g.yh + q * g.yw;
        ym[w] = ok ? y[o] : nan;
        gm[w] = ok ? alpha * dy[o] : T(0);
      }
    };
    // Block row r's cells: rows r * S - ph + [0, S), columns bc + [0, S), inside the input.
    auto cell = [&](int r, int i, int j, int64_t* off) {
      const int row = r * S - g.ph + i, col = bc + j;
      *off = row * g.xh + col * g.xw;
      return row >= 0 && row < g.H && col >= 0 && col < g.W;
    };
    // Accumulators of block rows p .. p + M - 1, primed with beta * dx for the rows this band
    // writes.
    T acc[M][S][S];
    auto prime = [&](int r, T(&blk)[S][S]) {
#pragma unroll
      for (int i = 0; i < S; ++i)
#pragma unroll
        for (int j = 0; j < S; ++j) {
          int64_t off;
          blk[i][j] = beta != T(0) && r >= it.r0 && r < it.r1 && cell(r, i, j, &off)
                          ? beta * dp[off]
                          : T(0);
        }
    };
    const int p_first = max(it.r0 - M + 1, 0);
#pragma unroll
    for (int m = 0; m < M; ++m) prime(p_first + m, acc[m]);
    RowRing<K, S, N, T> ring;
    ring.load(g, xp, p_first * S - g.ph, c0, nan);
    T ym[M], gm[M], ym_next[M], gm_next[M];
    outputs(p_first, ym, gm);
    for (int p = p_first; p < it.r1; ++p) {
      ring.fetch(g, xp, (p + 1) * S - g.ph, c0, nan);
      outputs(p + 1, ym_next, gm_next);
#pragma unroll
      for (int w = 0; w < M; ++w) {
        int at = -1;
#pragma unroll
        for (int t = K * K - 1; t >= 0; --t)
          if (ring.rows[t / K][w * S + t % K] == ym[w]) at = t;
#pragma unroll
        for (int t = 0; t < K * K; ++t) {
          const int i = t / K, j = t % K;  // the cell's block is (p + i / S, q0 + w + j / S)
          if (w + j / S == M - 1 && at == t) acc[i / S][i % S][j % S] += gm[w];
        }
      }
      if (p >= it.r0) {
#pragma unroll
        for (int i = 0; i < S; ++i)
#pragma unroll
          for (int j = 0; j < S; ++j) {
            int64_t off;
            if (cell(p, i, j, &off)) dp[off] = acc[0][i][j];
          }
      }
#pragma unroll
      for (int m = 0; m + 1 < M; ++m)
#pragma unroll
        for (int i = 0; i < S; ++i)
#pragma unroll
          for (int j = 0; j < S; ++j) acc[m][i][j] = acc[m + 1][i][j];
      prime(p + M, acc[M - 1]);
#pragma unroll
      for (int w = 0; w < M; ++w) ym[w] = ym_next[w], gm[w] = gm_next[w];
      ring.advance();
    }
  }
}

// Calls f with (K, S) as integral constants when pd's windows are square K x K with stride S on
// both axes and a sweep kernel exists for that shape; else returns false.
template <typename F>
bool visit_sweep(const PoolDesc& pd, F&& f) {
  if (pd.kernel_h != pd.kernel_w || pd.stride_h != pd.stride_w) return false;
  const int k = pd.kernel_h, s = pd.stride_h;
  using std::integral_constant;
  if (k == 2 && s == 2)
    f(integral_constant<int, 2>{}, integral_constant<int, 2>{});
  else if (k == 3 && s == 2)
    f(integral_constant<int, 3>{}, integral_constant<int, 2>{});
  else if (k == 3 && s == 1)
    f(integral_constant<int, 3>{}, integral_constant<int, 1>{});
  else
    return false;
  return true;
}

// Threads a sweep aims for, a few per resident slot of a large GPU: planes with fewer columns are
// cut into bands of rows (down to one), each band paying M - 1 warm-up rows.
constexpr int64_t kSweepThreads = int64_t(1) << 18;

SweepGeo sweep_geo(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd, int rows,
                   int cols) {
  SweepGeo g{xd.c,        xd.h,        xd.w,        yd.h,
             yd.w,        pd.pad_h,    pd.pad_w,    xd.stride_n,
             xd.stride_c, xd.stride_h, xd.stride_w, yd.stride_n,
             yd.stride_c, yd.stride_h, yd.stride_w, int64_t(xd.n) * xd.c,
             rows,        cols,        rows,        0};
  const int64_t lines = std::max<int64_t>(g.planes * cols, 1);
  const int64_t bands = std::clamp<int64_t>((kSweepThreads + lines - 1) / lines, 1, rows);
  g.band = std::max(1, int((rows + bands - 1) / bands));
  g.threads = g.planes * cols * ((rows + g.band - 1) / g.band);
  return g;
}

// Blocks of S along an axis of `in` cells padded by `pad`: enough to hold index in - 1.
int blocks_of(int in, int pad, int stride) { return (in - 1 + pad) / stride + 1; }

template <typename I>
Geo<I> geo_of(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  using D = Div<I>;
  return Geo<I>{xd.c,
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
                D(xd.c),
                D(yd.w),
                D(int64_t(yd.h) * yd.w),
                D(xd.w),
                D(int64_t(xd.h) * xd.w),
                FastDiv(uint32_t(pd.stride_h)),
                FastDiv(uint32_t(pd.stride_w))};
}

// Whether a flat index over n elements, and the window arithmetic on it, stays below 2^31 (the
// FastDiv range).
bool fits_int32(int64_t n) { return n < int64_t(std::numeric_limits<int32_t>::max()); }

unsigned warp_grid(int64_t outputs) { return grid_for(outputs * 32); }

template <typename T>
void fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const T* x, const TensorDesc& yd,
         T* y, Blend b) {
  const int64_t total = yd.count();
  const T alpha = T(b.alpha), beta = T(b.beta);
  cudaStream_t s = stream_of(h);
  const bool swept = visit_sweep(pd, [&](auto k, auto st) {
    const SweepGeo g = sweep_geo(pd, xd, yd, yd.h, yd.w);
    fwd_sweep_kernel<T, decltype(k)::value, decltype(st)::value>
        <<<grid_for(g.threads), kBlock, 0, s>>>(g, pd.mode, x, y, alpha, beta);
  });
  if (!swept) {
    if (int64_t(pd.kernel_h) * pd.kernel_w >= kWarpWindow)
      warp_kernel<T, false><<<warp_grid(total), kBlock, 0, s>>>(
          geo_of<int64_t>(pd, xd, yd), total, x, y, alpha, beta, nullptr, nullptr);
    else if (fits_int32(total))
      fwd_kernel<T, uint32_t><<<grid_for(total), kBlock, 0, s>>>(
          geo_of<uint32_t>(pd, xd, yd), uint32_t(total), x, y, alpha, beta);
    else
      fwd_kernel<T, int64_t><<<grid_for(total), kBlock, 0, s>>>(geo_of<int64_t>(pd, xd, yd), total,
                                                                x, y, alpha, beta);
  }
  check_launch("pool_fwd");
}

template <typename T>
void bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const T* y, const T* dy,
         const TensorDesc& xd, const T* x, T* dx, Blend b) {
  const int64_t outputs = yd.count(), inputs = xd.count();
  const bool narrow = fits_int32(inputs) && fits_int32(outputs);
  cudaStream_t s = stream_of(h);
  const T alpha = T(b.alpha), beta = T(b.beta);
  if (pd.mode == PoolMode::kMax && visit_sweep(pd, [&](auto k, auto st) {
        constexpr int S = decltype(st)::value;
        const SweepGeo g =
            sweep_geo(pd, xd, yd, blocks_of(xd.h, pd.pad_h, S), blocks_of(xd.w, pd.pad_w, S));
        max_bwd_sweep_kernel<T, decltype(k)::value, S>
            <<<grid_for(g.threads), kBlock, 0, s>>>(g, x, y, dy, dx, alpha, beta);
      })) {
    check_launch("pool_bwd");
    return;
  }
  int* argmax = nullptr;
  if (pd.mode == PoolMode::kMax) {
    argmax = static_cast<int*>(h.workspace(size_t(outputs) * sizeof(int)));
    if (int64_t(pd.kernel_h) * pd.kernel_w >= kWarpWindow)
      warp_kernel<T, true><<<warp_grid(outputs), kBlock, 0, s>>>(
          geo_of<int64_t>(pd, xd, yd), outputs, x, nullptr, T(0), T(0), y, argmax);
    else if (narrow)
      argmax_kernel<T, uint32_t><<<grid_for(outputs), kBlock, 0, s>>>(
          geo_of<uint32_t>(pd, xd, yd), uint32_t(outputs), x, y, argmax);
    else
      argmax_kernel<T, int64_t>
          <<<grid_for(outputs), kBlock, 0, s>>>(geo_of<int64_t>(pd, xd, yd), outputs, x, y, argmax);
    check_launch("pool_bwd argmax");
  }
  if (narrow)
    gather_kernel<T, uint32_t><<<grid_for(inputs), kBlock, 0, s>>>(
        geo_of<uint32_t>(pd, xd, yd), uint32_t(inputs), dy, argmax, dx, alpha, beta);
  else
    gather_kernel<T, int64_t><<<grid_for(inputs), kBlock, 0, s>>>(
        geo_of<int64_t>(pd, xd, yd), inputs, dy, argmax, dx, alpha, beta);
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
