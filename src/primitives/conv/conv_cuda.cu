// Convolution on CUDA, two rows of the implementation table (conv_impl.h; the 1x1 GEMM row is
// conv_gemm1x1_cuda.cu). im2col + cuBLAS: a chunk of images is unfolded into the workspace and
// multiplied by the filters, in one of two layouts chosen by the output plane size (see
// ConvCuda::wide()): per image (one strided-batched GEMM per group, writing and blending straight
// into y / the patch gradient) or side by side (one GEMM per group over the whole chunk into a
// workspace buffer, then one pass that blends it into y / scatters it through col2im). The GEMMs
// honour the math mode. Direct kernels handle any strides and are the fast path for depthwise
// convolutions (one input channel per output channel); for small layers the direct row's forward
// runs conv_fwd_tiles_cuda.cu's kernel and its backward filter conv_filter_tiles_cuda.cu's. The
// dispatcher in conv.cpp has validated the descriptors and checked the row's support rule. Epilogue
// and blend semantics as the CPU:
//   y = act(alpha * conv + beta * y + bias[k]).
// Every reduction runs in a fixed order (cuBLAS, fixed-order kernels): no float atomics, so
// results repeat bit for bit.
#include <algorithm>

#include "primitives/common/dtype_visit.h"
#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_impl.h"
#include "primitives/conv/conv_ops.h"
#include "primitives/cuda/im2col_cuda.cuh"

namespace crema::prim::cuda {
namespace {

// The problem as the kernels see it (sizes and strides by value).
struct Prob {
  int n, c, h, w;  // input
  int k, p, q;     // output
  int cg, kg, r, s;
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  int64_t xsn, xsc, xsh, xsw;
  int64_t ysn, ysc, ysh, ysw;
};

// Direct forward: one thread per output element, summing its taps in the CPU direct loops'
// order (c, r, s) with the same roundings; then blend and epilogue. For a depthwise layer (cg ==
// 1) a thread does R*S multiply-adds on cached neighbours: the memory-bound ideal.
template <typename T>
__global__ void fwd_direct_kernel(Prob pb, const T* __restrict__ x, const T* __restrict__ w, T* y,
                                  T alpha, T beta, const T* bias, bool relu) {
  const int64_t total = int64_t(pb.n) * pb.k * pb.p * pb.q;
  CREMA_CUDA_LOOP(i, total) {
    const int q = int(i % pb.q);
    int64_t t = i / pb.q;
    const int p = int(t % pb.p);
    t /= pb.p;
    const int k = int(t % pb.k);
    const int n = int(t / pb.k);
    const int gi = k / pb.kg;
    T acc = T(0);
    for (int c = 0; c < pb.cg; ++c) {
      const T* xp = x + n * pb.xsn + int64_t(gi * pb.cg + c) * pb.xsc;
      const T* wk = w + (int64_t(k) * pb.cg + c) * pb.r * pb.s;
      for (int r = 0; r < pb.r; ++r) {
        const int hh = p * pb.stride_h - pb.pad_h + r * pb.dil_h;
        if (hh < 0 || hh >= pb.h) continue;
        for (int s = 0; s < pb.s; ++s) {
          const int ww = q * pb.stride_w - pb.pad_w + s * pb.dil_w;
          if (ww < 0 || ww >= pb.w) continue;
          acc = add_rn(acc, mul_rn(wk[r * pb.s + s], xp[hh * pb.xsh + ww * pb.xsw]));
        }
      }
    }
    T* out = y + n * pb.ysn + k * pb.ysc + p * pb.ysh + q * pb.ysw;
    T v = blend_rn(acc, alpha, beta, out);
    if (bias) v = add_rn(v, bias[k]);
    if (relu) v = v > T(0) ? v : T(0);
    *out = v;
  }
}

// Direct backward data: one thread per input-gradient element gathers from the output gradients
// of its group in the CPU's (k, r, s) order; every element written once, no atomics.
template <typename T>
__global__ void bwd_data_direct_kernel(Prob pb, const T* __restrict__ w, const T* __restrict__ dy,
                                       T* dx, T alpha, T beta) {
  const int64_t total = int64_t(pb.n) * pb.c * pb.h * pb.w;
  CREMA_CUDA_LOOP(i, total) {
    const int ww = int(i % pb.w);
    int64_t t = i / pb.w;
    const int hh = int(t % pb.h);
    t /= pb.h;
    const int c = int(t % pb.c);
    const int n = int(t / pb.c);
    const int gi = c / pb.cg, cl = c % pb.cg;
    T acc = T(0);
    for (int k = gi * pb.kg; k < (gi + 1) * pb.kg; ++k) {
      const T* dyp = dy + n * pb.ysn + k * pb.ysc;
      const T* wk = w + (int64_t(k) * pb.cg + cl) * pb.r * pb.s;
      for (int r = 0; r < pb.r; ++r) {
        const int hn = hh + pb.pad_h - r * pb.dil_h;
        if (hn < 0) break;  // decreases with r
        if (hn % pb.stride_h != 0) continue;
        const int p = hn / pb.stride_h;
        if (p >= pb.p) continue;
        for (int s = 0; s < pb.s; ++s) {
          const int wn = ww + pb.pad_w - s * pb.dil_w;
          if (wn < 0) break;
          if (wn % pb.stride_w != 0) continue;
          const int q = wn / pb.stride_w;
          if (q >= pb.q) continue;
          acc = add_rn(acc, mul_rn(wk[r * pb.s + s], dyp[p * pb.ysh + q * pb.ysw]));
        }
      }
    }
    T* out = dx + n * pb.xsn + c * pb.xsc + hh * pb.xsh + ww * pb.xsw;
    *out = blend_rn(acc, alpha, beta, out);
  }
}

// Direct backward filter: one block per filter element reduces its N*P*Q products, per-thread
// partial sums then a fixed-order tree, so the result is deterministic.
constexpr int kFilterThreads = 128;

template <typename T>
__global__ void bwd_filter_direct_kernel(Prob pb, const T* __restrict__ x, const T* __restrict__ dy,
                                         T* dw, T alpha, T beta) {
  const int64_t wi = blockIdx.x;
  const int s = int(wi % pb.s);
  int64_t t = wi / pb.s;
  const int r = int(t % pb.r);
  t /= pb.r;
  const int c = int(t % pb.cg);
  const int k = int(t / pb.cg);
  const int ch = k / pb.kg * pb.cg + c;
  const int64_t per = int64_t(pb.n) * pb.p * pb.q;
  T sum = T(0);
  for (int64_t j = threadIdx.x; j < per; j += blockDim.x) {
    const int q = int(j % pb.q);
    const int64_t t2 = j / pb.q;
    const int p = int(t2 % pb.p);
    const int n = int(t2 / pb.p);
    const int hh = p * pb.stride_h - pb.pad_h + r * pb.dil_h;
    const int ww = q * pb.stride_w - pb.pad_w + s * pb.dil_w;
    if (hh < 0 || hh >= pb.h || ww < 0 || ww >= pb.w) continue;
    sum = add_rn(sum, mul_rn(dy[n * pb.ysn + k * pb.ysc + p * pb.ysh + q * pb.ysw],
                             x[n * pb.xsn + ch * pb.xsc + hh * pb.xsh + ww * pb.xsw]));
  }
  // Warps add their lanes by shuffles, then thread 0 adds the warps' sums in order: four shared
  // values a block (a shared-memory tree of 128 took 2 shared accesses per thread and level,
  // which compute-sanitizer's racecheck tracks one by one: caffenet:conv3's 885k blocks ran past
  // its time limit).
  for (int off = 16; off > 0; off >>= 1) sum = add_rn(sum, __shfl_down_sync(0xffffffffu, sum, off));
  constexpr int kWarps = kFilterThreads / 32;
  __shared__ T part[kWarps];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    T total = part[0];
    for (int w = 1; w < kWarps; ++w) total = add_rn(total, part[w]);
    dw[wi] = blend_rn(total, alpha, beta, dw + wi);
  }
}

// y[n0 + i][k][j] = act(alpha * buf[k][i*P*Q + j] + beta * y + bias[k]) for the b images of a
// chunk: the side-by-side GEMM result (K x B*P*Q) blended into NCHW y with the epilogue fused.
// One thread per y element in y's order, so the writes coalesce and the reads run along
// contiguous P*Q segments of the buffer; 4+4 bytes (8+4 when blending) per element.
template <typename T, typename I>
__global__ void scatter_planes_kernel(int b, int k, I pq, const T* __restrict__ buf, T* y,
                                      int64_t y_image, T alpha, T beta, const T* bias, bool relu) {
  const I ld = I(b) * pq;
  const I per_image = I(k) * pq;
  const int64_t total = int64_t(b) * per_image;
  CREMA_CUDA_LOOP(i, total) {
    const I ii = I(i);
    const I img = ii / per_image;
    const I rest = ii - img * per_image;
    const I kk = rest / pq;
    const I j = rest - kk * pq;
    T* out = y + int64_t(img) * y_image + rest;
    T v = blend_rn(buf[kk * ld + img * pq + j], alpha, beta, out);
    if (bias) v = add_rn(v, bias[kk]);
    if (relu) v = v > T(0) ? v : T(0);
    *out = v;
  }
}

template <typename T>
void launch_scatter_planes(cudaStream_t st, int b, int k, int64_t pq, const T* buf, T* y,
                           int64_t y_image, T alpha, T beta, const T* bias, bool relu) {
  const int64_t total = int64_t(b) * k * pq;
  if (total == 0) return;
  if (total < (int64_t(1) << 31))
    scatter_planes_kernel<T, uint32_t><<<grid_for(total), kBlock, 0, st>>>(
        b, k, uint32_t(pq), buf, y, y_image, alpha, beta, bias, relu);
  else
    scatter_planes_kernel<T, int64_t>
        <<<grid_for(total), kBlock, 0, st>>>(b, k, pq, buf, y, y_image, alpha, beta, bias, relu);
  check_launch("scatter_planes_kernel");
}

template <typename T>
class ConvCuda {
 public:
  ConvCuda(Handle& h, const ConvProblem& pr)
      : h_(h), p_(pr), xd_(pr.xd), wd_(pr.wd), yd_(pr.yd), math_(pr.cd.math), st_(stream_of(h)) {
    const ConvDesc& cd = pr.cd;
    const TensorDesc& xd = pr.xd;
    const FilterDesc& wd = pr.wd;
    const TensorDesc& yd = pr.yd;
    g_ = ConvGeom{xd.c,        xd.h,        xd.w,          wd.r,          wd.s, cd.pad_h, cd.pad_w,
                  cd.stride_h, cd.stride_w, cd.dilation_h, cd.dilation_w, yd.h, yd.w};
    groups_ = cd.groups;
    kg_ = wd.k / groups_;
    cg_ = wd.c;
    crs_ = int64_t(cg_) * wd.r * wd.s;
    pq_ = int64_t(yd.h) * yd.w;
    pb_ = Prob{xd.n,          xd.c,          xd.h,        xd.w,        wd.k,
               yd.h,          yd.w,          cg_,         kg_,         wd.r,
               wd.s,          cd.pad_h,      cd.pad_w,    cd.stride_h, cd.stride_w,
               cd.dilation_h, cd.dilation_w, xd.stride_n, xd.stride_c, xd.stride_h,
               xd.stride_w,   yd.stride_n,   yd.stride_c, yd.stride_h, yd.stride_w};
  }

  void fwd(ConvAlgo algo, const T* x, const T* w, T* y, Blend blend, const ConvEpilogue& ep) {
    const T alpha = T(blend.alpha), beta = T(blend.beta);
    const T* bias = static_cast<const T*>(ep.bias);
    if (algo == ConvAlgo::kDirect && direct_fwd_tiles(p_))
      return direct_fwd_tiles_run<T>(h_, p_, x, w, y, blend, bias, ep.relu);
    if (algo == ConvAlgo::kDirect) {
      const int64_t total = yd_.count();
      fwd_direct_kernel<<<grid_for(total), kBlock, 0, st_>>>(pb_, x, w, y, alpha, beta, bias,
                                                             ep.relu);
      check_launch("fwd_direct_kernel");
      return;
    }
    if (wide()) {
      // Patch matrices side by side (C*R*S x B*P*Q), one GEMM per group into a K x B*P*Q buffer,
      // then one pass blends it into y with the epilogue.
      T* col = workspace();
      for (int n0 = 0; n0 < xd_.n; n0 += plan_.chunk) {
        const int b = std::min(plan_.chunk, xd_.n - n0);
        const int64_t ld = int64_t(b) * pq_;
        T* out = col + crs_ * groups_ * ld;
        launch_im2col(st_, g_, b, x + n0 * xd_.stride_n, xd_.stride_n, col, pq_, ld);
        gemm_rm<T>(h_, math_, kg_, int(ld), int(crs_), T(1), {w, int(crs_), kg_ * crs_},
                   {col, int(ld), crs_ * ld}, T(0), out, int(ld), kg_ * ld, groups_);
        launch_scatter_planes(st_, b, wd_.k, pq_, out, y + n0 * yd_.stride_n, yd_.stride_n, alpha,
                              beta, bias, ep.relu);
      }
      return;
    } else {
      T* col = workspace();
      const int64_t col_image = crs_ * groups_ * pq_;
      for (int n0 = 0; n0 < xd_.n; n0 += plan_.chunk) {
        const int b = std::min(plan_.chunk, xd_.n - n0);
        launch_im2col(st_, g_, b, x + n0 * xd_.stride_n, xd_.stride_n, col, col_image, pq_);
        for (int gi = 0; gi < groups_; ++gi)
          gemm_rm<T>(h_, math_, kg_, int(pq_), int(crs_), alpha,
                     {w + gi * kg_ * crs_, int(crs_), 0},
                     {col + gi * crs_ * pq_, int(pq_), col_image}, beta,
                     y + n0 * yd_.stride_n + gi * kg_ * pq_, int(pq_), yd_.stride_n, b);
      }
    }
    launch_epilogue(st_, yd_, bias, ep.relu, y);
  }

  void bwd_data(ConvAlgo algo, const T* w, const T* dy, T* dx, Blend blend) {
    const T alpha = T(blend.alpha), beta = T(blend.beta);
    if (algo == ConvAlgo::kDirect) {
      const int64_t total = xd_.count();
      bwd_data_direct_kernel<<<grid_for(total), kBlock, 0, st_>>>(pb_, w, dy, dx, alpha, beta);
      check_launch("bwd_data_direct_kernel");
      return;
    }
    // The patch gradient alpha * W^T dy, then the gather back into dx blends beta.
    T* col = workspace();
    if (wide()) {
      // dy planes side by side (K x B*P*Q), one GEMM per group into the side-by-side patch
      // gradient (C*R*S x B*P*Q), col2im per image.
      for (int n0 = 0; n0 < xd_.n; n0 += plan_.chunk) {
        const int b = std::min(plan_.chunk, xd_.n - n0);
        const int64_t ld = int64_t(b) * pq_;
        T* grad = col + crs_ * groups_ * ld;
        launch_gather_planes(st_, b, wd_.k, pq_, dy + n0 * yd_.stride_n, yd_.stride_n, grad);
        gemm_rm<T>(h_, math_, int(crs_), int(ld), kg_, alpha, {w, int(crs_), kg_ * crs_, true},
                   {grad, int(ld), kg_ * ld}, T(0), col, int(ld), crs_ * ld, groups_);
        launch_col2im(st_, g_, b, col, pq_, ld, dx + n0 * xd_.stride_n, xd_.stride_n, T(1), beta);
      }
      return;
    }
    const int64_t col_image = crs_ * groups_ * pq_;
    for (int n0 = 0; n0 < xd_.n; n0 += plan_.chunk) {
      const int b = std::min(plan_.chunk, xd_.n - n0);
      for (int gi = 0; gi < groups_; ++gi)
        gemm_rm<T>(h_, math_, int(crs_), int(pq_), kg_, alpha,
                   {w + gi * kg_ * crs_, int(crs_), 0, true},
                   {dy + n0 * yd_.stride_n + gi * kg_ * pq_, int(pq_), yd_.stride_n}, T(0),
                   col + gi * crs_ * pq_, int(pq_), col_image, b);
      launch_col2im(st_, g_, b, col, col_image, pq_, dx + n0 * xd_.stride_n, xd_.stride_n, T(1),
                    beta);
    }
  }

  void bwd_filter(ConvAlgo algo, const T* x, const T* dy, T* dw, Blend blend) {
    const T alpha = T(blend.alpha);
    T beta = T(blend.beta);  // applies once, to the first chunk's contribution
    if (algo == ConvAlgo::kDirect && direct_filter_tiles(p_))
      return direct_filter_tiles_run<T>(h_, p_, x, dy, dw, blend);
    if (algo == ConvAlgo::kDirect) {
      bwd_filter_direct_kernel<<<unsigned(wd_.count()), kFilterThreads, 0, st_>>>(pb_, x, dy, dw,
                                                                                  alpha, beta);
      check_launch("bwd_filter_direct_kernel");
      return;
    }
    // A chunk's patch matrices and output gradients side by side (B*P*Q columns), so one GEMM
    // per group reduces over the whole chunk, its depth cut into slices (conv_ops.h says why).
    T* col = workspace();
    T* part = col + plan_.chunk_elems;
    const int64_t count = wd_.count();
    for (int n0 = 0; n0 < xd_.n; n0 += plan_.chunk, beta = T(1)) {
      const int b = std::min(plan_.chunk, xd_.n - n0);
      const int64_t ld = int64_t(b) * pq_;
      T* grad = col + crs_ * groups_ * ld;
      launch_im2col(st_, g_, b, x + n0 * xd_.stride_n, xd_.stride_n, col, pq_, ld);
      launch_gather_planes(st_, b, wd_.k, pq_, dy + n0 * yd_.stride_n, yd_.stride_n, grad);
      const int split = split_for_depth(plan_, ld);
      if (split == 1) {
        gemm_rm<T>(h_, math_, kg_, int(crs_), int(ld), alpha, {grad, int(ld), kg_ * ld},
                   {col, int(ld), crs_ * ld, true}, beta, dw, int(crs_), kg_ * crs_, groups_);
        continue;
      }
      // part[s][g] = dY_g[:, slice s] X_g[:, slice s]^T; the last slice also takes the columns
      // ld - split * depth that do not divide evenly.
      const int64_t depth = ld / split, rest = ld - split * depth;
      for (int gi = 0; gi < groups_; ++gi) {
        const T* grad_g = grad + gi * kg_ * ld;
        const T* col_g = col + gi * crs_ * ld;
        T* part_g = part + gi * kg_ * crs_;
        gemm_rm<T>(h_, math_, kg_, int(crs_), int(depth), T(1), {grad_g, int(ld), depth},
                   {col_g, int(ld), depth, true}, T(0), part_g, int(crs_), count, split);
        if (rest > 0)
          gemm_rm<T>(h_, math_, kg_, int(crs_), int(rest), T(1),
                     {grad_g + split * depth, int(ld), 0},
                     {col_g + split * depth, int(ld), 0, true}, T(1), part_g + (split - 1) * count,
                     int(crs_), 0, 1);
      }
      sum_partials_kernel<<<grid_for(count), kBlock, 0, st_>>>(split, count, part, dw, alpha, beta);
      check_launch("sum_partials_kernel");
    }
  }

 private:
  // Side-by-side layout (one GEMM per group over the chunk, plus a pass through a workspace
  // buffer) or per-image GEMMs writing y / the patch gradient directly. Per image, the GEMM is
  // Kg x P*Q x Cg*R*S; side by side it is Kg x B*P*Q x Cg*R*S. cuBLAS tiles the output in blocks
  // of 64-256 on a side and runs near its peak once M, N >= ~1024 and the depth >= ~256: a
  // per-image N = P*Q of 169 (13x13) or 49 (7x7) fills one or two ragged tiles per image, while
  // B*P*Q fills them all. The price of the wide layout is one extra write and read of the
  // chunk's output (8 bytes per float element, ~2.7 ps at ~3 TB/s) against a GEMM cost of
  // 2*Cg*R*S FLOPs per element (~26 ps for Cg*R*S = 576 at ~45 TFLOP/s), i.e. ~10% at worst for
  // real layers; ragged tiles cost more than that until P*Q reaches ~1024 (then at most one
  // partial tile in eight). So: side by side when P*Q < 1024, per image from 1024 up (56x56,
  // 112x112 planes: the GEMMs are already large and the extra pass would only add traffic).
  bool wide() const { return pq_ < 1024; }

  T* workspace() {
    plan_ = plan_conv_cuda(crs_ * groups_, wd_.k, pq_, xd_.n, groups_, sizeof(T),
                           h_.workspace_budget());
    return static_cast<T*>(h_.workspace(sizeof(T) * plan_.elems));
  }

  Handle& h_;
  const ConvProblem p_;
  const TensorDesc& xd_;
  const FilterDesc& wd_;
  const TensorDesc& yd_;
  MathMode math_;
  cudaStream_t st_;
  ConvGeom g_;
  Prob pb_;
  int groups_, kg_, cg_;
  int64_t crs_, pq_;
  ConvCudaPlan plan_;
};

// conv_ops.h: im2col plans chunks of images.
size_t im2col_workspace(Handle& h, const ConvProblem& p) {
  const size_t elem = dtype_size(p.xd.dtype);
  return plan_conv_cuda(int64_t(p.xd.c) * p.wd.r * p.wd.s, p.wd.k, int64_t(p.yd.h) * p.yd.w, p.xd.n,
                        p.cd.groups, elem, h.workspace_budget())
             .elems *
         elem;
}

// The direct kernels need none but the tiled backward filter's partials.
size_t direct_workspace(Handle& h, const ConvProblem& p) {
  return direct_filter_tiles(p) ? direct_filter_tiles_workspace(h, p) : 0;
}
const char* runs_everything(const ConvProblem&) { return nullptr; }

}  // namespace

const ConvImpl kConvIm2colGemm = float_conv_row<ConvCuda, Device::kCUDA, ConvAlgo::kIm2colGemm>(
    conv_unsupported_gemm, im2col_workspace);
const ConvImpl kConvDirect = float_conv_row<ConvCuda, Device::kCUDA, ConvAlgo::kDirect>(
    runs_everything, direct_workspace, conv_takes_any_strides);

}  // namespace crema::prim::cuda
