// The implicit GEMM's backward filter through NHWC copies, in TF32, BF16 or FP16 math when the
// channels per group of both x and dy fill 16-byte pieces (4 TF32 or 8 BF16/FP16 values), x's
// of an ungrouped layer perhaps padded to one piece (nhwc_input_channels). x and
// dy are first rounded into NHWC copies in the math format; then, per group,
//   dW[k][(r,s,c)] = sum_{m = (n,p,q)} dYnhwc[m][k] * Xnhwc[n][p*sh-ph+r*dh][q*sw-pw+s*dw][c]
// a GEMM of Kg rows by R*S*Cg columns over the N*P*Q depth. Both operands arrive with their depth
// across memory rows (dy's row m holds its K channels; x's point holds its C channels), so a
// k-tile lands in shared memory as depth rows of 128 values, which ldmatrix.trans (16-bit
// values) or 16-byte loads of permuted rows and columns (TF32) turn into the row-major A and
// column-major B fragments mma wants.
//
// The depth is long (VGG-16's conv1_2: 3.2 million) and the filter small, so blocks split the
// depth: each block of a split sums its share into that split's partial filter, in GEMM column
// order, and a last pass adds the partials in split order (results repeat bit for bit) while
// placing columns (r,s,c) at the filter's [c][r][s]. Block tile 128 (or 64) x 128 by 32 (TF32:
// 16) of depth, 4 warps of 64 (32) x 64, 16-byte cp.async copies in 4 stages. Shared rows' 16-byte
// pieces are XOR-swizzled by the row so that each fragment load hits distinct bank groups: by the
// row's low three bits for the 8 rows an ldmatrix reads; for TF32's 16-byte loads, whose 8 lanes of
// a phase read pieces {0, 2} of 4 rows, by 0, 1, 4 or 5 from the row's low two bits. fp32
// accumulation.
#include <algorithm>

#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_igemm.cuh"
#include "primitives/conv/conv_igemm_wgrad.cuh"
#include "primitives/conv/conv_impl.h"

namespace crema::prim::cuda {
namespace {

using namespace igemm;

constexpr int kThreads = kWgradThreads;
constexpr int kTile = kWgradTile;
constexpr int kStages = kWgradStages;

// The mma.sync kernel's rows: `kRow` values each, 16-byte pieces swizzled by the row.
struct RowSwizzle {
  template <MathMode M, int kRow>
  static __device__ __forceinline__ int at(int row, int col) {
    constexpr int piece = kPiece<M>;
    const int flip = M == MathMode::kTF32 ? (row & 1) | (row & 2) << 1 : row & 7;
    return row * kRow + ((col / piece) ^ flip) * piece + col % piece;
  }
};

template <MathMode M, int TM>
__global__ void __launch_bounds__(kThreads)
    wgrad_kernel(WgradGeo g, const Bits<M>* __restrict__ dy, const Bits<M>* __restrict__ x,
                 float* __restrict__ part) {
  static_assert(TM == 128 || M != MathMode::kTF32, "TF32's permuted loads take 64-row warps");
  using T = Bits<M>;
  constexpr int kDepth = depth_of<M>();
  constexpr int kMI = TM / 32;  // a warp's 16-row mma tiles
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * TM, n0 = blockIdx.y * kTile;
  const int grp = blockIdx.z / g.splits, split = blockIdx.z % g.splits;
  const int k_tiles = (g.depth + kDepth - 1) / kDepth;
  const int kt0 = split * g.tiles, kt1 = min(k_tiles, kt0 + g.tiles);

  const WgradStager<M, TM, RowSwizzle> stager(g, m0, n0, grp, tid);
  auto issue = [&](int kt, int st) {
    T* as = smem + st * kDepth * (TM + kTile);
    stager.issue(g, dy, x, kt, as, as + kDepth * TM);
  };

  const int warp = tid >> 5, lane = tid & 31;
  const int wm = (warp & 1) * (TM / 2), wn = (warp >> 1) * 64;
  float acc[kMI][8][4] = {};

  const int gid = lane >> 2, tig = lane & 3;
  auto compute = [&](int st) {
    const T* as = smem + st * kDepth * (TM + kTile);
    const T* bs = as + kDepth * TM;
    if constexpr (M == MathMode::kTF32) {
      // mma.m16n8k8 fragments hold one value a register. The warp's 64 rows and 64 columns are
      // permuted so that a thread's values lie side by side: its rows (tile mi, half hi) are
      // warp rows gid*8 + 2 mi + hi, its columns (tile ni) warp columns gid*8 + ni, read as two
      // 16-byte loads per depth row (tig and tig + 4). The epilogue undoes the permutation.
#pragma unroll
      for (int ks = 0; ks < kDepth; ks += 8) {
        uint32_t af[4][4], bf[8][2];
#pragma unroll
        for (int kh = 0; kh < 2; ++kh) {
          const int row = ks + tig + kh * 4;
          uint32_t av[8], bv[8];
          *reinterpret_cast<uint4*>(av) =
              *reinterpret_cast<const uint4*>(as + RowSwizzle::at<M, TM>(row, wm + gid * 8));
          *reinterpret_cast<uint4*>(av + 4) =
              *reinterpret_cast<const uint4*>(as + RowSwizzle::at<M, TM>(row, wm + gid * 8 + 4));
          *reinterpret_cast<uint4*>(bv) =
              *reinterpret_cast<const uint4*>(bs + RowSwizzle::at<M, kTile>(row, wn + gid * 8));
          *reinterpret_cast<uint4*>(bv + 4) =
              *reinterpret_cast<const uint4*>(bs + RowSwizzle::at<M, kTile>(row, wn + gid * 8 + 4));
#pragma unroll
          for (int mi = 0; mi < 4; ++mi)
#pragma unroll
            for (int hi = 0; hi < 2; ++hi) af[mi][kh * 2 + hi] = av[mi * 2 + hi];
#pragma unroll
          for (int ni = 0; ni < 8; ++ni) bf[ni][kh] = bv[ni];
        }
#pragma unroll
        for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
          for (int ni = 0; ni < 8; ++ni) mma<M>(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
      }
    } else {
#pragma unroll
      for (int ks = 0; ks < kDepth; ks += 16) {
        uint32_t af[kMI][4], bf[4][4];
        // A (rows = output channels): matrices (rows 0-7 | 8-15) x (depth 0-7 | 8-15).
#pragma unroll
        for (int mi = 0; mi < kMI; ++mi) {
          const int row = ks + (lane & 7) + ((lane >> 4) & 1) * 8;
          const int col = wm + mi * 16 + ((lane >> 3) & 1) * 8;
          ldmatrix_x4_trans(af[mi], as + RowSwizzle::at<M, TM>(row, col));
        }
        // B (columns = filter taps and channels): (depth 0-7 | 8-15) x (columns 0-7 | 8-15).
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) {
          const int row = ks + (lane & 7) + ((lane >> 3) & 1) * 8;
          const int col = wn + nj * 16 + (lane >> 4) * 8;
          ldmatrix_x4_trans(bf[nj], bs + RowSwizzle::at<M, kTile>(row, col));
        }
#pragma unroll
        for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
          for (int ni = 0; ni < 8; ++ni)
            mma<M>(acc[mi][ni], af[mi], bf[ni >> 1][(ni & 1) * 2], bf[ni >> 1][(ni & 1) * 2 + 1]);
      }
    }
  };

  pipeline<kStages>(kt0, kt1, issue, compute);

  // This split's partial filter, rows grp*Kg + row, GEMM columns in order. acc[mi][ni][2 hi + e]
  // is the fragment's (row gid + 8 hi, column 2 tig + e) of tile (mi, ni).
  float* out = part + (int64_t(split) * g.k + grp * g.kg) * g.gk;
  constexpr bool kPermuted = M == MathMode::kTF32;
#pragma unroll
  for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int row = m0 + wm + (kPermuted ? gid * 8 + mi * 2 + hi : mi * 16 + gid + hi * 8);
      if (row >= g.kg) continue;
#pragma unroll
      for (int ni = 0; ni < 8; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = n0 + wn + (kPermuted ? (2 * tig + e) * 8 + ni : ni * 8 + 2 * tig + e);
          if (col < g.gk) out[int64_t(row) * g.gk + col] = acc[mi][ni][hi * 2 + e];
        }
    }
}

// The TMA kernel's channels a tap (conv_igemm_wgrad_wgmma_sm90a.cu), or 0 where it does not run
// the problem: BF16/FP16 math (wgmma reads no TF32 operand MN-major), the copy's channels of a
// group padded to whole 64-channel boxes wasting at most a quarter (tma_padded_channels), and
// every tap within im2col mode's reach of the output plane (tma_im2col_fits).
int tma_channels(const ConvProblem& p) {
  const ConvDesc& cd = p.cd;
  if (cd.math == MathMode::kTF32) return 0;
  const int reach_h = (p.wd.r - 1) * cd.dilation_h, reach_w = (p.wd.s - 1) * cd.dilation_w;
  if (!tma_im2col_fits(p.xd.h, p.xd.w, p.yd.h, p.yd.w, cd.stride_h, cd.stride_w, -cd.pad_h,
                       -cd.pad_w, reach_h, reach_w))
    return 0;
  return tma_padded_channels(nhwc_input_channels(p.wd.c, cd.groups, cd.math), 64);
}

// The GEMM of the kernel that runs: the TMA one when `tma` (its padded columns, 64-pixel
// k-tiles, two blocks an SM), else the cp.async ones.
WgradGeo geo_of(Handle& h, const ConvProblem& p, bool tma) {
  const ConvDesc& cd = p.cd;
  WgradGeo g{};
  g.kg = p.wd.k / cd.groups;
  g.cg = nhwc_input_channels(p.wd.c, cd.groups, cd.math);
  g.cpad = tma ? tma_channels(p) : 0;
  g.gk = (tma ? g.cpad : g.cg) * p.wd.r * p.wd.s;
  g.depth = p.yd.n * p.yd.h * p.yd.w;
  g.k = p.yd.c;
  g.c = g.cg * cd.groups, g.h = p.xd.h, g.w = p.xd.w;
  g.s = p.wd.s;
  g.sh = cd.stride_h, g.sw = cd.stride_w, g.ph = cd.pad_h, g.pw = cd.pad_w;
  g.dh = cd.dilation_h, g.dw = cd.dilation_w;
  g.pq = FastDiv(uint32_t(p.yd.h * p.yd.w));
  g.q = FastDiv(uint32_t(p.yd.w));
  // Splits: about four blocks an SM (two for the TMA kernel, whose blocks hold 96 KiB of
  // stages), at least 4 k-tiles a split, the partial filters within the workspace budget, and
  // the grid's z within 65535.
  const int64_t blocks =
      int64_t((g.kg + kTile - 1) / kTile) * ((g.gk + kTile - 1) / kTile) * cd.groups;
  const int depth = tma                            ? kWgradTmaDepth
                    : p.cd.math == MathMode::kTF32 ? depth_of<MathMode::kTF32>()
                                                   : depth_of<MathMode::kBF16>();
  const int k_tiles = (g.depth + depth - 1) / depth;
  const int64_t filter_bytes = int64_t(p.wd.k) * g.gk * int64_t(sizeof(float));
  const DepthSplits d =
      depth_splits(blocks, k_tiles, tma ? 2 : 4, 4, filter_bytes, h.workspace_budget(), cd.groups);
  g.splits = d.splits, g.tiles = d.tiles;
  return g;
}

// Workspace carving: the x copy, the dy copy (none where the kernels read one in place), the
// partial filters; each 256-byte aligned. Without x and dy: what the descriptors allow.
struct Carving {
  bool x_in_place, dy_in_place;
  size_t dy, part, total;
};
Carving carving_of(const ConvProblem& p, const WgradGeo& g, const void* x = nullptr,
                   const void* dy = nullptr) {
  const size_t elem = p.cd.math == MathMode::kTF32 ? 4 : 2;
  Carving l{};
  l.x_in_place = nhwc_in_place(p.cd.math, p.xd, g.c, x);
  l.dy_in_place = nhwc_in_place(p.cd.math, p.yd, p.yd.c, dy);
  l.dy = l.x_in_place ? 0 : round256(size_t(p.xd.n) * g.c * p.xd.h * p.xd.w * elem);
  l.part = l.dy + (l.dy_in_place ? 0 : round256(size_t(p.yd.n) * p.yd.c * p.yd.h * p.yd.w * elem));
  l.total = l.part + size_t(g.splits) * size_t(p.wd.k) * size_t(g.gk) * sizeof(float);
  return l;
}

template <MathMode M, int TM>
void launch(cudaStream_t st, const WgradGeo& g, const Bits<M>* dy, const Bits<M>* x, float* part,
            int groups) {
  if constexpr (TM == 128 || M != MathMode::kTF32) {
    allow_shared_memory<wgrad_kernel<M, TM>>(wgrad_smem_bytes(TM),
                                             "igemm wgrad_kernel shared memory");
    const dim3 grid((g.kg + TM - 1) / TM, (g.gk + kTile - 1) / kTile, groups * g.splits);
    wgrad_kernel<M, TM><<<grid, kThreads, wgrad_smem_bytes(TM), st>>>(g, dy, x, part);
    check_launch("igemm wgrad_kernel");
  }
}

template <MathMode M>
void run(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw, Blend blend,
         bool wgmma) {
#ifdef CREMA_WITH_SM90A
  const bool tma = wgmma && tma_channels(p) > 0;
#else
  (void)wgmma;  // the Hopper row refuses every problem in such a build
  const bool tma = false;
#endif
  const WgradGeo g = geo_of(h, p, tma);
  const Carving l = carving_of(p, g, x, dy);
  char* ws = static_cast<char*>(h.workspace(l.total));
  auto* part = reinterpret_cast<float*>(ws + l.part);
  cudaStream_t st = stream_of(h);
  auto* x_bits = static_cast<const Bits<M>*>(x);
  auto* dy_bits = static_cast<const Bits<M>*>(dy);
  if (!l.x_in_place) {
    auto* copy = reinterpret_cast<Bits<M>*>(ws);
    to_nhwc<M>(st, p.xd, x, copy, g.c);
    x_bits = copy;
  }
  if (!l.dy_in_place) {
    auto* copy = reinterpret_cast<Bits<M>*>(ws + l.dy);
    to_nhwc<M>(st, p.yd, dy, copy, p.yd.c);
    dy_bits = copy;
  }
  // A group of <= 64 output channels (VGG-16's conv1_2, ResNet-50's res2 layers) would leave
  // half of a 128-row tile idle.
  const int tm = M != MathMode::kTF32 && g.kg <= 64 ? 64 : 128;
#ifdef CREMA_WITH_SM90A
  if (wgmma && M != MathMode::kTF32)
    wgrad_wgmma_launch(M, tm, st, g, dy_bits, x_bits, part, p.cd.groups);
  else
#endif
      if (tm == 64)
    launch<M, 64>(st, g, dy_bits, x_bits, part, p.cd.groups);
  else
    launch<M, 128>(st, g, dy_bits, x_bits, part, p.cd.groups);
  wgrad_finish(st, g.splits, p.wd.k, p.wd.c, tma ? g.cpad : g.cg, p.wd.r * p.wd.s, part, dw, blend);
}

void run_math(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw,
              Blend blend, bool wgmma) {
  switch (p.cd.math) {
    case MathMode::kTF32:
      return run<MathMode::kTF32>(h, p, x, dy, dw, blend, wgmma);
    case MathMode::kBF16:
      return run<MathMode::kBF16>(h, p, x, dy, dw, blend, wgmma);
    default:
      return run<MathMode::kFP16>(h, p, x, dy, dw, blend, wgmma);
  }
}

}  // namespace

namespace igemm {
namespace {
__global__ void finish_kernel(int splits, int k, int cg, int cp, int rs,
                              const float* __restrict__ part, float* dw, float alpha, float beta) {
  const int64_t count = int64_t(k) * cg * rs, per_k = int64_t(cg) * rs;
  const int64_t split = int64_t(k) * cp * rs;
  CREMA_CUDA_LOOP(i, count) {
    const int64_t kk = i / per_k;
    const int c = int(i % per_k / rs), t = int(i % rs);
    const float* p = part + kk * cp * rs + int64_t(t) * cp + c;
    float sum = p[0];
    for (int sp = 1; sp < splits; ++sp) sum += p[sp * split];
    dw[i] = beta == 0.f ? alpha * sum : alpha * sum + beta * dw[i];
  }
}

}  // namespace

void wgrad_finish(cudaStream_t st, int splits, int k, int cg, int cp, int rs, const float* part,
                  float* dw, Blend blend) {
  finish_kernel<<<grid_for(int64_t(k) * cg * rs), kBlock, 0, st>>>(
      splits, k, cg, cp, rs, part, dw, float(blend.alpha), float(blend.beta));
  check_launch("igemm wgrad finish_kernel");
}
}  // namespace igemm

size_t igemm_wgrad_workspace(Handle& h, const ConvProblem& p) {
  const ImageSlice slice(p, padded_copy_slice(p));
  const ConvProblem s = slice.of(p);
  const size_t cp_async = carving_of(s, geo_of(h, s, false)).total;
  return tma_channels(s) ? std::max(cp_async, carving_of(s, geo_of(h, s, true)).total) : cp_async;
}

void igemm_wgrad_run(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw,
                     Blend blend, bool wgmma) {
  filter_over_slices(p, padded_copy_slice(p), x, dy, blend,
                     [&](const ConvProblem& s, const void* xs, const void* dys, Blend b) {
                       run_math(h, s, xs, dys, dw, b, wgmma);
                     });
}

}  // namespace crema::prim::cuda
