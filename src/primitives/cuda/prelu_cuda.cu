// Parametric ReLU on CUDA: element-wise passes with the channel's slope (cuda_reduce.cuh's
// chan_map, 2-3 * sizeof(T) bytes per element) and the slope gradient as a deterministic
// per-channel sum in double (one read of x and dy per element; channel_shared views the tensor
// as one channel).
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/prelu.h"

namespace crema::prim::cuda {
namespace {

template <typename T>
struct Fwd {
  const T *x, *slope;
  bool shared;
  __device__ T operator()(int64_t i, int64_t c) const {
    const T a = slope[shared ? 0 : c];
    return x[i] > T(0) ? x[i] : a * x[i];
  }
};

template <typename T>
struct Bwd {
  const T *x, *dy, *slope;
  bool shared;
  __device__ T operator()(int64_t i, int64_t c) const {
    const T a = slope[shared ? 0 : c];
    return x[i] > T(0) ? dy[i] : a * dy[i];
  }
};

template <typename T>
struct SlopeTerm {
  const T *x, *dy;
  __device__ void operator()(int64_t j, int64_t, double (&v)[1]) const {
    v[0] += x[j] > T(0) ? 0.0 : double(dy[j]) * double(x[j]);
  }
};

template <typename T>
struct SlopeFin {
  T* out;
  T alpha, beta;
  __device__ void operator()(int64_t c, const double (&v)[1]) const {
    blend_store(out + c, T(v[0]), alpha, beta);
  }
};

template <typename T>
void fwd(Handle& h, const PreluDesc& pd, const TensorDesc& d, const T* x, const T* slope, T* y,
         Blend b) {
  chan_map(h, d.n, d.c, int64_t(d.h) * d.w, Fwd<T>{x, slope, pd.channel_shared}, y, b, "prelu_fwd");
}

template <typename T>
void bwd(Handle& h, const PreluDesc& pd, const TensorDesc& d, const T* x, const T* dy,
         const T* slope, T* dx, T* dslope, Blend dx_blend, Blend dslope_blend) {
  const int64_t hw = int64_t(d.h) * d.w;
  if (dslope) {  // before dx: dx may be dy
    const ChanPlan plan =
        pd.channel_shared ? plan_channels(1, 1, d.count()) : plan_channels(d.n, d.c, hw);
    const size_t need = plan.scratch_doubles(1);
    double* scratch = need ? static_cast<double*>(h.workspace(need * sizeof(double))) : nullptr;
    channel_sums<1>(h, plan, scratch, SlopeTerm<T>{x, dy},
                    SlopeFin<T>{dslope, T(dslope_blend.alpha), T(dslope_blend.beta)}, "prelu_bwd");
  }
  if (dx)
    chan_map(h, d.n, d.c, hw, Bwd<T>{x, dy, slope, pd.channel_shared}, dx, dx_blend, "prelu_bwd");
}

}  // namespace

void prelu_bwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x, const void* dy,
               const void* slope, void* dx, void* dslope, Blend dx_blend, Blend dslope_blend) {
  visit_dtype(kFloatTypes, xd.dtype, "prelu_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd(h, pd, xd, static_cast<const T*>(x), static_cast<const T*>(dy),
        static_cast<const T*>(slope), static_cast<T*>(dx), static_cast<T*>(dslope), dx_blend,
        dslope_blend);
  });
}

void prelu_fwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x,
               const void* slope, const TensorDesc&, void* y, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "prelu_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(h, pd, xd, static_cast<const T*>(x), static_cast<const T*>(slope), static_cast<T*>(y),
        blend);
  });
}

}  // namespace crema::prim::cuda
