// Batch normalization on the CPU. One channel at a time: its N planes of H*W contiguous values
// are summed (in double, so float statistics over large batches stay accurate), then written in
// one more pass; every inner loop is a contiguous, vectorizable pass over a plane.
#include <cmath>
#include <cstdint>

#include "primitives/batchnorm.h"
#include "primitives/dtype_visit.h"

namespace crema::prim::cpu {
namespace {

// out[i] = alpha * v(i) + beta * out[i]; with beta == 0 out is never read (it may be poison).
template <typename T, typename V>
inline void blend_row(int64_t n, Blend blend, T* out, V v) {
  const T alpha = T(blend.alpha), beta = T(blend.beta);
  if (beta == T(0)) {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * v(i);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * v(i) + beta * out[i];
  }
}

// The packed layout: plane (n, c) starts at (n * C + c) * hw.
struct Layout {
  int N, C;
  int64_t hw;
  explicit Layout(const TensorDesc& d) : N(d.n), C(d.c), hw(int64_t(d.h) * d.w) {}
  int64_t plane(int n, int c) const { return (int64_t(n) * C + c) * hw; }
  double m() const { return double(N) * double(hw); }
};

template <typename T>
void fwd_training(const BatchNormDesc& bd, const TensorDesc& d, const T* x, T* y, T* mean_out,
                  T* var_out, T* inv_std_out, Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c) {
    double sum = 0;
    for (int n = 0; n < L.N; ++n) {
      const T* p = x + L.plane(n, c);
      for (int64_t i = 0; i < L.hw; ++i) sum += double(p[i]);
    }
    const double mean = sum / L.m();
    // Two passes: the centred sum of squares does not cancel catastrophically as
    // E[x^2] - E[x]^2 does when the mean is large against the spread.
    double sq = 0;
    for (int n = 0; n < L.N; ++n) {
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
    const T tm = T(mean), ts = T(inv_std);
    for (int n = 0; n < L.N; ++n) {
      const int64_t o = L.plane(n, c);
      const T* xp = x + o;
      blend_row(L.hw, blend, y + o, [=](int64_t i) { return (xp[i] - tm) * ts; });
    }
  }
}

template <typename T>
void fwd_inference(const BatchNormDesc& bd, const TensorDesc& d, const T* x, T* y, const T* mean,
                   const T* var, Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c) {
    const T tm = mean[c], ts = T(1.0 / std::sqrt(double(var[c]) + bd.eps));
    for (int n = 0; n < L.N; ++n) {
      const int64_t o = L.plane(n, c);
      const T* xp = x + o;
      blend_row(L.hw, blend, y + o, [=](int64_t i) { return (xp[i] - tm) * ts; });
    }
  }
}

template <typename T>
void bwd_training(const TensorDesc& d, const T* y, const T* dy, const T* inv_std, T* dx,
                  Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c) {
    double sum_dy = 0, sum_dy_y = 0;
    for (int n = 0; n < L.N; ++n) {
      const int64_t o = L.plane(n, c);
      for (int64_t i = 0; i < L.hw; ++i) {
        sum_dy += double(dy[o + i]);
        sum_dy_y += double(dy[o + i]) * double(y[o + i]);
      }
    }
    const T mean_dy = T(sum_dy / L.m()), mean_dy_y = T(sum_dy_y / L.m()), s = inv_std[c];
    for (int n = 0; n < L.N; ++n) {
      const int64_t o = L.plane(n, c);
      const T* yp = y + o;
      const T* dyp = dy + o;
      blend_row(L.hw, blend, dx + o,
                [=](int64_t i) { return s * (dyp[i] - mean_dy - yp[i] * mean_dy_y); });
    }
  }
}

template <typename T>
void bwd_inference(const BatchNormDesc& bd, const TensorDesc& d, const T* dy, const T* var, T* dx,
                   Blend blend) {
  const Layout L(d);
  for (int c = 0; c < L.C; ++c) {
    const T s = T(1.0 / std::sqrt(double(var[c]) + bd.eps));
    for (int n = 0; n < L.N; ++n) {
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

void batchnorm_bwd_training(Handle&, const BatchNormDesc&, const TensorDesc& yd, const void* y,
                            const void* dy, const void* inv_std, const TensorDesc&, void* dx,
                            Blend blend) {
  visit_dtype(kFloatTypes, yd.dtype, "batchnorm_bwd_training", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd_training(yd, static_cast<const T*>(y), static_cast<const T*>(dy),
                 static_cast<const T*>(inv_std), static_cast<T*>(dx), blend);
  });
}

void batchnorm_fwd_inference(Handle&, const BatchNormDesc& bd, const TensorDesc& xd, const void* x,
                             const TensorDesc&, void* y, const void* mean, const void* var,
                             Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "batchnorm_fwd_inference", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_inference(bd, xd, static_cast<const T*>(x), static_cast<T*>(y), static_cast<const T*>(mean),
                  static_cast<const T*>(var), blend);
  });
}

void batchnorm_fwd_training(Handle&, const BatchNormDesc& bd, const TensorDesc& xd, const void* x,
                            const TensorDesc&, void* y, void* mean, void* var, void* inv_std,
                            Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "batchnorm_fwd_training", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_training(bd, xd, static_cast<const T*>(x), static_cast<T*>(y), static_cast<T*>(mean),
                 static_cast<T*>(var), static_cast<T*>(inv_std), blend);
  });
}

}  // namespace crema::prim::cpu
