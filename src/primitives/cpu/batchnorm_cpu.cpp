// Batch normalization on the CPU. One channel at a time: its N planes of H*W contiguous values
// are summed (in double, so float statistics over large batches stay accurate), then written in
// one more pass; every inner loop is a contiguous, vectorizable pass over a plane.
#include <cmath>
#include <cstdint>

#include "primitives/batchnorm.h"
#include "primitives/common/batchnorm_ops.h"
#include "primitives/common/desc_checks.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cpu/cpu_blend.h"

namespace crema::prim::cpu {
namespace {

// The packed layout (channel_view): plane (n, c) starts at (n * C + c) * hw, where n runs over
// the images and hw over a plane (NCHW), or n over the pixels and hw is 1 (channels last).
struct Layout {
  int64_t N;
  int C;
  int64_t hw;
  explicit Layout(const TensorDesc& d)
      : N(channel_view(d).outer), C(d.c), hw(channel_view(d).inner) {}
  int64_t plane(int64_t n, int c) const { return (n * C + c) * hw; }
  double m() const { return double(N) * double(hw); }
};

// Channel c of both forward modes: x_hat = (x - mean) * inv_std (kept where x_hat is not null),
// y = the epilogue of x_hat.
template <typename T>
void normalize_channel(const Layout& L, int c, const bn_ops::Epilogue<T>& ep, const T* x, T mean,
                       T inv_std, T* y, T* x_hat, Blend blend) {
  for (int64_t n = 0; n < L.N; ++n) {
    const int64_t o = L.plane(n, c);
    const T* xp = x + o;
    if (x_hat) {
      T* hp = x_hat + o;
      for (int64_t i = 0; i < L.hw; ++i) hp[i] = (xp[i] - mean) * inv_std;
      blend_row(L.hw, blend, y + o, [=](int64_t i) { return ep.fwd(hp[i], c); });
    } else {
      blend_row(L.hw, blend, y + o, [=](int64_t i) { return ep.fwd((xp[i] - mean) * inv_std, c); });
    }
  }
}

template <typename T>
void fwd_training(const BatchNormDesc& bd, const bn_ops::Epilogue<T>& ep, const TensorDesc& d,
                  const T* x, T* y, T* x_hat, T* mean_out, T* var_out, T* inv_std_out,
                  Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < L.N; ++n) {
      const T* p = x + L.plane(n, c);
      for (int64_t i = 0; i < L.hw; ++i) sum += double(p[i]);
    }
    const double mean = sum / L.m();
    // Two passes: the centred sum of squares does not cancel catastrophically as
    // E[x^2] - E[x]^2 does when the mean is large against the spread.
    double sq = 0;
    for (int64_t n = 0; n < L.N; ++n) {
      const T* p = x + L.plane(n, c);
      for (int64_t i = 0; i < L.hw; ++i) {
        const double v = double(p[i]) - mean;
        sq += v * v;
      }
    }
    const double var = sq / L.m();
    const double inv_std = 1.0 / std::sqrt(var + bd.eps);
    if (mean_out) mean_out[c] = T(mean);
    if (var_out) var_out[c] = T(var);
    if (inv_std_out) inv_std_out[c] = T(inv_std);
    normalize_channel(L, c, ep, x, T(mean), T(inv_std), y, x_hat, blend);
  }
}

template <typename T>
void fwd_inference(const BatchNormDesc& bd, const bn_ops::Epilogue<T>& ep, const TensorDesc& d,
                   const T* x, T* y, const T* mean, const T* var, Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c)
    normalize_channel(L, c, ep, x, mean[c], T(1.0 / std::sqrt(double(var[c]) + bd.eps)), y,
                      static_cast<T*>(nullptr), blend);
}

// y is x_hat; the plain form's dz is dy.
template <typename T>
void bwd_training(const bn_ops::Epilogue<T>& ep, const TensorDesc& d, const T* y, const T* dy,
                  const T* inv_std, T* dgamma, T* dbeta, T* dx, Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c) {
    double sum_dz = 0, sum_dz_y = 0;
    for (int64_t n = 0; n < L.N; ++n) {
      const int64_t o = L.plane(n, c);
      for (int64_t i = 0; i < L.hw; ++i) {
        const double dz = double(ep.grad(y[o + i], dy[o + i], c));
        sum_dz += dz;
        sum_dz_y += dz * double(y[o + i]);
      }
    }
    if (dgamma) dgamma[c] += T(sum_dz_y);
    if (dbeta) dbeta[c] += T(sum_dz);
    const T mean_dz = T(sum_dz / L.m()), mean_dz_y = T(sum_dz_y / L.m());
    const T s = ep.gain(c) * inv_std[c];
    for (int64_t n = 0; n < L.N; ++n) {
      const int64_t o = L.plane(n, c);
      const T* yp = y + o;
      const T* dyp = dy + o;
      blend_row(L.hw, blend, dx + o, [=](int64_t i) {
        return s * (ep.grad(yp[i], dyp[i], c) - mean_dz - yp[i] * mean_dz_y);
      });
    }
  }
}

template <typename T>
void bwd_inference(const BatchNormDesc& bd, const TensorDesc& d, const T* dy, const T* var, T* dx,
                   Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c) {
    const T s = T(1.0 / std::sqrt(double(var[c]) + bd.eps));
    for (int64_t n = 0; n < L.N; ++n) {
      const int64_t o = L.plane(n, c);
      const T* dyp = dy + o;
      blend_row(L.hw, blend, dx + o, [=](int64_t i) { return dyp[i] * s; });
    }
  }
}

}  // namespace

void batchnorm_bwd_inference(Handle&, const BatchNormDesc& bd, const TensorDesc& dyd,
                             const void* dy, const void* var, const TensorDesc&, void* dx,
                             Blend blend) {
  visit_dtype(kFloatTypes, dyd.dtype, "batchnorm_bwd_inference", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd_inference(bd, dyd, static_cast<const T*>(dy), static_cast<const T*>(var),
                  static_cast<T*>(dx), blend);
  });
}

void batchnorm_bwd_training(Handle&, const BatchNormDesc&, const BatchNormEpilogue& ep,
                            const TensorDesc& yd, const void* x_hat, const void* dy,
                            const void* inv_std, void* dgamma, void* dbeta, const TensorDesc&,
                            void* dx, Blend blend) {
  visit_dtype(kFloatTypes, yd.dtype, "batchnorm_bwd_training", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd_training(bn_ops::Epilogue<T>(ep), yd, static_cast<const T*>(x_hat),
                 static_cast<const T*>(dy), static_cast<const T*>(inv_std), static_cast<T*>(dgamma),
                 static_cast<T*>(dbeta), static_cast<T*>(dx), blend);
  });
}

void batchnorm_fwd_inference(Handle&, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                             const TensorDesc& xd, const void* x, const TensorDesc&, void* y,
                             const void* mean, const void* var, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "batchnorm_fwd_inference", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_inference(bd, bn_ops::Epilogue<T>(ep), xd, static_cast<const T*>(x), static_cast<T*>(y),
                  static_cast<const T*>(mean), static_cast<const T*>(var), blend);
  });
}

void batchnorm_fwd_training(Handle&, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                            const TensorDesc& xd, const void* x, const TensorDesc&, void* y,
                            void* x_hat, void* mean, void* var, void* inv_std, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "batchnorm_fwd_training", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_training(bd, bn_ops::Epilogue<T>(ep), xd, static_cast<const T*>(x), static_cast<T*>(y),
                 static_cast<T*>(x_hat), static_cast<T*>(mean), static_cast<T*>(var),
                 static_cast<T*>(inv_std), blend);
  });
}

}  // namespace crema::prim::cpu
