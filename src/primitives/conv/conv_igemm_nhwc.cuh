// Internal: the pieces of the implicit GEMM's NHWC path that its two kernels share (mma.sync in
// conv_igemm_nhwc_cuda.cu for sm_80 and later, wgmma in conv_igemm_wgmma_sm90a.cu for sm_90):
// the geometry, the 16-byte pieces of the inner index, the shared-memory layout of a k-tile,
// the staging of both operands into it and the epilogue's store.
//
// A k-tile holds 128 rows of the activation operand and TN rows of the filter operand, each row
// 64 bytes of depth (32 BF16/FP16 or 16 TF32 values) in four 16-byte pieces, the pieces XOR-
// swizzled by row pair: piece c of row r sits at piece c ^ ((r >> 1) & 3). That is the layout
// wgmma's 64-byte swizzle mode reads (address bits 4-5 XOR bits 7-8 within 512-byte groups of
// 8 rows), and it lets ldmatrix's 8 rows hit 8 distinct bank groups.
#pragma once

#include "primitives/conv/conv_igemm.cuh"
#include "primitives/cuda/cuda_pack.cuh"

namespace crema::prim::cuda::igemm {

constexpr int kNhwcThreads = 128;
constexpr int kNhwcTileM = 128;    // rows; the columns are TN = 128, or 64 when a group has <= 64
constexpr int kNhwcRowBytes = 64;  // depth of a k-tile
constexpr int kNhwcStages = 4;
constexpr int kNhwcTmaRowBytes = 128;  // depth of the TMA kernel's k-tile (its swizzle span)
constexpr int nhwc_smem_bytes(int tn) { return kNhwcStages * (kNhwcTileM + tn) * kNhwcRowBytes; }
template <MathMode M>
__host__ __device__ constexpr int nhwc_tile_k() {
  return kNhwcRowBytes / int(sizeof(Bits<M>));
}

// One GEMM of the NHWC path. Rows m = (n, y, x) of a rows_h x rows_w plane read the NHWC
// source at (y*sy + oy + r*dy, x*sx + ox + s*dx); offsets are int (the support rule keeps
// tensors below 2^31 elements).
struct NhwcGeo {
  int gm, gn, gk;           // GEMM sizes of one group
  int cin;                  // inner channels of one group, whole pieces of them
  int src_c, src_h, src_w;  // the NHWC source
  int rows_h, rows_w;       // the plane of the GEMM rows
  int sy, sx, oy, ox, dy, dx, s;
  int on, oc, oh, ow;  // output strides
};

// A 16-byte piece of the inner index: NHWC offset and point relative to the row's point.
struct alignas(16) Piece {
  int off, h, w, pad;
};

// The output (stored as `type`: f32, or the math's 16-bit type) and what the epilogue applies:
// out = alpha * acc + beta * out (+ bias, ReLU), in fp32, rounded once to the output's type.
struct NhwcOut {
  void* out;
  DataType type;
  float alpha, beta;
  const float* bias;
  bool relu;
};

// The 16-bit storage type of BF16 / FP16 math: what the kernels also write (their template
// parameter O, float otherwise).
template <MathMode M>
using HalfOut = std::conditional_t<M == MathMode::kFP16, f16_t, bf16_t>;

// Element offset of 16-byte piece `c` of shared row `row`: pieces swizzled by row pair.
template <MathMode M>
__device__ __forceinline__ int nhwc_swizzled(int row, int c) {
  return row * nhwc_tile_k<M>() + (c ^ ((row >> 1) & 3)) * kPiece<M>;
}

// One thread's share of staging a k-tile: piece tid % 4 of activation rows tid / 4 + 32 i (i < 4)
// and of filter rows tid / 4 + 32 i (i < TN / 32), zero-filled at padding and past the edges.
// The k-tiles are issued in order from 0; each call loads the next tile's piece descriptor, so
// that its latency passes while the tiles in flight are multiplied (read where it is used, it
// held up every k-tile's copies and the multiplies queued behind them).
template <MathMode M, int TN>
struct NhwcStager {
  using T = Bits<M>;
  static constexpr int kBRows = TN / 32;
  int piece, row0, tiles;
  int a_off[4], a_h[4], a_w[4], b_off[kBRows];
  Piece pc;  // the piece descriptor of the next k-tile to issue

  __device__ NhwcStager(const NhwcGeo& g, const Piece* pieces, int m0, int n0, int grp, int tid)
      : piece(tid & 3), row0(tid >> 2), tiles((g.gk + nhwc_tile_k<M>() - 1) / nhwc_tile_k<M>()) {
    pc = pieces[piece];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + 32 * i;
      const int m = m0 + row;
      const int plane = g.rows_h * g.rows_w;
      const int n = m / plane, yx = m % plane, y = yx / g.rows_w, x = yx % g.rows_w;
      const int y0 = y * g.sy + g.oy, x0 = x * g.sx + g.ox;
      a_off[i] = ((n * g.src_h + y0) * g.src_w + x0) * g.src_c + grp * g.cin;
      a_h[i] = m < g.gm ? y0 : kNoPoint;
      a_w[i] = x0;
      if (i < kBRows) {
        const int nr = n0 + row;
        b_off[i] = nr < g.gn ? (grp * g.gn + nr) * g.gk : -1;
      }
    }
  }

  // Starts the copies of k-tile kt (the one after the last issued) into as (activation rows) and
  // bs (filter rows).
  __device__ void issue(const NhwcGeo& g, const T* a_src, const T* b_src, const Piece* pieces,
                        int kt, T* as, T* bs) {
    const int k = kt * nhwc_tile_k<M>() + piece * kPiece<M>;
    const bool kin = k < g.gk;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int at = nhwc_swizzled<M>(row0 + 32 * i, piece);
      const bool av = inside(a_h[i] + pc.h, a_w[i] + pc.w, g.src_h, g.src_w);
      copy16(as + at, av ? a_src + a_off[i] + pc.off : a_src, av);
      if (i < kBRows) {
        const bool bv = kin && b_off[i] >= 0;
        copy16(bs + at, bv ? b_src + b_off[i] + k : b_src, bv);
      }
    }
    if (kt + 1 < tiles) pc = pieces[(kt + 1) * 4 + piece];
  }
};

// The element offset of the output row of GEMM row m (m < gm): int, as every offset (the row's
// support rule keeps tensors below 2^31 elements).
__device__ __forceinline__ int nhwc_out_row(const NhwcGeo& g, int m) {
  const int plane = g.rows_h * g.rows_w;
  const int n = m / plane, yx = m % plane, y = yx / g.rows_w, x = yx % g.rows_w;
  return n * g.on + y * g.oh + x * g.ow;
}

// Stores W output values from v, adjacent in memory from element `at` of a channel with this
// bias (read only where the output has one): out = relu(alpha v + beta out + bias), in fp32,
// rounded once to O.
template <int W, typename O>
__device__ __forceinline__ void store_rows(const NhwcOut& o, int at, float bias, const float* v) {
  O* const p = static_cast<O*>(o.out) + at;
  float x[W];
#pragma unroll
  for (int e = 0; e < W; ++e) x[e] = o.alpha * v[e];
  if (o.beta != 0.f) {
    float old[W];
    load_pack<W>(p, old);
#pragma unroll
    for (int e = 0; e < W; ++e) x[e] += o.beta * old[e];
  }
#pragma unroll
  for (int e = 0; e < W; ++e) {
    if (o.bias) x[e] += bias;
    if (o.relu) x[e] = x[e] > 0.f ? x[e] : 0.f;
  }
  store_pack<W>(p, x);
}

// Stores column col (< gn) of group grp into its output row, an output stored as O.
template <typename O>
__device__ __forceinline__ void nhwc_store(const NhwcGeo& g, const NhwcOut& o, int orow, int grp,
                                           int col, float acc) {
  const int ch = grp * g.gn + col;
  store_rows<1, O>(o, orow + ch * g.oc, o.bias ? o.bias[ch] : 0.f, &acc);
}

// Stores a 128 x TN tile held as two halves of m64nTN wgmma fragments (conv_igemm_wgmma.cuh:
// warp w of the warpgroup holds rows 16 w + gid (+ 8) of a half, columns 8 i + 2 tig (+ 1)),
// each thread its own values, rows m0 + 128 on, columns n0 + TN on of group grp.
template <typename O, int TN>
__device__ __forceinline__ void nhwc_store_fragments(const NhwcGeo& g, const NhwcOut& o,
                                                     const float (&acc)[2][TN / 2], int m0, int n0,
                                                     int grp, int tid) {
  const int warp = (tid >> 5) & 3, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int m = m0 + h * 64 + warp * 16 + gid + hi * 8;
      if (m >= g.gm) continue;
      const int orow = nhwc_out_row(g, m);
#pragma unroll
      for (int i = 0; i < TN / 8; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = n0 + 8 * i + 2 * tig + e;
          if (col < g.gn) nhwc_store<O>(g, o, orow, grp, col, acc[h][4 * i + 2 * hi + e]);
        }
    }
}

// nhwc_store_fragments for an output whose channels lie side by side (NHWC, g.oc == 1), through
// shared memory: each 64-row half of the tile goes in as [row][column] (rows padded by 8 floats,
// so that a half-warp's fragment writes hit 32 banks), then each thread writes 16-byte packs
// of adjacent channels of one output row (columns past gn, or a pack off 16-byte alignment, one
// value at a time). From the fragments, a warp's stores hit 16 bytes of each of 8 rows, half of
// every 32-byte sector: on ResNet-50's res3b_branch2b in BF16 (H100) the forward with NHWC output
// took 0.1055 ms against 0.0835 ms with NCHW output staged a plane's run at a time. `stage`: at
// least 64 * (TN + 8) floats of shared memory that the main loop no longer reads; the 128
// threads of the warpgroup (tid 0-127) call this together, pacing each other at named barrier
// `bar` (one a warpgroup of the block).
template <typename O, int TN>
__device__ __forceinline__ void nhwc_store_staged(const NhwcGeo& g, const NhwcOut& o,
                                                  const float (&acc)[2][TN / 2], int m0, int n0,
                                                  int grp, int tid, float* stage, int bar) {
  constexpr int kLd = TN + 8, kPack = 16 / int(sizeof(O)), kPacks = TN / kPack;
  const int warp = (tid >> 5) & 3, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
  O* const out = static_cast<O*>(o.out);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    asm volatile("bar.sync %0, 128;" ::"r"(bar) : "memory");  // earlier reads of the stage are done
#pragma unroll
    for (int hi = 0; hi < 2; ++hi)
#pragma unroll
      for (int i = 0; i < TN / 8; ++i)  // a half-warp's 8-byte writes: 4 rows x 32 bytes
        *reinterpret_cast<float2*>(stage + (warp * 16 + gid + hi * 8) * kLd + 8 * i + 2 * tig) =
            make_float2(acc[h][4 * i + 2 * hi], acc[h][4 * i + 2 * hi + 1]);
    asm volatile("bar.sync %0, 128;" ::"r"(bar) : "memory");
    for (int p = tid; p < 64 * kPacks; p += 128) {
      const int r = p / kPacks, c = p % kPacks * kPack;
      const int m = m0 + h * 64 + r, col = n0 + c;
      if (m >= g.gm || col >= g.gn) continue;
      const int ch = grp * g.gn + col;
      const int at = nhwc_out_row(g, m) + ch;
      const float* v = stage + r * kLd + c;
      if (col + kPack <= g.gn && reinterpret_cast<uintptr_t>(out + at) % 16 == 0) {
        float x[kPack];
#pragma unroll
        for (int e = 0; e < kPack; ++e) x[e] = o.alpha * v[e];
        if (o.beta != 0.f) {
          float old[kPack];
          load_pack<kPack>(out + at, old);
#pragma unroll
          for (int e = 0; e < kPack; ++e) x[e] += o.beta * old[e];
        }
#pragma unroll
        for (int e = 0; e < kPack; ++e) {
          if (o.bias) x[e] += o.bias[ch + e];
          if (o.relu) x[e] = x[e] > 0.f ? x[e] : 0.f;
        }
        store_pack<kPack>(out + at, x);
      } else {
        for (int e = 0; e < kPack && col + e < g.gn; ++e)
          store_rows<1, O>(o, at + e, o.bias ? o.bias[ch + e] : 0.f, v + e);
      }
    }
  }
}

// The wgmma kernel's launch (conv_igemm_wgmma_sm90a.cu, built where the CUDA architectures
// include 90): the same GEMM as the mma.sync kernel, on compute capability 9.0 only.
void nhwc_wgmma_launch(MathMode math, int tn, cudaStream_t st, const NhwcGeo& g, const void* act,
                       const void* w, const Piece* pieces, const NhwcOut& o, int groups);

// The taps as the TMA kernel (conv_igemm_tma_sm90a.cu) reads them: tap (r, s) at (r * dy, s * dx)
// from a row's base point (p * sy + oy, q * sx + ox), steps never negative (backward data reads
// its filter rows flipped instead); each tap's inner channels padded with zeros to `padded`, a
// whole number of 128-byte k-tiles, in the filter rows (`rows` of them, taps * padded values
// each). padded 0: the kernel does not run the problem.
struct NhwcTaps {
  int padded, taps, rows;
  int oy, ox, dy, dx;
};

// The TMA kernel's launch (built where the CUDA architectures include 90): the same GEMM as the
// others, its activation rows gathered by the tensor memory accelerator; compute capability 9.0.
// Tiles of 128 x tn (tn = 64 or 128), or with wg = 2 (and tn = 128) of 256 x 128: two warpgroups
// share each k-tile's filter rows, so a tile's multiplies read a third fewer bytes a flop.
void nhwc_tma_launch(MathMode math, int tn, int wg, cudaStream_t st, const NhwcGeo& g,
                     const NhwcTaps& k, const void* act, const void* w, const NhwcOut& o,
                     int groups);

}  // namespace crema::prim::cuda::igemm
