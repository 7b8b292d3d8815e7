// The "sweep" row of pooling's table: kernels for square K x K windows of stride S on both axes. A
// thread owns one column of a plane (one output column forward, one column block backward) and
// walks down it, keeping the K input rows its windows need in a register ring: each step loads
// only the min(S, K) rows the next window row adds, instead of K x K cells per output. Planes
// with few columns are cut into bands of rows so that enough threads run. The backward (max and
// average) is a single pass with no workspace and no atomics. Results equal the CPU's bit for
// bit. bf16 and f16 data are read into fp32 (the ring holds fp32) and rounded once when stored.
// The sweeps are bound by L2 traffic (ncu on caffenet:pool1's backward: L2 86%, DRAM 56%): a
// warp's column loads are strided by S, so each moves twice the sectors it uses. The rows before
// it in the table take most of the reference nets' pools (docs/primitives.md); the sweep keeps
// the max backward of planes wider than 64 columns (googlenet:pool1, resnet50:pool1: 0.465 ms
// against the window row's 1.19, H100) and odd-width shapes the row vectors cannot store.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_cuda.cuh"
#include "primitives/pool/pool_ops.h"

namespace crema::prim::cuda {
namespace {

using pool_ops::blocks_of;
using pool_ops::span_of;

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

// Below 2^31 threads the kernels' kNarrow instances place a thread by multiply-high divisions
// (narrow()): three 64-bit divisions (software, about 70 instructions each) were most of a
// thread's work on small layers, where each thread pools one output. The divisors are a kernel
// parameter of their own: any field added to SweepGeo, even a bool, changed the register
// allocation of the wide kernels (the 3/2 backward spilled 24 bytes, the 3/2 forward took 56
// registers instead of 47).
struct SweepDivs {
  FastDiv by_cols, by_planes, by_c;
};

// The thread's column, its plane's x/dx and y/dy offsets and its band [r0, r1).
struct SweepItem {
  int col, r0, r1;
  int64_t xo, yo;
};

template <bool kNarrow>
__device__ __forceinline__ SweepItem sweep_item(const SweepGeo& g, const SweepDivs& d,
                                                int64_t idx) {
  int64_t line, band, plane, n;  // line: band * planes + plane
  if constexpr (kNarrow) {
    line = d.by_cols.div(uint32_t(idx));
    band = d.by_planes.div(uint32_t(line));
    plane = line - band * g.planes;
    n = d.by_c.div(uint32_t(plane));
  } else {
    line = idx / g.cols;
    band = line / g.planes;
    plane = line - band * g.planes;
    n = plane / g.C;
  }
  const int64_t c = plane - n * g.C;
  const int r0 = int(band) * g.band;
  return SweepItem{int(idx - line * g.cols), r0, min(r0 + g.band, g.rows), n * g.xn + c * g.xc,
                   n * g.yn + c * g.yc};
}

// Input row `row`, columns c0 .. c0 + N - 1, into dst (in T's math type M); cells outside the
// input read `fill`.
template <int N, typename T, typename M>
__device__ __forceinline__ void load_row(const SweepGeo& g, const T* xp, int row, int c0, M fill,
                                         M (&dst)[N]) {
  const bool in_row = row >= 0 && row < g.H;
  const T* r = xp + row * g.xh;
#pragma unroll
  for (int t = 0; t < N; ++t) {
    const int col = c0 + t;
    dst[t] = in_row && col >= 0 && col < g.W ? M(load_as_float(r[col * g.xw])) : fill;
  }
}

// The K input rows of one window row, columns c0 .. c0 + N - 1. Window row p + 1 starts S rows
// further down: it keeps K - S of these rows and adds R = min(S, K), which fetch() loads into
// `next` a step ahead (so two steps' loads are in flight) and advance() moves in.
template <int K, int S, int N, typename T, typename M = MathOf<T>>
struct RowRing {
  static constexpr int R = S < K ? S : K;
  M rows[K][N];
  M next[R][N];

  __device__ __forceinline__ void load(const SweepGeo& g, const T* xp, int row0, int c0, M fill) {
#pragma unroll
    for (int d = 0; d < K; ++d) load_row(g, xp, row0 + d, c0, fill, rows[d]);
  }
  // Loads the rows window row starting at input row `row0` adds.
  __device__ __forceinline__ void fetch(const SweepGeo& g, const T* xp, int row0, int c0, M fill) {
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
// Bands of one row (small layers) take the kOneRow instances, which load no next row: the
// prefetch was most of their loads (cifar10_quick:pool2 0.0068 -> 0.0059 ms without it). A test
// of the band in the loop instead cost the large layers 5-17% (googlenet:pool1 0.214 -> 0.250
// ms, 52 registers instead of 47).
template <typename T, int K, int S, bool kNarrow, bool kOneRow, typename M = MathOf<T>>
__global__ void fwd_sweep_kernel(SweepGeo g, SweepDivs d, PoolMode mode, const T* __restrict__ x,
                                 T* y, M alpha, M beta) {
  const bool is_max = mode == PoolMode::kMax;
  const M fill = is_max ? std::numeric_limits<M>::lowest() : M(0);
  CREMA_CUDA_LOOP(idx, g.threads) {
    const SweepItem it = sweep_item<kNarrow>(g, d, idx);
    const T* xp = x + it.xo;
    const int q = it.col, c0 = q * S - g.pw;
    const pool_ops::Span b = span_of(q, g.W, K, g.pw, S);
    RowRing<K, S, K, T> ring;
    ring.load(g, xp, it.r0 * S - g.ph, c0, fill);
    for (int p = it.r0; p < it.r1; ++p) {
      if constexpr (!kOneRow) ring.fetch(g, xp, (p + 1) * S - g.ph, c0, fill);
      M v = fill;
#pragma unroll
      for (int d = 0; d < K; ++d)
#pragma unroll
        for (int t = 0; t < K; ++t) {
          const M u = ring.rows[d][t];
          v = is_max ? (u > v ? u : v) : v + u;
        }
      const pool_ops::Span a = span_of(p, g.H, K, g.ph, S);
      if (a.lo >= a.hi || b.lo >= b.hi)
        v = M(0);
      else if (!is_max)
        v = v / M(pool_ops::divisor_of(mode, a, b));
      blend_store(y + it.yo + p * g.yh + q * g.yw, v, alpha, beta);
      if constexpr (!kOneRow) ring.advance();
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
// The average backward (kMax false) is the same walk without x: each window adds
// alpha * dy / divisor to each of its cells in the block, the CPU's value in the CPU's order.
// Before, it took pool_cuda.cu's gather (each input placing itself and its covering windows by
// divisions): 1.38x cuDNN's time on cifar10_quick:pool2.
template <typename T, int K, int S, bool kNarrow, bool kMax, typename F = MathOf<T>>
__global__ void __launch_bounds__(kBlock, sizeof(F) == 4 ? 3 : 1)
    bwd_sweep_kernel(SweepGeo g, SweepDivs d, PoolMode mode, const T* __restrict__ x,
                     const T* __restrict__ y, const T* __restrict__ dy, T* dx, F alpha, F beta) {
  constexpr int M = (K - 1) / S + 1;  // windows per axis reaching one block
  constexpr int N = (M - 1) * S + K;  // columns those M windows span
  const F nan = std::numeric_limits<F>::quiet_NaN();
  CREMA_CUDA_LOOP(idx, g.threads) {
    const SweepItem it = sweep_item<kNarrow>(g, d, idx);
    const T* xp = x + it.xo;
    T* dp = dx + it.xo;
    const int b = it.col, q0 = b - M + 1, c0 = q0 * S - g.pw, bc = b * S - g.pw;
    // Window row p's y (max; NaN where there is no window: it matches no cell) and its gradient
    // per cell: alpha * dy (max), alpha * dy / divisor (average).
    auto outputs = [&](int p, F(&ym)[M], F(&gm)[M]) {
#pragma unroll
      for (int w = 0; w < M; ++w) {
        const int q = q0 + w;
        const bool ok = p < g.P && q >= 0 && q < g.Q;
        const int64_t o = it.yo + p * g.yh + q * g.yw;
        if constexpr (kMax) {
          ym[w] = ok ? F(load_as_float(y[o])) : nan;
          gm[w] = ok ? alpha * F(load_as_float(dy[o])) : F(0);
        } else {
          const int div =
              pool_ops::divisor_of(mode, span_of(p, g.H, K, g.ph, S), span_of(q, g.W, K, g.pw, S));
          gm[w] = ok ? alpha * F(load_as_float(dy[o])) / F(div) : F(0);
        }
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
    F acc[M][S][S];
    auto prime = [&](int r, F(&blk)[S][S]) {
#pragma unroll
      for (int i = 0; i < S; ++i)
#pragma unroll
        for (int j = 0; j < S; ++j) {
          int64_t off;
          blk[i][j] = beta != F(0) && r >= it.r0 && r < it.r1 && cell(r, i, j, &off)
                          ? beta * F(load_as_float(dp[off]))
                          : F(0);
        }
    };
    const int p_first = max(it.r0 - M + 1, 0);
#pragma unroll
    for (int m = 0; m < M; ++m) prime(p_first + m, acc[m]);
    RowRing<K, S, N, T> ring;
    if constexpr (kMax) ring.load(g, xp, p_first * S - g.ph, c0, nan);
    F ym[M], gm[M], ym_next[M], gm_next[M];
    outputs(p_first, ym, gm);
    for (int p = p_first; p < it.r1; ++p) {
      if constexpr (kMax) ring.fetch(g, xp, (p + 1) * S - g.ph, c0, nan);
      outputs(p + 1, ym_next, gm_next);
#pragma unroll
      for (int w = 0; w < M; ++w) {
        int at = -1;
        if constexpr (kMax) {
#pragma unroll
          for (int t = K * K - 1; t >= 0; --t)
            if (ring.rows[t / K][w * S + t % K] == ym[w]) at = t;
        }
#pragma unroll
        for (int t = 0; t < K * K; ++t) {
          const int i = t / K, j = t % K;  // the cell's block is (p + i / S, q0 + w + j / S)
          if (w + j / S == M - 1 && (!kMax || at == t)) acc[i / S][i % S][j % S] += gm[w];
        }
      }
      if (p >= it.r0) {
#pragma unroll
        for (int i = 0; i < S; ++i)
#pragma unroll
          for (int j = 0; j < S; ++j) {
            int64_t off;
            if (cell(p, i, j, &off)) dp[off] = store_from_float<T>(acc[0][i][j]);
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
      if constexpr (kMax) ring.advance();
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

bool narrow(const SweepGeo& g) { return g.threads < (int64_t(1) << 31); }

SweepDivs divs_of(const SweepGeo& g) {
  if (!narrow(g)) return SweepDivs{};
  return SweepDivs{FastDiv(uint32_t(g.cols)), FastDiv(uint32_t(g.planes)), FastDiv(uint32_t(g.C))};
}

// Calls f with std::bool_constant<a> and std::bool_constant<b>: a kernel instance per pair of
// flags.
template <typename F>
void visit_flags(bool a, bool b, F&& f) {
  using std::bool_constant;
  if (a)
    b ? f(bool_constant<true>{}, bool_constant<true>{})
      : f(bool_constant<true>{}, bool_constant<false>{});
  else
    b ? f(bool_constant<false>{}, bool_constant<true>{})
      : f(bool_constant<false>{}, bool_constant<false>{});
}

const char* unsupported(const PoolArgs& a) {
  return visit_sweep(a.pd, [](auto, auto) {}) ? nullptr : "not square 2/2, 3/2 or 3/1 windows";
}

template <typename T>
void fwd(const PoolArgs& a, const Typed<T>& t) {
  const PoolDesc& pd = a.pd;
  visit_sweep(pd, [&](auto k, auto st) {
    constexpr int K = decltype(k)::value, S = decltype(st)::value;
    const SweepGeo g = sweep_geo(pd, a.xd, a.yd, a.yd.h, a.yd.w);
    auto launch = [&](auto is_narrow, auto one_row) {
      fwd_sweep_kernel<T, K, S, decltype(is_narrow)::value, decltype(one_row)::value>
          <<<grid_for(g.threads), kBlock, 0, t.s>>>(g, divs_of(g), pd.mode, t.x, t.out, t.alpha,
                                                    t.beta);
    };
    visit_flags(narrow(g), g.band == 1, launch);
  });
}

template <typename T>
void bwd(const PoolArgs& a, const Typed<T>& t) {
  const PoolDesc& pd = a.pd;
  visit_sweep(pd, [&](auto k, auto st) {
    constexpr int K = decltype(k)::value, S = decltype(st)::value;
    const SweepGeo g =
        sweep_geo(pd, a.xd, a.yd, blocks_of(a.xd.h, pd.pad_h, S), blocks_of(a.xd.w, pd.pad_w, S));
    auto launch = [&](auto is_narrow, auto is_max) {
      bwd_sweep_kernel<T, K, S, decltype(is_narrow)::value, decltype(is_max)::value>
          <<<grid_for(g.threads), kBlock, 0, t.s>>>(g, divs_of(g), pd.mode, t.x, t.y, t.dy, t.out,
                                                    t.alpha, t.beta);
    };
    visit_flags(narrow(g), a.is_max(), launch);
  });
}

void run(Handle& h, const PoolArgs& a) {
  run_typed(kAllTypes, h, a, [&](const auto& t) { a.forward() ? fwd(a, t) : bwd(a, t); });
}

}  // namespace

const PoolImpl kPoolSweep{PoolAlgo::kSweep, Device::kCUDA, unsupported, channels_last_slower, run};

}  // namespace crema::prim::cuda
