// The implicit GEMM's NHWC path, for forward and stride-1 backward data in TF32, BF16 or FP16
// math when the GEMM's inner channels (Cg forward, Kg backward data) fill 16-byte pieces (4
// TF32 or 8 BF16/FP16 values), or forward of an ungrouped layer has fewer (the copies padded to
// one piece with zeros: nhwc_input_channels). The gathered activation (x, or dy) is first rounded
// into an NHWC copy in the math format and the filter into [rows][R][S][inner] order, so that the
// GEMM's inner index (r, s, channel) runs along memory in 16-byte pieces:
//   forward        Y[m = (n,p,q)][k] = sum_{(r,s,c)} Xnhwc[n][p*sh-ph+r*dh][q*sw-pw+s*dw][c]
//                                                    Wt[k][r][s][c]
//   backward data  dX[m = (n,h,w)][c] = sum_{(r,s,k)} dYnhwc[n][h+ph-r*dh][w+pw-s*dw][k]
//                                                    Wt[c][r][s][k]
// The copies cost a read of 4 and a write of 2 (TF32: 4) bytes per element, against the R*S (and
// channel-tile) reuse of every element inside the GEMM.
//
// This file makes the copies and runs the GEMM on mma.sync (sm_80 and later), or hands it to a
// wgmma kernel for the Hopper row: the TMA-fed one (conv_igemm_tma_sm90a.cu) where tma_taps
// allows, which needs its own filter rows (each tap's channels padded to whole 128-byte k-tiles,
// backward data's taps flipped), else the cp.async one (conv_igemm_wgmma_sm90a.cu). Block tile 128
// rows by 128 columns (64 where a group has no more) by 64 bytes of depth, staged as
// conv_igemm_nhwc.cuh says; 4 warps of 64 x 64 (64 x 32) load their fragments with ldmatrix (which
// moves 32-bit TF32 values as pairs of 16-bit halves, landing them where mma's TF32 fragments
// expect them). fp32 accumulation; the epilogue blends into the output with any strides. The
// activation may be stored in f32, bf16 or f16 (the copy reads it as it is), and so may the output
// (the epilogue rounds once): the path reads and writes half-size tensors without f32 copies.
#include <algorithm>

#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_igemm.cuh"
#include "primitives/conv/conv_igemm_nhwc.cuh"
#include "primitives/conv/conv_impl.h"

namespace crema::prim::cuda {
namespace {

using namespace igemm;

constexpr int kTileM = kNhwcTileM;

template <MathMode M, int TN, typename O>
__global__ void __launch_bounds__(kNhwcThreads)
    igemm_nhwc_kernel(NhwcGeo g, const Bits<M>* __restrict__ a_src,
                      const Bits<M>* __restrict__ b_src, const Piece* __restrict__ pieces,
                      NhwcOut o) {
  using T = Bits<M>;
  constexpr int kK = nhwc_tile_k<M>();
  constexpr int kWarpN = TN / 2;   // a warp's columns
  constexpr int kNI = kWarpN / 8;  // its 8-column mma tiles
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kTileM, n0 = blockIdx.y * TN, grp = blockIdx.z;
  NhwcStager<M, TN> stager(g, pieces, m0, n0, grp, tid);
  auto issue = [&](int kt, int st) {
    T* as = smem + st * (kTileM + TN) * kK;
    stager.issue(g, a_src, b_src, pieces, kt, as, as + kTileM * kK);
  };

  const int warp = tid >> 5, lane = tid & 31;
  const int wm = (warp & 1) * 64, wn = (warp >> 1) * kWarpN;
  float acc[4][kNI][4] = {};

  auto compute = [&](int st) {
    const T* as = smem + st * (kTileM + TN) * kK;
    const T* bs = as + kTileM * kK;
#pragma unroll
    for (int ks = 0; ks < 4; ks += 2) {  // two pieces of depth per mma
      uint32_t af[4][4], bf[kNI / 2][4];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int row = wm + mi * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        ldmatrix_x4(af[mi], as + nhwc_swizzled<M>(row, ks + (lane >> 4)));
      }
#pragma unroll
      for (int nj = 0; nj < kNI / 2; ++nj) {
        const int row = wn + nj * 16 + (lane & 7) + (lane >> 4) * 8;
        ldmatrix_x4(bf[nj], bs + nhwc_swizzled<M>(row, ks + ((lane >> 3) & 1)));
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni)
          mma<M>(acc[mi][ni], af[mi], bf[ni >> 1][(ni & 1) * 2], bf[ni >> 1][(ni & 1) * 2 + 1]);
    }
  };

  pipeline<kNhwcStages>(0, (g.gk + kK - 1) / kK, issue, compute);

  const int gid = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int m = m0 + wm + mi * 16 + gid + hi * 8;
      if (m >= g.gm) continue;
      const int orow = nhwc_out_row(g, m);
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = n0 + wn + ni * 8 + 2 * tig + e;
          if (col < g.gn) nhwc_store<O>(g, o, orow, grp, col, acc[mi][ni][hi * 2 + e]);
        }
    }
}

// Filter rows for the GEMM, `inner` values a tap (zeros past the channels it sums over):
// forward Wt[k][t][c] = W[k][c][t]; backward data Wt[g*Cg + c][t][k] = W[g*Kg + k][c][t]; taps
// t = r * S + s, or read flipped (rs - 1 - t) for the TMA kernel's backward data.
template <MathMode M>
__global__ void filter_rows_kernel(bool fwd, bool flip, int rows, int cg, int kg, int inner, int rs,
                                   const float* __restrict__ w, Bits<M>* dst) {
  const int64_t count = int64_t(rows) * rs * inner;
  CREMA_CUDA_LOOP(i, count) {
    const int j = int(i % inner), t = int(i / inner % rs);
    const int64_t row = i / (int64_t(inner) * rs);
    const int tt = flip ? rs - 1 - t : t;
    int64_t src;
    if (fwd) {  // row = k, j = c
      src = j < cg ? (row * cg + j) * rs + tt : -1;
    } else {  // row = g * Cg + c, j = k
      const int64_t grp = row / cg, c = row % cg;
      src = j < kg ? ((grp * kg + j) * cg + c) * rs + tt : -1;
    }
    dst[i] = to_bits<M>(src >= 0 ? w[src] : 0.f);
  }
}

// Piece j covers inner indices [j * per_piece, (j + 1) * per_piece): one (r, s) tap and
// per_piece channels.
__global__ void pieces_kernel(NhwcGeo g, int per_piece, int count, Piece* pieces) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const int k = j * per_piece;
  Piece pc{0, kNoPoint, 0, 0};
  if (k < g.gk) {
    const int t = k / g.cin, ci = k % g.cin, r = t / g.s, s = t % g.s;
    pc = {(r * g.dy * g.src_w + s * g.dx) * g.src_c + ci, r * g.dy, s * g.dx, 0};
  }
  pieces[j] = pc;
}

// Forward's channels of a group, as the copies hold them (nhwc_input_channels).
int fwd_channels(const ConvProblem& p) {
  return nhwc_input_channels(p.wd.c, p.cd.groups, p.cd.math);
}

// How the TMA kernel would read the pass's taps (NhwcTaps; padded 0 where it cannot or should
// not): padding past a group's channels would sum the next group's, so only ungrouped layers
// pad (tma_padded_channels), and im2col mode must reach every tap (tma_im2col_fits).
NhwcTaps tma_taps(const ConvProblem& p, bool fwd) {
  const ConvDesc& cd = p.cd;
  const int per_tile = kNhwcTmaRowBytes / (cd.math == MathMode::kTF32 ? 4 : 2);
  const int cin = fwd ? fwd_channels(p) : p.wd.k / cd.groups;
  const int padded = tma_padded_channels(cin, per_tile);
  if (!padded || (cd.groups > 1 && cin != padded)) return {};
  const TensorDesc& src = fwd ? p.xd : p.yd;
  const TensorDesc& dst = fwd ? p.yd : p.xd;
  const int reach_h = (p.wd.r - 1) * cd.dilation_h, reach_w = (p.wd.s - 1) * cd.dilation_w;
  const int sy = fwd ? cd.stride_h : 1, sx = fwd ? cd.stride_w : 1;
  const int oy = fwd ? -cd.pad_h : cd.pad_h - reach_h, ox = fwd ? -cd.pad_w : cd.pad_w - reach_w;
  if (!tma_im2col_fits(src.h, src.w, dst.h, dst.w, sy, sx, oy, ox, reach_h, reach_w)) return {};
  return {padded,        p.wd.r * p.wd.s, fwd ? p.wd.k : p.wd.c * cd.groups, oy, ox,
          cd.dilation_h, cd.dilation_w};
}

// Values a tap of the filter rows holds: the GEMM's inner channels, or the TMA kernel's padding.
int filter_inner(const ConvProblem& p, bool fwd, const NhwcTaps& tma) {
  if (tma.padded) return tma.padded;
  return fwd ? fwd_channels(p) : p.wd.k / p.cd.groups;
}
// Values of the filter rows.
int64_t filter_rows_count(const ConvProblem& p, bool fwd, int inner) {
  return int64_t(fwd ? p.wd.k : p.wd.c * p.cd.groups) * p.wd.r * p.wd.s * inner;
}

// The channels of the NHWC activation the GEMM reads (forward's padded ones, dy's).
int src_channels(const ConvProblem& p, bool fwd) {
  return fwd ? fwd_channels(p) * p.cd.groups : p.yd.c;
}

// Workspace carving: the NHWC copy (none where the kernels read the activation in place), the
// filter rows (for either kernel), the pieces; each 256-byte aligned.
struct Layout {
  size_t src, filter, pieces, total;
};

Layout layout_of(const ConvProblem& p, bool fwd, bool copy) {
  const TensorDesc& s = fwd ? p.xd : p.yd;
  const int cin = fwd ? fwd_channels(p) : p.wd.k / p.cd.groups;
  const int src_c = src_channels(p, fwd);
  const int64_t gk = int64_t(cin) * p.wd.r * p.wd.s;
  const size_t elem = p.cd.math == MathMode::kTF32 ? 4 : 2;
  const int64_t per_tile = kNhwcRowBytes / int64_t(elem);
  const int inner = std::max(filter_inner(p, fwd, {}), filter_inner(p, fwd, tma_taps(p, fwd)));
  Layout l{};
  l.src = 0;
  l.filter = copy ? round256(size_t(s.n) * src_c * s.h * s.w * elem) : 0;
  l.pieces = l.filter + round256(size_t(filter_rows_count(p, fwd, inner)) * elem);
  l.total = l.pieces + round256(size_t((gk + per_tile - 1) / per_tile * 4) * sizeof(Piece));
  return l;
}

template <MathMode M, int TN, typename O>
void launch_out(cudaStream_t st, const NhwcGeo& g, const Bits<M>* act, const Bits<M>* w,
                const Piece* pieces, const NhwcOut& o, int groups) {
  allow_shared_memory<igemm_nhwc_kernel<M, TN, O>>(nhwc_smem_bytes(TN),
                                                   "igemm_nhwc_kernel shared memory");
  const dim3 grid((g.gm + kTileM - 1) / kTileM, (g.gn + TN - 1) / TN, groups);
  igemm_nhwc_kernel<M, TN, O>
      <<<grid, kNhwcThreads, nhwc_smem_bytes(TN), st>>>(g, act, w, pieces, o);
  check_launch("igemm_nhwc_kernel");
}

// An f32 output, or one in the math's 16-bit type (igemm_nhwc_takes_half keeps others away).
template <MathMode M, int TN>
void launch(cudaStream_t st, const NhwcGeo& g, const Bits<M>* act, const Bits<M>* w,
            const Piece* pieces, const NhwcOut& o, int groups) {
  if constexpr (M != MathMode::kTF32)
    if (o.type != DataType::kFloat32)
      return launch_out<M, TN, HalfOut<M>>(st, g, act, w, pieces, o, groups);
  launch_out<M, TN, float>(st, g, act, w, pieces, o, groups);
}

#ifdef CREMA_WITH_SM90A
// The TMA kernel's warpgroups a block: two (256 x 128 tiles) where those tiles still give every
// SM two blocks or more, so that waves stay full; else one (two 128-row blocks an SM).
int tma_warpgroups(const NhwcGeo& g, int tn, int groups) {
  if (tn != 128) return 1;
  const int64_t blocks = int64_t(g.gm + 255) / 256 * ((g.gn + 127) / 128) * groups;
  return blocks >= 2 * current_device().sms ? 2 : 1;
}
#endif

template <MathMode M>
void run(Handle& h, const ConvProblem& p, bool fwd, const void* act, const float* w, void* out,
         Blend blend, const float* bias, bool relu, bool wgmma) {
  const ConvDesc& cd = p.cd;
  const TensorDesc& src = fwd ? p.xd : p.yd;
  const TensorDesc& dst = fwd ? p.yd : p.xd;
  const int groups = cd.groups, kg = p.wd.k / groups, cg = p.wd.c, rs = p.wd.r * p.wd.s;
  const int cp = fwd_channels(p);
  NhwcGeo g{};
  g.cin = fwd ? cp : kg;
  g.gn = fwd ? kg : cg;
  g.gk = g.cin * rs;
  g.gm = dst.n * dst.h * dst.w;
  g.src_c = src_channels(p, fwd), g.src_h = src.h, g.src_w = src.w;
  g.rows_h = dst.h, g.rows_w = dst.w;
  g.sy = fwd ? cd.stride_h : 1, g.sx = fwd ? cd.stride_w : 1;
  g.oy = fwd ? -cd.pad_h : cd.pad_h, g.ox = fwd ? -cd.pad_w : cd.pad_w;
  g.dy = fwd ? cd.dilation_h : -cd.dilation_h, g.dx = fwd ? cd.dilation_w : -cd.dilation_w;
  g.s = p.wd.s;
  g.on = int(dst.stride_n), g.oc = int(dst.stride_c), g.oh = int(dst.stride_h);
  g.ow = int(dst.stride_w);

  const bool in_place = nhwc_in_place(M, src, g.src_c, act);
  const Layout l = layout_of(p, fwd, !in_place);
  char* ws = static_cast<char*>(h.workspace(l.total));
  const Bits<M>* act_bits = static_cast<const Bits<M>*>(act);
  Bits<M>* w_bits = reinterpret_cast<Bits<M>*>(ws + l.filter);
  Piece* pieces = reinterpret_cast<Piece*>(ws + l.pieces);
  cudaStream_t st = stream_of(h);
  if (!in_place) {
    Bits<M>* copy = reinterpret_cast<Bits<M>*>(ws + l.src);
    to_nhwc<M>(st, src, act, copy, g.src_c);
    act_bits = copy;
  }
  const NhwcTaps tma = wgmma ? tma_taps(p, fwd) : NhwcTaps{};
  const int inner = filter_inner(p, fwd, tma);
  const int rows = fwd ? p.wd.k : cg * groups;
  const int64_t rows_count = filter_rows_count(p, fwd, inner);
  filter_rows_kernel<M><<<grid_for(rows_count), kBlock, 0, st>>>(fwd, !fwd && tma.padded, rows, cg,
                                                                 kg, inner, rs, w, w_bits);
  check_launch("filter_rows_kernel");

  // A group of <= 64 columns (VGG-16's conv1_2, ResNet-50's res2 layers) would leave half of a
  // 128-column tile idle.
  const int tn = g.gn <= 64 ? 64 : 128;
  const NhwcOut o{out, dst.dtype, float(blend.alpha), float(blend.beta), bias, relu};
#ifdef CREMA_WITH_SM90A
  if (tma.padded)
    return nhwc_tma_launch(M, tn, tma_warpgroups(g, tn, groups), st, g, tma, act_bits, w_bits, o,
                           groups);
#endif
  const int count = (g.gk + nhwc_tile_k<M>() - 1) / nhwc_tile_k<M>() * 4;
  pieces_kernel<<<(count + 127) / 128, 128, 0, st>>>(g, kPiece<M>, count, pieces);
  check_launch("pieces_kernel");
#ifdef CREMA_WITH_SM90A
  if (wgmma) return nhwc_wgmma_launch(M, tn, st, g, act_bits, w_bits, pieces, o, groups);
#else
  (void)wgmma;  // the Hopper row refuses every problem in such a build
#endif
  if (tn == 64)
    launch<M, 64>(st, g, act_bits, w_bits, pieces, o, groups);
  else
    launch<M, 128>(st, g, act_bits, w_bits, pieces, o, groups);
}

// Images a slice of the pass: forward's padded copies only (padded_copy_slice).
int images_a_slice(const ConvProblem& p, bool fwd) { return fwd ? padded_copy_slice(p) : p.xd.n; }

void run_math(Handle& h, const ConvProblem& p, bool fwd, const void* act, const float* w, void* out,
              Blend blend, const float* bias, bool relu, bool wgmma) {
  switch (p.cd.math) {
    case MathMode::kTF32:
      return run<MathMode::kTF32>(h, p, fwd, act, w, out, blend, bias, relu, wgmma);
    case MathMode::kBF16:
      return run<MathMode::kBF16>(h, p, fwd, act, w, out, blend, bias, relu, wgmma);
    default:
      return run<MathMode::kFP16>(h, p, fwd, act, w, out, blend, bias, relu, wgmma);
  }
}

}  // namespace

bool igemm_nhwc_applies(const ConvProblem& p, ConvPass pass) {
  const MathMode math = p.cd.math;
  const int piece = nhwc_piece_values(math);
  const int cg = p.wd.c, kg = p.wd.k / p.cd.groups;
  if (!piece || p.xd.n >= 65536) return false;
  // Input channels that fill pieces, or fewer than one, padded (nhwc_input_channels).
  const bool inputs = nhwc_input_channels(cg, p.cd.groups, math) % piece == 0;
  switch (pass) {
    case ConvPass::kFwd:
      return inputs;
    case ConvPass::kBwdData:
      return p.cd.stride_h == 1 && p.cd.stride_w == 1 && kg % piece == 0;
    default:
      return inputs && kg % piece == 0;
  }
}

bool igemm_nhwc_takes_half(const ConvProblem& p, ConvPass pass) {
  if (pass == ConvPass::kBwdFilter) return true;  // dw is f32; the copies read any input
  const DataType out = pass == ConvPass::kFwd ? p.yd.dtype : p.xd.dtype;
  return out == DataType::kFloat32 || out == math_storage_type(p.cd.math);
}

size_t igemm_nhwc_workspace(const ConvProblem& p, ConvPass pass) {
  const bool fwd = pass == ConvPass::kFwd;
  const ImageSlice slice(p, images_a_slice(p, fwd));
  const TensorDesc& src = fwd ? slice.xd : slice.yd;
  return layout_of(slice.of(p), fwd, !nhwc_in_place(p.cd.math, src, src_channels(p, fwd))).total;
}

void igemm_nhwc_run(Handle& h, const ConvProblem& p, ConvPass pass, const void* act, const float* w,
                    void* out, Blend blend, const float* bias, bool relu, bool wgmma) {
  const bool fwd = pass == ConvPass::kFwd;
  const int n = p.xd.n, per = images_a_slice(p, fwd);
  if (per == n) return run_math(h, p, fwd, act, w, out, blend, bias, relu, wgmma);
  // Each image's output is its own: the slices blend as the whole would.
  const TensorDesc &src = fwd ? p.xd : p.yd, &dst = fwd ? p.yd : p.xd;
  for (int n0 = 0; n0 < n; n0 += per) {
    const ImageSlice slice(p, std::min(per, n - n0));
    run_math(h, slice.of(p), fwd, image_at(act, src, n0), w, image_at(out, dst, n0), blend, bias,
             relu, wgmma);
  }
}

}  // namespace crema::prim::cuda
