// The 1x1 GEMM row of the CUDA convolution: for 1x1 filters with stride 1 and no padding, each
// image's C x H*W block already is the patch matrix, so every pass is GEMMs on the tensors in
// place (no im2col), batched over the images:
//   forward        y_g[n]  = W_g x_g[n]           (Kg x HW, depth Cg), then the epilogue;
//   backward data  dx_g[n] = W_g^T dy_g[n]        (Cg x HW, depth Kg);
//   backward filt. dW_g    = sum_n dy_g[n] x_g[n]^T (Kg x Cg, depth HW per image).
// The GEMMs honour the math mode (tensor cores for TF32/BF16/FP16 on fp32 data).
#include <algorithm>

#include "primitives/conv_cuda.cuh"
#include "primitives/conv_impl.h"
#include "primitives/dtype_visit.h"

namespace crema::prim::cuda {
namespace {

// 1x1 backward filter on CUDA, dW_g = sum_n dY_g[n] X_g[n]^T, in one of two forms:
//  - partials: one strided-batched GEMM (Kg x Cg x HW per image) into per-image partial filters
//    (K*Cg elements each), then a fixed-order sum over the images. Extra traffic: the partials,
//    written and read once (2*K*Cg per image). Needs HW large enough to be a good GEMM depth.
//  - wide: X and dY gathered side by side ((C + K) x B*HW), one GEMM per group with depth B*HW.
//    Extra traffic: the copies, written and read once (2*(C+K)*HW per image).
// The form with less extra traffic wins, partials only when HW >= 256 (a per-image GEMM of
// depth below that spends more time on its prologue/epilogue than in the main loop). E.g.
// resnet50:res2a_branch2a (64 -> 64, 56x56): partials 4096 vs copies 401k elements per image;
// res5 (2048 -> 512, 7x7): partials 1M vs copies 125k, and HW = 49.
struct Conv1x1FilterPlan {
  bool partials = false;
  int chunk = 1;
  size_t elems = 0;  // workspace elements
};

Conv1x1FilterPlan plan_filter(int64_t c, int k, int64_t cg, int64_t hw, int batch, size_t elem_size,
                              size_t budget) {
  Conv1x1FilterPlan plan;
  const size_t partial = size_t(k) * size_t(cg), copies = size_t(c + k) * size_t(hw);
  plan.partials = hw >= 256 && partial <= copies;
  const size_t per_image = plan.partials ? partial : copies;
  const size_t fit = per_image ? budget / (per_image * elem_size) : size_t(batch);
  plan.chunk = int(std::clamp<size_t>(fit, 1, size_t(std::max(batch, 1))));
  plan.elems = per_image * size_t(plan.chunk);
  return plan;
}

template <typename T>
class Conv1x1 {
 public:
  Conv1x1(Handle& h, const ConvProblem& p)
      : h_(h),
        p_(p),
        st_(stream_of(h)),
        math_(p.cd.math),
        groups_(p.cd.groups),
        kg_(p.wd.k / groups_),
        cg_(p.wd.c),
        hw_(int64_t(p.xd.h) * p.xd.w) {}

  void fwd(const T* x, const T* w, T* y, Blend blend, const ConvEpilogue& ep) {
    for (int gi = 0; gi < groups_; ++gi)
      gemm_rm<T>(h_, math_, kg_, int(hw_), cg_, T(blend.alpha), {w + gi * kg_ * cg_, cg_, 0},
                 {x + gi * cg_ * hw_, int(hw_), p_.xd.stride_n}, T(blend.beta), y + gi * kg_ * hw_,
                 int(hw_), p_.yd.stride_n, p_.xd.n);
    launch_epilogue(st_, p_.yd, static_cast<const T*>(ep.bias), ep.relu, y);
  }

  void bwd_data(const T* w, const T* dy, T* dx, Blend blend) {
    for (int gi = 0; gi < groups_; ++gi)
      gemm_rm<T>(h_, math_, cg_, int(hw_), kg_, T(blend.alpha), {w + gi * kg_ * cg_, cg_, 0, true},
                 {dy + gi * kg_ * hw_, int(hw_), p_.yd.stride_n}, T(blend.beta),
                 dx + gi * cg_ * hw_, int(hw_), p_.xd.stride_n, p_.xd.n);
  }

  // As plan_filter decides: per-image partial filters summed in a fixed order, or the chunk's X
  // and dY gathered side by side and reduced by one GEMM per group.
  void bwd_filter(const T* x, const T* dy, T* dw, Blend blend) {
    const TensorDesc &xd = p_.xd, &yd = p_.yd;
    const T alpha = T(blend.alpha);
    T beta = T(blend.beta);  // applies once, to the first chunk's contribution
    const Conv1x1FilterPlan plan =
        plan_filter(xd.c, p_.wd.k, cg_, hw_, xd.n, sizeof(T), h_.workspace_budget());
    T* ws = static_cast<T*>(h_.workspace(sizeof(T) * plan.elems));
    const int64_t count = p_.wd.count();
    for (int n0 = 0; n0 < xd.n; n0 += plan.chunk, beta = T(1)) {
      const int b = std::min(plan.chunk, xd.n - n0);
      if (plan.partials) {
        // part[n][k][c] = dY_g[n] X_g[n]^T, group by group, batched over the chunk's images.
        for (int gi = 0; gi < groups_; ++gi)
          gemm_rm<T>(h_, math_, kg_, cg_, int(hw_), T(1),
                     {dy + n0 * yd.stride_n + gi * kg_ * hw_, int(hw_), yd.stride_n},
                     {x + n0 * xd.stride_n + gi * cg_ * hw_, int(hw_), xd.stride_n, true}, T(0),
                     ws + gi * kg_ * cg_, cg_, count, b);
        sum_partials_kernel<<<grid_for(count), kBlock, 0, st_>>>(b, count, ws, dw, alpha, beta);
        check_launch("sum_partials_kernel");
      } else {
        const int64_t ld = int64_t(b) * hw_;
        T* xs = ws;
        T* dys = ws + int64_t(xd.c) * ld;
        launch_gather_planes(st_, b, xd.c, hw_, x + n0 * xd.stride_n, xd.stride_n, xs);
        launch_gather_planes(st_, b, p_.wd.k, hw_, dy + n0 * yd.stride_n, yd.stride_n, dys);
        gemm_rm<T>(h_, math_, kg_, cg_, int(ld), alpha, {dys, int(ld), kg_ * ld},
                   {xs, int(ld), cg_ * ld, true}, beta, dw, cg_, int64_t(kg_) * cg_, groups_);
      }
    }
  }

 private:
  Handle& h_;
  const ConvProblem& p_;
  cudaStream_t st_;
  MathMode math_;
  int groups_, kg_, cg_;
  int64_t hw_;
};

void fwd(Handle& h, const ConvProblem& p, const void* x, const void* w, void* y, Blend blend,
         const ConvEpilogue& ep) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Conv1x1<T>(h, p).fwd(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y),
                         blend, ep);
  });
}

void bwd_data(Handle& h, const ConvProblem& p, const void* w, const void* dy, void* dx,
              Blend blend) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_data", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Conv1x1<T>(h, p).bwd_data(static_cast<const T*>(w), static_cast<const T*>(dy),
                              static_cast<T*>(dx), blend);
  });
}

void bwd_filter(Handle& h, const ConvProblem& p, const void* x, const void* dy, void* dw,
                Blend blend) {
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_filter", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Conv1x1<T>(h, p).bwd_filter(static_cast<const T*>(x), static_cast<const T*>(dy),
                                static_cast<T*>(dw), blend);
  });
}

// Only the backward filter needs scratch: the partials or the gathered copies.
size_t workspace(Handle& h, const ConvProblem& p) {
  const size_t elem = dtype_size(p.xd.dtype);
  return plan_filter(p.xd.c, p.wd.k, p.wd.c, int64_t(p.xd.h) * p.xd.w, p.xd.n, elem,
                     h.workspace_budget())
             .elems *
         elem;
}

}  // namespace

const ConvImpl kConvGemm1x1{ConvAlgo::kGemm1x1, Device::kCUDA, conv_unsupported_gemm1x1,
                            workspace,          fwd,           bwd_data,
                            bwd_filter};

}  // namespace crema::prim::cuda
