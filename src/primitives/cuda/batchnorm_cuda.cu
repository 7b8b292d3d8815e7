// Batch normalization on CUDA. Training statistics are deterministic per-channel sums in double
// (cuda_reduce.cuh: blocks over pieces of each channel, partials added in order), one pass for
// mean and variance (shifted sums, ShiftedTerms); then one element-wise pass writes y (and
// x_hat, fused). Bytes per element: forward training 2 reads + 1 write (3 * sizeof(T); 4 with
// x_hat), inference 2 * sizeof(T); backward training 2 reads twice + 1 write (5 * sizeof(T)),
// inference 2 * sizeof(T). The fused forms' epilogue adds no pass: a BatchNorm, Scale, ReLU
// chain in training moves 9 values an element where the three layers apart move 22. Tensors
// stored in bf16 or f16 are computed in fp32 (M) with fp32 statistics and parameters; a stored
// x_hat is rounded before the epilogue uses it, so backward's ReLU mask is forward's.
#include <cmath>
#include <initializer_list>

#include "primitives/batchnorm.h"
#include "primitives/common/batchnorm_ops.h"
#include "primitives/common/desc_checks.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {
namespace {

// channel_view's (outer, C, inner): images and planes (NCHW), or pixels and 1 (channels last,
// where the channel sums take the column path: warps over rows of adjacent channels).
struct Shape {
  int64_t N, C, hw;
  explicit Shape(const TensorDesc& d)
      : N(channel_view(d).outer), C(d.c), hw(channel_view(d).inner) {}
  double m() const { return double(N) * double(hw); }
};

// Every functor below moves its tensors in packs (cuda_pack.cuh): up to 16 bytes a load, as
// wide as the pointers' alignment and the channel's length allow; the sums' terms read a
// channels-last row's adjacent channels as packs too (row<P>). The widest pack all of ptrs
// (null: any) are aligned to:
template <typename T>
int widest_pack(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (p && !vec_aligned<T>(p)) return 1;
  return kVecWidth<T>;
}

// One pass over x for both statistics: sums of d = x - x_c0 and of d^2, in double, shifted by
// the channel's first value x_c0 (a sample of it, so |mean - x_c0| is a few deviations at
// most and the variance sum / m - mean_d^2 keeps its digits; two passes read x once more).
template <typename T>
__device__ __forceinline__ double ld(T v) {
  return double(load_as_float(v));
}

template <typename T, typename M = MathOf<T>>
struct ShiftedTerms {
  static constexpr int kPacks = kVecWidth<T>;
  const T* x;
  int64_t inner;
  __host__ int pack_width() const { return widest_pack<T>({x}); }
  template <int W>
  __device__ void pack(int64_t j, int64_t c, double (&v)[2]) const {
    M xs[W];
    load_pack<W>(x + j, xs);
    const double x0 = ld(x[c * inner]);
#pragma unroll
    for (int e = 0; e < W; ++e) {
      const double d = double(xs[e]) - x0;
      v[0] += d;
      v[1] += d * d;
    }
  }
  // Channels c0 .. c0 + P - 1 of one row of a channels-last tensor (inner 1: the first row is
  // the channels' first values).
  template <int P>
  __device__ void row(int64_t j, int64_t c0, double (&v)[P][2]) const {
    M xs[P], x0[P];
    load_pack<P>(x + j, xs);
    load_pack<P>(x + c0, x0);
#pragma unroll
    for (int e = 0; e < P; ++e) {
      const double d = double(xs[e]) - double(x0[e]);
      v[e][0] += d;
      v[e][1] += d * d;
    }
  }
};

template <typename T, typename M = MathOf<T>>
struct StatsFin {
  const T* x;
  int64_t inner;
  double inv_m, eps;
  M *mean_out, *var_out, *inv_std_out, *shift, *scale;
  __device__ void operator()(int64_t c, const double (&v)[2]) const {
    const double mean_d = v[0] * inv_m;
    const double var = fmax(v[1] * inv_m - mean_d * mean_d, 0.0);
    const double mean = ld(x[c * inner]) + mean_d;
    const double inv_std = 1.0 / sqrt(var + eps);
    if (mean_out) mean_out[c] = M(mean);
    if (var_out) var_out[c] = M(var);
    if (inv_std_out) inv_std_out[c] = M(inv_std);
    shift[c] = M(mean);
    scale[c] = M(inv_std);
  }
};

// x_hat = (x - shift[c]) * scale[c], the normalization of both forward modes, kept (rounded to
// T) where x_hat is not null; gives the epilogue of x_hat.
template <typename T, typename M = MathOf<T>>
struct Normalize {
  static constexpr int kPacks = kVecWidth<T>;
  const T* x;
  const M *shift, *scale;
  bn_ops::Epilogue<M> ep;
  T* x_hat;
  __host__ int pack_width() const { return widest_pack<T>({x, x_hat}); }
  template <int W, typename Ch>
  __device__ void pack(int64_t i, const Ch& c, M (&v)[W]) const {
    M sh[W], sc[W], g[W], bt[W];
    c.gather(shift, sh);
    c.gather(scale, sc);
    c.gather(ep.gamma, g);
    c.gather(ep.beta, bt);
    load_pack<W>(x + i, v);
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = (v[e] - sh[e]) * sc[e];
    if (x_hat) {
      store_pack<W>(x_hat + i, v);
#pragma unroll
      for (int e = 0; e < W; ++e) v[e] = round_to<T>(v[e]);
    }
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = ep.fwd_of(v[e], g[e], bt[e]);
  }
};

template <typename M>
__global__ void inference_params_kernel(int64_t C, const M* mean, const M* var, double eps,
                                        M* shift, M* scale) {
  CREMA_CUDA_LOOP(c, C) {
    if (mean) shift[c] = mean[c];
    scale[c] = M(1.0 / sqrt(double(var[c]) + eps));
  }
}

template <typename T, typename M = MathOf<T>>
struct DyScale {
  static constexpr int kPacks = kVecWidth<T>;
  const T* dy;
  const M* scale;
  __host__ int pack_width() const { return widest_pack<T>({dy}); }
  template <int W, typename Ch>
  __device__ void pack(int64_t i, const Ch& c, M (&v)[W]) const {
    M sc[W];
    c.gather(scale, sc);
    load_pack<W>(dy + i, v);
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] *= sc[e];
  }
};

// y is x_hat; dz is the epilogue's gradient (dy in the plain form).
template <typename T, typename M = MathOf<T>>
struct DzTerms {
  static constexpr int kPacks = kVecWidth<T>;
  const T *y, *dy;
  bn_ops::Epilogue<M> ep;
  __host__ int pack_width() const { return widest_pack<T>({y, dy}); }
  template <int W>
  __device__ void pack(int64_t j, int64_t c, double (&v)[2]) const {
    M ys[W], gs[W];
    load_pack<W>(y + j, ys);
    load_pack<W>(dy + j, gs);
#pragma unroll
    for (int e = 0; e < W; ++e) {
      const double dz = double(ep.grad(ys[e], gs[e], c));
      v[0] += dz;
      v[1] += dz * double(ys[e]);
    }
  }
  template <int P>
  __device__ void row(int64_t j, int64_t c0, double (&v)[P][2]) const {
    M ys[P], gs[P], g[P], bt[P];
    const ChanRun<P> c{c0};
    c.gather(ep.gamma, g);
    c.gather(ep.beta, bt);
    load_pack<P>(y + j, ys);
    load_pack<P>(dy + j, gs);
#pragma unroll
    for (int e = 0; e < P; ++e) {
      const double dz = double(ep.grad_of(ys[e], gs[e], g[e], bt[e]));
      v[e][0] += dz;
      v[e][1] += dz * double(ys[e]);
    }
  }
};

template <typename M>
struct DzMeansFin {
  double inv_m;
  M *mean_dz, *mean_dz_y, *dgamma, *dbeta;
  __device__ void operator()(int64_t c, const double (&v)[2]) const {
    mean_dz[c] = M(v[0] * inv_m);
    mean_dz_y[c] = M(v[1] * inv_m);
    if (dgamma) dgamma[c] += M(v[1]);
    if (dbeta) dbeta[c] += M(v[0]);
  }
};

template <typename T, typename M = MathOf<T>>
struct TrainingGrad {
  static constexpr int kPacks = kVecWidth<T>;
  const T *y, *dy;
  const M *inv_std, *mean_dz, *mean_dz_y;
  bn_ops::Epilogue<M> ep;
  __host__ int pack_width() const { return widest_pack<T>({y, dy}); }
  template <int W, typename Ch>
  __device__ void pack(int64_t i, const Ch& c, M (&v)[W]) const {
    M is[W], mz[W], mzy[W], g[W], bt[W], ys[W];
    c.gather(inv_std, is);
    c.gather(mean_dz, mz);
    c.gather(mean_dz_y, mzy);
    c.gather(ep.gamma, g);
    c.gather(ep.beta, bt);
    load_pack<W>(y + i, ys);
    load_pack<W>(dy + i, v);
#pragma unroll
    for (int e = 0; e < W; ++e)
      v[e] = ep.gain_of(g[e]) * is[e] *
             (ep.grad_of(ys[e], v[e], g[e], bt[e]) - mz[e] - ys[e] * mzy[e]);
  }
};

template <typename T, typename M = MathOf<T>>
void fwd_training(Handle& h, const BatchNormDesc& bd, const bn_ops::Epilogue<M>& ep,
                  const TensorDesc& d, const T* x, T* y, T* x_hat, M* mean_out, M* var_out,
                  M* inv_std_out, Blend b) {
  const Shape L(d);
  const ChanPlan plan = plan_channels(L.N, L.C, L.hw);
  const size_t C = size_t(L.C);
  Carver cv(h.workspace(Carver::bytes<double>(plan.scratch_doubles(2)) + 2 * Carver::bytes<M>(C)));
  double* partial = cv.take<double>(plan.scratch_doubles(2));
  M* shift = cv.take<M>(C);
  M* scale = cv.take<M>(C);
  channel_sums<2>(
      h, plan, partial, ShiftedTerms<T>{x, L.hw},
      StatsFin<T>{x, L.hw, 1.0 / L.m(), bd.eps, mean_out, var_out, inv_std_out, shift, scale},
      "batchnorm_fwd_training");
  chan_map(h, L.N, L.C, L.hw, Normalize<T>{x, shift, scale, ep, x_hat}, y, b,
           "batchnorm_fwd_training");
}

template <typename T, typename M = MathOf<T>>
void fwd_inference(Handle& h, const BatchNormDesc& bd, const bn_ops::Epilogue<M>& ep,
                   const TensorDesc& d, const T* x, T* y, const M* mean, const M* var, Blend b) {
  const Shape L(d);
  Carver cv(h.workspace(2 * Carver::bytes<M>(size_t(L.C))));
  M* shift = cv.take<M>(size_t(L.C));
  M* scale = cv.take<M>(size_t(L.C));
  inference_params_kernel<M>
      <<<grid_for(L.C), kBlock, 0, stream_of(h)>>>(L.C, mean, var, bd.eps, shift, scale);
  check_launch("batchnorm_fwd_inference");
  chan_map(h, L.N, L.C, L.hw, Normalize<T>{x, shift, scale, ep, nullptr}, y, b,
           "batchnorm_fwd_inference");
}

template <typename T, typename M = MathOf<T>>
void bwd_training(Handle& h, const bn_ops::Epilogue<M>& ep, const TensorDesc& d, const T* y,
                  const T* dy, const M* inv_std, M* dgamma, M* dbeta, T* dx, Blend b) {
  const Shape L(d);
  const ChanPlan plan = plan_channels(L.N, L.C, L.hw);
  const size_t C = size_t(L.C);
  Carver cv(h.workspace(Carver::bytes<double>(plan.scratch_doubles(2)) + 2 * Carver::bytes<M>(C)));
  double* partial = cv.take<double>(plan.scratch_doubles(2));
  M* mean_dz = cv.take<M>(C);
  M* mean_dz_y = cv.take<M>(C);
  channel_sums<2>(h, plan, partial, DzTerms<T>{y, dy, ep},
                  DzMeansFin<M>{1.0 / L.m(), mean_dz, mean_dz_y, dgamma, dbeta},
                  "batchnorm_bwd_training");
  chan_map(h, L.N, L.C, L.hw, TrainingGrad<T>{y, dy, inv_std, mean_dz, mean_dz_y, ep}, dx, b,
           "batchnorm_bwd_training");
}

template <typename T, typename M = MathOf<T>>
void bwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& d, const T* dy,
                   const M* var, T* dx, Blend b) {
  const Shape L(d);
  M* scale = static_cast<M*>(h.workspace(Carver::bytes<M>(size_t(L.C))));
  inference_params_kernel<M><<<grid_for(L.C), kBlock, 0, stream_of(h)>>>(
      L.C, static_cast<const M*>(nullptr), var, bd.eps, static_cast<M*>(nullptr), scale);
  check_launch("batchnorm_bwd_inference");
  chan_map(h, L.N, L.C, L.hw, DyScale<T>{dy, scale}, dx, b, "batchnorm_bwd_inference");
}

}  // namespace

void batchnorm_bwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& dyd,
                             const void* dy, const void* var, const TensorDesc&, void* dx,
                             Blend blend) {
  visit_dtype(kAllTypes, dyd.dtype, "batchnorm_bwd_inference", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = MathOf<T>;
    bwd_inference(h, bd, dyd, static_cast<const T*>(dy), static_cast<const M*>(var),
                  static_cast<T*>(dx), blend);
  });
}

void batchnorm_bwd_training(Handle& h, const BatchNormDesc&, const BatchNormEpilogue& ep,
                            const TensorDesc& yd, const void* x_hat, const void* dy,
                            const void* inv_std, void* dgamma, void* dbeta, const TensorDesc&,
                            void* dx, Blend blend) {
  visit_dtype(kAllTypes, yd.dtype, "batchnorm_bwd_training", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = MathOf<T>;
    bwd_training(h, bn_ops::Epilogue<M>(ep), yd, static_cast<const T*>(x_hat),
                 static_cast<const T*>(dy), static_cast<const M*>(inv_std), static_cast<M*>(dgamma),
                 static_cast<M*>(dbeta), static_cast<T*>(dx), blend);
  });
}

void batchnorm_fwd_inference(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                             const TensorDesc& xd, const void* x, const TensorDesc&, void* y,
                             const void* mean, const void* var, Blend blend) {
  visit_dtype(kAllTypes, xd.dtype, "batchnorm_fwd_inference", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = MathOf<T>;
    fwd_inference(h, bd, bn_ops::Epilogue<M>(ep), xd, static_cast<const T*>(x), static_cast<T*>(y),
                  static_cast<const M*>(mean), static_cast<const M*>(var), blend);
  });
}

void batchnorm_fwd_training(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                            const TensorDesc& xd, const void* x, const TensorDesc&, void* y,
                            void* x_hat, void* mean, void* var, void* inv_std, Blend blend) {
  visit_dtype(kAllTypes, xd.dtype, "batchnorm_fwd_training", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = MathOf<T>;
    fwd_training(h, bd, bn_ops::Epilogue<M>(ep), xd, static_cast<const T*>(x), static_cast<T*>(y),
                 static_cast<T*>(x_hat), static_cast<M*>(mean), static_cast<M*>(var),
                 static_cast<M*>(inv_std), blend);
  });
}

}  // namespace crema::prim::cuda
