// Max pooling for K x K windows of stride 1 with "same" padding (pad (K - 1) / 2 on both axes, so
// P = H and Q = W: GoogLeNet's inception pools) on narrow planes. A lane holds V adjacent columns
// of a row, and the lanes of a warp hold consecutive columns of 32 / L lines (a line: one plane's
// band of rows, L = W / V lanes wide) and walk down them together; every warp-wide load and store
// is coalesced. The forward takes V = 1 (planes at most 32 wide); the backward V = 2 where rows
// of packed cells start on two-cell boundaries (planes at most 64 wide; see lane_cells), else 1.
// Forward: a step loads one x per lane; the row's maximum over columns col - R .. col + R comes
// from the neighbours by shuffles, and the window's from the last K row maxima. The column sweep
// (pool_sweep_cuda.cu), which these planes took before, loads K cells per lane and step and
// reached 45-48% of the copy bandwidth on the inception pools (docs/benchmarks.md). A forward
// with two cells per lane ran 0.068 ms against this one's 0.072 on googlenet:inception_3a/pool
// but 0.053 against 0.052 on inception_4a (14 wide: half the warps), so it was not kept.
// Where a warp's lines are whole packed planes of at most 4 KB, and there are enough of them (see
// kStageWarps), the forward first copies its planes into shared memory with asynchronous 16-byte
// copies, all in flight at once, then takes the same steps from the tile. Loading one row per step
// left it latency-bound (a warp had two rows ahead in flight, 112 bytes on inception_4a): at batch
// 128, inception_3a 0.0719 -> 0.0588 ms and inception_4a 0.0521 -> 0.0425 (76% -> 92% and 68% ->
// 84% of a copy of their bytes; docs/benchmarks.md).
// Backward: window (p, q) belongs to the lane of column q alone: it finds the window's argmax once
// and hands (argmax cell, alpha * dy) by shuffles to the lanes whose columns the window covers.
// A step thus loads V x and V dy per lane and evaluates V windows per lane: the argmax is
// recomputed from the window's cells, which the lane holds, so y is never read (reading it cost
// 9-10%: googlenet:inception_3a/pool 0.1733 ms with it, 0.1575 without). The sweep
// has each lane load K x cells and K windows' y and dy and evaluate K windows per step; it was
// instruction-bound there (ncu on googlenet:inception_3a/pool at batch 128: 201.6M instructions
// for 19.3M outputs, 76% issue-active, L2 43% busy) at 1.45x cuDNN's time; this kernel with
// V = 1: 118.8M, 0.95x. Two cells per lane halve the shuffles and load instructions per cell:
// inception_3a 0.155 -> 0.122 ms, inception_4a 0.107 -> 0.090 (docs/benchmarks.md).
// Results equal the CPU's bit for bit. Forward: the CPU keeps the first of equal values in
// row-major order, and so does a left-to-right maximum of each row followed by a top-to-bottom
// maximum of the rows. Backward: each cell starts from beta * dx and receives its windows'
// gradients in (p, q) order. A window's argmax is the first cell of its maximum
// (scan_first_max): the first cell equal to the forward's y, which the CPU's backward looks for.
#include <cuda_pipeline_primitives.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_cuda.cuh"

namespace crema::prim::cuda {
namespace {

struct LaneGeo {
  int C, H, W;
  int64_t xn, xc, xw, yn, yc, yw;
  int xh, yh;  // row strides; a plane's rows span less than 2^31 elements
  int64_t planes;
  int band;       // rows per band; every line runs band + K - 1 steps
  int64_t lines;  // planes * bands, band-major
  int L;          // lanes per line: W / V
  int per_warp;   // lines per warp: 32 / L
  int64_t warps;  // ceil(lines / per_warp)
};

constexpr unsigned kFull = 0xffffffffu;

// The cells of a row at columns col - R .. col + V - 1 + R, from the lane's own V cells and its
// neighbours' (`outside` where the neighbour is past the line's ends: padding, another line).
template <int V, int R, typename T>
__device__ __forceinline__ void spread(const Cells<T, V>& own, int lane, bool has_left,
                                       bool has_right, T outside, T (&e)[V + 2 * R]) {
  static_assert(R <= V, "a row's window reaches only the next lane");
#pragma unroll
  for (int i = 0; i < V; ++i) e[R + i] = own.v[i];
#pragma unroll
  for (int d = 1; d <= R; ++d) {
    const T left = __shfl_sync(kFull, own.v[V - d], (lane - 1) & 31);
    const T right = __shfl_sync(kFull, own.v[d - 1], (lane + 1) & 31);
    e[R - d] = has_left ? left : outside;
    e[R + V - 1 + d] = has_right ? right : outside;
  }
}

// Backward steps whose loads are in flight at once: one step's dependent chain (load, shuffles,
// compares, shuffles) left the kernel latency-bound (ncu: 50% issue-active, DRAM 34%) without
// them. Three (googlenet:inception_3a/pool 0.173-0.174 ms) against 2, 4 and 6: 0.174-0.175,
// 0.177 and 0.181 ms, when the kernel also read y; without y, 2 to 5 all ran 0.157-0.158 ms
// (docs/benchmarks.md).
constexpr int kAhead = 3;

// f32 is bounded to four blocks per SM (64 registers; unbounded it takes 72, three blocks).
template <typename T, int K, int V>
__global__ void __launch_bounds__(kBlock, sizeof(T) == 4 ? 4 : 1)
    max_bwd_lanes_kernel(LaneGeo g, const T* __restrict__ x, const T* __restrict__ dy, T* dx,
                         T alpha, T beta) {
  constexpr int R = (K - 1) / 2;
  constexpr int E = V + 2 * R;  // columns of a row the lane's V windows cover
  using C = Cells<T, V>;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const int lane = int(threadIdx.x) & 31;
  const int l = lane / g.L, lc = lane - l * g.L, col = lc * V;
  const bool has_left = lc > 0, has_right = lc + 1 < g.L;
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

    // This lane's cells of input row `row` (NaN outside the input: it is greater than nothing),
    // and its windows' dy in window row p (0 where the line has no window p). Rows [0, x_rows)
    // hold the lane's cells, window rows [0, w_rows) the windows that reach the band's rows
    // (none for lanes without a line); one unsigned compare tests both ends.
    const unsigned x_rows = valid ? unsigned(g.H) : 0u;
    const unsigned w_rows = valid ? unsigned(min(g.H, r1 + R)) : 0u;
    auto load_x = [&](int row) {
      return unsigned(row) < x_rows ? *reinterpret_cast<const C*>(xp + row * g.xh)
                                    : splat<T, V>(nan);
    };
    auto load_dy = [&](int p) {
      return unsigned(p) < w_rows ? *reinterpret_cast<const C*>(gp + p * g.yh) : splat<T, V>(T(0));
    };
    // beta * dx of a row this line stores, else 0.
    auto prime = [&](int row) {
      C v = splat<T, V>(T(0));
      if (beta != T(0) && valid && row >= r0 && row < r1) {
        v = *reinterpret_cast<const C*>(dp + row * g.xh);
#pragma unroll
        for (int i = 0; i < V; ++i) v.v[i] = beta * v.v[i];
      }
      return v;
    };

    // win[r][e]: row p - R + r, column col - R + e, for the window row p of the step.
    T win[K][E];
#pragma unroll
    for (int r = 1; r < K; ++r)
      spread<V, R>(load_x(r0 - 2 * R - 1 + r), lane, has_left, has_right, nan, win[r]);
    // acc[r]: row p - R + r.
    C acc[K];
#pragma unroll
    for (int r = 0; r < K; ++r) acc[r] = prime(r0 - 2 * R + r);
    // The loads of the next kAhead steps, issued that many steps early: xq[i] is row p + R + i,
    // gq[i] window row p + i.
    C xq[kAhead], gq[kAhead];
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
        for (int e = 0; e < E; ++e) win[r][e] = win[r + 1][e];
      spread<V, R>(xq[0], lane, has_left, has_right, nan, win[K - 1]);
      T gm[V];
#pragma unroll
      for (int u = 0; u < V; ++u) gm[u] = alpha * gq[0].v[u];
#pragma unroll
      for (int i = 0; i + 1 < kAhead; ++i) {
        xq[i] = xq[i + 1];
        gq[i] = gq[i + 1];
      }
      xq[kAhead - 1] = load_x(p + R + kAhead);
      gq[kAhead - 1] = load_dy(p + kAhead);
      // This lane's windows (p, col + u): their argmax as r * K + j, -1 where there is none.
      int am[V];
#pragma unroll
      for (int u = 0; u < V; ++u) {
        am[u] = -1;
        T m = std::numeric_limits<T>::lowest();
#pragma unroll
        for (int t = 0; t < K * K; ++t) scan_first_max(win[t / K][u + t % K], t, m, am[u]);
        if (unsigned(p) >= w_rows) am[u] = -1;
      }
      // Windows q = col + u, u = -R .. V - 1 + R in increasing q, add to this lane's cells:
      // cell v is the window's column v - u + R. Those left and right of the lane's own come
      // from the neighbours.
#pragma unroll
      for (int u = -R; u < V + R; ++u) {
        int a;
        T gw;
        if (u < 0) {
          a = __shfl_sync(kFull, am[V + u], (lane - 1) & 31);
          gw = __shfl_sync(kFull, gm[V + u], (lane - 1) & 31);
          if (!has_left) a = -1;
        } else if (u >= V) {
          a = __shfl_sync(kFull, am[u - V], (lane + 1) & 31);
          gw = __shfl_sync(kFull, gm[u - V], (lane + 1) & 31);
          if (!has_right) a = -1;
        } else {
          a = am[u];
          gw = gm[u];
        }
#pragma unroll
        for (int r = 0; r < K; ++r)
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const int j = v - u + R;
            if (j >= 0 && j < K && a == r * K + j) acc[r].v[v] = acc[r].v[v] + gw;
          }
      }
      // Row p - R has all its windows now.
      const int done = p - R;
      if (valid && done >= r0 && done < r1) *reinterpret_cast<C*>(dp + done * g.xh) = acc[0];
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
template <typename T, int K, bool kStaged>
__global__ void __launch_bounds__(kBlock)
    max_fwd_lanes_kernel(LaneGeo g, const T* __restrict__ x, T* y, T alpha, T beta) {
  constexpr int R = (K - 1) / 2;
  const T fill = -std::numeric_limits<T>::infinity();
  const int lane = int(threadIdx.x) & 31;
  const int l = lane / g.W, col = lane - l * g.W;
  // Staged: each warp's tile holds its per_warp whole planes.
  extern __shared__ uint4 staged[];
  const int plane = g.H * g.W;
  T* tile = reinterpret_cast<T*>(staged) + (threadIdx.x / 32) * g.per_warp * plane;
  CREMA_CUDA_WARP_LOOP(warp, g.warps) {
    const LanePlace at = lane_place(g, warp, l);
    const bool valid = at.valid;
    const int64_t n = at.n, c = at.c;
    const T* xp = x + n * g.xn + c * g.xc + col * g.xw;
    if constexpr (kStaged) {
      // The warp's lines are whole packed planes, consecutive in x: every vector of them is in
      // flight at once, copied to the tile without passing through registers.
      const int64_t first = warp * g.per_warp;
      const int vecs = int(min(int64_t(g.per_warp), g.lines - first)) * plane * int(sizeof(T)) / 16;
      const uint4* src = reinterpret_cast<const uint4*>(x + first * g.xc);
      __syncwarp();  // the last iteration's reads of the tile are done
      for (int v = lane; v < vecs; v += 32)
        __pipeline_memcpy_async(reinterpret_cast<uint4*>(tile) + v, src + v, sizeof(uint4));
      __pipeline_commit();
      __pipeline_wait_prior(0);
      __syncwarp();
      xp = tile + l * plane + col;
    }
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

// The forward stages a warp's planes where they fit in this many bytes (googlenet:inception_3a's
// 28 x 28 planes: 3136), a block's tiles in 8 times that, and where whole planes make at least
// kStageWarps warps. Below, it cuts planes into bands of rows, unstaged, for more warps: at batch
// 8 (about 2^11 warps of whole planes) staging ran 0.0099-0.0100 ms against 0.0091-0.0093 on
// inception_3a and 0.0072 / 0.0153 against 0.0080-0.0082 on inception_4a; at batch 32 (7680 and
// 8192 warps) 0.0200 against 0.0228 and 0.0145 against 0.0180 (docs/benchmarks.md).
constexpr int64_t kStageBytes = 4096;
constexpr int64_t kStageWarps = int64_t(1) << 12;

// The windows these kernels take: K x K, stride 1, "same" padding, rows that span less than 2^31
// elements.
template <int K>
bool lanes_fit(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  return pd.mode == PoolMode::kMax && pd.kernel_h == K && pd.kernel_w == K && pd.stride_h == 1 &&
         pd.stride_w == 1 && pd.pad_h == (K - 1) / 2 && pd.pad_w == (K - 1) / 2 && yd.h == xd.h &&
         yd.w == xd.w && xd.h >= 1 && xd.w >= 1 && rows_fit_int(xd, yd);
}

// The backward's cells per lane: 2 where planes are at most 64 wide and every row of the tensors
// (descriptors and pointers) starts on a 2-cell boundary with packed cells, 1 where planes are at
// most 32 wide, else 0 (the kernel does not fit).
int lane_cells(const PoolArgs& a) {
  const TensorDesc &xd = a.xd, &yd = a.yd;
  const bool pairs = xd.w % 2 == 0 && xd.w <= 64 && rows_on_cells(xd, 2, {a.x, a.out}) &&
                     rows_on_cells(yd, 2, {a.dy});
  return pairs ? 2 : xd.w <= 32 ? 1 : 0;
}

template <int V>
LaneGeo lane_geo(const TensorDesc& xd, const TensorDesc& yd, bool whole = false) {
  LaneGeo g{};
  g.L = xd.w / V;
  plan_lanes(g, xd, yd, xd.h, 32 / g.L, whole);
  return g;
}

constexpr int K = 3;

const char* unsupported(const PoolArgs& a) {
  if (const char* why = half_data(a)) return why;
  if (!lanes_fit<K>(a.pd, a.xd, a.yd))
    return "not max 3/1 windows with pad 1, rows under 2^31 elements";
  if (a.forward() ? a.xd.w > 32 : lane_cells(a) == 0) return "planes too wide";
  return nullptr;
}

template <typename T>
void fwd(const PoolArgs& a, const Typed<T>& t) {
  const TensorDesc &xd = a.xd, &yd = a.yd;
  const int per_warp = 32 / xd.w;
  const int64_t plane = int64_t(xd.h) * xd.w, planes = int64_t(xd.n) * xd.c;
  const int64_t tile_bytes = per_warp * plane * int64_t(sizeof(T));
  const bool staged = xd.is_packed_nchw() && plane * sizeof(T) % 16 == 0 && aligned(t.x, 16) &&
                      tile_bytes <= kStageBytes &&
                      (planes + per_warp - 1) / per_warp >= kStageWarps;
  const LaneGeo g = lane_geo<1>(xd, yd, staged);
  if (staged) {
    const auto kernel = max_fwd_lanes_kernel<T, K, true>;
    // Tiles of several blocks per SM (pool_global_cuda.cu: the driver's own carveout varies).
    cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                         cudaSharedmemCarveoutMaxShared);
    kernel<<<grid_for(g.warps * 32), kBlock, size_t(tile_bytes) * (kBlock / 32), t.s>>>(
        g, t.x, t.out, t.alpha, t.beta);
  } else {
    max_fwd_lanes_kernel<T, K, false>
        <<<grid_for(g.warps * 32), kBlock, 0, t.s>>>(g, t.x, t.out, t.alpha, t.beta);
  }
}

template <typename T>
void bwd(const PoolArgs& a, const Typed<T>& t) {
  auto launch = [&](auto v) {
    constexpr int V = decltype(v)::value;
    const LaneGeo g = lane_geo<V>(a.xd, a.yd);
    max_bwd_lanes_kernel<T, K, V>
        <<<grid_for(g.warps * 32), kBlock, 0, t.s>>>(g, t.x, t.dy, t.out, t.alpha, t.beta);
  };
  if (lane_cells(a) == 2)
    launch(std::integral_constant<int, 2>{});
  else
    launch(std::integral_constant<int, 1>{});
}

void run(Handle& h, const PoolArgs& a) {
  run_typed(h, a, [&](const auto& t) { a.forward() ? fwd(a, t) : bwd(a, t); });
}

}  // namespace

const PoolImpl kPoolLanes{PoolAlgo::kLanes, Device::kCUDA, unsupported, channels_last_slower, run};

}  // namespace crema::prim::cuda
