// The "rows" row of pooling's table: passes in which a thread owns adjacent cells of a row of y
// or dx, stores them as one vector and walks nothing: the forward of 2/2 and 3/2 windows
// (kernel/stride, no padding, an even output width), the max backward of 2 x 2 windows of stride
// 2 that tile their planes, and the average backward of the 2/2 and 3/2 windows.
// Forward: V outputs per thread load their K input rows as 2V-cell vectors (two per row, and for
// K = 3 the cell after them), all before any is used; the sweep loads one cell at a time, two
// columns apart. Replayed as graphs (bench_prim), ms: lenet:pool1 0.0039 -> 0.0036, lenet:pool2
// 0.0028 -> 0.0026, cifar10_quick:pool2 0.0047-0.0049 -> 0.0039 (cuDNN 0.0042, 0.0031, 0.0047).
// Max 3/2 windows too: googlenet:pool1 and resnet50:pool1 (112 wide) 0.213 ms in the sweep, 0.168
// here; googlenet:pool2 0.146 in planes, 0.127 here (H100, bench_prim --pool-algo=all).
// Max, H = 2P and W = 2Q (LeNet's pools, VGG's): the windows are disjoint and cover every cell
// once. A thread takes V adjacent windows of a window row, loads their two input rows as 2V-cell
// vectors and their V dy as one, finds each window's first maximum from x (y is not read), and
// stores both rows of dx as 2V-cell vectors. The sweep, which these windows took before, reads y
// besides, and loads and stores a column block's cells one at a time, two columns apart:
// lenet:pool1's backward ran 0.0080 ms there, 0.0056 here (66-78% -> 97-102% of a copy of its
// bytes; docs/benchmarks.md).
// Average: a thread takes V cells of two adjacent rows, loads the dy of every window covering them
// at once (at most K / S + 1 window rows of (V + K - 2) / S + 1), computes each window's
// alpha * dy / divisor once, then adds it to the cells it covers in both rows. The sweep ran
// cifar10_quick:pool2's backward in 1.52 waves of blocks (53 registers) with two dependent steps
// per thread: 7.8 us in ncu, 0.0079-0.0081 ms timed; a thread per V cells of one row 6.1-6.3 us,
// 0.0063-0.0070 ms (launch by launch) and 0.0052 ms replayed as graphs, where ncu found it bound
// by instruction issue: a window's share was divided out by each of the 4-6 threads it covers.
// Two rows per thread: 0.0043 ms (graphs; cuDNN 0.0088). A first version that loaded each
// window's dy inside its loop ran no faster than the sweep.
// Results equal the CPU's bit for bit: each cell is beta * dx plus, for max, alpha * dy where it
// is its window's first maximum in row-major order (the first cell equal to y, which the CPU
// looks for); for the average, its windows' gradients in the CPU's (p, q) order.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_cuda.cuh"
#include "primitives/pool/pool_ops.h"

namespace crema::prim::cuda {
namespace {

using pool_ops::Span;
using pool_ops::span_of;

// A launch of `rows` x `groups` threads per plane: rows are output rows (forward), window rows
// (max backward) or pairs of cell rows (average backward); groups are V adjacent outputs, windows
// or cells.
struct RowsGeo {
  int C, rows, groups;
  int64_t xn, xc, yn, yc;
  int xh, yh;     // row strides; a plane's rows span less than 2^31 elements
  uint32_t work;  // planes * rows * groups, under 2^31
  FastDiv by_groups, by_rows, by_c;
  // The windows (forward and average backward).
  PoolMode mode;
  int H, W, P, Q, ph, pw;
};

// Thread t's row and group, and its plane's offsets in x and in y.
struct RowItem {
  int row, group;
  int64_t xo, yo;
};

__device__ __forceinline__ RowItem row_item(const RowsGeo& g, uint32_t t) {
  const uint32_t rg = g.by_groups.div(t), plane = g.by_rows.div(rg), n = g.by_c.div(plane);
  const int64_t c = plane - n * g.C;
  return RowItem{int(rg - plane * g.rows), int(t - rg * g.groups), n * g.xn + c * g.xc,
                 n * g.yn + c * g.yc};
}

// beta * dx of N cells, or 0 without reading dx when beta is 0.
template <typename T, int N>
__device__ __forceinline__ Cells<T, N> primed(const T* dx, T beta) {
  if (beta == T(0)) return splat<T, N>(T(0));
  Cells<T, N> v = *reinterpret_cast<const Cells<T, N>*>(dx);
#pragma unroll
  for (int e = 0; e < N; ++e) v.v[e] = beta * v.v[e];
  return v;
}

template <typename T, int V>
__global__ void max_bwd_k2s2_kernel(RowsGeo g, const T* __restrict__ x, const T* __restrict__ dy,
                                    T* dx, T alpha, T beta) {
  using Row = Cells<T, 2 * V>;
  CREMA_CUDA_LOOP(i, g.work) {
    const RowItem it = row_item(g, uint32_t(i));
    const int64_t xo = it.xo + int64_t(2 * it.row) * g.xh + 2 * V * it.group;
    const Row top = *reinterpret_cast<const Row*>(x + xo);
    const Row bottom = *reinterpret_cast<const Row*>(x + xo + g.xh);
    const Cells<T, V> d =
        *reinterpret_cast<const Cells<T, V>*>(dy + it.yo + it.row * g.yh + V * it.group);
    Row out[2] = {primed<T, 2 * V>(dx + xo, beta), primed<T, 2 * V>(dx + xo + g.xh, beta)};
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const T cell[4] = {top.v[2 * u], top.v[2 * u + 1], bottom.v[2 * u], bottom.v[2 * u + 1]};
      // The window's first maximum, then its gradient to that cell (static indices keep out in
      // registers).
      T m = std::numeric_limits<T>::lowest();
      int at = -1;
#pragma unroll
      for (int k = 0; k < 4; ++k) scan_first_max(cell[k], k, m, at);
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (at == k) out[k / 2].v[2 * u + k % 2] += alpha * d.v[u];
    }
    *reinterpret_cast<Row*>(dx + xo) = out[0];
    *reinterpret_cast<Row*>(dx + xo + g.xh) = out[1];
  }
}

// The first window along an axis whose K cells (from o * S - pad) reach cell `at`.
template <int K, int S>
__device__ __forceinline__ int first_covering(int at, int pad) {
  const int reach = at + pad - K + 1;
  return reach <= 0 ? 0 : (reach + S - 1) / S;
}

// Cell rows per thread of the average backward.
constexpr int kAvgRows = 2;

template <typename T, int K, int S, int V>
__global__ void avg_bwd_rows_kernel(RowsGeo g, const T* __restrict__ dy, T* dx, T alpha, T beta) {
  constexpr int RP = kAvgRows;
  constexpr int WR = (K + RP - 2) / S + 1;  // window rows covering RP cell rows, at most
  constexpr int WC = (V + K - 2) / S + 1;   // window columns covering V cells, at most
  CREMA_CUDA_LOOP(i, g.work) {
    const RowItem it = row_item(g, uint32_t(i));
    const int row0 = RP * it.row, j0 = V * it.group;
    const int p0 = first_covering<K, S>(row0, g.ph), p1 = min(g.P - 1, (row0 + RP - 1 + g.ph) / S);
    const int q0 = first_covering<K, S>(j0, g.pw), q1 = min(g.Q - 1, (j0 + V - 1 + g.pw) / S);
    // Every covering window's dy, loaded before any is used.
    T d[WR][WC];
#pragma unroll
    for (int r = 0; r < WR; ++r)
#pragma unroll
      for (int c = 0; c < WC; ++c)
        d[r][c] = p0 + r <= p1 && q0 + c <= q1 ? dy[it.yo + (p0 + r) * g.yh + q0 + c] : T(0);
    // Each window's share, alpha * dy / divisor, once for the thread's RP rows.
    Span a[WR], b[WC];
#pragma unroll
    for (int r = 0; r < WR; ++r) a[r] = span_of(p0 + r, g.H, K, g.ph, S);
#pragma unroll
    for (int c = 0; c < WC; ++c) b[c] = span_of(q0 + c, g.W, K, g.pw, S);
#pragma unroll
    for (int r = 0; r < WR; ++r)
#pragma unroll
      for (int c = 0; c < WC; ++c)
        if (p0 + r <= p1 && q0 + c <= q1)
          d[r][c] = alpha * d[r][c] / T(pool_ops::divisor_of(g.mode, a[r], b[c]));
#pragma unroll
    for (int e = 0; e < RP; ++e) {
      const int row = row0 + e;
      if (row >= g.H) break;
      T* dp = dx + it.xo + int64_t(row) * g.xh + j0;
      Cells<T, V> acc = primed<T, V>(dp, beta);
#pragma unroll
      for (int r = 0; r < WR; ++r) {
        if (p0 + r > p1 || row < a[r].lo || row >= a[r].hi) continue;
#pragma unroll
        for (int c = 0; c < WC; ++c) {
          if (q0 + c > q1) continue;
#pragma unroll
          for (int u = 0; u < V; ++u)
            if (j0 + u >= b[c].lo && j0 + u < b[c].hi) acc.v[u] += d[r][c];
        }
      }
      *reinterpret_cast<Cells<T, V>*>(dp) = acc;
    }
  }
}

// Forward of K x K windows of stride 2 and no padding: thread (plane, p, group) computes outputs
// q0 .. q0 + V - 1 of row p (q0 = V * group). Their cells are columns 2 q0 .. 2 q0 + 2V + K - 3
// of input rows 2p .. 2p + K - 1: per row two V-cell vectors and, for K = 3, the cell after them,
// all loaded before any is used. Cells past the input (ceil-mode windows) hold the fold's
// identity, and each output folds its window in row-major order as the sweep does, so the result
// equals the CPU's bit for bit.
template <typename T, int K, int V>
__global__ void fwd_s2_rows_kernel(RowsGeo g, const T* __restrict__ x, T* y, T alpha, T beta) {
  constexpr int N = 2 * V + K - 2;  // cells of a row the V windows read
  const bool is_max = g.mode == PoolMode::kMax;
  const T fill = is_max ? std::numeric_limits<T>::lowest() : T(0);
  CREMA_CUDA_LOOP(i, g.work) {
    const RowItem it = row_item(g, uint32_t(i));
    const int p = it.row, q0 = V * it.group, c0 = 2 * q0;
    T cell[K][N];
#pragma unroll
    for (int d = 0; d < K; ++d) {
      const int row = 2 * p + d;
      const bool in = row < g.H;
      const T* r = x + it.xo + int64_t(row) * g.xh + c0;
      const Cells<T, V> a = in ? *reinterpret_cast<const Cells<T, V>*>(r) : splat<T, V>(fill);
      const Cells<T, V> b = in ? *reinterpret_cast<const Cells<T, V>*>(r + V) : splat<T, V>(fill);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        cell[d][e] = a.v[e];
        cell[d][V + e] = b.v[e];
      }
      if constexpr (K == 3) cell[d][2 * V] = in && c0 + 2 * V < g.W ? r[2 * V] : fill;
    }
    T* yp = y + it.yo + int64_t(p) * g.yh + q0;
    Cells<T, V> out = beta == T(0) ? splat<T, V>(T(0)) : *reinterpret_cast<const Cells<T, V>*>(yp);
    const Span a = span_of(p, g.H, K, 0, 2);
#pragma unroll
    for (int u = 0; u < V; ++u) {
      T v = fill;
#pragma unroll
      for (int d = 0; d < K; ++d)
#pragma unroll
        for (int t = 0; t < K; ++t) {
          const T c = cell[d][2 * u + t];
          v = is_max ? (c > v ? c : v) : v + c;
        }
      const Span b = span_of(q0 + u, g.W, K, 0, 2);
      if (a.lo >= a.hi || b.lo >= b.hi)
        v = T(0);
      else if (!is_max)
        v = v / T(pool_ops::divisor_of(g.mode, a, b));
      out.v[u] = beta == T(0) ? alpha * v : alpha * v + beta * out.v[u];
    }
    *reinterpret_cast<Cells<T, V>*>(yp) = out;
  }
}

// Whether `rows` x `groups` threads per plane stay under 2^31 (RowsGeo::work).
bool work_fits(const TensorDesc& xd, int64_t rows, int64_t groups) {
  return int64_t(xd.n) * xd.c * rows * groups < (int64_t(1) << 31);
}

// The geometry of `rows` x `groups` threads per plane (the support rule has checked work_fits).
RowsGeo rows_geo(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd, int rows,
                 int groups) {
  RowsGeo g{};
  g.C = xd.c;
  g.rows = rows;
  g.groups = groups;
  g.xn = xd.stride_n;
  g.xc = xd.stride_c;
  g.yn = yd.stride_n;
  g.yc = yd.stride_c;
  g.xh = int(xd.stride_h);
  g.yh = int(yd.stride_h);
  g.work = uint32_t(int64_t(xd.n) * xd.c * rows * groups);
  g.by_groups = FastDiv(uint32_t(groups));
  g.by_rows = FastDiv(uint32_t(rows));
  g.by_c = FastDiv(uint32_t(xd.c));
  g.mode = pd.mode;
  g.H = xd.h;
  g.W = xd.w;
  g.P = yd.h;
  g.Q = yd.w;
  g.ph = pd.pad_h;
  g.pw = pd.pad_w;
  return g;
}

bool square_s2(const PoolDesc& pd) {
  return pd.stride_h == 2 && pd.stride_w == 2 && pd.kernel_h == pd.kernel_w &&
         (pd.kernel_h == 2 || pd.kernel_h == 3);
}

const char* fwd_unsupported(const PoolArgs& a) {
  const PoolDesc& pd = a.pd;
  const TensorDesc &xd = a.xd, &yd = a.yd;
  if (!square_s2(pd) || pd.pad_h != 0 || pd.pad_w != 0) return "not 2/2 or 3/2 windows without pad";
  if (2 * yd.w > xd.w) return "a window starts in the last column";
  if (yd.w % 2 != 0 || !rows_on_cells(xd, 2, {a.x}) || !rows_on_cells(yd, 2, {a.out}))
    return "rows not on two-cell vectors";
  if (!rows_fit_int(xd, yd) || !work_fits(xd, yd.h, yd.w / 2)) return "2^31 elements or more";
  return nullptr;
}

const char* bwd_unsupported(const PoolArgs& a) {
  const PoolDesc& pd = a.pd;
  const TensorDesc &xd = a.xd, &yd = a.yd;
  if (!rows_fit_int(xd, yd)) return "2^31 elements or more";
  if (a.is_max()) {
    if (pd.kernel_h != 2 || pd.kernel_w != 2 || pd.stride_h != 2 || pd.stride_w != 2 ||
        pd.pad_h != 0 || pd.pad_w != 0 || xd.h != 2 * yd.h || xd.w != 2 * yd.w)
      return "max windows not 2/2 tiling the plane";
    if (!rows_on_cells(xd, 2, {a.x, a.out}) || !rows_on_cells(yd, 1, {a.dy}))
      return "rows not on two-cell vectors";
    return work_fits(xd, yd.h, yd.w) ? nullptr : "2^31 threads or more";
  }
  if (!square_s2(pd)) return "not 2/2 or 3/2 windows";
  if (xd.w % 2 != 0 || !rows_on_cells(xd, 2, {a.out}) || !rows_on_cells(yd, 1, {a.dy}))
    return "rows not on two-cell vectors";
  return work_fits(xd, (xd.h + kAvgRows - 1) / kAvgRows, xd.w / 2) ? nullptr
                                                                   : "2^31 threads or more";
}

const char* unsupported(const PoolArgs& a) {
  if (const char* why = half_data(a)) return why;
  return a.forward() ? fwd_unsupported(a) : bwd_unsupported(a);
}

template <typename T>
void max_bwd_k2s2(const PoolArgs& a, const Typed<T>& t) {
  const TensorDesc &xd = a.xd, &yd = a.yd;
  auto launch = [&](auto v) {
    constexpr int V = decltype(v)::value;
    const RowsGeo g = rows_geo(a.pd, xd, yd, yd.h, yd.w / V);
    max_bwd_k2s2_kernel<T, V>
        <<<grid_for(g.work), kBlock, 0, t.s>>>(g, t.x, t.dy, t.out, t.alpha, t.beta);
  };
  // Two windows per thread (16-byte rows of f32) where the rows allow, else one.
  if (yd.w % 2 == 0 && rows_on_cells(xd, 4, {t.x, t.out}) && rows_on_cells(yd, 2, {t.dy}))
    launch(std::integral_constant<int, 2>{});
  else
    launch(std::integral_constant<int, 1>{});
}

template <typename T>
void avg_bwd(const PoolArgs& a, const Typed<T>& t) {
  const TensorDesc &xd = a.xd, &yd = a.yd;
  auto launch = [&](auto k, auto v) {
    constexpr int K = decltype(k)::value, V = decltype(v)::value;
    const RowsGeo g = rows_geo(a.pd, xd, yd, (xd.h + kAvgRows - 1) / kAvgRows, xd.w / V);
    avg_bwd_rows_kernel<T, K, 2, V>
        <<<grid_for(g.work), kBlock, 0, t.s>>>(g, t.dy, t.out, t.alpha, t.beta);
  };
  auto with_cells = [&](auto k) {
    // Four cells per thread (16-byte vectors of f32) where the rows allow, else two; odd widths
    // take the sweep. With one row per thread, eight (two vectors, 0.6 waves instead of 1.01 on
    // cifar10_quick:pool2) ran no faster: 6.37 us against 6.27 in ncu; two ran 0.0060 ms against
    // four's 0.0052 (graphs).
    if (xd.w % 4 == 0 && rows_on_cells(xd, 4, {t.out}))
      launch(k, std::integral_constant<int, 4>{});
    else
      launch(k, std::integral_constant<int, 2>{});
  };
  a.pd.kernel_h == 2 ? with_cells(std::integral_constant<int, 2>{})
                     : with_cells(std::integral_constant<int, 3>{});
}

template <typename T>
void fwd(const PoolArgs& a, const Typed<T>& t) {
  const TensorDesc &xd = a.xd, &yd = a.yd;
  auto launch = [&](auto k, auto v) {
    constexpr int K = decltype(k)::value, V = decltype(v)::value;
    const RowsGeo g = rows_geo(a.pd, xd, yd, yd.h, yd.w / V);
    fwd_s2_rows_kernel<T, K, V>
        <<<grid_for(g.work), kBlock, 0, t.s>>>(g, t.x, t.out, t.alpha, t.beta);
  };
  auto with_cells = [&](auto k) {
    // 2 x 2 windows: four outputs per thread (16-byte vectors of f32) where the rows allow, else
    // two. 3 x 3 windows: two, which load five cells a row instead of nine and run twice the
    // threads (cifar10_quick:pool2 0.0039 ms against 0.0043 with four; lenet:pool1's 2 x 2
    // windows 0.0036 either way).
    if (decltype(k)::value == 2 && yd.w % 4 == 0 && rows_on_cells(xd, 4, {t.x}) &&
        rows_on_cells(yd, 4, {t.out}))
      launch(k, std::integral_constant<int, 4>{});
    else
      launch(k, std::integral_constant<int, 2>{});
  };
  a.pd.kernel_h == 2 ? with_cells(std::integral_constant<int, 2>{})
                     : with_cells(std::integral_constant<int, 3>{});
}

void run(Handle& h, const PoolArgs& a) {
  run_typed(h, a, [&](const auto& t) {
    if (a.forward())
      fwd(a, t);
    else if (a.is_max())
      max_bwd_k2s2(a, t);
    else
      avg_bwd(a, t);
  });
}

}  // namespace

const PoolImpl kPoolRows{PoolAlgo::kRows, Device::kCUDA, unsupported, channels_last_slower, run};

}  // namespace crema::prim::cuda
