// Batch normalization on CUDA. Training statistics are deterministic per-channel sums in double
// (cuda_reduce.cuh: blocks over pieces of each channel, partials added in order), one pass for
// mean and variance (shifted sums, ShiftedTerms); then one element-wise pass writes y (and
// x_hat, fused). Bytes per element: forward training 2 reads + 1 write (3 * sizeof(T); 4 with
// x_hat), inference 2 * sizeof(T); backward training 2 reads twice + 1 write (5 * sizeof(T)),
// inference 2 * sizeof(T). The fused forms' epilogue adds no pass: a BatchNorm, Scale, ReLU
// chain in training moves 9 values an element where the three layers apart move 22.
#include <cmath>

#include "primitives/batchnorm.h"
#include "primitives/common/batchnorm_ops.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {
namespace {

struct Shape {
  int64_t N, C, hw;
  explicit Shape(const TensorDesc& d) : N(d.n), C(d.c), hw(int64_t(d.h) * d.w) {}
  double m() const { return double(N) * double(hw); }
};

// One pass over x for both statistics: sums of d = x - x_c0 and of d^2, in double, shifted by
// the channel's first value x_c0 (a sample of it, so |mean - x_c0| is a few deviations at
// most and the variance sum / m - mean_d^2 keeps its digits; two passes read x once more).
template <typename T>
struct ShiftedTerms {
  const T* x;
  int64_t inner;
  __device__ void operator()(int64_t j, int64_t c, double (&v)[2]) const {
    const double d = double(x[j]) - double(x[c * inner]);
    v[0] += d;
    v[1] += d * d;
  }
};

template <typename T>
struct StatsFin {
  const T* x;
  int64_t inner;
  double inv_m, eps;
  T *mean_out, *var_out, *inv_std_out, *shift, *scale;
  __device__ void operator()(int64_t c, const double (&v)[2]) const {
    const double mean_d = v[0] * inv_m;
    const double var = fmax(v[1] * inv_m - mean_d * mean_d, 0.0);
    const double mean = double(x[c * inner]) + mean_d;
    const double inv_std = 1.0 / sqrt(var + eps);
    if (mean_out) mean_out[c] = T(mean);
    if (var_out) var_out[c] = T(var);
    if (inv_std_out) inv_std_out[c] = T(inv_std);
    shift[c] = T(mean);
    scale[c] = T(inv_std);
  }
};

// x_hat = (x - shift[c]) * scale[c], the normalization of both forward modes, kept where x_hat
// is not null; returns the epilogue of x_hat.
template <typename T>
struct Normalize {
  const T *x, *shift, *scale;
  bn_ops::Epilogue<T> ep;
  T* x_hat;
  __device__ T operator()(int64_t i, int64_t c) const {
    const T v = (x[i] - shift[c]) * scale[c];
    if (x_hat) x_hat[i] = v;
    return ep.fwd(v, c);
  }
};

template <typename T>
__global__ void inference_params_kernel(int64_t C, const T* mean, const T* var, double eps,
                                        T* shift, T* scale) {
  CREMA_CUDA_LOOP(c, C) {
    if (mean) shift[c] = mean[c];
    scale[c] = T(1.0 / sqrt(double(var[c]) + eps));
  }
}

template <typename T>
struct DyScale {
  const T *dy, *scale;
  __device__ T operator()(int64_t i, int64_t c) const { return dy[i] * scale[c]; }
};

// y is x_hat; dz is the epilogue's gradient (dy in the plain form).
template <typename T>
struct DzTerms {
  const T *y, *dy;
  bn_ops::Epilogue<T> ep;
  __device__ void operator()(int64_t j, int64_t c, double (&v)[2]) const {
    const double dz = double(ep.grad(y[j], dy[j], c));
    v[0] += dz;
    v[1] += dz * double(y[j]);
  }
};

template <typename T>
struct DzMeansFin {
  double inv_m;
  T *mean_dz, *mean_dz_y, *dgamma, *dbeta;
  __device__ void operator()(int64_t c, const double (&v)[2]) const {
    mean_dz[c] = T(v[0] * inv_m);
    mean_dz_y[c] = T(v[1] * inv_m);
    if (dgamma) dgamma[c] += T(v[1]);
    if (dbeta) dbeta[c] += T(v[0]);
  }
};

template <typename T>
struct TrainingGrad {
  const T *y, *dy, *inv_std, *mean_dz, *mean_dz_y;
  bn_ops::Epilogue<T> ep;
  __device__ T operator()(int64_t i, int64_t c) const {
    return ep.gain(c) * inv_std[c] * (ep.grad(y[i], dy[i], c) - mean_dz[c] - y[i] * mean_dz_y[c]);
  }
};

template <typename T>
void fwd_training(Handle& h, const BatchNormDesc& bd, const bn_ops::Epilogue<T>& ep,
                  const TensorDesc& d, const T* x, T* y, T* x_hat, T* mean_out, T* var_out,
                  T* inv_std_out, Blend b) {
  const Shape L(d);
  const ChanPlan plan = plan_channels(L.N, L.C, L.hw);
  const size_t C = size_t(L.C);
  Carver cv(h.workspace(Carver::bytes<double>(plan.scratch_doubles(2)) + 2 * Carver::bytes<T>(C)));
  double* partial = cv.take<double>(plan.scratch_doubles(2));
  T* shift = cv.take<T>(C);
  T* scale = cv.take<T>(C);
  channel_sums<2>(
      h, plan, partial, ShiftedTerms<T>{x, L.hw},
      StatsFin<T>{x, L.hw, 1.0 / L.m(), bd.eps, mean_out, var_out, inv_std_out, shift, scale},
      "batchnorm_fwd_training");
  chan_map(h, L.N, L.C, L.hw, Normalize<T>{x, shift, scale, ep, x_hat}, y, b,
           "batchnorm_fwd_training");
}

template <typename T>
void fwd_inference(Handle& h, const BatchNormDesc& bd, const bn_ops::Epilogue<T>& ep,
                   const TensorDesc& d, const T* x, T* y, const T* mean, const T* var, Blend b) {
  const Shape L(d);
  Carver cv(h.workspace(2 * Carver::bytes<T>(size_t(L.C))));
  T* shift = cv.take<T>(size_t(L.C));
  T* scale = cv.take<T>(size_t(L.C));
  inference_params_kernel<T>
      <<<grid_for(L.C), kBlock, 0, stream_of(h)>>>(L.C, mean, var, bd.eps, shift, scale);
  check_launch("batchnorm_fwd_inference");
  chan_map(h, L.N, L.C, L.hw, Normalize<T>{x, shift, scale, ep, nullptr}, y, b,
           "batchnorm_fwd_inference");
}

template <typename T>
void bwd_training(Handle& h, const bn_ops::Epilogue<T>& ep, const TensorDesc& d, const T* y,
                  const T* dy, const T* inv_std, T* dgamma, T* dbeta, T* dx, Blend b) {
  const Shape L(d);
  const ChanPlan plan = plan_channels(L.N, L.C, L.hw);
  const size_t C = size_t(L.C);
  Carver cv(h.workspace(Carver::bytes<double>(plan.scratch_doubles(2)) + 2 * Carver::bytes<T>(C)));
  double* partial = cv.take<double>(plan.scratch_doubles(2));
  T* mean_dz = cv.take<T>(C);
  T* mean_dz_y = cv.take<T>(C);
  channel_sums<2>(h, plan, partial, DzTerms<T>{y, dy, ep},
                  DzMeansFin<T>{1.0 / L.m(), mean_dz, mean_dz_y, dgamma, dbeta},
                  "batchnorm_bwd_training");
  chan_map(h, L.N, L.C, L.hw, TrainingGrad<T>{y, dy, inv_std, mean_dz, mean_dz_y, ep}, dx, b,
           "batchnorm_bwd_training");
}

template <typename T>
void bwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& d, const T* dy,
                   const T* var, T* dx, Blend b) {
  const Shape L(d);
  T* scale = static_cast<T*>(h.workspace(Carver::bytes<T>(size_t(L.C))));
  inference_params_kernel<T><<<grid_for(L.C), kBlock, 0, stream_of(h)>>>(
      L.C, static_cast<const T*>(nullptr), var, bd.eps, static_cast<T*>(nullptr), scale);
  check_launch("batchnorm_bwd_inference");
  chan_map(h, L.N, L.C, L.hw, DyScale<T>{dy, scale}, dx, b, "batchnorm_bwd_inference");
}

}  // namespace

void batchnorm_bwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& dyd,
                             const void* dy, const void* var, const TensorDesc&, void* dx,
                             Blend blend) {
  visit_dtype(kFloatTypes, dyd.dtype, "batchnorm_bwd_inference", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd_inference(h, bd, dyd, static_cast<const T*>(dy), static_cast<const T*>(var),
                  static_cast<T*>(dx), blend);
  });
}

void batchnorm_bwd_training(Handle& h, const BatchNormDesc&, const BatchNormEpilogue& ep,
                            const TensorDesc& yd, const void* x_hat, const void* dy,
                            const void* inv_std, void* dgamma, void* dbeta, const TensorDesc&,
                            void* dx, Blend blend) {
  visit_dtype(kFloatTypes, yd.dtype, "batchnorm_bwd_training", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd_training(h, bn_ops::Epilogue<T>(ep), yd, static_cast<const T*>(x_hat),
                 static_cast<const T*>(dy), static_cast<const T*>(inv_std), static_cast<T*>(dgamma),
                 static_cast<T*>(dbeta), static_cast<T*>(dx), blend);
  });
}

void batchnorm_fwd_inference(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                             const TensorDesc& xd, const void* x, const TensorDesc&, void* y,
                             const void* mean, const void* var, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "batchnorm_fwd_inference", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_inference(h, bd, bn_ops::Epilogue<T>(ep), xd, static_cast<const T*>(x), static_cast<T*>(y),
                  static_cast<const T*>(mean), static_cast<const T*>(var), blend);
  });
}

void batchnorm_fwd_training(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                            const TensorDesc& xd, const void* x, const TensorDesc&, void* y,
                            void* x_hat, void* mean, void* var, void* inv_std, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "batchnorm_fwd_training", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_training(h, bd, bn_ops::Epilogue<T>(ep), xd, static_cast<const T*>(x), static_cast<T*>(y),
                 static_cast<T*>(x_hat), static_cast<T*>(mean), static_cast<T*>(var),
                 static_cast<T*>(inv_std), blend);
  });
}

}  // namespace crema::prim::cuda
