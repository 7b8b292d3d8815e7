// Global pooling on CUDA: one window covering a whole plane (Caffe's global_pooling, GoogLeNet's
// and ResNet-50's 7 x 7 average pool5). A warp takes 32 planes at a time.
// Forward, max and average, planes packed NCHW of at most 64 cells: the warp stages its planes'
// cells, one contiguous span, in shared memory with 16-byte loads, then each lane folds one plane
// in row-major order, the CPU's order, so results equal the CPU's bit for bit. The
// thread-per-output kernel of pool_cuda.cu, which these planes took before, had each lane read
// its own plane, the lanes' loads a plane apart: 48% of the copy bandwidth, 1.05x cuDNN's time on
// googlenet:pool5.
// Average backward, planes whose cells are contiguous: the warp writes its planes' cells with
// each plane's gradient alpha * dy / (H * W) computed once, added to beta * dx (the CPU's
// expression). The gather of pool_cuda.cu placed each cell by six divisions and walked its
// covering windows: 17% of the copy bandwidth.
#include <cstdint>

#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/pool/pool_cuda.cuh"

namespace crema::prim::cuda {
namespace {

// Planes of at most this many cells take the staged forward; a warp's tile is 32 planes of
// kMaxCells + 1 cells (f64: 16.6 KB).
constexpr int kMaxCells = 64;
constexpr int kWarpsPerBlock = 2;
// Steps of a warp's run whose loads are in flight at once.
constexpr int kBatch = 8;

struct GlobalGeo {
  int C, cells;  // cells per plane: H * W
  int stride;    // tile cells per plane: cells rounded up to odd, so that the lanes' reads of
                 // their planes' cell k fall in distinct banks
  int64_t xn, xc, yn, yc;
  int64_t planes;
  FastDiv by_cells;
};

// A warp takes 32 planes (the last warp fewer): `count` of them, and the image n and channel c
// of the lane's own plane. Their cells form a run of count * cells that the lanes walk together:
// run cell e is cell e % cells of the warp's plane e / cells.
struct WarpPlanes {
  int count;
  int64_t n, c;

  __device__ WarpPlanes(const GlobalGeo& g, int64_t warp, int lane) {
    count = int(min(int64_t(32), g.planes - warp * 32));
    const int64_t plane = warp * 32 + lane;
    n = plane / g.C;
    c = plane - n * g.C;
  }
  __device__ int run(const GlobalGeo& g) const { return count * g.cells; }
};

// 16-byte vectors of T.
template <typename T>
struct Vec16;
template <>
struct Vec16<float> {
  using type = float4;
};
template <>
struct Vec16<double> {
  using type = double2;
};

// Planes packed one after another (NCHW) and x 16-byte aligned: a warp's run of cells is one
// contiguous, aligned span, loaded in 16-byte vectors (a warp's load: 512 consecutive bytes).
// Scalar loads of the same span, kBatch steps in flight, reached 53% of the copy bandwidth
// (googlenet:pool5, 26 MB: latency-bound, about seven dependent rounds per warp).
// Sixteen blocks per SM lets f64 take 46 registers; bounded by the block size alone, ptxas aimed
// for full occupancy at 32 registers and spilled.
template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, 16)
    global_fwd_kernel(GlobalGeo g, PoolMode mode, const T* __restrict__ x, T* y, T alpha, T beta) {
  using V = typename Vec16<T>::type;
  constexpr int kVec = 16 / sizeof(T);
  extern __shared__ __align__(16) unsigned char smem[];
  T* tile = reinterpret_cast<T*>(smem) + int(threadIdx.x >> 5) * 32 * g.stride;
  const int lane = int(threadIdx.x) & 31;
  const int64_t warps = (g.planes + 31) / 32;
  CREMA_CUDA_WARP_LOOP(warp, warps) {
    const WarpPlanes w(g, warp, lane);
    const T* xr = x + warp * 32 * g.cells;
    const int run = w.run(g), vecs = (run + kVec - 1) / kVec;
    for (int i0 = 0; i0 < vecs; i0 += 32 * kBatch) {
      V v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * 32 + lane;
        T* part = reinterpret_cast<T*>(&v[u]);
        if ((i + 1) * kVec <= run) {
          v[u] = reinterpret_cast<const V*>(xr)[i];
        } else {  // the run's last, partial vector (the last warp's), or past the run
#pragma unroll
          for (int j = 0; j < kVec; ++j) part[j] = i * kVec + j < run ? xr[i * kVec + j] : T(0);
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const T* part = reinterpret_cast<const T*>(&v[u]);
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int e = (i0 + u * 32 + lane) * kVec + j;
          const int pl = int(g.by_cells.div(uint32_t(e)));
          if (e < run) tile[e + pl * (g.stride - g.cells)] = part[j];
        }
      }
    }
    __syncwarp();
    if (lane < w.count) {
      const T* t = tile + lane * g.stride;
      T v = t[0];
      if (mode == PoolMode::kMax) {
        for (int k = 1; k < g.cells; ++k) v = t[k] > v ? t[k] : v;
      } else {
        for (int k = 1; k < g.cells; ++k) v = v + t[k];
        v = v / T(g.cells);
      }
      blend_store(y + w.n * g.yn + w.c * g.yc, v, alpha, beta);
    }
    __syncwarp();  // the tile is refilled next iteration
  }
}

template <typename T>
__global__ void global_avg_bwd_kernel(GlobalGeo g, const T* __restrict__ dy, T* dx, T alpha,
                                      T beta) {
  const int lane = int(threadIdx.x) & 31;
  const int64_t warps = (g.planes + 31) / 32;
  CREMA_CUDA_WARP_LOOP(warp, warps) {
    const WarpPlanes w(g, warp, lane);
    const auto base = reinterpret_cast<unsigned long long>(dx + w.n * g.xn + w.c * g.xc);
    // The plane's gradient, once per plane.
    const T grad = lane < w.count ? alpha * dy[w.n * g.yn + w.c * g.yc] / T(g.cells) : T(0);
    const int run = w.run(g);
    // Steps of 32 cells; a cell's plane base and gradient come from the plane's lane.
    for (int e0 = 0; e0 < run; e0 += 32 * kBatch) {
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int e = e0 + u * 32 + lane;
        const int pl = int(g.by_cells.div(uint32_t(e))), k = e - pl * g.cells;
        T* out = reinterpret_cast<T*>(__shfl_sync(0xffffffffu, base, pl & 31)) + k;
        const T gv = __shfl_sync(0xffffffffu, grad, pl & 31);
        if (e < run) *out = (beta == T(0) ? T(0) : beta * *out) + gv;
      }
    }
  }
}

// Whether pd pools each plane of xd into one output with a window of exactly the plane, and the
// plane's cells are contiguous.
bool is_global(const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  return yd.h == 1 && yd.w == 1 && pd.kernel_h == xd.h && pd.kernel_w == xd.w && pd.pad_h == 0 &&
         pd.pad_w == 0 && xd.stride_w == 1 && xd.stride_h == xd.w;
}

GlobalGeo geo_of(const TensorDesc& xd, const TensorDesc& yd) {
  const int cells = xd.h * xd.w;
  return GlobalGeo{xd.c,
                   cells,
                   cells | 1,
                   xd.stride_n,
                   xd.stride_c,
                   yd.stride_n,
                   yd.stride_c,
                   int64_t(xd.n) * xd.c,
                   FastDiv(uint32_t(cells))};
}

// A warp's run of cells (32 planes) is indexed by int and divided by FastDiv.
bool run_fits(const TensorDesc& xd) { return int64_t(xd.h) * xd.w * 32 < (int64_t(1) << 31); }

const char* unsupported(const PoolArgs& a) {
  if (const char* why = half_data(a)) return why;
  const TensorDesc& xd = a.xd;
  if (!is_global(a.pd, xd, a.yd)) return "not one window per plane of contiguous cells";
  if (a.forward()) {
    if (xd.stride_c != int64_t(xd.h) * xd.w || xd.stride_n != xd.c * xd.stride_c)
      return "x not packed NCHW";
    if (!aligned(a.x, 16)) return "x not 16-byte aligned";
    if (xd.h * xd.w > kMaxCells) return "planes of more than 64 cells";
  } else {
    if (a.is_max()) return "max backward";
    if (!run_fits(xd)) return "32 planes span 2^31 cells or more";
  }
  return nullptr;
}

template <typename T>
void fwd(const PoolArgs& a, const Typed<T>& t) {
  const GlobalGeo g = geo_of(a.xd, a.yd);
  const int block = kWarpsPerBlock * 32;
  const size_t smem = size_t(kWarpsPerBlock) * 32 * g.stride * sizeof(T);
  // Sixteen blocks per SM take up to 200 KB of shared memory; the carveout the driver chooses
  // by itself varied between processes (googlenet:pool5 ran 0.015 or 0.037 ms).
  cudaFuncSetAttribute(global_fwd_kernel<T>, cudaFuncAttributePreferredSharedMemoryCarveout,
                       cudaSharedmemCarveoutMaxShared);
  global_fwd_kernel<T><<<grid_for((g.planes + 31) / 32 * 32, block), block, smem, t.s>>>(
      g, a.pd.mode, t.x, t.out, t.alpha, t.beta);
}

template <typename T>
void avg_bwd(const PoolArgs& a, const Typed<T>& t) {
  const GlobalGeo g = geo_of(a.xd, a.yd);
  global_avg_bwd_kernel<T>
      <<<grid_for((g.planes + 31) / 32 * 32), kBlock, 0, t.s>>>(g, t.dy, t.out, t.alpha, t.beta);
}

void run(Handle& h, const PoolArgs& a) {
  run_typed(h, a, [&](const auto& t) { a.forward() ? fwd(a, t) : avg_bwd(a, t); });
}

}  // namespace

const PoolImpl kPoolGlobal{PoolAlgo::kGlobal, Device::kCUDA, unsupported, channels_last_slower,
                           run};

}  // namespace crema::prim::cuda
