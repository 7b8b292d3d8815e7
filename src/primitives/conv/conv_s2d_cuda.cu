// The space-to-depth row of the CUDA convolution: a strided convolution rewritten as a stride-1
// one over sh * sw times the channels, which the implicit GEMM's NHWC path runs on tensor cores.
// It is for first layers, whose few input channels (an image's colours) would otherwise be padded
// to a 16-byte piece per tap. With a < sh, b < sw and C the input channels:
//   x'[n][(a*sw + b)*C + c][Y][X]  = x[n][c][Y*sh + a - ph][X*sw + b - pw]   (0 outside x)
//   w'[k][(a*sw + b)*C + c][r][t]  = w[k][c][r*sh + a][t*sw + b]             (0 past R x S)
// and y = conv(x', w') at stride 1 without padding, over an R' x S' filter (R' = ceil(R / sh),
// S' = ceil(S / sw)) on a (P + R' - 1) x (Q + S' - 1) plane: each product of the strided sum
// appears once, and w's zero taps add nothing. x' has C * sh * sw channels, padded with zeros to
// whole pieces (4 TF32, 8 BF16/FP16 values). CaffeNet's conv1 (3 x 11 x 11, stride 4) becomes 48
// channels of 3 x 3 taps: a 432-deep GEMM for its 363 products, where padding its colours to a
// BF16 piece makes it 968 deep and im2col writes and reads a 363-row patch matrix through memory.
// ResNet-50's conv1 (3 x 7 x 7, stride 2): 12 channels (16 in BF16) of 4 x 4 taps.
//
// Forward writes y straight from the inner GEMM's epilogue (blend, bias and ReLU included).
// Backward filter runs the inner backward filter into an f32 dw' and picks dw from it (each tap
// of w is one value of w'); backward data runs the inner backward data into an f32 dx' and
// gathers dx from it (each pixel of x is one value of x'). x' is stored as the inner GEMM reads it
// best: packed NHWC in the math's 16-bit type (read in place), packed NCHW f32 for TF32 (which
// the inner path rounds in its own copy). Passes over batches whose x' would pass 16 MiB run over
// slices of images, as the implicit GEMM's padded copies do.
#include <algorithm>

#include "primitives/common/dtype_visit.h"
#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_impl.h"

namespace crema::prim::cuda {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The fold in the kernels' terms.
struct FoldGeo {
  int c, h, w;         // x's channels and plane
  int r, s;            // the filter
  int sh, sw, ph, pw;  // the stride folded into channels, x's padding
  int cin, rf, sf;     // x' channels (padded), the folded filter
  int hs, ws;          // x' plane
};

FoldGeo fold_geo(const ConvProblem& p) {
  FoldGeo g{};
  g.c = p.wd.c, g.h = p.xd.h, g.w = p.xd.w, g.r = p.wd.r, g.s = p.wd.s;
  g.sh = p.cd.stride_h, g.sw = p.cd.stride_w, g.ph = p.cd.pad_h, g.pw = p.cd.pad_w;
  const int piece = nhwc_piece_values(p.cd.math);
  g.cin = ceil_div(g.c * g.sh * g.sw, piece) * piece;
  g.rf = ceil_div(g.r, g.sh), g.sf = ceil_div(g.s, g.sw);
  g.hs = p.yd.h + g.rf - 1, g.ws = p.yd.w + g.sf - 1;
  return g;
}

// The stride-1 problem over `images` images. `stored`: x' as the passes store it and y (dy) as
// the caller does; else both packed NCHW f32, as support rules see problems.
struct Folded {
  ConvDesc cd;
  FilterDesc wd;
  TensorDesc xd, dxd, yd;
  Folded(const ConvProblem& p, int images, bool stored) : yd(p.yd) {
    const FoldGeo g = fold_geo(p);
    cd.math = p.cd.math;
    wd = FilterDesc{DataType::kFloat32, p.wd.k, g.cin, g.rf, g.sf};
    const DataType own = stored ? math_storage_type(p.cd.math) : DataType::kFloat32;
    xd = own == DataType::kFloat32 ? TensorDesc::nchw(own, images, g.cin, g.hs, g.ws)
                                   : TensorDesc::nhwc(own, images, g.cin, g.hs, g.ws);
    dxd = TensorDesc::nchw(DataType::kFloat32, images, g.cin, g.hs, g.ws);
    if (!stored) yd = TensorDesc::nchw(DataType::kFloat32, p.yd.n, p.yd.c, p.yd.h, p.yd.w);
    yd.n = images;
  }
  ConvProblem fwd() const { return {cd, xd, wd, yd}; }  // and backward filter
  ConvProblem bwd_data() const { return {cd, dxd, wd, yd}; }
};

// The implicit GEMM row that runs the folded problem: wgmma on Hopper, else mma.sync.
const ConvImpl& inner_row(const ConvProblem& folded) {
  return kConvImplicitGemmSm90.unsupported(folded) ? kConvImplicitGemm : kConvImplicitGemmSm90;
}

// x' of `images` images of x (any strides; f32, bf16 or f16) in the storage D, laid out as xd
// says (packed NHWC or NCHW): one thread per x' value, consecutive threads along x' memory.
template <typename S, typename D>
__global__ void fold_input_kernel(FoldGeo g, bool nhwc, uint32_t count, int64_t sn, int64_t sc,
                                  int64_t sy, int64_t sx, const S* __restrict__ x,
                                  D* __restrict__ xf) {
  CREMA_CUDA_LOOP(i, count) {
    uint32_t rest = uint32_t(i), cf, yy, xx;
    if (nhwc) {
      cf = rest % g.cin, rest /= g.cin;
      xx = rest % g.ws, rest /= g.ws;
      yy = rest % g.hs, rest /= g.hs;
    } else {
      xx = rest % g.ws, rest /= g.ws;
      yy = rest % g.hs, rest /= g.hs;
      cf = rest % g.cin, rest /= g.cin;
    }
    const uint32_t n = rest, c = cf % g.c, block = cf / g.c;
    const int a = int(block) / g.sw, b = int(block) % g.sw;
    const int h = int(yy) * g.sh + a - g.ph, w = int(xx) * g.sw + b - g.pw;
    float v = 0.f;
    if (int(block) < g.sh * g.sw && unsigned(h) < unsigned(g.h) && unsigned(w) < unsigned(g.w))
      v = load_as_float(x[n * sn + c * sc + h * sy + w * sx]);
    xf[i] = store_from_float<D>(v);
  }
}

// w' (f32, packed K x cin x R' x S') of the f32 filter w.
__global__ void fold_filter_kernel(FoldGeo g, int64_t count, const float* __restrict__ w,
                                   float* __restrict__ wf) {
  CREMA_CUDA_LOOP(i, count) {
    const int t = int(i % g.sf), r = int(i / g.sf % g.rf), cf = int(i / (g.sf * g.rf) % g.cin);
    const int64_t k = i / (int64_t(g.sf) * g.rf * g.cin);
    const int block = cf / g.c, c = cf % g.c;
    const int fr = r * g.sh + block / g.sw, ft = t * g.sw + block % g.sw;
    wf[i] = block < g.sh * g.sw && fr < g.r && ft < g.s ? w[((k * g.c + c) * g.r + fr) * g.s + ft]
                                                        : 0.f;
  }
}

// dw = alpha * (dw's tap of dw') + beta * dw.
__global__ void unfold_filter_kernel(FoldGeo g, int64_t count, const float* __restrict__ dwf,
                                     float* dw, float alpha, float beta) {
  CREMA_CUDA_LOOP(i, count) {
    const int t = int(i % g.s), r = int(i / g.s % g.r), c = int(i / (g.s * g.r) % g.c);
    const int64_t k = i / (int64_t(g.s) * g.r * g.c);
    const int cf = ((r % g.sh) * g.sw + t % g.sw) * g.c + c;
    blend_store(dw + i, dwf[((k * g.cin + cf) * g.rf + r / g.sh) * g.sf + t / g.sw], alpha, beta);
  }
}

// dx = alpha * (each pixel's value of dx', packed NCHW f32) + beta * dx, over `images` images of
// dx (any strides, f32, bf16 or f16); pixels that no window reaches get zero.
template <typename T>
__global__ void unfold_input_kernel(FoldGeo g, uint32_t count, const float* __restrict__ dxf,
                                    int64_t sn, int64_t sc, int64_t sy, int64_t sx, T* dx,
                                    float alpha, float beta) {
  CREMA_CUDA_LOOP(i, count) {
    uint32_t rest = uint32_t(i);
    const int w = int(rest % g.w);
    rest /= g.w;
    const int h = int(rest % g.h);
    rest /= g.h;
    const uint32_t c = rest % g.c, n = rest / g.c;
    const int hh = h + g.ph, ww = w + g.pw, yy = hh / g.sh, xx = ww / g.sw;
    const int cf = ((hh % g.sh) * g.sw + ww % g.sw) * g.c + int(c);
    const float v =
        yy < g.hs && xx < g.ws ? dxf[((int64_t(n) * g.cin + cf) * g.hs + yy) * g.ws + xx] : 0.f;
    blend_store(dx + n * sn + c * sc + h * sy + w * sx, v, alpha, beta);
  }
}

void fold_input(cudaStream_t st, const FoldGeo& g, const TensorDesc& xd, const void* x,
                const TensorDesc& xfd, void* xf) {
  const uint32_t count = uint32_t(xfd.count());
  const bool nhwc = xfd.is_packed_nhwc();  // else packed NCHW (the same order where 1 x 1)
  visit_dtype(DTypes<float, bf16_t, f16_t>{}, xd.dtype, "conv space_to_depth", Device::kCUDA,
              [&](auto src) {
                using S = typename decltype(src)::type;
                visit_dtype(DTypes<float, bf16_t, f16_t>{}, xfd.dtype, "conv space_to_depth",
                            Device::kCUDA, [&](auto dst) {
                              using D = typename decltype(dst)::type;
                              fold_input_kernel<<<grid_for(count), kBlock, 0, st>>>(
                                  g, nhwc, count, xd.stride_n, xd.stride_c, xd.stride_h,
                                  xd.stride_w, static_cast<const S*>(x), static_cast<D*>(xf));
                            });
              });
  check_launch("fold_input_kernel");
}

float* fold_filter(cudaStream_t st, const FoldGeo& g, const FilterDesc& wfd, const void* w,
                   void* wf) {
  fold_filter_kernel<<<grid_for(wfd.count()), kBlock, 0, st>>>(
      g, wfd.count(), static_cast<const float*>(w), static_cast<float*>(wf));
  check_launch("fold_filter_kernel");
  return static_cast<float*>(wf);
}

// Images a slice of a pass: the whole batch where the pass's x' (backward data: f32 dx') fits
// in kSliceBytes, else as few as keep a slice's within it, but no fewer than give the GEMM
// kSliceRows rows.
int slice_images(const ConvProblem& p, ConvPass pass) {
  const Folded one(p, 1, true);
  const int64_t image = pass == ConvPass::kBwdData
                            ? one.dxd.count() * int64_t(sizeof(float))
                            : one.xd.count() * int64_t(dtype_size(one.xd.dtype));
  if (image * p.xd.n <= kSliceBytes) return p.xd.n;
  const int64_t rows = int64_t(p.yd.h) * p.yd.w;
  return even_slice(p.xd.n, std::max<int64_t>(kSliceBytes / image, (kSliceRows + rows - 1) / rows));
}

// Workspace: the inner row's, then this row's buffers, each 256-byte aligned. The inner row asks
// the handle for no more than its own workspace() said, so the buffers after it stay put.
struct Buffers {
  size_t inner, x, w, grad, total;
};

Buffers buffers_of(Handle& h, const ConvProblem& p, ConvPass pass) {
  const Folded f(p, slice_images(p, pass), true);
  Buffers b{};
  const ConvProblem q = pass == ConvPass::kBwdData ? f.bwd_data() : f.fwd();
  b.inner = round256(inner_row(Folded(p, f.xd.n, false).fwd()).workspace(h, q));
  b.x = pass == ConvPass::kBwdData ? 0 : round256(size_t(f.xd.count()) * dtype_size(f.xd.dtype));
  b.w = pass == ConvPass::kBwdFilter ? 0 : round256(size_t(f.wd.count()) * sizeof(float));
  b.grad = pass == ConvPass::kFwd         ? 0
           : pass == ConvPass::kBwdFilter ? round256(size_t(f.wd.count()) * sizeof(float))
                                          : round256(size_t(f.dxd.count()) * sizeof(float));
  b.total = b.inner + b.x + b.w + b.grad;
  return b;
}

// What every pass starts from: the fold's geometry, its buffers carved from the workspace (the
// inner row gets the start), the images one slice folds, and the inner implicit GEMM's row.
struct Pass {
  Pass(Handle& h, const ConvProblem& p, ConvPass pass)
      : g(fold_geo(p)),
        b(buffers_of(h, p, pass)),
        base(static_cast<char*>(h.workspace(b.total))),
        generation(h.workspace_generation()),
        st(stream_of(h)),
        n(p.xd.n),
        per(slice_images(p, pass)),
        row(inner_row(Folded(p, per, false).fwd())) {}
  void* x() const { return base + b.inner; }
  void* w() const { return base + b.inner + b.x; }
  void* grad() const { return base + b.inner + b.x + b.w; }
  // Throws if the inner row grew the workspace after all.
  void check(Handle& h) const {
    if (h.workspace_generation() != generation)
      throw PrimError("conv space_to_depth: the inner implicit GEMM outgrew its workspace");
  }
  const FoldGeo g;
  const Buffers b;
  char* const base;
  const uint64_t generation;
  const cudaStream_t st;
  const int n, per;
  const ConvImpl& row;
};

void fwd(Handle& h, const ConvProblem& p, const void* x, const void* w, void* y, Blend blend,
         const ConvEpilogue& ep) {
  const Pass s(h, p, ConvPass::kFwd);
  const float* wf = fold_filter(s.st, s.g, Folded(p, s.per, true).wd, w, s.w());
  for (int n0 = 0; n0 < s.n; n0 += s.per) {
    const Folded f(p, std::min(s.per, s.n - n0), true);
    fold_input(s.st, s.g, p.xd, image_at(x, p.xd, n0), f.xd, s.x());
    s.row.fwd(h, f.fwd(), s.x(), wf, image_at(y, p.yd, n0), blend, ep);
    s.check(h);
  }
}

void bwd_filter(Handle& h, const ConvProblem& p, const void* x, const void* dy, void* dw,
                Blend blend) {
  const Pass s(h, p, ConvPass::kBwdFilter);
  float* dwf = static_cast<float*>(s.grad());
  for (int n0 = 0; n0 < s.n; n0 += s.per) {
    const Folded f(p, std::min(s.per, s.n - n0), true);
    fold_input(s.st, s.g, p.xd, image_at(x, p.xd, n0), f.xd, s.x());
    s.row.bwd_filter(h, f.fwd(), s.x(), image_at(dy, p.yd, n0), dwf, Blend{1.0, n0 ? 1.0 : 0.0});
    s.check(h);
  }
  unfold_filter_kernel<<<grid_for(p.wd.count()), kBlock, 0, s.st>>>(
      s.g, p.wd.count(), dwf, static_cast<float*>(dw), float(blend.alpha), float(blend.beta));
  check_launch("unfold_filter_kernel");
}

void bwd_data(Handle& h, const ConvProblem& p, const void* w, const void* dy, void* dx,
              Blend blend) {
  const Pass s(h, p, ConvPass::kBwdData);
  const float* wf = fold_filter(s.st, s.g, Folded(p, s.per, true).wd, w, s.w());
  float* dxf = static_cast<float*>(s.grad());
  for (int n0 = 0; n0 < s.n; n0 += s.per) {
    const int images = std::min(s.per, s.n - n0);
    const Folded f(p, images, true);
    s.row.bwd_data(h, f.bwd_data(), wf, image_at(dy, p.yd, n0), dxf, Blend{});
    s.check(h);
    const TensorDesc& xd = p.xd;
    const uint32_t count = uint32_t(int64_t(images) * xd.c * xd.h * xd.w);
    visit_dtype(DTypes<float, bf16_t, f16_t>{}, xd.dtype, "conv_bwd_data", Device::kCUDA,
                [&](auto tag) {
                  using T = typename decltype(tag)::type;
                  unfold_input_kernel<<<grid_for(count), kBlock, 0, s.st>>>(
                      s.g, count, dxf, xd.stride_n, xd.stride_c, xd.stride_h, xd.stride_w,
                      static_cast<T*>(image_at(dx, xd, n0)), float(blend.alpha), float(blend.beta));
                });
    check_launch("unfold_input_kernel");
  }
}

size_t workspace(Handle& h, const ConvProblem& p) {
  size_t bytes = 0;
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
    bytes = std::max(bytes, buffers_of(h, p, pass).total);
  return bytes;
}

const char* unsupported(const ConvProblem& p) {
  if (p.xd.dtype != DataType::kFloat32) return "tensor cores take float32 tensors";
  const int piece = nhwc_piece_values(p.cd.math);
  if (!piece) return "strict fp32 math (tensor cores need TF32, BF16 or FP16)";
  if (p.cd.stride_h == 1 && p.cd.stride_w == 1) return "stride 1: no stride to fold";
  if (p.cd.dilation_h != 1 || p.cd.dilation_w != 1) return "a dilated filter";
  if (p.cd.groups != 1) return "a grouped convolution";
  if (p.wd.k % piece) return "output channels do not fill 16-byte pieces";
  const Folded f(p, p.xd.n, false);
  if (f.xd.count() >= (int64_t(1) << 31) || p.xd.count() >= (int64_t(1) << 31))
    return "a tensor of 2^31 elements or more";
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
    if (!igemm_nhwc_applies(f.fwd(), pass)) return "the folded problem is not on the NHWC path";
  return kConvImplicitGemm.unsupported(f.fwd());
}

// x is read by fold_input and dx written by unfold_input_kernel in any layout and storage type;
// y (forward) and dy go to the inner implicit GEMM, which takes them as stored where its NHWC
// path writes the output type (f32 or the math's own).
bool takes_stored(const ConvProblem& p, ConvPass pass, const ConvEpilogue&) {
  const Folded f(p, p.xd.n, true);
  return igemm_nhwc_takes_half(pass == ConvPass::kBwdData ? f.bwd_data() : f.fwd(), pass);
}

}  // namespace

const ConvImpl kConvSpaceToDepth{ConvAlgo::kSpaceToDepth,
                                 Device::kCUDA,
                                 unsupported,
                                 workspace,
                                 fwd,
                                 bwd_data,
                                 bwd_filter,
                                 takes_stored};

}  // namespace crema::prim::cuda
