// The implicit-GEMM row of the CUDA convolution: tensor-core kernels (mma.sync, sm_80 and later)
// for TF32, BF16 and FP16 math on fp32 tensors, accumulating in fp32, with no im2col buffer.
// Each pass is one GEMM per group whose operands are gathered from the tensors as they are
// staged into shared memory (j is the GEMM's inner index):
//   forward        Y[m = (n,p,q)][k]      = sum_{j = (c,r,s)} X(m, j) W[k][j]
//   backward data  dX[m = (n,h,w)][c]     = sum_{j = (k,r,s)} dY(m, j) W[k][c][r][s]
//   backward filt. dW[k][i = (c,r,s)]     = sum_{j = (n,p,q)} dY[n][k][p][q] X(i, j)
// In every pass exactly one operand is "gathered": its element sits at row offset + tap offset
// and is zero (padding) unless the row's and the tap's spatial coordinates add up to a point
// inside the plane. For stride 1, backward data is such a gather of dY with the filter flipped;
// a strided backward data runs the im2col row's pass (col2im), where every product is useful.
//
// Block tile 128 x 128 x 32, 8 warps of 64 x 32. Operands are staged as fp32 by 4-byte
// cp.async copies (zero-filled where the gather falls into padding), kStages k-tiles in flight,
// and rounded to the math format as the warps load their fragments. The gathered operand of
// forward and backward data is staged along its rows (NCHW planes are contiguous there), every
// other operand along the inner index. Backward filter reduces N*P*Q per filter element, so it
// splits that depth over blocks into per-split partial filters, summed in split order by a
// second kernel: no float atomics, results repeat bit for bit, like every other row.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>

#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_igemm.cuh"
#include "primitives/conv/conv_impl.h"

namespace crema::prim::cuda {
namespace {

using namespace igemm;

using Pass = ConvPass;

constexpr int kThreads = 256;
constexpr int kTileM = 128, kTileN = 128;
constexpr int kTileRows = kTileM + kTileN;  // of both operands, in shared memory
constexpr int kTileK = 32;                  // fp32 values of a k-tile row
constexpr int kStages = 3;                  // k-tiles in flight

// Padded shared row, so that fragment loads are free of bank conflicts: TF32 reads single
// words (rows g = 0..7 at 4g + t), BF16/FP16 read pairs (rows g = 0..3 of a half-warp at 8g + 2t).
template <MathMode M>
constexpr int kLd = M == MathMode::kTF32 ? kTileK + 4 : kTileK + 8;
template <MathMode M>
constexpr int smem_bytes() {
  return int(sizeof(float)) * kStages * kTileRows * kLd<M>;
}

// The problem as the kernels see it. Offsets are int: the support rule keeps every tensor
// below 2^31 elements.
struct Geo {
  int n, c, h, w, k, p, q, cg, kg, r, s;
  int ph, pw, sh, sw, dh, dw;
  int xsn, xsc, xsh, xsw, ysn, ysc, ysh, ysw;
  int gm, gn, gk;     // GEMM sizes of one group
  int splits, tiles;  // backward filter: depth splits, k-tiles per split
};

// A tap of the gathered operand: offset, spatial coordinates; and the plain operand's offset.
// Forward and backward data tabulate their taps (the inner index is (c,r,s) or (k,r,s), at most
// a few thousand); backward filter decomposes (n,p,q) as it goes.
struct alignas(16) Tap {
  int g_off, p_off, h, w;
};

// Fragment values: fp32 from shared memory rounded to the math format as the mma operands take
// them. TF32: one value per register (tf32()). BF16/FP16: two values of consecutive k (the
// lower k in the low half).
template <MathMode M>
__device__ __forceinline__ uint32_t pack2(float2 v) {
  if constexpr (M == MathMode::kBF16) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __half2 h = __floats2half2_rn(v.x, v.y);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// One fp32 element from global to shared memory, asynchronously; zero when !valid (the source
// is then not read).
__device__ __forceinline__ void copy4(float* dst, const float* src, bool valid) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src),
               "r"(valid ? 4 : 0));
}

// Thread layouts for staging a 128-row x 32-value operand tile, 16 values a thread:
//  - along rows (the operand is contiguous along the GEMM's rows: X and dY planes in forward
//    and backward data): a thread owns one row and k = k0, k0+2, ..., k0+30;
//  - along k (contiguous along the inner index): a thread owns one k of rows r0, r0+8, ...
struct AlongRows {
  __device__ static int row(int t) { return t & 127; }
  __device__ static int k(int t, int i) { return (t >> 7) + 2 * i; }
};
struct AlongK {
  __device__ static int row(int t, int i) { return (t >> 5) + 8 * i; }
  __device__ static int k(int t) { return t & 31; }
};

// Per-block row state of an operand staged along k: offset and spatial coordinates of each of
// its 128 rows (kNoPoint when the row is past the GEMM's edge), shared by the lanes of a warp.
struct Rows {
  int off[128], h[128], w[128];
};

template <Pass P, MathMode M>
__global__ void __launch_bounds__(kThreads)
    igemm_kernel(Geo g, const float* __restrict__ a_src, const float* __restrict__ b_src,
                 const Tap* __restrict__ taps, float* out, float alpha, float beta,
                 const float* __restrict__ bias, bool relu) {
  constexpr int kL = kLd<M>;
  constexpr int kStage = kTileRows * kL;
  extern __shared__ float smem[];
  __shared__ Rows a_rows, b_rows;

  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kTileM, n0 = blockIdx.y * kTileN;
  const int grp = blockIdx.z / g.splits, split = blockIdx.z % g.splits;
  const int k_tiles = (g.gk + kTileK - 1) / kTileK;
  const int kt0 = split * g.tiles, kt1 = min(k_tiles, kt0 + g.tiles);

  // Row state. Forward / backward data: A (X or dY, gathered) along rows in registers, B (W,
  // plain) along k in `b_rows`. Backward filter: A (dY, plain) and B (X, gathered) along k.
  int a_off = 0, a_h = 0, a_w = 0;
  if (tid < 128) {
    const int row = tid;
    if constexpr (P == Pass::kBwdFilter) {
      const int k = m0 + row;
      a_rows.off[row] = (grp * g.kg + k) * g.ysc;
      a_rows.h[row] = k < g.gm ? 0 : kNoPoint;
      const int ci = n0 + row, rs = g.r * g.s;
      const int c = ci / rs, r = ci % rs / g.s, s = ci % g.s;
      b_rows.h[row] = ci < g.gn ? r * g.dh : kNoPoint;
      b_rows.w[row] = s * g.dw;
      b_rows.off[row] = (grp * g.cg + c) * g.xsc + r * g.dh * g.xsh + s * g.dw * g.xsw;
    } else {
      const int nr = n0 + row;
      b_rows.off[row] = P == Pass::kFwd ? (grp * g.kg + nr) * g.gk
                                        : grp * g.kg * g.cg * g.r * g.s + nr * g.r * g.s;
      b_rows.h[row] = nr < g.gn ? 0 : kNoPoint;
    }
  }
  if constexpr (P != Pass::kBwdFilter) {
    const int m = m0 + AlongRows::row(tid);
    const int ph = P == Pass::kFwd ? g.p : g.h, pw = P == Pass::kFwd ? g.q : g.w;
    const int n = m / (ph * pw), yx = m % (ph * pw), y = yx / pw, x = yx % pw;
    if (P == Pass::kFwd) {
      a_h = y * g.sh - g.ph;
      a_w = x * g.sw - g.pw;
      a_off = n * g.xsn + grp * g.cg * g.xsc + a_h * g.xsh + a_w * g.xsw;
    } else {
      a_h = y + g.ph;
      a_w = x + g.pw;
      a_off = n * g.ysn + grp * g.kg * g.ysc + a_h * g.ysh + a_w * g.ysw;
    }
    if (m >= g.gm) a_h = kNoPoint;
  }
  __syncthreads();

  // Queues the copies of k-tile kt into stage st.
  auto issue = [&](int kt, int st) {
    float* as = smem + st * kStage;
    float* bs = as + kTileM * kL;
    const int kbase = kt * kTileK;
    const int kk = AlongK::k(tid), j = kbase + kk;
    if constexpr (P == Pass::kBwdFilter) {
      // j = (n, p, q): dY offset of the plain operand, X offset and point of the gathered one.
      const bool in = j < g.gk;
      const int n = j / (g.p * g.q), pq = j % (g.p * g.q), p = pq / g.q, q = pq % g.q;
      const int dy_off = n * g.ysn + p * g.ysh + q * g.ysw;
      const int xh = in ? p * g.sh - g.ph : kNoPoint, xw = q * g.sw - g.pw;
      const int x_off = n * g.xsn + xh * g.xsh + xw * g.xsw;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const int row = AlongK::row(tid, i);
        const bool av = in && a_rows.h[row] == 0;
        copy4(as + row * kL + kk, av ? a_src + a_rows.off[row] + dy_off : a_src, av);
        const bool bv = inside(b_rows.h[row] + xh, b_rows.w[row] + xw, g.h, g.w);
        copy4(bs + row * kL + kk, bv ? b_src + b_rows.off[row] + x_off : b_src, bv);
      }
    } else {
      const int hmax = P == Pass::kFwd ? g.h : g.p, wmax = P == Pass::kFwd ? g.w : g.q;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const int ka = AlongRows::k(tid, i);
        const Tap t = taps[kbase + ka];
        const bool av = inside(a_h + t.h, a_w + t.w, hmax, wmax);
        copy4(as + AlongRows::row(tid) * kL + ka, av ? a_src + a_off + t.g_off : a_src, av);
      }
      const bool in = j < g.gk;
      const int jo = !in ? 0 : P == Pass::kFwd ? j : taps[j].p_off;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const int row = AlongK::row(tid, i);
        const bool bv = in && b_rows.h[row] == 0;
        copy4(bs + row * kL + kk, bv ? b_src + b_rows.off[row] + jo : b_src, bv);
      }
    }
  };

  const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
  const int wm = (warp & 1) * 64, wn = (warp >> 1) * 32;
  float acc[4][4][4] = {};

  // Multiplies the k-tile in stage st: 4 k-steps of 8 (TF32) or 2 of 16 (BF16/FP16).
  auto compute = [&](int st) {
    const float* as = smem + st * kStage;
    const float* bs = as + kTileM * kL;
    constexpr int kStep = M == MathMode::kTF32 ? 8 : 16;
#pragma unroll
    for (int ks = 0; ks < kTileK; ks += kStep) {
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const float* r0 = as + (wm + mi * 16 + gid) * kL + ks;
        const float* r8 = r0 + 8 * kL;
        if constexpr (M == MathMode::kTF32) {
          af[mi][0] = tf32(r0[tig]);
          af[mi][1] = tf32(r8[tig]);
          af[mi][2] = tf32(r0[tig + 4]);
          af[mi][3] = tf32(r8[tig + 4]);
        } else {
          af[mi][0] = pack2<M>(*reinterpret_cast<const float2*>(r0 + 2 * tig));
          af[mi][1] = pack2<M>(*reinterpret_cast<const float2*>(r8 + 2 * tig));
          af[mi][2] = pack2<M>(*reinterpret_cast<const float2*>(r0 + 2 * tig + 8));
          af[mi][3] = pack2<M>(*reinterpret_cast<const float2*>(r8 + 2 * tig + 8));
        }
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const float* r0 = bs + (wn + ni * 8 + gid) * kL + ks;
        if constexpr (M == MathMode::kTF32) {
          bf[ni][0] = tf32(r0[tig]);
          bf[ni][1] = tf32(r0[tig + 4]);
        } else {
          bf[ni][0] = pack2<M>(*reinterpret_cast<const float2*>(r0 + 2 * tig));
          bf[ni][1] = pack2<M>(*reinterpret_cast<const float2*>(r0 + 2 * tig + 8));
        }
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma<M>(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    }
  };

  pipeline<kStages>(kt0, kt1, issue, compute);

  // Epilogue: out = alpha * acc + beta * out (+ bias, ReLU in forward); backward filter with
  // several splits writes its raw partial into split's slice of the partials instead.
  int col_off[8], col_idx[8];
#pragma unroll
  for (int ni = 0; ni < 4; ++ni)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int n = n0 + wn + ni * 8 + 2 * tig + e;
      col_idx[ni * 2 + e] = n < g.gn ? n : -1;
      col_off[ni * 2 + e] = P == Pass::kFwd       ? (grp * g.kg + n) * g.ysc
                            : P == Pass::kBwdData ? (grp * g.cg + n) * g.xsc
                                                  : n;
    }
  const bool partial = P == Pass::kBwdFilter && g.splits > 1;
  if (partial) out += int64_t(split) * g.k * g.cg * g.r * g.s;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int m = m0 + wm + mi * 16 + gid + hi * 8;
      if (m >= g.gm) continue;
      int row_off;
      if constexpr (P == Pass::kBwdFilter) {
        row_off = (grp * g.kg + m) * g.cg * g.r * g.s;
      } else {
        const int ph = P == Pass::kFwd ? g.p : g.h, pw = P == Pass::kFwd ? g.q : g.w;
        const int n = m / (ph * pw), yx = m % (ph * pw), y = yx / pw, x = yx % pw;
        row_off =
            P == Pass::kFwd ? n * g.ysn + y * g.ysh + x * g.ysw : n * g.xsn + y * g.xsh + x * g.xsw;
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = ni * 2 + e;
          if (col_idx[c] < 0) continue;
          float* o = out + row_off + col_off[c];
          const float a = acc[mi][ni][hi * 2 + e];
          if (partial) {
            *o = a;
            continue;
          }
          float v = beta == 0.f ? alpha * a : alpha * a + beta * *o;
          if constexpr (P == Pass::kFwd) {
            if (bias) v += bias[grp * g.kg + col_idx[c]];
            if (relu) v = v > 0.f ? v : 0.f;
          }
          *o = v;
        }
    }
}

// Forward taps j = (c, r, s): X offset and position relative to the output point; backward data
// taps j = (k, r, s): dY offset and position relative to the input point (the filter flipped),
// plus W's offset of the tap. Entries past the depth land outside every plane.
__global__ void taps_kernel(Geo g, bool fwd, int count, Tap* taps) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const int rs = g.r * g.s;
  const int ch = j / rs, r = j % rs / g.s, s = j % g.s;
  Tap t{0, 0, kNoPoint, kNoPoint};
  if (j < g.gk) {
    if (fwd) {
      t = {ch * g.xsc + r * g.dh * g.xsh + s * g.dw * g.xsw, j, r * g.dh, s * g.dw};
    } else {
      t = {ch * g.ysc - r * g.dh * g.ysh - s * g.dw * g.ysw, ch * g.cg * rs + r * g.s + s,
           -r * g.dh, -s * g.dw};
    }
  }
  taps[j] = t;
}

// dw = alpha * sum_split part[split] + beta * dw, splits added in order.
__global__ void sum_splits_kernel(int splits, int64_t count, const float* __restrict__ part,
                                  float* dw, float alpha, float beta) {
  CREMA_CUDA_LOOP(i, count) {
    float s = part[i];
    for (int k = 1; k < splits; ++k) s += part[k * count + i];
    dw[i] = beta == 0.f ? alpha * s : alpha * s + beta * dw[i];
  }
}

Geo geo_of(const ConvProblem& p) {
  const ConvDesc& cd = p.cd;
  const TensorDesc &xd = p.xd, &yd = p.yd;
  Geo g{};
  g.n = xd.n, g.c = xd.c, g.h = xd.h, g.w = xd.w;
  g.k = yd.c, g.p = yd.h, g.q = yd.w;
  g.cg = p.wd.c, g.kg = p.wd.k / cd.groups, g.r = p.wd.r, g.s = p.wd.s;
  g.ph = cd.pad_h, g.pw = cd.pad_w, g.sh = cd.stride_h, g.sw = cd.stride_w;
  g.dh = cd.dilation_h, g.dw = cd.dilation_w;
  g.xsn = int(xd.stride_n), g.xsc = int(xd.stride_c), g.xsh = int(xd.stride_h);
  g.xsw = int(xd.stride_w);
  g.ysn = int(yd.stride_n), g.ysc = int(yd.stride_c), g.ysh = int(yd.stride_h);
  g.ysw = int(yd.stride_w);
  g.splits = 1;
  g.tiles = INT_MAX / 2;
  return g;
}

// Backward filter's depth split: enough blocks for two waves, at least 8 k-tiles a split, and
// the partial filters within the workspace budget.
void plan_splits(Handle& h, const ConvProblem& p, Geo& g) {
  const int64_t blocks =
      int64_t((g.gm + kTileM - 1) / kTileM) * ((g.gn + kTileN - 1) / kTileN) * p.cd.groups;
  const int k_tiles = (g.gk + kTileK - 1) / kTileK;
  const int64_t filter = p.wd.count();
  int64_t splits = std::max<int64_t>(1, 2 * current_device().sms / blocks);
  splits = std::min<int64_t>(splits, std::max(1, k_tiles / 8));
  splits = std::min<int64_t>(
      splits, std::max<int64_t>(1, int64_t(h.workspace_budget() / (filter * sizeof(float)))));
  g.tiles = int((k_tiles + splits - 1) / splits);
  g.splits = (k_tiles + g.tiles - 1) / g.tiles;
}

template <Pass P, MathMode M>
void launch_as(const dim3& grid, cudaStream_t st, const Geo& g, const float* a, const float* b,
               const Tap* taps, float* out, float alpha, float beta, const float* bias, bool relu) {
  allow_shared_memory<igemm_kernel<P, M>>(smem_bytes<M>(), "igemm_kernel shared memory");
  igemm_kernel<P, M>
      <<<grid, kThreads, smem_bytes<M>(), st>>>(g, a, b, taps, out, alpha, beta, bias, relu);
  check_launch("igemm_kernel");
}

template <Pass P>
void launch(Handle& h, const ConvProblem& pr, Geo g, const float* a, const float* b,
            const Tap* taps, float* out, float alpha, float beta, const float* bias, bool relu) {
  const dim3 grid((g.gm + kTileM - 1) / kTileM, (g.gn + kTileN - 1) / kTileN,
                  pr.cd.groups * g.splits);
  cudaStream_t st = stream_of(h);
  switch (pr.cd.math) {
    case MathMode::kBF16:
      return launch_as<P, MathMode::kBF16>(grid, st, g, a, b, taps, out, alpha, beta, bias, relu);
    case MathMode::kFP16:
      return launch_as<P, MathMode::kFP16>(grid, st, g, a, b, taps, out, alpha, beta, bias, relu);
    default:
      return launch_as<P, MathMode::kTF32>(grid, st, g, a, b, taps, out, alpha, beta, bias, relu);
  }
}

size_t taps_bytes(const ConvProblem& p) {
  const int64_t depth = int64_t(std::max(p.wd.c, p.wd.k / p.cd.groups)) * p.wd.r * p.wd.s;
  return size_t((depth + 31) / 32 * 32) * sizeof(Tap);
}

Tap* make_taps(Handle& h, const ConvProblem& pr, const Geo& g, bool fwd) {
  const int count = (g.gk + 31) / 32 * 32;
  Tap* taps = static_cast<Tap*>(h.workspace(size_t(count) * sizeof(Tap)));
  taps_kernel<<<(count + 127) / 128, 128, 0, stream_of(h)>>>(g, fwd, count, taps);
  check_launch("taps_kernel");
  return taps;
}

// The passes of both rows: `wgmma` sends the NHWC path to its Hopper kernels.
void fwd_as(Handle& h, const ConvProblem& pr, const void* x, const void* w, void* y, Blend blend,
            const ConvEpilogue& ep, bool wgmma) {
  if (igemm_nhwc_applies(pr, ConvPass::kFwd))
    return igemm_nhwc_run(h, pr, ConvPass::kFwd, x, static_cast<const float*>(w), y, blend,
                          static_cast<const float*>(ep.bias), ep.relu, wgmma);
  Geo g = geo_of(pr);
  g.gm = g.n * g.p * g.q, g.gn = g.kg, g.gk = g.cg * g.r * g.s;
  const Tap* taps = make_taps(h, pr, g, true);
  launch<Pass::kFwd>(h, pr, g, static_cast<const float*>(x), static_cast<const float*>(w), taps,
                     static_cast<float*>(y), float(blend.alpha), float(blend.beta),
                     static_cast<const float*>(ep.bias), ep.relu);
}

void bwd_data_as(Handle& h, const ConvProblem& pr, const void* w, const void* dy, void* dx,
                 Blend blend, bool wgmma) {
  if (pr.cd.stride_h != 1 || pr.cd.stride_w != 1)
    return kConvIm2colGemm.bwd_data(h, pr, w, dy, dx, blend);
  if (igemm_nhwc_applies(pr, ConvPass::kBwdData))
    return igemm_nhwc_run(h, pr, ConvPass::kBwdData, dy, static_cast<const float*>(w), dx, blend,
                          nullptr, false, wgmma);
  Geo g = geo_of(pr);
  g.gm = g.n * g.h * g.w, g.gn = g.cg, g.gk = g.kg * g.r * g.s;
  const Tap* taps = make_taps(h, pr, g, false);
  launch<Pass::kBwdData>(h, pr, g, static_cast<const float*>(dy), static_cast<const float*>(w),
                         taps, static_cast<float*>(dx), float(blend.alpha), float(blend.beta),
                         nullptr, false);
}

void bwd_filter_as(Handle& h, const ConvProblem& pr, const void* x, const void* dy, void* dw,
                   Blend blend, bool wgmma) {
  if (wgmma && !wgrad_planes_unsupported(pr))
    return wgrad_planes_run(h, pr, x, dy, static_cast<float*>(dw), blend);
  if (igemm_nhwc_applies(pr, ConvPass::kBwdFilter))
    return igemm_wgrad_run(h, pr, x, dy, static_cast<float*>(dw), blend, wgmma);
  Geo g = geo_of(pr);
  g.gm = g.kg, g.gn = g.cg * g.r * g.s, g.gk = g.n * g.p * g.q;
  plan_splits(h, pr, g);
  const int64_t count = pr.wd.count();
  float* out = static_cast<float*>(dw);
  if (g.splits > 1)
    out = static_cast<float*>(h.workspace(size_t(g.splits * count) * sizeof(float)));
  launch<Pass::kBwdFilter>(h, pr, g, static_cast<const float*>(dy), static_cast<const float*>(x),
                           nullptr, out, float(blend.alpha), float(blend.beta), nullptr, false);
  if (g.splits > 1) {
    sum_splits_kernel<<<grid_for(count), kBlock, 0, stream_of(h)>>>(
        g.splits, count, out, static_cast<float*>(dw), float(blend.alpha), float(blend.beta));
    check_launch("sum_splits_kernel");
  }
}

void fwd(Handle& h, const ConvProblem& pr, const void* x, const void* w, void* y, Blend blend,
         const ConvEpilogue& ep) {
  fwd_as(h, pr, x, w, y, blend, ep, false);
}
void bwd_data(Handle& h, const ConvProblem& pr, const void* w, const void* dy, void* dx,
              Blend blend) {
  bwd_data_as(h, pr, w, dy, dx, blend, false);
}
void fwd_sm90(Handle& h, const ConvProblem& pr, const void* x, const void* w, void* y, Blend blend,
              const ConvEpilogue& ep) {
  fwd_as(h, pr, x, w, y, blend, ep, true);
}
void bwd_data_sm90(Handle& h, const ConvProblem& pr, const void* w, const void* dy, void* dx,
                   Blend blend) {
  bwd_data_as(h, pr, w, dy, dx, blend, true);
}
void bwd_filter(Handle& h, const ConvProblem& pr, const void* x, const void* dy, void* dw,
                Blend blend) {
  bwd_filter_as(h, pr, x, dy, dw, blend, false);
}
void bwd_filter_sm90(Handle& h, const ConvProblem& pr, const void* x, const void* dy, void* dw,
                     Blend blend) {
  bwd_filter_as(h, pr, x, dy, dw, blend, true);
}

size_t workspace(Handle& h, const ConvProblem& pr) {
  Geo g = geo_of(pr);
  g.gm = g.kg, g.gn = g.cg * g.r * g.s, g.gk = g.n * g.p * g.q;
  plan_splits(h, pr, g);
  size_t bytes =
      std::max(taps_bytes(pr),
               g.splits > 1 ? size_t(g.splits) * size_t(pr.wd.count()) * sizeof(float) : size_t(0));
  if (pr.cd.stride_h != 1 || pr.cd.stride_w != 1)
    bytes = std::max(bytes, kConvIm2colGemm.workspace(h, pr));
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData})
    if (igemm_nhwc_applies(pr, pass)) bytes = std::max(bytes, igemm_nhwc_workspace(pr, pass));
  if (igemm_nhwc_applies(pr, ConvPass::kBwdFilter))
    bytes = std::max(bytes, igemm_wgrad_workspace(h, pr));
  return bytes;
}
// The Hopper row's: the same, or its TF32 backward filter over padded planes.
size_t workspace_sm90(Handle& h, const ConvProblem& pr) {
  const size_t bytes = workspace(h, pr);
  return wgrad_planes_unsupported(pr) ? bytes : std::max(bytes, wgrad_planes_workspace(h, pr));
}

const char* unsupported(const ConvProblem& p) {
  if (p.xd.dtype != DataType::kFloat32) return "tensor cores take float32 tensors";
  if (p.cd.math == MathMode::kFP32)
    return "strict fp32 math (tensor cores need TF32, BF16 or FP16)";
  const int64_t limit = int64_t(1) << 31;
  if (tensor_span(p.xd) >= limit || tensor_span(p.yd) >= limit || p.wd.count() >= limit ||
      int64_t(p.xd.n) * p.xd.h * p.xd.w >= limit)
    return "a tensor of 2^31 elements or more";
  if (p.cd.groups > 65535) return "more than 65535 groups";
  if ((p.cd.stride_h != 1 || p.cd.stride_w != 1) && conv_unsupported_gemm(p))
    return "strided backward data runs im2col_gemm, which needs packed images";
  if (current_device().major < 8) return "needs compute capability 8.0 or later";
  return nullptr;
}

// The Hopper row runs what implicit_gemm runs, its NHWC path on wgmma; TF32 backward filter,
// which wgmma cannot read from NHWC copies, over padded planes where it can (stride 1), else on
// mma.sync.
const char* unsupported_sm90(const ConvProblem& p) {
#ifdef CREMA_WITH_SM90A
  if (const char* why = unsupported(p)) return why;
  const DeviceFacts f = current_device();
  if (f.major != 9 || f.minor != 0) return "wgmma needs compute capability 9.0";
  return nullptr;
#else
  (void)p;
  return "built without sm_90a code (CMAKE_CUDA_ARCHITECTURES without 90)";
#endif
}

// Half-size and channels-last x and y (dx, dy) go straight through the NHWC path: it reads them
// as they are (in place where they are channels-last in the math's 16-bit type, else through its
// copies, which take any strides) and its epilogue writes any strides.
bool takes_stored(const ConvProblem& p, ConvPass pass, const ConvEpilogue&) {
  if (pass == ConvPass::kBwdData && (p.cd.stride_h != 1 || p.cd.stride_w != 1)) return false;
  return igemm_nhwc_applies(p, pass) && igemm_nhwc_takes_half(p, pass);
}

}  // namespace

namespace igemm {
DeviceFacts current_device() {
  static std::mutex mutex;
  static std::map<int, DeviceFacts> facts;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return {};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = facts.find(dev);
  if (it == facts.end()) {
    DeviceFacts f;
    if (cudaDeviceGetAttribute(&f.major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&f.minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return {};
    it = facts.emplace(dev, f).first;
  }
  return it->second;
}
}  // namespace igemm

const ConvImpl kConvImplicitGemm{ConvAlgo::kImplicitGemm,
                                 Device::kCUDA,
                                 unsupported,
                                 workspace,
                                 fwd,
                                 bwd_data,
                                 bwd_filter,
                                 takes_stored};
const ConvImpl kConvImplicitGemmSm90{ConvAlgo::kImplicitGemmSm90,
                                     Device::kCUDA,
                                     unsupported_sm90,
                                     workspace_sm90,
                                     fwd_sm90,
                                     bwd_data_sm90,
                                     bwd_filter_sm90,
                                     takes_stored};

}  // namespace crema::prim::cuda
