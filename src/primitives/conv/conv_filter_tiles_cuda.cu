// The direct row's backward filter for small layers (conv_impl.h, direct_filter_tiles): stride
// 1, no dilation, filters 3, 5 or 7 tall, output planes up to 64 x 64. LeNet's conv1 is 18 M
// multiply-adds; im2col + a split-K GEMM takes four kernels and 31 us on an H200 (an unfolded
// batch, the planes gathered side by side, the GEMM and its reduction), this kernel and the sum
// of its partials 16 us. That is still far from the CUDA cores' peak: each thread's loads of x
// and dy come from L1 and L2 row after row, so the kernel waits on memory latency.
//
// A thread owns a slot (KT output channels x one input channel x one filter column s) and a lane
// of output columns; for each of its images and columns it walks down the rows, keeping the R
// input values of the filter's column in registers (one new load a row) and the KT gradients of
// the output pixel, and adds their KT x R products. A block's lanes are summed in lane order in
// shared memory; each image chunk leaves its partial filter, summed in chunk order by
// sum_partials_kernel: results repeat bit for bit. Math in the data type (fp32, fp64) with FMA.
#include <algorithm>

#include "primitives/common/dtype_visit.h"
#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_impl.h"

namespace crema::prim::cuda {
namespace {

constexpr int kKT = 4;            // output channels a slot adds to
constexpr int kMaxThreads = 256;  // a block's threads
constexpr int kMaxChunks = 64;    // image chunks: partial filters summed afterwards
constexpr size_t kSharedBytes = 48 * 1024;

struct TileGeo {
  int n, groups, cg, kg, h, w, p, q, s, pad_h, pad_w;
  int ktiles;     // KT-channel tiles per group
  int slots;      // groups x ktiles x cg x s
  int lanes;      // threads per slot: output columns lane, lane + lanes, ...
  int per_block;  // slots per block
  int images;     // images per chunk
  int64_t xsn, xsc, xsh, xsw, ysn, ysc, ysh, ysw;
};

// The slot's output-channel tile (group gi, tile kt), input channel c and filter column s.
struct Slot {
  int gi, kt, c, s;
};
__device__ __forceinline__ Slot slot_of(const TileGeo& g, int slot) {
  Slot sl;
  sl.s = slot % g.s;
  slot /= g.s;
  sl.c = slot % g.cg;
  slot /= g.cg;
  sl.kt = slot % g.ktiles;
  sl.gi = slot / g.ktiles;
  return sl;
}

template <typename T, int R>
__global__ void filter_tiles_kernel(TileGeo g, const T* __restrict__ x, const T* __restrict__ dy,
                                    T* __restrict__ part, int64_t count) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* red = reinterpret_cast<T*>(smem);  // [lane][local slot][KT x R]
  constexpr int kAcc = kKT * R;
  const int lane = threadIdx.x % g.lanes, local = threadIdx.x / g.lanes;
  const int slot = blockIdx.x * g.per_block + local;
  T acc[kKT][R];
#pragma unroll
  for (int j = 0; j < kKT; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[j][r] = T(0);
  if (local < g.per_block && slot < g.slots) {
    const Slot sl = slot_of(g, slot);
    const int k0 = sl.kt * kKT, kn = min(kKT, g.kg - k0);
    const int n1 = min(g.n, int(blockIdx.y + 1) * g.images);
    for (int n = blockIdx.y * g.images; n < n1; ++n) {
      const T* xc = x + n * g.xsn + (int64_t(sl.gi) * g.cg + sl.c) * g.xsc;
      const T* dk = dy + n * g.ysn + (int64_t(sl.gi) * g.kg + k0) * g.ysc;
      for (int ox = lane; ox < g.q; ox += g.lanes) {
        const int ix = ox + sl.s - g.pad_w;
        if (ix < 0 || ix >= g.w) continue;
        const T* xcol = xc + ix * g.xsw;
        auto x_at = [&](int iy) { return iy >= 0 && iy < g.h ? xcol[iy * g.xsh] : T(0); };
        // win[r]: x at row oy + r - pad_h of this column.
        T win[R];
#pragma unroll
        for (int r = 0; r + 1 < R; ++r) win[r + 1] = x_at(r - g.pad_h);
        const T* dcol = dk + ox * g.ysw;
        // Unrolled so that the loads of the next rows are in flight during this row's products.
#pragma unroll 4
        for (int oy = 0; oy < g.p; ++oy) {
#pragma unroll
          for (int r = 0; r + 1 < R; ++r) win[r] = win[r + 1];
          win[R - 1] = x_at(oy + R - 1 - g.pad_h);
          T d[kKT];
#pragma unroll
          for (int j = 0; j < kKT; ++j) d[j] = j < kn ? dcol[j * g.ysc + oy * g.ysh] : T(0);
#pragma unroll
          for (int j = 0; j < kKT; ++j)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[j][r] = fma(d[j], win[r], acc[j][r]);
        }
      }
    }
  }
  T* mine = red + (int64_t(lane) * g.per_block + local) * kAcc;
  if (local < g.per_block) {
#pragma unroll
    for (int j = 0; j < kKT; ++j)
#pragma unroll
      for (int r = 0; r < R; ++r) mine[j * R + r] = acc[j][r];
  }
  __syncthreads();
  // Each (slot, k, r) of the block: its lanes summed in order, then stored at the weight's place
  // (K x Cg x R x S) in this chunk's partial filter.
  for (int i = threadIdx.x; i < g.per_block * kAcc; i += blockDim.x) {
    const int loc = i / kAcc, jr = i % kAcc, j = jr / R, r = jr % R;
    const int sl_index = blockIdx.x * g.per_block + loc;
    if (sl_index >= g.slots) continue;
    const Slot sl = slot_of(g, sl_index);
    const int k = sl.kt * kKT + j;
    if (k >= g.kg) continue;
    T sum = red[loc * kAcc + jr];
    for (int l = 1; l < g.lanes; ++l) sum += red[(int64_t(l) * g.per_block + loc) * kAcc + jr];
    const int64_t at =
        ((int64_t(sl.gi) * g.kg + k) * g.cg + sl.c) * (int64_t(R) * g.s) + int64_t(r) * g.s + sl.s;
    part[blockIdx.y * count + at] = sum;
  }
}

// The launch: slots per block, lanes, image chunks.
struct TilePlan {
  TileGeo g;
  int threads, blocks, chunks;
  size_t smem;
};

TilePlan plan_tiles(const ConvProblem& p, size_t elem, size_t budget) {
  const ConvDesc& cd = p.cd;
  TilePlan t;
  TileGeo& g = t.g;
  g.n = p.xd.n;
  g.groups = cd.groups;
  g.cg = p.wd.c;
  g.kg = p.wd.k / cd.groups;
  g.h = p.xd.h;
  g.w = p.xd.w;
  g.p = p.yd.h;
  g.q = p.yd.w;
  g.s = p.wd.s;
  g.pad_h = cd.pad_h;
  g.pad_w = cd.pad_w;
  g.ktiles = (g.kg + kKT - 1) / kKT;
  g.slots = g.groups * g.ktiles * g.cg * g.s;
  g.lanes = std::min(g.q, 32);
  // Each thread parks KT x R sums in shared memory for the lanes' reduction.
  const int fit = int(kSharedBytes / (size_t(kKT) * p.wd.r * elem));
  g.per_block = std::max(1, std::min(g.slots, std::min(kMaxThreads, fit) / g.lanes));
  g.xsn = p.xd.stride_n, g.xsc = p.xd.stride_c, g.xsh = p.xd.stride_h, g.xsw = p.xd.stride_w;
  g.ysn = p.yd.stride_n, g.ysc = p.yd.stride_c, g.ysh = p.yd.stride_h, g.ysw = p.yd.stride_w;
  t.blocks = (g.slots + g.per_block - 1) / g.per_block;
  // As many chunks as fill the GPU, their partial filters within the workspace budget.
  const int64_t fit_chunks = int64_t(budget / (size_t(p.wd.count()) * elem));
  t.chunks = int(
      std::clamp<int64_t>(std::min<int64_t>(g.n, kMaxChunks), 1, std::max<int64_t>(fit_chunks, 1)));
  g.images = (g.n + t.chunks - 1) / t.chunks;
  t.chunks = (g.n + g.images - 1) / g.images;
  t.threads = g.per_block * g.lanes;
  t.smem = size_t(t.threads) * kKT * p.wd.r * elem;
  return t;
}

template <typename T, int R>
void launch(Handle& h, const TilePlan& t, const T* x, const T* dy, T* part, int64_t count) {
  filter_tiles_kernel<T, R>
      <<<dim3(unsigned(t.blocks), unsigned(t.chunks)), unsigned(t.threads), t.smem, stream_of(h)>>>(
          t.g, x, dy, part, count);
}

}  // namespace

bool direct_filter_tiles(const ConvProblem& p) {
  const ConvDesc& cd = p.cd;
  const int r = p.wd.r;
  return cd.stride_h == 1 && cd.stride_w == 1 && cd.dilation_h == 1 && cd.dilation_w == 1 &&
         (r == 3 || r == 5 || r == 7) && p.wd.s <= 7 && p.yd.h <= 64 && p.yd.w <= 64;
}

size_t direct_filter_tiles_workspace(Handle& h, const ConvProblem& p) {
  const size_t elem = dtype_size(p.xd.dtype);
  return size_t(plan_tiles(p, elem, h.workspace_budget()).chunks) * size_t(p.wd.count()) * elem;
}

template <typename T>
void direct_filter_tiles_run(Handle& h, const ConvProblem& p, const T* x, const T* dy, T* dw,
                             Blend blend) {
  const TilePlan t = plan_tiles(p, sizeof(T), h.workspace_budget());
  const int64_t count = p.wd.count();
  // Even one chunk's partial goes to the workspace: sum_partials_kernel blends it into dw.
  T* part = static_cast<T*>(h.workspace(direct_filter_tiles_workspace(h, p)));
  if (p.wd.r == 3)
    launch<T, 3>(h, t, x, dy, part, count);
  else if (p.wd.r == 5)
    launch<T, 5>(h, t, x, dy, part, count);
  else
    launch<T, 7>(h, t, x, dy, part, count);
  check_launch("filter_tiles_kernel");
  sum_partials_kernel<<<grid_for(count), kBlock, 0, stream_of(h)>>>(t.chunks, count, part, dw,
                                                                    T(blend.alpha), T(blend.beta));
  check_launch("sum_partials_kernel");
}

template void direct_filter_tiles_run<float>(Handle&, const ConvProblem&, const float*,
                                             const float*, float*, Blend);
template void direct_filter_tiles_run<double>(Handle&, const ConvProblem&, const double*,
                                              const double*, double*, Blend);

}  // namespace crema::prim::cuda
