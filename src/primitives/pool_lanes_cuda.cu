// Max pooling for K x K windows of stride 1 with "same" padding (pad (K - 1) / 2 on both axes, so
// P = H and Q = W: GoogLeNet's inception pools) on planes at most 32 columns wide. The lanes of a
// warp hold consecutive columns of 32 / W lines (a line: one plane's band of rows) and walk down
// them together; every warp-wide load and store is coalesced.
// Forward: a step loads one x per lane; the row's maximum over columns col - R .. col + R comes
// from the neighbours by shuffles, and the window's from the last K row maxima. The column sweep
// (pool_sweep_cuda.cu), which these planes took before, loads K cells per lane and step and
// reached 45-48% of the copy bandwidth on the inception pools (docs/benchmarks.md).
// Backward: window (p, q) belongs to the lane of column q alone: it finds the window's argmax once
// and hands (argmax cell, alpha * dy) by shuffles to the K lanes whose columns the window covers.
// A step thus loads one x and one dy per lane and evaluates one window per lane: the argmax is
// recomputed from the window's cells, which the lane holds, so y is never read (reading it cost
// 9-10%: googlenet:inception_3a/pool 0.1733 ms with it, 0.1575 without). The sweep
// has each lane load K x cells and K windows' y and dy and evaluate K windows per step; it was
// instruction-bound there (ncu on googlenet:inception_3a/pool at batch 128: 201.6M instructions
// for 19.3M outputs, 76% issue-active, L2 43% busy) at 1.45x cuDNN's time; this kernel: 118.8M,
// 0.95x (docs/benchmarks.md).
// Results equal the CPU's bit for bit. Forward: the CPU keeps the first of equal values in
// row-major order, and so does a left-to-right maximum of each row followed by a top-to-bottom
// maximum of the rows. Backward: each cell starts from beta * dx and receives its windows'
// gradients in (p, q) order. A window's argmax is the first cell of its maximum
// (scan_first_max): the first cell equal to the forward's y, which the CPU's backward looks for.
#include <cstdint>
#include <limits>

#include "primitives/cuda_util.cuh"
#include "primitives/pool_sweep.cuh"

namespace crema::prim::cuda {
namespace {

struct LaneGeo {
  int C, H, W;
  int64_t xn, xc, xw, yn, yc, yw;
  int xh, yh;  // row strides; a plane's rows span less than 2^31 elements
  int64_t planes;
  int band;       // rows per band; every line runs band + K - 1 steps
  int64_t lines;  // planes * bands, band-major
  int per_warp;   // lines per warp: 32 / W
  int64_t warps;  // ceil(lines / per_warp)
};

constexpr unsigned kFull = 0xffffffffu;
// Backward steps whose loads are in flight at once: one step's dependent chain (load, shuffles,
// compares, shuffles) left the kernel latency-bound (ncu: 50% issue-active, DRAM 34%) without
// them. Three (googlenet:inception_3a/pool 0.173-0.174 ms) against 2, 4 and 6: 0.174-0.175,
// 0.177 and 0.181 ms, when the kernel also read y; without y, 2 to 5 all ran 0.157-0.158 ms
// (docs/benchmarks.md).
constexpr int kAhead = 3;

// f32 is bounded to four blocks per SM (64 registers; unbounded it takes 72, three blocks).
template <typename T, int K>
__global__ void __launch_bounds__(kBlock, sizeof(T) == 4 ? 4 : 1)
    max_bwd_lanes_kernel(LaneGeo g, const T* __restrict__ x, const T* __restrict__ dy, T* dx,
                         T alpha, T beta) {
  constexpr int R = (K - 1) / 2;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const int lane = int(threadIdx.x) & 31;
  const int l = lane / g.W, col = lane - l * g.W;
  // Every lane of a warp runs the same iterations and steps (the shuffles need all 32); lanes
  // without a line of their own load nothing and store nothing.
  CREMA_CUDA_WARP_LOOP(warp, g.warps) {
    const LanePlace at = lane_place(g, warp, l);
    const bool valid = at.valid;
    const int64_t n = at.n, c = at.c;
    const T* xp = x + n * g.xn + c * g.xc + col * g.xw;
    const T* gp = dy + n * g.yn + c * g.yc + col * g.yw;
    T* dp = dx + n * g.xn + c * g.xc + col * g.xw;
    const int r0 = at.band * g.band, r1 = min(r0 + g.band, g.H);

    // This lane's cell of input row `row` (NaN outside the input: it is greater than nothing),
    // and its window's dy in window row p (0 where the line has no window p). Rows [0, x_rows)
    // hold the lane's cells, window rows [0, w_rows) the windows that reach the band's rows
    // (none for lanes without a line); one unsigned compare tests both ends.
    const unsigned x_rows = valid ? unsigned(g.H) : 0u;
    const unsigned w_rows = valid ? unsigned(min(g.H, r1 + R)) : 0u;
    auto load_x = [&](int row) { return unsigned(row) < x_rows ? xp[row * g.xh] : nan; };
    auto load_dy = [&](int p) { return unsigned(p) < w_rows ? gp[p * g.yh] : T(0); };
    // A row at columns col - R .. col + R from each lane's own cell.
    auto spread = [&](T own, T(&v)[K]) {
      v[R] = own;
#pragma unroll
      for (int d = -R; d <= R; ++d) {
        if (d == 0) continue;
        const T u = __shfl_sync(kFull, own, (lane + d) & 31);
        v[R + d] = unsigned(col + d) < unsigned(g.W) ? u : nan;
      }
    };
    // beta * dx of a row this line stores, else 0.
    auto prime = [&](int row) {
      return beta != T(0) && valid && row >= r0 && row < r1 ? beta * dp[row * g.xh] : T(0);
    };

    // win[r][j]: row p - R + r, column col - R + j, for the window row p of the step.
    T win[K][K];
#pragma unroll
    for (int r = 1; r < K; ++r) spread(load_x(r0 - 2 * R - 1 + r), win[r]);
    // acc[r]: row p - R + r.
    T acc[K];
#pragma unroll
    for (int r = 0; r < K; ++r) acc[r] = prime(r0 - 2 * R + r);
    // The loads of the next kAhead steps, issued that many steps early: xq[i] is row p + R + i,
    // gq[i] window row p + i.
    T xq[kAhead], gq[kAhead];
#pragma unroll
    for (int i = 0; i < kAhead; ++i) {
      xq[i] = load_x(r0 + i);
      gq[i] = load_dy(r0 - R + i);
    }

    for (int s = 0; s < g.band + 2 * R; ++s) {
      const int p = r0 - R + s;
#pragma unroll
      for (int r = 0; r + 1 < K; ++r)
#pragma unroll
        for (int j = 0; j < K; ++j) win[r][j] = win[r + 1][j];
      spread(xq[0], win[K - 1]);
      const T gm = alpha * gq[0];
#pragma unroll
      for (int i = 0; i + 1 < kAhead; ++i) {
        xq[i] = xq[i + 1];
        gq[i] = gq[i + 1];
      }
      xq[kAhead - 1] = load_x(p + R + kAhead);
      gq[kAhead - 1] = load_dy(p + kAhead);
      // This lane's window (p, col): its argmax as r * K + j, -1 where there is none.
      int at = -1;
      T m = std::numeric_limits<T>::lowest();
#pragma unroll
      for (int t = 0; t < K * K; ++t) scan_first_max(win[t / K][t % K], t, m, at);
      if (unsigned(p) >= w_rows) at = -1;
        // Windows q = col + d, in increasing q, add to this column's cells: the cell at the
        // window's column R - d.
#pragma unroll
      for (int d = -R; d <= R; ++d) {
        int a = at;
        T gw = gm;
        if (d != 0) {
          a = __shfl_sync(kFull, at, (lane + d) & 31);
          gw = __shfl_sync(kFull, gm, (lane + d) & 31);
          if (unsigned(col + d) >= unsigned(g.W)) a = -1;  // another line's lane
        }
#pragma unroll
        for (int r = 0; r < K; ++r)
          if (a == r * K + (R - d)) acc[r] = acc[r] + gw;
      }
      // Row p - R has all its windows now.
      const int done = p - R;
      if (valid && done >= r0 && done < r1) dp[done * g.xh] = acc[0];
#pragma unroll
      for (int r = 0; r + 1 < K; ++r) acc[r] = acc[r + 1];
      acc[K - 1] = prime(p + R + 1);
    }
  }
}

// Rows loaded ahead: two (measured with 1, 2, 3, 4 and 8 on googlenet:inception_3a/pool, the
// forward ran 0.074, 0.072, 0.085, 0.084 and 0.083 ms; docs/benchmarks.md).
constexpr int kFwdAhead = 2;

// f32 needs no bound: the kernel takes fewer than 64 registers.
template <typename T, int K>
__global__ void __launch_bounds__(kBlock)
    max_fwd_lanes_kernel(LaneGeo g, const T* __restrict__ x, T* y, T alpha, T beta) {
  constexpr int R = (K - 1) / 2;
  const T fill = -std::numeric_limits<T>::infinity();
  const int lane = int(threadIdx.x) & 31;
  const int l = lane / g.W, col = lane - l * g.W;
  CREMA_CUDA_WARP_LOOP(warp, g.warps) {
    const LanePlace at = lane_place(g, warp, l);
    const bool valid = at.valid;
    const int64_t n = at.n, c = at.c;
    const T* xp = x + n * g.xn + c * g.xc + col * g.xw;
    T* yp = y + n * g.yn + c * g.yc + col * g.yw;
    const int r0 = at.band * g.band, r1 = min(r0 + g.band, g.H);

    // This lane's cell of input row `row`; the fill (the maximum's identity) outside the input
    // and on lanes without a line.
    const unsigned x_rows = valid ? unsigned(g.H) : 0u;
    auto load_x = [&](int row) { return unsigned(row) < x_rows ? xp[row * g.xh] : fill; };
    // The maximum of a row's cells at columns col - R .. col + R, left to right.
    auto row_max = [&](T own) {
      T v = fill;
#pragma unroll
      for (int d = -R; d <= R; ++d) {
        T u = own;
        if (d != 0) {
          u = __shfl_sync(kFull, own, (lane + d) & 31);
          if (unsigned(col + d) >= unsigned(g.W)) u = fill;  // padding, or another line's lane
        }
        v = u > v ? u : v;
      }
      return v;
    };

    // rm[r]: the row maximum of input row p - R + r, for the output row p of the step.
    T rm[K];
#pragma unroll
    for (int r = 1; r < K; ++r) rm[r] = row_max(load_x(r0 - R - 1 + r));
    // xq[i]: input row p + R + i, loaded kFwdAhead steps early.
    T xq[kFwdAhead];
#pragma unroll
    for (int i = 0; i < kFwdAhead; ++i) xq[i] = load_x(r0 + R + i);

    // Every lane runs g.band steps, the lines of the last band storing fewer.
    for (int s = 0; s < g.band; ++s) {
      const int p = r0 + s;
#pragma unroll
      for (int r = 0; r + 1 < K; ++r) rm[r] = rm[r + 1];
      rm[K - 1] = row_max(xq[0]);
#pragma unroll
      for (int i = 0; i + 1 < kFwdAhead; ++i) xq[i] = xq[i + 1];
      xq[kFwdAhead - 1] = load_x(p + R + kFwdAhead);
      T v = fill;
#pragma unroll
      for (int r = 0; r < K; ++r) v = rm[r] > v ? rm[r] : v;
      if (valid && p < r1) blend_store(yp + p * g.yh, v, alpha, beta);
    }
  }
}

// The windows these kernels take: K x K, stride 1, "same" padding, planes at most 32 wide whose
// rows span less than 2^31 elements.
template <int K>
bool lanes_fit(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  return pd.mode == PoolMode::kMax && pd.kernel_h == K && pd.kernel_w == K && pd.stride_h == 1 &&
         pd.stride_w == 1 && pd.pad_h == (K - 1) / 2 && pd.pad_w == (K - 1) / 2 && xd.w <= 32 &&
         yd.h == xd.h && yd.w == xd.w && xd.h >= 1 && xd.w >= 1 && rows_fit_int(xd, yd);
}

}  // namespace

template <typename T>
bool pool_max_fwd_lanes(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                        const TensorDesc& yd, T* y, T alpha, T beta) {
  constexpr int K = 3;
  if (!lanes_fit<K>(pd, xd, yd)) return false;
  LaneGeo g{};
  plan_lanes(g, xd, yd, xd.h, 32 / xd.w);
  max_fwd_lanes_kernel<T, K><<<grid_for(g.warps * 32), kBlock, 0, s>>>(g, x, y, alpha, beta);
  return true;
}

template <typename T>
bool pool_max_bwd_lanes(cudaStream_t s, const PoolDesc& pd, const TensorDesc& yd, const T* dy,
                        const TensorDesc& xd, const T* x, T* dx, T alpha, T beta) {
  constexpr int K = 3;
  if (!lanes_fit<K>(pd, xd, yd)) return false;
  LaneGeo g{};
  plan_lanes(g, xd, yd, xd.h, 32 / xd.w);
  max_bwd_lanes_kernel<T, K><<<grid_for(g.warps * 32), kBlock, 0, s>>>(g, x, dy, dx, alpha, beta);
  return true;
}

#define CREMA_POOL_LANES(T)                                                                       \
  template bool pool_max_fwd_lanes<T>(cudaStream_t, const PoolDesc&, const TensorDesc&, const T*, \
                                      const TensorDesc&, T*, T, T);                               \
  template bool pool_max_bwd_lanes<T>(cudaStream_t, const PoolDesc&, const TensorDesc&, const T*, \
                                      const TensorDesc&, const T*, T*, T, T);
CREMA_POOL_LANES(float)
CREMA_POOL_LANES(double)
#undef CREMA_POOL_LANES

}  // namespace crema::prim::cuda
