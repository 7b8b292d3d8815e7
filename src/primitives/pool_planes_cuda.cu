// Forward pooling of small packed planes through shared memory, any window, max and average.
// A block takes a group of whole planes, which packed NCHW stores as one contiguous span, copies
// the span into shared memory with 16-byte loads, several in flight per thread, then a thread per
// output, in output order, pools its window from shared memory and stores (coalesced). Each byte
// of x is loaded once, in full 16-byte vectors. On planes this small the kernels that walk rows
// in registers (sweep, lanes) leave lanes idle or load rows of a few dozen bytes and stay
// latency-bound (caffenet:pool5, 13 x 13: 55-58% of the copy bandwidth).
// Taken where it measured faster than those kernels: windows that read each cell at most four
// times (stride-2 windows of 3 x 3 read 2.25; the inception pools' 3 x 3 of stride 1, 9, keep
// the lane kernel, which takes each row's maximum once and shares it by shuffles), and grids of
// at least a wave of blocks (see pool_fwd_planes).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

#include "primitives/cuda_util.cuh"
#include "primitives/fast_div.h"
#include "primitives/pool_ops.h"
#include "primitives/pool_sweep.cuh"

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
// Cells read per cell staged (outputs x window cells / plane cells) above which the kernel is
// not taken.
constexpr int kMaxReadsPerCell = 4;
// Largest tile: the default limit of dynamic shared memory.
constexpr size_t kMaxTileBytes = 48 << 10;
// 16-byte loads in flight per thread while staging.
constexpr int kAhead = 4;

struct PlanesGeo {
  int H, W, P, Q;  // plane and output sizes
  int kh, kw, ph, pw, sh, sw;
  int cells, outs;  // H * W and P * Q
  int group;        // planes per block
  int64_t planes;
  FastDiv by_q, by_outs;
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

bool packed(const TensorDesc& d) {
  return d.stride_w == 1 && d.stride_h == d.w && d.stride_c == int64_t(d.h) * d.w &&
         d.stride_n == d.c * d.stride_c;
}

// The geometry when xd and yd are packed planes small enough to stage whose windows read each
// cell at most kMaxReadsPerCell times; else cells == 0.
template <typename T>
PlanesGeo plan(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  PlanesGeo g{};
  const int64_t cells = int64_t(xd.h) * xd.w, outs = int64_t(yd.h) * yd.w;
  const int64_t reads = outs * pd.kernel_h * pd.kernel_w;
  if (!packed(xd) || !packed(yd) || cells > kMaxCells || reads > kMaxReadsPerCell * cells) return g;
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
  // The fewest planes whose span is a whole number of 16-byte vectors.
  const int step = 16 / std::gcd(int(cells * sizeof(T)), 16);
  const int64_t fit = kGroupCells / cells / step * step;
  g.group = int(std::max<int64_t>(fit, step));
  g.by_q = FastDiv(uint32_t(g.Q));
  g.by_outs = FastDiv(uint32_t(g.outs));
  return g;
}

}  // namespace

template <typename T>
bool pool_fwd_planes(cudaStream_t s, const PoolDesc& pd, const TensorDesc& xd, const T* x,
                     const TensorDesc& yd, T* y, T alpha, T beta) {
  const PlanesGeo g = plan<T>(pd, xd, yd);
  if (g.cells == 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0) return false;
  const size_t smem = size_t(g.group) * g.cells * sizeof(T);
  // Planes over 3072 cells in groups of 4 (f32) or 2 (f64) for the spans' alignment.
  if (smem > kMaxTileBytes) return false;
  // Grids of less than a wave of blocks (8 per SM) lose to the other kernels (LeNet's and
  // CIFAR-10's pools by 0.5-2 us): all blocks stage at once, then all compute, and the load and
  // store phases no longer overlap. Smaller groups for such grids measured no better.
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int64_t groups = (g.planes + g.group - 1) / g.group;
  if (groups < int64_t(sms) * (2048 / kThreads)) return false;
  // Several blocks per SM overlap one's staging with another's arithmetic; the driver's own
  // carveout choice varies between processes (pool_global_cuda.cu).
  cudaFuncSetAttribute(planes_fwd_kernel<T>, cudaFuncAttributePreferredSharedMemoryCarveout,
                       cudaSharedmemCarveoutMaxShared);
  planes_fwd_kernel<T><<<unsigned(groups), kThreads, smem, s>>>(g, pd.mode, x, y, alpha, beta);
  return true;
}

#define CREMA_POOL_PLANES(T)                                                                   \
  template bool pool_fwd_planes<T>(cudaStream_t, const PoolDesc&, const TensorDesc&, const T*, \
                                   const TensorDesc&, T*, T, T);
CREMA_POOL_PLANES(float)
CREMA_POOL_PLANES(double)
#undef CREMA_POOL_PLANES

}  // namespace crema::prim::cuda
