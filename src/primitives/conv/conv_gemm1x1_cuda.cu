// The 1x1 GEMM row of the CUDA convolution: for 1x1 filters with no padding at stride 1, each
// image's C x H*W block already is the patch matrix, so every pass is GEMMs on the tensors in
// place (no im2col), batched over the images:
//   forward        y_g[n]  = W_g x_g[n]           (Kg x HW, depth Cg), then the epilogue;
//   backward data  dx_g[n] = W_g^T dy_g[n]        (Cg x HW, depth Kg);
//   backward filt. dW_g    = sum_n dy_g[n] x_g[n]^T (Kg x Cg, depth HW per image).
// The GEMMs honour the math mode (tensor cores for TF32/BF16/FP16 on fp32 data). bf16 (f16)
// tensors in BF16 (FP16) math go to cuBLAS as they are stored (Conv1x1Half).
// A strided 1x1 (no padding) is the stride-1 convolution of the subsampled input
// x[:, :, ::sh, ::sw]: forward and backward filter gather that into the workspace first (one
// pass reading what the stride keeps), backward data computes its gradient there and spreads it
// over dx with zeros where the stride skips (one pass writing dx); half data stays in its type
// throughout. ResNet-50's res3a/4a/5a branch1 and branch2a are such layers; im2col gathered the
// same values a chunk of images at a time and ran a GEMM per image.
#include <algorithm>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/fast_div.h"
#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_impl.h"
#include "primitives/conv/conv_subsample.cuh"
#include "primitives/cuda/cuda_pack.cuh"
#include "primitives/tensor_copy.h"
#include "primitives/view.h"

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
  // scratch: plan_filter's elements, or null for the handle's workspace.
  void bwd_filter(const T* x, const T* dy, T* dw, Blend blend, T* scratch = nullptr) {
    const TensorDesc &xd = p_.xd, &yd = p_.yd;
    const T alpha = T(blend.alpha);
    T beta = T(blend.beta);  // applies once, to the first chunk's contribution
    const Conv1x1FilterPlan plan =
        plan_filter(xd.c, p_.wd.k, cg_, hw_, xd.n, sizeof(T), h_.workspace_budget());
    T* ws = scratch ? scratch : static_cast<T*>(h_.workspace(sizeof(T) * plan.elems));
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

bool strided(const ConvProblem& p) { return p.cd.stride_h != 1 || p.cd.stride_w != 1; }

// ---- Half-size data in its own math (bf16 storage with BF16 math, f16 with FP16) -------------
// The GEMMs read and write x and y (dx, dy) as stored, through cuBLAS's Ex form with fp32
// accumulation; the filter is rounded once into the workspace. No f32 copy of an activation.

// Channels-last x and y: every image's pixels are the rows of one matrix (N*H*W x C, a group's
// channels a column slice), so a pass is one GEMM per group over the whole batch (strided: over
// the subsampled input's pixels).
bool channels_last(const ConvProblem& p) {
  const int64_t limit = int64_t(1) << 31;
  return p.xd.is_packed_nhwc() && p.yd.is_packed_nhwc() && p.xd.count() < limit &&
         p.yd.count() < limit;
}

// Not a forward with a bias: cuBLAS rounds its result to the stored type, and the bias added
// after would round it a second time (the staged path adds it in fp32). NCHW images (each
// image's planes are matrices), or channels last (channels_last).
bool takes_stored(const ConvProblem& p, ConvPass pass, const ConvEpilogue& ep) {
  const DataType t = math_storage_type(p.cd.math);
  return half_size(t) && p.xd.dtype == t && p.yd.dtype == t &&
         !(pass == ConvPass::kFwd && ep.bias) && (!conv_unsupported_gemm(p) || channels_last(p));
}

// The element `elems` past p, for a tensor of type t.
const void* at(const void* p, int64_t elems, DataType t) {
  return static_cast<const char*>(p) + elems * int64_t(dtype_size(t));
}
void* at(void* p, int64_t elems, DataType t) {
  return static_cast<char*>(p) + elems * int64_t(dtype_size(t));
}

struct HalfMat {
  const void* p;
  int ld;
  int64_t stride;
  bool trans = false;
};

// Row-major C (m x n, type ct) = alpha * A B + beta * C, batched; A and B of type ab.
void gemm_half(Handle& h, DataType ab, int m, int n, int k, float alpha, HalfMat a, HalfMat b,
               float beta, void* c, DataType ct, int ldc, int64_t stride_c, int batch) {
  cublasHandle_t bh = blas_of(h);
  check_cublas(cublasSetPointerMode(bh, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
  check_cublas(cublasSetMathMode(bh, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  check_cublas(
      gemm_batched_ex(bh, CUBLAS_COMPUTE_32F, b.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
                      a.trans ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b.p, ab, b.ld, b.stride,
                      a.p, ab, a.ld, a.stride, &beta, c, ct, ldc, stride_c, batch),
      "cublas half gemm strided batched");
}

// y = relu(y) on half y: exact, as rounding keeps signs.
template <typename T>
__global__ void half_relu_kernel(StridedIndex ix, T* y) {
  CREMA_CUDA_LOOP(i, ix.count) {
    int k;
    const int64_t off = ix.offset(i, &k);
    if (!(load_as_float(y[off]) > 0.f)) y[off] = store_from_float<T>(0.f);
  }
}

// Runs a stride-1 problem; scratch holds half_scratch_bytes for the pass.
class Conv1x1Half {
 public:
  Conv1x1Half(Handle& h, const ConvProblem& p, void* scratch)
      : h_(h),
        p_(p),
        scratch_(scratch),
        t_(p.xd.dtype),
        groups_(p.cd.groups),
        kg_(p.wd.k / groups_),
        cg_(p.wd.c),
        hw_(int64_t(p.xd.h) * p.xd.w) {}

  void fwd(const void* x, const float* w, void* y, Blend blend, const ConvEpilogue& ep) {
    const void* wh = rounded_filter(w);
    for (int gi = 0; gi < groups_; ++gi)
      gemm_half(h_, t_, kg_, int(hw_), cg_, float(blend.alpha),
                {at(wh, gi * kg_ * cg_, t_), cg_, 0},
                {at(x, gi * cg_ * hw_, t_), int(hw_), p_.xd.stride_n}, float(blend.beta),
                at(y, gi * kg_ * hw_, t_), t_, int(hw_), p_.yd.stride_n, p_.xd.n);
    if (!ep.relu) return;  // no bias here (takes_stored)
    const StridedIndex ix(p_.yd);
    visit_dtype(DTypes<bf16_t, f16_t>{}, t_, "conv_fwd", Device::kCUDA, [&](auto tag) {
      using T = typename decltype(tag)::type;
      half_relu_kernel<T><<<grid_for(ix.count), kBlock, 0, stream_of(h_)>>>(ix, static_cast<T*>(y));
    });
    check_launch("half_relu_kernel");
  }

  // dx of type dxt: t_, or f32 for a gradient still to be blended (one rounding in all).
  void bwd_data(const float* w, const void* dy, void* dx, DataType dxt, Blend blend) {
    const void* wh = rounded_filter(w);
    for (int gi = 0; gi < groups_; ++gi)
      gemm_half(h_, t_, cg_, int(hw_), kg_, float(blend.alpha),
                {at(wh, gi * kg_ * cg_, t_), cg_, 0, true},
                {at(dy, gi * kg_ * hw_, t_), int(hw_), p_.yd.stride_n}, float(blend.beta),
                at(dx, gi * cg_ * hw_, dxt), dxt, int(hw_), p_.xd.stride_n, p_.xd.n);
  }

  // Conv1x1::bwd_filter's two forms, on half x and dy into the f32 dw: f32 partial filters, or
  // half copies gathered side by side.
  void bwd_filter(const void* x, const void* dy, float* dw, Blend blend) {
    const TensorDesc &xd = p_.xd, &yd = p_.yd;
    float beta = float(blend.beta);  // applies once, to the first chunk's contribution
    const Conv1x1FilterPlan plan =
        plan_filter(xd.c, p_.wd.k, cg_, hw_, xd.n, sizeof(float), h_.workspace_budget());
    void* ws = scratch_;
    const int64_t count = p_.wd.count();
    cudaStream_t st = stream_of(h_);
    for (int n0 = 0; n0 < xd.n; n0 += plan.chunk, beta = 1.f) {
      const int b = std::min(plan.chunk, xd.n - n0);
      if (plan.partials) {
        float* part = static_cast<float*>(ws);
        for (int gi = 0; gi < groups_; ++gi)
          gemm_half(h_, t_, kg_, cg_, int(hw_), 1.f,
                    {at(dy, n0 * yd.stride_n + gi * kg_ * hw_, t_), int(hw_), yd.stride_n},
                    {at(x, n0 * xd.stride_n + gi * cg_ * hw_, t_), int(hw_), xd.stride_n, true},
                    0.f, part + gi * kg_ * cg_, DataType::kFloat32, cg_, count, b);
        sum_partials_kernel<<<grid_for(count), kBlock, 0, st>>>(b, count, part, dw,
                                                                float(blend.alpha), beta);
        check_launch("sum_partials_kernel");
      } else {
        const int64_t ld = int64_t(b) * hw_;
        uint16_t* xs = static_cast<uint16_t*>(ws);  // half values, moved as bits
        uint16_t* dys = xs + int64_t(xd.c) * ld;
        launch_gather_planes(st, b, xd.c, hw_,
                             static_cast<const uint16_t*>(at(x, n0 * xd.stride_n, t_)), xd.stride_n,
                             xs);
        launch_gather_planes(st, b, p_.wd.k, hw_,
                             static_cast<const uint16_t*>(at(dy, n0 * yd.stride_n, t_)),
                             yd.stride_n, dys);
        gemm_half(h_, t_, kg_, cg_, int(ld), float(blend.alpha), {dys, int(ld), kg_ * ld},
                  {xs, int(ld), cg_ * ld, true}, beta, dw, DataType::kFloat32, cg_,
                  int64_t(kg_) * cg_, groups_);
      }
    }
  }

 private:
  // The filter rounded to t_ into the scratch (fwd and bwd_data take nothing else).
  const void* rounded_filter(const float* w) {
    const int64_t n = p_.wd.count();
    tensor_copy(h_, ViewDesc::packed(DataType::kFloat32, {n}), w, ViewDesc::packed(t_, {n}),
                scratch_);
    return scratch_;
  }

  Handle& h_;
  const ConvProblem& p_;
  void* scratch_;
  DataType t_;
  int groups_, kg_, cg_;
  int64_t hw_;
};

// Channels-last half data (channels_last), a stride-1 problem (a strided one's subsampled input):
// per group one GEMM over the N*H*W pixel rows,
//   forward        Y_g  = X_g W_g^T     (rows x Kg, depth Cg), then the ReLU;
//   backward data  dX_g = dY_g W_g      (rows x Cg, depth Kg);
//   backward filt. dW_g = dY_g^T X_g    (Kg x Cg, depth rows, into the f32 filter gradient);
// the filter rounded once into the scratch for the first two (half_scratch_bytes).
class Conv1x1Nhwc {
 public:
  Conv1x1Nhwc(Handle& h, const ConvProblem& p, void* scratch)
      : h_(h),
        scratch_(scratch),
        t_(p.xd.dtype),
        groups_(p.cd.groups),
        rows_(p.xd.n * p.xd.h * p.xd.w),
        c_(p.xd.c),
        k_(p.yd.c),
        cg_(p.wd.c),
        kg_(p.wd.k / groups_),
        yd_(p.yd) {}

  void fwd(const void* x, const float* w, void* y, Blend blend, const ConvEpilogue& ep) {
    const void* wh = rounded_filter(w);
    for (int gi = 0; gi < groups_; ++gi)
      gemm_half(h_, t_, rows_, kg_, cg_, float(blend.alpha), {at(x, gi * cg_, t_), c_, 0},
                {at(wh, int64_t(gi) * kg_ * cg_, t_), cg_, 0, true}, float(blend.beta),
                at(y, gi * kg_, t_), t_, k_, 0, 1);
    if (!ep.relu) return;  // no bias here (takes_stored)
    const StridedIndex ix(yd_);
    visit_dtype(DTypes<bf16_t, f16_t>{}, t_, "conv_fwd", Device::kCUDA, [&](auto tag) {
      using T = typename decltype(tag)::type;
      half_relu_kernel<T><<<grid_for(ix.count), kBlock, 0, stream_of(h_)>>>(ix, static_cast<T*>(y));
    });
    check_launch("half_relu_kernel");
  }

  // dx of type dxt: t_, or f32 for a gradient still to be spread and blended.
  void bwd_data(const float* w, const void* dy, void* dx, DataType dxt, Blend blend) {
    const void* wh = rounded_filter(w);
    for (int gi = 0; gi < groups_; ++gi)
      gemm_half(h_, t_, rows_, cg_, kg_, float(blend.alpha), {at(dy, gi * kg_, t_), k_, 0},
                {at(wh, int64_t(gi) * kg_ * cg_, t_), cg_, 0}, float(blend.beta),
                at(dx, gi * cg_, dxt), dxt, c_, 0, 1);
  }

  void bwd_filter(const void* x, const void* dy, float* dw, Blend blend) {
    for (int gi = 0; gi < groups_; ++gi)
      gemm_half(h_, t_, kg_, cg_, rows_, float(blend.alpha), {at(dy, gi * kg_, t_), k_, 0, true},
                {at(x, gi * cg_, t_), c_, 0}, float(blend.beta), dw + int64_t(gi) * kg_ * cg_,
                DataType::kFloat32, cg_, 0, 1);
  }

 private:
  const void* rounded_filter(const float* w) {
    const int64_t n = int64_t(k_) * cg_;
    tensor_copy(h_, ViewDesc::packed(DataType::kFloat32, {n}), w, ViewDesc::packed(t_, {n}),
                scratch_);
    return scratch_;
  }

  Handle& h_;
  void* scratch_;
  DataType t_;
  int groups_, rows_, c_, k_, cg_, kg_;
  TensorDesc yd_;
};

// The stride-1 problem on the subsampled input: x packed N x C x P x Q, in x's layout.
struct Subsampled {
  ConvDesc cd;
  TensorDesc xd;
  ConvProblem p;
  explicit Subsampled(const ConvProblem& s)
      : cd(s.cd),
        xd(s.xd.is_packed_nhwc() ? TensorDesc::nhwc(s.xd.dtype, s.xd.n, s.xd.c, s.yd.h, s.yd.w)
                                 : TensorDesc::nchw(s.xd.dtype, s.xd.n, s.xd.c, s.yd.h, s.yd.w)),
        p{cd, xd, s.wd, s.yd} {
    cd.stride_h = cd.stride_w = 1;
  }
};

size_t subsampled_elems(const ConvProblem& p) {
  return strided(p) ? size_t(p.xd.n) * size_t(p.xd.c) * size_t(p.yd.h) * size_t(p.yd.w) : 0;
}

size_t filter_elems(Handle& h, const ConvProblem& p) {
  return plan_filter(p.xd.c, p.wd.k, p.wd.c, int64_t(p.yd.h) * p.yd.w, p.xd.n,
                     dtype_size(p.xd.dtype), h.workspace_budget())
      .elems;
}

// ---- Half-size data: the workspace holds the subsampled tensor of a strided layer (x gathered,
// or dx before it is spread), then Conv1x1Half's scratch for the pass.
size_t half_sub_bytes(const ConvProblem& p, ConvPass pass) {
  const size_t value = pass == ConvPass::kBwdData ? sizeof(float) : dtype_size(p.xd.dtype);
  return round256(subsampled_elems(p) * value);
}
size_t half_scratch_bytes(Handle& h, const ConvProblem& p, ConvPass pass) {
  if (pass != ConvPass::kBwdFilter) return size_t(p.wd.count()) * dtype_size(p.xd.dtype);
  if (channels_last(p)) return 0;
  return sizeof(float) * plan_filter(p.xd.c, p.wd.k, p.wd.c, int64_t(p.yd.h) * p.yd.w, p.xd.n,
                                     sizeof(float), h.workspace_budget())
                             .elems;
}
char* half_workspace(Handle& h, const ConvProblem& p, ConvPass pass) {
  return static_cast<char*>(h.workspace(half_sub_bytes(p, pass) + half_scratch_bytes(h, p, pass)));
}

// Runs f on the runner for p's layout: Conv1x1Nhwc (channels last) or Conv1x1Half.
template <typename F>
void with_half_runner(Handle& h, const ConvProblem& p, void* scratch, F f) {
  if (channels_last(p))
    f(Conv1x1Nhwc(h, p, scratch));
  else
    f(Conv1x1Half(h, p, scratch));
}

void fwd_half(Handle& h, const ConvProblem& p, const void* x, const float* w, void* y, Blend blend,
              const ConvEpilogue& ep) {
  char* ws = half_workspace(h, p, ConvPass::kFwd);
  if (!strided(p)) return with_half_runner(h, p, ws, [&](auto r) { r.fwd(x, w, y, blend, ep); });
  const Subsampled sub(p);
  gather_strided(stream_of(h), p, static_cast<const uint16_t*>(x), reinterpret_cast<uint16_t*>(ws));
  with_half_runner(h, sub.p, ws + half_sub_bytes(p, ConvPass::kFwd),
                   [&](auto r) { r.fwd(ws, w, y, blend, ep); });
}

void bwd_data_half(Handle& h, const ConvProblem& p, const float* w, const void* dy, void* dx,
                   Blend blend) {
  char* ws = half_workspace(h, p, ConvPass::kBwdData);
  if (!strided(p))
    return with_half_runner(h, p, ws, [&](auto r) { r.bwd_data(w, dy, dx, p.xd.dtype, blend); });
  const Subsampled sub(p);
  with_half_runner(h, sub.p, ws + half_sub_bytes(p, ConvPass::kBwdData),
                   [&](auto r) { r.bwd_data(w, dy, ws, DataType::kFloat32, Blend{}); });
  visit_dtype(DTypes<bf16_t, f16_t>{}, p.xd.dtype, "conv_bwd_data", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    spread_strided(stream_of(h), p, reinterpret_cast<const float*>(ws), static_cast<T*>(dx), blend);
  });
}

void bwd_filter_half(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw,
                     Blend blend) {
  char* ws = half_workspace(h, p, ConvPass::kBwdFilter);
  if (!strided(p))
    return with_half_runner(h, p, ws, [&](auto r) { r.bwd_filter(x, dy, dw, blend); });
  const Subsampled sub(p);
  gather_strided(stream_of(h), p, static_cast<const uint16_t*>(x), reinterpret_cast<uint16_t*>(ws));
  with_half_runner(h, sub.p, ws + half_sub_bytes(p, ConvPass::kBwdFilter),
                   [&](auto r) { r.bwd_filter(ws, dy, dw, blend); });
}

void fwd(Handle& h, const ConvProblem& p, const void* x, const void* w, void* y, Blend blend,
         const ConvEpilogue& ep) {
  if (half_size(p.xd.dtype))  // takes_stored said so
    return fwd_half(h, p, x, static_cast<const float*>(w), y, blend, ep);
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* wt = static_cast<const T*>(w);
    if (!strided(p))
      return Conv1x1<T>(h, p).fwd(static_cast<const T*>(x), wt, static_cast<T*>(y), blend, ep);
    const Subsampled sub(p);
    T* xs = static_cast<T*>(h.workspace(sizeof(T) * subsampled_elems(p)));
    gather_strided(stream_of(h), p, static_cast<const T*>(x), xs);
    Conv1x1<T>(h, sub.p).fwd(xs, wt, static_cast<T*>(y), blend, ep);
  });
}

void bwd_data(Handle& h, const ConvProblem& p, const void* w, const void* dy, void* dx,
              Blend blend) {
  if (half_size(p.xd.dtype))
    return bwd_data_half(h, p, static_cast<const float*>(w), dy, dx, blend);
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_data", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* wt = static_cast<const T*>(w);
    const T* dyt = static_cast<const T*>(dy);
    if (!strided(p)) return Conv1x1<T>(h, p).bwd_data(wt, dyt, static_cast<T*>(dx), blend);
    const Subsampled sub(p);
    T* dxs = static_cast<T*>(h.workspace(sizeof(T) * subsampled_elems(p)));
    Conv1x1<T>(h, sub.p).bwd_data(wt, dyt, dxs, Blend{});
    spread_strided(stream_of(h), p, dxs, static_cast<T*>(dx), blend);
  });
}

void bwd_filter(Handle& h, const ConvProblem& p, const void* x, const void* dy, void* dw,
                Blend blend) {
  if (half_size(p.xd.dtype)) return bwd_filter_half(h, p, x, dy, static_cast<float*>(dw), blend);
  visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_filter", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dyt = static_cast<const T*>(dy);
    if (!strided(p))
      return Conv1x1<T>(h, p).bwd_filter(static_cast<const T*>(x), dyt, static_cast<T*>(dw), blend);
    const Subsampled sub(p);
    // One workspace: the subsampled input, then the filter plan's scratch.
    const size_t xs_elems = subsampled_elems(p);
    T* xs = static_cast<T*>(h.workspace(sizeof(T) * (xs_elems + filter_elems(h, p))));
    gather_strided(stream_of(h), p, static_cast<const T*>(x), xs);
    Conv1x1<T>(h, sub.p).bwd_filter(xs, dyt, static_cast<T*>(dw), blend, xs + xs_elems);
  });
}

// The most any pass needs: on half-size data the subsampled tensor and the pass's scratch; else
// the subsampled input and the backward filter's partials or gathered copies (forward and
// backward data need no more), or in half math on f32 data the filter rounded into the staged
// row's workspace.
size_t workspace(Handle& h, const ConvProblem& p) {
  if (half_size(p.xd.dtype)) {
    size_t most = 0;
    for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
      most = std::max(most, half_sub_bytes(p, pass) + half_scratch_bytes(h, p, pass));
    return most;
  }
  const size_t filter = half_size(math_storage_type(p.cd.math)) ? size_t(p.wd.count()) * 2 : 0;
  return std::max((subsampled_elems(p) + filter_elems(h, p)) * dtype_size(p.xd.dtype), filter);
}

// The table's 1x1 rule, with a stride (no padding) allowed.
const char* unsupported(const ConvProblem& p) {
  if (p.wd.r != 1 || p.wd.s != 1) return "the filter is not 1x1";
  if (p.cd.pad_h != 0 || p.cd.pad_w != 0) return "the input is padded";
  if (strided(p) && p.xd.count() >= (int64_t(1) << 31))
    return "a strided 1x1 input of 2^31 elements or more";
  return conv_unsupported_gemm(p);
}

}  // namespace

const ConvImpl kConvGemm1x1{ConvAlgo::kGemm1x1, Device::kCUDA, unsupported, workspace, fwd,
                            bwd_data,           bwd_filter,    takes_stored};

}  // namespace crema::prim::cuda
