// Internal: what the implicit GEMM's backward-filter kernels share (mma.sync in
// conv_igemm_wgrad_cuda.cu, wgmma in conv_igemm_wgrad_wgmma_sm90a.cu): the geometry, and the
// cp.async staging of a k-tile that all but the TMA kernel use. A k-tile holds kDepth rows of depth
// m = (n, p, q) (32 of 16-bit values, 16 of TF32) of both operands: TM output channels of dy (A)
// and 128 GEMM columns (r, s, c) of x (B), each row's values along memory. Where each value lands
// in shared memory is the kernel's Layout: Layout::at<M, kRow>(row, col) for an operand of kRow
// values a row.
#pragma once

#include <algorithm>
#include <cstdint>

#include "primitives/common/fast_div.h"
#include "primitives/conv/conv_igemm.cuh"

namespace crema::prim::cuda::igemm {

constexpr int kWgradThreads = 128;
constexpr int kWgradTile = 128;  // columns of a block tile; rows TM = 128, or 64 (BF16/FP16)
                                 // where a group has no more output channels
constexpr int kWgradStages = 4;
// Both operands, 64 bytes of depth a row, kWgradStages deep.
constexpr int wgrad_smem_bytes(int tm) { return kWgradStages * 64 * (tm + kWgradTile); }

// How the backward-filter kernels split a GEMM's depth over blocks: about per_sm blocks an SM
// over a grid of `blocks` tiles, at least min_tiles k-tiles a split, the splits' partial filters
// (filter_bytes each) within the workspace budget, the grid's z (groups x splits) within 65535.
struct DepthSplits {
  int splits, tiles;  // depth splits, k-tiles per split (the last split perhaps shorter)
};
inline DepthSplits depth_splits(int64_t blocks, int k_tiles, int per_sm, int min_tiles,
                                int64_t filter_bytes, size_t budget, int groups) {
  int64_t splits =
      std::max<int64_t>(1, per_sm * int64_t(std::max(1, current_device().sms)) / blocks);
  splits = std::min<int64_t>(splits, std::max(1, k_tiles / min_tiles));
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, int64_t(budget) / filter_bytes));
  splits = std::min<int64_t>(splits, 65535 / groups);
  const int tiles = int((k_tiles + splits - 1) / splits);
  return {(k_tiles + tiles - 1) / tiles, tiles};
}

// Depth rows of a k-tile: 32 of 16-bit values, 16 of TF32.
template <MathMode M>
__host__ __device__ constexpr int depth_of() {
  return 64 / int(sizeof(Bits<M>));
}

struct WgradGeo {
  int kg, gk, depth;  // GEMM rows (output channels of a group), columns (r,s,c), depth N*P*Q
  int cpad;           // the TMA kernel's channels a tap in the columns (cg padded), else 0
  int k;              // output channels: dy's NHWC row length
  int cg, c, h, w;    // x: channels of a group, all channels, plane
  int s;              // filter width
  int sh, sw, ph, pw, dh, dw;
  FastDiv pq, q;      // depth index -> (n, p, q)
  int splits, tiles;  // depth splits, k-tiles per split
};

// One thread's share of a k-tile: piece `pca` of A's rows rowa0 + kAStep i (a piece of output
// channels of dy) and piece `pc` of B's rows row0 + kRowStep i (a piece of channels of one
// filter tap (r, s) of x), zero-filled at padding and past the edges.
template <MathMode M, int TM, typename Layout>
struct WgradStager {
  using T = Bits<M>;
  static constexpr int kDepth = depth_of<M>();
  static constexpr int kRowPieces = kWgradTile / kPiece<M>;    // B: 16 or 32 pieces a row
  static constexpr int kRowStep = kWgradThreads / kRowPieces;  // 8 or 4: kDepth = 4 kRowStep
  static constexpr int kAPieces = TM / kPiece<M>;              // A: 16 or 8 (or TF32's 32)
  static constexpr int kAStep = kWgradThreads / kAPieces;
  static constexpr int kARows = kDepth / kAStep;  // A rows a thread stages: 4 or 2

  int pca, rowa0, a_off, pc, row0, b_off, hoff, woff;
  bool a_col, b_col;

  __device__ WgradStager(const WgradGeo& g, int m0, int n0, int grp, int tid)
      : pca(tid % kAPieces), rowa0(tid / kAPieces), pc(tid % kRowPieces), row0(tid / kRowPieces) {
    const int kk = m0 + pca * kPiece<M>;
    a_col = kk < g.kg;
    a_off = grp * g.kg + kk;
    const int j = n0 + pc * kPiece<M>;
    b_col = j < g.gk;
    const int tap = j / g.cg, ch = j % g.cg;
    const int r = tap / g.s, s = tap % g.s;
    hoff = r * g.dh - g.ph;
    woff = s * g.dw - g.pw;
    b_off = grp * g.cg + ch;
  }

  // Starts the copies of k-tile kt into as (A) and bs (B).
  __device__ void issue(const WgradGeo& g, const T* dy, const T* x, int kt, T* as, T* bs) const {
#pragma unroll
    for (int i = 0; i < kARows; ++i) {
      const int row = rowa0 + kAStep * i;
      const int m = kt * kDepth + row;
      const bool av = m < g.depth && a_col;
      copy16(as + Layout::template at<M, TM>(row, pca * kPiece<M>),
             av ? dy + a_off + int64_t(m) * g.k : dy, av);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + kRowStep * i;
      const int m = kt * kDepth + row;
      const int n = int(g.pq.div(uint32_t(m)));
      const int pq = m - n * int(g.pq.d);
      const int p = int(g.q.div(uint32_t(pq)));
      const int hh = p * g.sh + hoff, ww = (pq - p * int(g.q.d)) * g.sw + woff;
      const bool bv = m < g.depth && b_col && inside(hh, ww, g.h, g.w);
      copy16(bs + Layout::template at<M, kWgradTile>(row, pc * kPiece<M>),
             bv ? x + b_off + int64_t((n * g.h + hh) * g.w + ww) * g.c : x, bv);
    }
  }
};

// Depth of the TMA kernel's k-tile: 64 pixels.
constexpr int kWgradTmaDepth = 64;

// The wgmma kernels' launch (conv_igemm_wgrad_wgmma_sm90a.cu, BF16/FP16; compute capability 9.0
// only): partial filters of the depth splits into `part`, as the mma.sync kernel writes them; by
// the TMA kernel where g.cpad > 0 (g.gk its padded columns, cpad channels a tap).
void wgrad_wgmma_launch(MathMode math, int tm, cudaStream_t st, const WgradGeo& g, const void* dy,
                        const void* x, float* part, int groups);

// dw[k][c][r][s] = alpha * sum_split part[split][k][(r,s,c)] + beta * dw, the splits in order (the
// results repeat bit for bit); the partial filters hold cp >= cg channels a tap (padded copies'
// ones past cg), rs taps.
void wgrad_finish(cudaStream_t st, int splits, int k, int cg, int cp, int rs, const float* part,
                  float* dw, Blend blend);

}  // namespace crema::prim::cuda::igemm
