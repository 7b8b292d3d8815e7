// Pooling of small packed planes through shared memory: the forward of any window, max and
// average, and the max backward. A block takes a group of whole planes, which packed NCHW stores
// as one contiguous span, and copies the span into shared memory with 16-byte loads, several in
// flight per thread; each byte of x (and of dy) is loaded once, in full 16-byte vectors. On planes
// this small the kernels that walk rows in registers (sweep, lanes) leave lanes idle or load rows
// of a few dozen bytes and stay latency-bound (caffenet:pool5, 13 x 13: 55-58% of the copy
// bandwidth forward, 54% backward).
// Forward: a thread per output, in output order, pools its window from the tile and stores.
// Max backward: windows are split into phases of pairwise disjoint windows; phase by phase a
// thread per window finds its first maximum in the tile and adds alpha * dy to a gradient tile,
// then the block writes dx in cell order. Deterministic, without atomics; a cell covered by
// several windows sums them in phase order, not the CPU's (p, q) order (equal for integer data,
// within rounding otherwise). y is not read.
// Taken where it measured faster than those kernels (see pool_fwd_planes, pool_max_bwd_planes).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_cuda.cuh"
#include "primitives/pool/pool_ops.h"

namespace crema::prim::cuda {
namespace {

using pool_ops::Span;
using pool_ops::span_of;

constexpr int kThreads = 256;
// Planes of at most this many cells are staged (caffenet:pool1's 55 x 55 and GoogLeNet's 56 x 56
// included); a block takes whole planes, as many as fit in kGroupCells but at least the fewest
// whose span is whole 16-byte vectors.
constexpr int kMaxCells = 4096;
constexpr int kGroupCells = 2048;
// Cells read per cell staged (outputs x window cells / plane cells) above which the forward is
// not taken.
constexpr int kMaxReadsPerCell = 4;
// Largest tile: the default limit of dynamic shared memory.
constexpr size_t kMaxTileBytes = 48 << 10;
// Phases per axis the max backward's geometry holds; it is taken for at most 4 phases in all
// (see slower).
constexpr int kMaxPhaseAxis = 3;
// 16-byte loads in flight per thread while staging.
constexpr int kAhead = 4;

struct PlanesGeo {
  int H, W, P, Q;  // plane and output sizes
  int kh, kw, ph, pw, sh, sw;
  int cells, outs;  // H * W and P * Q
  int group;        // planes per block
  int64_t planes;
  FastDiv by_q, by_outs;
  // Max backward: windows in phases of pairwise disjoint windows, rh x rw phases (rh = ceil(kh /
  // sh)); phase (a, b) holds the windows (p, q) with p % rh == a and q % rw == b, rows x cols of
  // them per plane.
  int rh, rw;
  int rows[kMaxPhaseAxis], cols[kMaxPhaseAxis];
  FastDiv by_cols[kMaxPhaseAxis];
  FastDiv by_phase[kMaxPhaseAxis][kMaxPhaseAxis];  // by rows[a] * cols[b]
};

// The group of planes of this block: its first plane and its count.
struct Group {
  int64_t first;
  int count;
  __device__ explicit Group(const PlanesGeo& g)
      : first(int64_t(blockIdx.x) * g.group),
        count(int(min(int64_t(g.group), g.planes - int64_t(blockIdx.x) * g.group))) {}
};

// Copies n elements from src (global, 16-byte aligned) to dst (shared, 16-byte aligned): whole
// 16-byte vectors, kAhead loads issued before their stores, then the last few elements.
template <typename T>
__device__ __forceinline__ void stage(T* dst, const T* __restrict__ src, int n) {
  constexpr int kVec = 16 / sizeof(T);
  const int vecs = n / kVec;
  const uint4* s = reinterpret_cast<const uint4*>(src);
  uint4* d = reinterpret_cast<uint4*>(dst);
  for (int i0 = int(threadIdx.x); i0 < vecs; i0 += kAhead * kThreads) {
    uint4 v[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u)
      if (i0 + u * kThreads < vecs) v[u] = s[i0 + u * kThreads];
#pragma unroll
    for (int u = 0; u < kAhead; ++u)
      if (i0 + u * kThreads < vecs) d[i0 + u * kThreads] = v[u];
  }
  for (int i = vecs * kVec + int(threadIdx.x); i < n; i += kThreads) dst[i] = src[i];
}

// Output o of the group: its plane within the group and its window's spans.
struct Window {
  int plane;
  Span a, b;
  __device__ Window(const PlanesGeo& g, int o) {
    plane = int(g.by_outs.div(uint32_t(o)));
    const int r = o - plane * g.outs;
    const int p = int(g.by_q.div(uint32_t(r))), q = r - p * g.Q;
    a = span_of(p, g.H, g.kh, g.ph, g.sh);
    b = span_of(q, g.W, g.kw, g.pw, g.sw);
  }
  __device__ bool empty() const { return a.lo >= a.hi || b.lo >= b.hi; }
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    planes_fwd_kernel(PlanesGeo g, PoolMode mode, const T* __restrict__ x, T* y, T alpha, T beta) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  const Group grp(g);
  stage(xs, x + grp.first * g.cells, grp.count * g.cells);
  __syncthreads();
  T* yg = y + grp.first * g.outs;
  const bool is_max = mode == PoolMode::kMax;
  for (int o = int(threadIdx.x); o < grp.count * g.outs; o += kThreads) {
    const Window w(g, o);
    T v = T(0);  // an empty window (past the input) pools to 0, as on the CPU
    if (!w.empty()) {
      T m = is_max ? std::numeric_limits<T>::lowest() : T(0);
      for (int i = w.a.lo; i < w.a.hi; ++i) {
        const T* row = xs + w.plane * g.cells + i * g.W;
        for (int j = w.b.lo; j < w.b.hi; ++j) m = is_max ? (row[j] > m ? row[j] : m) : m + row[j];
      }
      v = is_max ? m : m / T(pool_ops::divisor_of(mode, w.a, w.b));
    }
    blend_store(yg + o, v, alpha, beta);
  }
}

// The first cell (row-major) of the maximum of the window spanning rows a and columns b of the
// plane at t, or -1 for an empty window (scan_first_max). y itself is not read: pool.h makes it
// the maximum of the same cells.
template <typename T>
__device__ __forceinline__ int first_max(const T* t, int W, const Span& a, const Span& b) {
  int at = -1;
  T m = std::numeric_limits<T>::lowest();
  for (int i = a.lo; i < a.hi; ++i)
    for (int j = b.lo; j < b.hi; ++j) scan_first_max(t[i * W + j], i * W + j, m, at);
  return at;
}

// Max backward: the tile holds the group's x, dy and a zeroed gradient; windows add alpha * dy
// to their first maximum phase by phase, the windows of a phase being pairwise disjoint (no two
// threads add to one cell between barriers), then dx = beta * dx + gradient, in cell order.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    planes_max_bwd_kernel(PlanesGeo g, const T* __restrict__ x, const T* __restrict__ dy, T* dx,
                          T alpha, T beta) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  T* gs = xs + g.group * g.cells;
  T* dys = gs + g.group * g.cells;
  const Group grp(g);
  const int n = grp.count * g.cells;
  stage(xs, x + grp.first * g.cells, n);
  stage(dys, dy + grp.first * g.outs, grp.count * g.outs);
  for (int e = int(threadIdx.x); e < n; e += kThreads) gs[e] = T(0);
  __syncthreads();
  for (int a = 0; a < g.rh; ++a)
    for (int b = 0; b < g.rw; ++b) {
      const int per_plane = g.rows[a] * g.cols[b];
      for (int k = int(threadIdx.x); k < grp.count * per_plane; k += kThreads) {
        const int t = int(g.by_phase[a][b].div(uint32_t(k))), r = k - t * per_plane;
        const int i = int(g.by_cols[b].div(uint32_t(r))), j = r - i * g.cols[b];
        const int p = a + i * g.rh, q = b + j * g.rw;
        const int at = first_max(xs + t * g.cells, g.W, span_of(p, g.H, g.kh, g.ph, g.sh),
                                 span_of(q, g.W, g.kw, g.pw, g.sw));
        if (at >= 0) gs[t * g.cells + at] += alpha * dys[t * g.outs + p * g.Q + q];
      }
      __syncthreads();
    }
  T* dxg = dx + grp.first * g.cells;
  for (int e = int(threadIdx.x); e < n; e += kThreads)
    dxg[e] = (beta == T(0) ? T(0) : beta * dxg[e]) + gs[e];
}

// The geometry when xd and yd are packed planes small enough to stage, else cells == 0. Groups
// start 16-byte aligned in x, and with `align_y` in y too.
PlanesGeo plan(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd, bool align_y) {
  PlanesGeo g{};
  const int64_t cells = int64_t(xd.h) * xd.w, outs = int64_t(yd.h) * yd.w;
  if (!xd.is_packed_nchw() || !yd.is_packed_nchw() || cells > kMaxCells || outs > kMaxCells * 4)
    return g;
  g.H = xd.h;
  g.W = xd.w;
  g.P = yd.h;
  g.Q = yd.w;
  g.kh = pd.kernel_h;
  g.kw = pd.kernel_w;
  g.ph = pd.pad_h;
  g.pw = pd.pad_w;
  g.sh = pd.stride_h;
  g.sw = pd.stride_w;
  g.cells = int(cells);
  g.outs = int(outs);
  g.planes = int64_t(xd.n) * xd.c;
  // The fewest planes whose spans are whole numbers of 16-byte vectors (a power of two).
  const int size = int(dtype_size(xd.dtype));
  int step = 16 / std::gcd(int(cells) * size, 16);
  if (align_y) step = std::max(step, 16 / std::gcd(int(outs) * size, 16));
  const int64_t fit = kGroupCells / cells / step * step;
  g.group = int(std::max<int64_t>(fit, step));
  g.by_q = FastDiv(uint32_t(g.Q));
  g.by_outs = FastDiv(uint32_t(g.outs));
  g.rh = (g.kh + g.sh - 1) / g.sh;
  g.rw = (g.kw + g.sw - 1) / g.sw;
  for (int a = 0; a < kMaxPhaseAxis; ++a) {
    g.rows[a] = a < g.rh && a < g.P ? (g.P - a + g.rh - 1) / g.rh : 0;
    g.cols[a] = a < g.rw && a < g.Q ? (g.Q - a + g.rw - 1) / g.rw : 0;
    g.by_cols[a] = FastDiv(uint32_t(g.cols[a] > 0 ? g.cols[a] : 1));
  }
  for (int a = 0; a < kMaxPhaseAxis; ++a)
    for (int b = 0; b < kMaxPhaseAxis; ++b)
      g.by_phase[a][b] = FastDiv(uint32_t(std::max(g.rows[a] * g.cols[b], 1)));
  return g;
}

// Whether a grid of `groups` blocks fills the GPU `waves` times (8 blocks of kThreads per SM).
// Smaller grids lose to the other kernels (LeNet's and CIFAR-10's pools by 0.5-2 us in the
// forward): all blocks stage at once, then all compute, and loads and stores no longer overlap.
// Smaller groups for such grids measured no better.
bool fills(int64_t groups, int waves) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return groups >= int64_t(sms) * (2048 / kThreads) * waves;
}

int64_t groups_of(const PlanesGeo& g) { return (g.planes + g.group - 1) / g.group; }

// Shared memory of a block: the forward stages x, the max backward x, dy and the gradient.
size_t tile_bytes(const PoolArgs& a, const PlanesGeo& g) {
  const int64_t cells = a.forward() ? g.cells : 2 * g.cells + g.outs;
  return size_t(g.group) * cells * dtype_size(a.xd.dtype);
}

const char* unsupported(const PoolArgs& a) {
  if (const char* why = half_data(a)) return why;
  if (!a.forward() && !a.is_max()) return "average backward";
  const PlanesGeo g = plan(a.pd, a.xd, a.yd, !a.forward());
  if (g.cells == 0) return "planes not packed NCHW, or over 4096 cells";
  if (!aligned(a.x, 16) || (!a.forward() && !aligned(a.dy, 16))) return "data not 16-byte aligned";
  if (!a.forward() && (g.rh > kMaxPhaseAxis || g.rw > kMaxPhaseAxis))
    return "windows in more than 3 phases along an axis";
  if (tile_bytes(a, g) > kMaxTileBytes) return "a block's planes exceed the tile";
  return nullptr;
}

// Taken where it measured faster than the kernels after it.
const char* slower(const PoolArgs& a) {
  if (const char* why = channels_last_slower(a)) return why;
  const PlanesGeo g = plan(a.pd, a.xd, a.yd, !a.forward());
  if (a.forward()) {
    if (int64_t(g.outs) * a.pd.kernel_h * a.pd.kernel_w > kMaxReadsPerCell * int64_t(g.cells))
      return "windows read each cell more than 4 times";
    return fills(groups_of(g), 1) ? nullptr : "under one wave of blocks";
  }
  // One H100 call (bench_prim, ms): windows in at most 4 phases (3 x 3 / 2 and 2 x 2 / 2; the
  // inception pools' 9 phases of 3 x 3 / 1 ran 8-27% slower), blocks of at least 4096 elements
  // of x, dy and dx (a block's fixed chain of two staging rounds and four barriers is paid per
  // block: googlenet:pool3's blocks of 3528 ran 13% slower, caffenet:pool5's of 4488 24%
  // faster), and grids of two waves (cifar10_quick:pool1, 1.5 waves of 4608, ran 5% slower).
  if (g.rh * g.rw > 4) return "windows in more than 4 phases";
  if (int64_t(g.group) * (2 * g.cells + g.outs) < 4096) return "blocks under 4096 elements";
  return fills(groups_of(g), 2) ? nullptr : "under two waves of blocks";
}

template <typename T>
void fwd(const PoolArgs& a, const Typed<T>& t) {
  const PlanesGeo g = plan(a.pd, a.xd, a.yd, false);
  // Several blocks per SM overlap one's staging with another's arithmetic; the driver's own
  // carveout choice varies between processes (pool_global_cuda.cu).
  cudaFuncSetAttribute(planes_fwd_kernel<T>, cudaFuncAttributePreferredSharedMemoryCarveout,
                       cudaSharedmemCarveoutMaxShared);
  planes_fwd_kernel<T><<<unsigned(groups_of(g)), kThreads, tile_bytes(a, g), t.s>>>(
      g, a.pd.mode, t.x, t.out, t.alpha, t.beta);
}

template <typename T>
void max_bwd(const PoolArgs& a, const Typed<T>& t) {
  const PlanesGeo g = plan(a.pd, a.xd, a.yd, true);
  cudaFuncSetAttribute(planes_max_bwd_kernel<T>, cudaFuncAttributePreferredSharedMemoryCarveout,
                       cudaSharedmemCarveoutMaxShared);
  planes_max_bwd_kernel<T><<<unsigned(groups_of(g)), kThreads, tile_bytes(a, g), t.s>>>(
      g, t.x, t.dy, t.out, t.alpha, t.beta);
}

void run(Handle& h, const PoolArgs& a) {
  run_typed(h, a, [&](const auto& t) { a.forward() ? fwd(a, t) : max_bwd(a, t); });
}

}  // namespace

const PoolImpl kPoolPlanes{PoolAlgo::kPlanes, Device::kCUDA, unsupported, slower, run};

}  // namespace crema::prim::cuda
