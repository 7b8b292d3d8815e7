// The implicit GEMM's NHWC path, for forward and stride-1 backward data in TF32, BF16 or FP16
// math when the GEMM's inner channels (Cg forward, Kg backward data) fill 16-byte pieces (4
// TF32 or 8 BF16/FP16 values). The gathered activation (x, or dy) is first rounded into an NHWC
// copy in the math format and the filter into [rows][R][S][inner] order, so that the GEMM's
// inner index (r, s, channel) runs along memory in 16-byte pieces:
//   forward        Y[m = (n,p,q)][k] = sum_{(r,s,c)} Xnhwc[n][p*sh-ph+r*dh][q*sw-pw+s*dw][c]
//   Wt[k][r][s][c] backward data  dX[m = (n,h,w)][c] = sum_{(r,s,k)}
//   dYnhwc[n][h+ph-r*dh][w+pw-s*dw][k] Wt[c][r][s][k]
// The copies cost a read of 4 and a write of 2 (TF32: 4) bytes per element, against the R*S (and
// channel-tile) reuse of every element inside the GEMM.
//
// Block tile 128 rows by 128 columns (64 where a group has no more) by 64 bytes of depth (32
// BF16/FP16 or 16 TF32 values), 4 warps of 64 x 64 (64 x 32); 16-byte cp.async copies (zero-filled
// at padding) keep kStages k-tiles in flight; shared rows are 64 bytes with their four 16-byte
// pieces XOR-swizzled by row pair, so the ldmatrix loads of 8 rows hit 8 distinct bank groups
// (ldmatrix moves 32-bit TF32 values as pairs of 16-bit halves, which lands them where mma's TF32
// fragments expect them). fp32 accumulation; the epilogue blends into the fp32 output with any
// strides.
#include "primitives/conv_cuda.cuh"
#include "primitives/conv_igemm.cuh"
#include "primitives/conv_impl.h"

namespace crema::prim::cuda {
namespace {

using namespace igemm;

constexpr int kThreads = 128;
constexpr int kTileM = 128;    // rows; the columns are TN = 128, or 64 when a group has <= 64
constexpr int kRowBytes = 64;  // depth of a k-tile
constexpr int kStages = 4;
constexpr int smem_bytes(int tn) { return kStages * (kTileM + tn) * kRowBytes; }

template <MathMode M>
constexpr int kTileK = kRowBytes / int(sizeof(Bits<M>));

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

// Element offset of 16-byte piece `c` of shared row `row`: pieces swizzled by row pair.
template <MathMode M>
__device__ __forceinline__ int swizzled(int row, int c) {
  return row * kTileK<M> + (c ^ ((row >> 1) & 3)) * kPiece<M>;
}

template <MathMode M, int TN>
__global__ void __launch_bounds__(kThreads)
    igemm_nhwc_kernel(NhwcGeo g, const Bits<M>* __restrict__ a_src,
                      const Bits<M>* __restrict__ b_src, const Piece* __restrict__ pieces,
                      float* out, float alpha, float beta, const float* __restrict__ bias,
                      bool relu) {
  using T = Bits<M>;
  constexpr int kK = kTileK<M>;
  constexpr int kBRows = TN / 32;  // filter rows a thread stages
  constexpr int kWarpN = TN / 2;   // a warp's columns
  constexpr int kNI = kWarpN / 8;  // its 8-column mma tiles
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kTileM, n0 = blockIdx.y * TN, grp = blockIdx.z;
  const int piece = tid & 3;

  // Each thread stages piece `piece` of rows tid/4 + 32 i of both operands.
  int a_off[4], a_h[4], a_w[4], b_off[kBRows];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = (tid >> 2) + 32 * i;
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

  const int k_tiles = (g.gk + kK - 1) / kK;
  auto issue = [&](int kt, int st) {
    T* as = smem + st * (kTileM + TN) * kK;
    T* bs = as + kTileM * kK;
    const Piece pc = pieces[kt * 4 + piece];
    const int k = kt * kK + piece * kPiece<M>;
    const bool kin = k < g.gk;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = (tid >> 2) + 32 * i;
      const int at = swizzled<M>(row, piece);
      const bool av = inside(a_h[i] + pc.h, a_w[i] + pc.w, g.src_h, g.src_w);
      copy16(as + at, av ? a_src + a_off[i] + pc.off : a_src, av);
      if (i < kBRows) {
        const bool bv = kin && b_off[i] >= 0;
        copy16(bs + at, bv ? b_src + b_off[i] + k : b_src, bv);
      }
    }
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
        ldmatrix_x4(af[mi], as + swizzled<M>(row, ks + (lane >> 4)));
      }
#pragma unroll
      for (int nj = 0; nj < kNI / 2; ++nj) {
        const int row = wn + nj * 16 + (lane & 7) + (lane >> 4) * 8;
        ldmatrix_x4(bf[nj], bs + swizzled<M>(row, ks + ((lane >> 3) & 1)));
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni)
          mma<M>(acc[mi][ni], af[mi], bf[ni >> 1][(ni & 1) * 2], bf[ni >> 1][(ni & 1) * 2 + 1]);
    }
  };

  pipeline<kStages>(0, k_tiles, issue, compute);

  const int gid = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int m = m0 + wm + mi * 16 + gid + hi * 8;
      if (m >= g.gm) continue;
      const int plane = g.rows_h * g.rows_w;
      const int n = m / plane, yx = m % plane, y = yx / g.rows_w, x = yx % g.rows_w;
      float* orow = out + (n * g.on + y * g.oh + x * g.ow);
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = n0 + wn + ni * 8 + 2 * tig + e;
          if (col >= g.gn) continue;
          const int ch = grp * g.gn + col;
          float* o = orow + ch * g.oc;
          float v = alpha * acc[mi][ni][hi * 2 + e];
          if (beta != 0.f) v += beta * *o;
          if (bias) v += bias[ch];
          if (relu) v = v > 0.f ? v : 0.f;
          *o = v;
        }
    }
}

// Filter rows for the GEMM: forward Wt[k][r][s][c] = W[k][c][r][s]; backward data
// Wt[g*Cg + c][r][s][k] = W[g*Kg + k][c][r][s].
template <MathMode M>
__global__ void filter_rows_kernel(bool fwd, int k, int cg, int kg, int rs,
                                   const float* __restrict__ w, Bits<M>* dst) {
  const int64_t count = int64_t(k) * cg * rs;
  CREMA_CUDA_LOOP(i, count) {
    int64_t src;
    if (fwd) {  // i = ((k * rs) + t) * cg + c
      const int c = int(i % cg), t = int(i / cg % rs);
      const int64_t kk = i / (int64_t(cg) * rs);
      src = (kk * cg + c) * rs + t;
    } else {  // i = ((g*Cg + c) * rs + t) * kg + kk
      const int kk = int(i % kg), t = int(i / kg % rs);
      const int64_t row = i / (int64_t(kg) * rs);
      const int64_t grp = row / cg, c = row % cg;
      src = ((grp * kg + kk) * cg + c) * rs + t;
    }
    dst[i] = to_bits<M>(w[src]);
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

// Workspace carving: the NHWC copy, the filter rows, the pieces; each 256-byte aligned.
struct Layout {
  size_t src, filter, pieces, total;
};
size_t round256(size_t b) { return (b + 255) / 256 * 256; }

Layout layout_of(const ConvProblem& p, bool fwd) {
  const TensorDesc& s = fwd ? p.xd : p.yd;
  const int cin = fwd ? p.wd.c : p.wd.k / p.cd.groups;
  const int64_t gk = int64_t(cin) * p.wd.r * p.wd.s;
  const size_t elem = p.cd.math == MathMode::kTF32 ? 4 : 2;
  const int64_t per_tile = kRowBytes / int64_t(elem);
  Layout l{};
  l.src = 0;
  l.filter = round256(size_t(s.n) * s.c * s.h * s.w * elem);
  l.pieces = l.filter + round256(size_t(p.wd.count()) * elem);
  l.total = l.pieces + round256(size_t((gk + per_tile - 1) / per_tile * 4) * sizeof(Piece));
  return l;
}

template <MathMode M, int TN>
void launch(cudaStream_t st, const NhwcGeo& g, const Bits<M>* act, const Bits<M>* w,
            const Piece* pieces, float* out, Blend blend, const float* bias, bool relu,
            int groups) {
  allow_shared_memory<igemm_nhwc_kernel<M, TN>>(smem_bytes(TN), "igemm_nhwc_kernel shared memory");
  const dim3 grid((g.gm + kTileM - 1) / kTileM, (g.gn + TN - 1) / TN, groups);
  igemm_nhwc_kernel<M, TN><<<grid, kThreads, smem_bytes(TN), st>>>(
      g, act, w, pieces, out, float(blend.alpha), float(blend.beta), bias, relu);
  check_launch("igemm_nhwc_kernel");
}

template <MathMode M>
void run(Handle& h, const ConvProblem& p, bool fwd, const float* act, const float* w, float* out,
         Blend blend, const float* bias, bool relu) {
  const ConvDesc& cd = p.cd;
  const TensorDesc& src = fwd ? p.xd : p.yd;
  const TensorDesc& dst = fwd ? p.yd : p.xd;
  const int groups = cd.groups, kg = p.wd.k / groups, cg = p.wd.c, rs = p.wd.r * p.wd.s;
  NhwcGeo g{};
  g.cin = fwd ? cg : kg;
  g.gn = fwd ? kg : cg;
  g.gk = g.cin * rs;
  g.gm = dst.n * dst.h * dst.w;
  g.src_c = src.c, g.src_h = src.h, g.src_w = src.w;
  g.rows_h = dst.h, g.rows_w = dst.w;
  g.sy = fwd ? cd.stride_h : 1, g.sx = fwd ? cd.stride_w : 1;
  g.oy = fwd ? -cd.pad_h : cd.pad_h, g.ox = fwd ? -cd.pad_w : cd.pad_w;
  g.dy = fwd ? cd.dilation_h : -cd.dilation_h, g.dx = fwd ? cd.dilation_w : -cd.dilation_w;
  g.s = p.wd.s;
  g.on = int(dst.stride_n), g.oc = int(dst.stride_c), g.oh = int(dst.stride_h);
  g.ow = int(dst.stride_w);

  const Layout l = layout_of(p, fwd);
  char* ws = static_cast<char*>(h.workspace(l.total));
  Bits<M>* act_bits = reinterpret_cast<Bits<M>*>(ws + l.src);
  Bits<M>* w_bits = reinterpret_cast<Bits<M>*>(ws + l.filter);
  Piece* pieces = reinterpret_cast<Piece*>(ws + l.pieces);
  cudaStream_t st = stream_of(h);

  to_nhwc<M>(st, src, act, act_bits);
  filter_rows_kernel<M>
      <<<grid_for(p.wd.count()), kBlock, 0, st>>>(fwd, p.wd.k, cg, kg, rs, w, w_bits);
  check_launch("filter_rows_kernel");
  const int count = (g.gk + kTileK<M> - 1) / kTileK<M> * 4;
  pieces_kernel<<<(count + 127) / 128, 128, 0, st>>>(g, kPiece<M>, count, pieces);
  check_launch("pieces_kernel");

  // A group of <= 64 columns (VGG-16's conv1_2, ResNet-50's res2 layers) would leave half of a
  // 128-column tile idle.
  if (g.gn <= 64)
    launch<M, 64>(st, g, act_bits, w_bits, pieces, out, blend, bias, relu, groups);
  else
    launch<M, 128>(st, g, act_bits, w_bits, pieces, out, blend, bias, relu, groups);
}

}  // namespace

bool igemm_nhwc_applies(const ConvProblem& p, ConvPass pass) {
  const MathMode math = p.cd.math;
  const int piece = math == MathMode::kTF32                              ? 4
                    : math == MathMode::kBF16 || math == MathMode::kFP16 ? 8
                                                                         : 0;
  const int cg = p.wd.c, kg = p.wd.k / p.cd.groups;
  if (!piece || p.xd.n >= 65536) return false;
  switch (pass) {
    case ConvPass::kFwd:
      return cg % piece == 0;
    case ConvPass::kBwdData:
      return p.cd.stride_h == 1 && p.cd.stride_w == 1 && kg % piece == 0;
    default:
      return cg % piece == 0 && kg % piece == 0;
  }
}

size_t igemm_nhwc_workspace(const ConvProblem& p, ConvPass pass) {
  return layout_of(p, pass == ConvPass::kFwd).total;
}

void igemm_nhwc_run(Handle& h, const ConvProblem& p, ConvPass pass, const float* act,
                    const float* w, float* out, Blend blend, const float* bias, bool relu) {
  const bool fwd = pass == ConvPass::kFwd;
  switch (p.cd.math) {
    case MathMode::kTF32:
      return run<MathMode::kTF32>(h, p, fwd, act, w, out, blend, bias, relu);
    case MathMode::kBF16:
      return run<MathMode::kBF16>(h, p, fwd, act, w, out, blend, bias, relu);
    default:
      return run<MathMode::kFP16>(h, p, fwd, act, w, out, blend, bias, relu);
  }
}

}  // namespace crema::prim::cuda
