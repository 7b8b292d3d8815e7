// Max pooling for 3 x 3 windows of stride 2 (CaffeNet's and GoogLeNet's downsampling pools,
// CIFAR-10's pool1) on planes of at most 32 column blocks (63 or 64 columns). Input
// columns are cut into blocks of two, block b holding columns 2b - pad_w and 2b - pad_w + 1
// (rows likewise), so that window (p, q) covers block (p, q) whole, the first column of block
// (p, q + 1), the first row of block (p + 1, q) and one cell of block (p + 1, q + 1). The lanes
// of a warp hold consecutive column blocks of 32 / B lines (B blocks a line; a line: one plane's
// band of block rows) and walk down them together. The lane of block q owns window q: each step
// it loads its block's two columns of the two rows the next window row adds and the window's dy,
// takes the third column from the next lane by a shuffle, finds the argmax once from the window's
// cells (y is never read) and hands (argmax cell, alpha * dy) to the next lane, whose first
// column the window covers. The column sweep (pool_sweep_cuda.cu), which these planes took
// before, loads five columns of those rows and two windows' y and dy per lane and step, and
// evaluates every window twice (docs/benchmarks.md has both measured).
// Results equal the CPU's bit for bit: each cell starts from beta * dx and receives its windows'
// gradients in (p, q) order. A window's argmax is the first cell of its maximum
// (scan_first_max): the first cell equal to the forward's y, which the CPU's backward looks for.
// The forward (below the backward) walks the same lanes; against the forward sweep it measured
// 0.95x on caffenet:pool2 and 0.97-1.03x on the other layers (docs/benchmarks.md).
#include <cstdint>
#include <limits>

#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_cuda.cuh"
#include "primitives/pool/pool_ops.h"

namespace crema::prim::cuda {
namespace {

struct Lane2Geo {
  int C, H, W, P, Q, ph, pw;
  int64_t xn, xc, xw, yn, yc, yw;
  int xh, yh;  // row strides; a plane's rows span less than 2^31 elements
  int64_t planes;
  int B, R;       // column blocks (lanes per line) and block rows
  int band;       // block rows per band; a line runs band + 1 steps
  int64_t lines;  // planes * bands, band-major
  int per_warp;   // lines per warp: 32 / B
  int64_t warps;  // ceil(lines / per_warp)
};

constexpr unsigned kFull = 0xffffffffu;
// Window rows whose loads are in flight at once (without loads ahead, each step's chain of
// load, shuffles and compares leaves a lane kernel latency-bound). Two ahead at four blocks per
// SM (64 registers) measured best against two, three and four ahead at three blocks
// (docs/benchmarks.md); three ahead spills under the four-block bound.
constexpr int kAhead = 2;

// f32 is bounded to four blocks per SM (64 registers, no spill; unbounded it takes 71).
template <typename T>
__global__ void __launch_bounds__(kBlock, sizeof(T) == 4 ? 4 : 1)
    max_bwd_lanes_s2_kernel(Lane2Geo g, const T* __restrict__ x, const T* __restrict__ dy, T* dx,
                            T alpha, T beta) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const int lane = int(threadIdx.x) & 31;
  const int l = lane / g.B, b = lane - l * g.B;
  // Every lane of a warp runs the same iterations and steps (the shuffles need all 32); lanes
  // without a line of their own load nothing and store nothing.
  CREMA_CUDA_WARP_LOOP(warp, g.warps) {
    const LanePlace at = lane_place(g, warp, l);
    const bool valid = at.valid;
    const int64_t n = at.n, c = at.c;
    const int c0 = 2 * b - g.pw;  // the block's first column
    const int64_t xo = n * g.xn + c * g.xc + int64_t(c0) * g.xw;
    const int64_t yo = n * g.yn + c * g.yc + int64_t(b) * g.yw;
    const int r0 = at.band * g.band, r1 = min(r0 + g.band, g.R);  // this line's block rows

    // Rows [0, rows[j]) hold cells of column c0 + j (none outside the input or off a line),
    // window rows [0, w_rows) this lane's windows; one unsigned compare tests both ends.
    unsigned rows[2];
#pragma unroll
    for (int j = 0; j < 2; ++j)
      rows[j] = valid && unsigned(c0 + j) < unsigned(g.W) ? unsigned(g.H) : 0u;
    const unsigned w_rows = valid && b < g.Q ? unsigned(g.P) : 0u;
    // Input cells read NaN outside the input (greater than nothing); windows that do not exist
    // read dy 0.
    auto load_x = [&](int row, int j) {
      return unsigned(row) < rows[j] ? x[xo + j * g.xw + row * g.xh] : nan;
    };
    auto load_dy = [&](int p) { return unsigned(p) < w_rows ? dy[yo + p * g.yh] : T(0); };
    // The block's cell of `row`, column j, is this line's to store.
    auto owns = [&](int row, int j, int block_row) {
      return unsigned(row) < rows[j] && block_row >= r0 && block_row < r1;
    };
    auto prime = [&](int row, int j, int block_row) {
      return beta != T(0) && owns(row, j, block_row) ? beta * dx[xo + j * g.xw + row * g.xh] : T(0);
    };
    // The window's third column of a row: the next lane's first column (NaN past the line).
    auto third = [&](T next_first) {
      const T u = __shfl_sync(kFull, next_first, (lane + 1) & 31);
      return b + 1 < g.B ? u : nan;
    };

    // Window row p covers input rows 2p - ph + [0, 3): win[i][j] is row i, column c0 + j.
    // Its row 0 is the previous window row's row 2; each step loads rows 1 and 2.
    const int p0 = r0 - 1;
    T win[3][3];
    {
      const int row = 2 * p0 - g.ph;  // row 0 of window row p0, moved there by its step
      win[2][0] = load_x(row, 0);
      win[2][1] = load_x(row, 1);
      win[2][2] = third(win[2][0]);
    }
    // Accumulators: blk[i][j], block row p, row i, column j; next[j], block row p + 1, row 0.
    T blk[2][2], next[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      blk[0][j] = blk[1][j] = T(0);  // block row p0 is not this line's
      next[j] = prime(2 * r0 - g.ph, j, r0);
    }
    // The loads of window rows p .. p + kAhead - 1, issued kAhead steps early: xq[i][r][j] is
    // input row 2(p + i) - ph + 1 + r, column c0 + j.
    T xq[kAhead][2][2], gq[kAhead];
    auto fetch = [&](int p, T(&xr)[2][2], T& gv) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int j = 0; j < 2; ++j) xr[r][j] = load_x(2 * p - g.ph + 1 + r, j);
      gv = load_dy(p);
    };
#pragma unroll
    for (int i = 0; i < kAhead; ++i) fetch(p0 + i, xq[i], gq[i]);

    for (int p = p0; p < r1; ++p) {
#pragma unroll
      for (int j = 0; j < 3; ++j) win[0][j] = win[2][j];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        win[r + 1][0] = xq[0][r][0];
        win[r + 1][1] = xq[0][r][1];
        win[r + 1][2] = third(xq[0][r][0]);
      }
      const T gm = alpha * gq[0];
#pragma unroll
      for (int i = 0; i + 1 < kAhead; ++i) {
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int j = 0; j < 2; ++j) xq[i][r][j] = xq[i + 1][r][j];
        gq[i] = gq[i + 1];
      }
      fetch(p + kAhead, xq[kAhead - 1], gq[kAhead - 1]);

      // This lane's window (p, b): its argmax as i * 3 + j, -1 where there is none.
      int at = -1;
      T m = std::numeric_limits<T>::lowest();
#pragma unroll
      for (int t = 0; t < 9; ++t) scan_first_max(win[t / 3][t % 3], t, m, at);
      if (unsigned(p) >= w_rows) at = -1;
      // Window (p, b - 1) first, then (p, b): (p, q) order. The left window's third column is
      // this block's first.
      int left = __shfl_sync(kFull, at, (lane - 1) & 31);
      const T g_left = __shfl_sync(kFull, gm, (lane - 1) & 31);
      if (b == 0) left = -1;
      if (left == 2) blk[0][0] += g_left;
      if (left == 5) blk[1][0] += g_left;
      if (left == 8) next[0] += g_left;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        if (at == j) blk[0][j] += gm;
        if (at == 3 + j) blk[1][j] += gm;
        if (at == 6 + j) next[j] += gm;
      }
      // Block row p has all its windows now.
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int row = 2 * p - g.ph + i;
          if (owns(row, j, p)) dx[xo + j * g.xw + row * g.xh] = blk[i][j];
        }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        blk[0][j] = next[j];
        blk[1][j] = prime(2 * (p + 1) - g.ph + 1, j, p + 1);
        next[j] = prime(2 * (p + 2) - g.ph, j, p + 2);
      }
    }
  }
}

// Forward (max): the lane of block q computes window q. Each step loads its block's two columns
// of the two rows the next window row adds, takes their third column from the next lane, and
// folds each row left to right and the window's rows top to bottom, keeping the row maximum its
// last row shares with the next window row. The CPU's row-major scan keeps the first of equal
// values; so do these two folds, so the results are equal bit for bit.
// Four blocks per SM: bounded by the block size alone, ptxas spilled 4 bytes at 48 registers.
template <typename T>
__global__ void __launch_bounds__(kBlock, 4)
    max_fwd_lanes_s2_kernel(Lane2Geo g, const T* __restrict__ x, T* y, T alpha, T beta) {
  const T fill = -std::numeric_limits<T>::infinity();
  const int lane = int(threadIdx.x) & 31;
  const int l = lane / g.B, b = lane - l * g.B;
  CREMA_CUDA_WARP_LOOP(warp, g.warps) {
    const LanePlace at = lane_place(g, warp, l);
    const bool valid = at.valid;
    const int64_t n = at.n, c = at.c;
    const int c0 = 2 * b - g.pw;
    const int64_t xo = n * g.xn + c * g.xc + int64_t(c0) * g.xw;
    const int64_t yo = n * g.yn + c * g.yc + int64_t(b) * g.yw;
    const int r0 = at.band * g.band, r1 = min(r0 + g.band, g.P);  // this line's output rows
    const bool stores = valid && b < g.Q;

    unsigned rows[2];
#pragma unroll
    for (int j = 0; j < 2; ++j)
      rows[j] = valid && unsigned(c0 + j) < unsigned(g.W) ? unsigned(g.H) : 0u;
    // Cells outside the input (and off a line) read the maximum's identity.
    auto load_x = [&](int row, int j) {
      return unsigned(row) < rows[j] ? x[xo + j * g.xw + row * g.xh] : fill;
    };
    // A row's maximum over the window's columns c0, c0 + 1 and the next lane's c0.
    auto row_max = [&](T a0, T a1) {
      T a2 = __shfl_sync(kFull, a0, (lane + 1) & 31);
      if (b + 1 >= g.B) a2 = fill;  // past the line
      T v = a0 > fill ? a0 : fill;
      v = a1 > v ? a1 : v;
      return a2 > v ? a2 : v;
    };

    // Window row p covers input rows 2p - ph + [0, 3); its row 0 is the previous one's row 2.
    T shared = row_max(load_x(2 * r0 - g.ph, 0), load_x(2 * r0 - g.ph, 1));
    // Rows 1 and 2 of window rows p .. p + kAhead - 1, loaded kAhead steps early.
    T xq[kAhead][2][2];
    auto fetch = [&](int p, T(&xr)[2][2]) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int j = 0; j < 2; ++j) xr[r][j] = load_x(2 * p - g.ph + 1 + r, j);
    };
#pragma unroll
    for (int i = 0; i < kAhead; ++i) fetch(r0 + i, xq[i]);

    // Every lane runs g.band steps, the lines of the last band storing fewer.
    for (int s = 0; s < g.band; ++s) {
      const int p = r0 + s;
      const T m1 = row_max(xq[0][0][0], xq[0][0][1]);
      const T m2 = row_max(xq[0][1][0], xq[0][1][1]);
#pragma unroll
      for (int i = 0; i + 1 < kAhead; ++i)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int j = 0; j < 2; ++j) xq[i][r][j] = xq[i + 1][r][j];
      fetch(p + kAhead, xq[kAhead - 1]);
      T v = shared;
      v = m1 > v ? m1 : v;
      v = m2 > v ? m2 : v;
      shared = m2;
      if (stores && p < r1) blend_store(y + yo + p * g.yh, v, alpha, beta);
    }
  }
}

// The windows the lane kernels take: 3 x 3, stride 2, planes of at most 32 column blocks, every
// window starting inside a block (Caffe's shapes: the last window starts inside the input or its
// padding), a plane's rows spanning less than 2^31 elements. pool.cpp has checked the shapes for
// both directions: non-empty, pads below the kernel.
const char* unsupported(const PoolArgs& a) {
  if (const char* why = half_data(a)) return why;
  const PoolDesc& pd = a.pd;
  if (!a.is_max() || pd.kernel_h != 3 || pd.kernel_w != 3 || pd.stride_h != 2 || pd.stride_w != 2)
    return "not max 3/2 windows";
  const int B = pool_ops::blocks_of(a.xd.w, pd.pad_w, 2);
  const int R = pool_ops::blocks_of(a.xd.h, pd.pad_h, 2);
  if (B > 32) return "planes of more than 32 column blocks";
  if (a.yd.w > B || a.yd.h > R) return "a window starts past the last block";
  if (!rows_fit_int(a.xd, a.yd)) return "2^31 elements or more";
  return nullptr;
}

Lane2Geo geo_of(const PoolArgs& a) {
  Lane2Geo g{};
  g.P = a.yd.h;
  g.Q = a.yd.w;
  g.ph = a.pd.pad_h;
  g.pw = a.pd.pad_w;
  g.B = pool_ops::blocks_of(a.xd.w, a.pd.pad_w, 2);
  g.R = pool_ops::blocks_of(a.xd.h, a.pd.pad_h, 2);
  return g;
}

template <typename T>
void fwd(const PoolArgs& a, const Typed<T>& t) {
  Lane2Geo g = geo_of(a);
  plan_lanes(g, a.xd, a.yd, g.P, 32 / g.B);
  max_fwd_lanes_s2_kernel<T>
      <<<grid_for(g.warps * 32), kBlock, 0, t.s>>>(g, t.x, t.out, t.alpha, t.beta);
}

template <typename T>
void bwd(const PoolArgs& a, const Typed<T>& t) {
  Lane2Geo g = geo_of(a);
  plan_lanes(g, a.xd, a.yd, g.R, 32 / g.B);
  max_bwd_lanes_s2_kernel<T>
      <<<grid_for(g.warps * 32), kBlock, 0, t.s>>>(g, t.x, t.dy, t.out, t.alpha, t.beta);
}

void run(Handle& h, const PoolArgs& a) {
  run_typed(h, a, [&](const auto& t) { a.forward() ? fwd(a, t) : bwd(a, t); });
}

}  // namespace

const PoolImpl kPoolLanesS2{PoolAlgo::kLanesS2, Device::kCUDA, unsupported, channels_last_slower,
                            run};

}  // namespace crema::prim::cuda
