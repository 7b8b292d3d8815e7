// Mean-variance normalization on the CPU: each row is a contiguous run of D values, summed in
// double (two passes for the variance), then written in one vectorizable pass.
#include <cmath>
#include <cstdint>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/mvn_ops.h"
#include "primitives/cpu/cpu_blend.h"
#include "primitives/mvn.h"

namespace crema::prim::cpu {
namespace {

// Row mean and 1 / (sigma + eps) (1 when the variance is not normalized).
template <typename T>
void row_stats(const MvnDesc& md, int64_t D, const T* x, double* mean, double* inv) {
  double s = 0;
  for (int64_t i = 0; i < D; ++i) s += double(x[i]);
  *mean = s / double(D);
  *inv = 1.0;
  if (!md.normalize_variance) return;
  double sq = 0;
  for (int64_t i = 0; i < D; ++i) {
    const double v = double(x[i]) - *mean;
    sq += v * v;
  }
  *inv = 1.0 / (std::sqrt(sq / double(D)) + md.eps);
}

template <typename T>
void fwd(const MvnDesc& md, const TensorDesc& d, const T* x, T* y, Blend blend) {
  const MvnRows r(md, d);
  for (int64_t row = 0; row < r.rows; ++row) {
    const T* xr = x + row * r.dim;
    double mean, inv;
    row_stats(md, r.dim, xr, &mean, &inv);
    const T tm = T(mean), ti = T(inv);
    blend_row(r.dim, blend, y + row * r.dim, [=](int64_t i) { return (xr[i] - tm) * ti; });
  }
}

template <typename T>
void bwd(const MvnDesc& md, const TensorDesc& d, const T* x, const T* dy, T* dx, Blend blend) {
  const MvnRows r(md, d);
  const double D = double(r.dim);
  for (int64_t row = 0; row < r.rows; ++row) {
    const T* xr = x + row * r.dim;
    const T* g = dy + row * r.dim;
    double mean, inv;
    row_stats(md, r.dim, xr, &mean, &inv);
    double sum_dy = 0, sum_dy_xc = 0;
    for (int64_t i = 0; i < r.dim; ++i) {
      sum_dy += double(g[i]);
      sum_dy_xc += double(g[i]) * (double(xr[i]) - mean);
    }
    const T tm = T(mean), ti = T(inv), mean_dy = T(sum_dy / D);
    if (!md.normalize_variance) {
      blend_row(r.dim, blend, dx + row * r.dim, [=](int64_t i) { return g[i] - mean_dy; });
      continue;
    }
    // mean(dy * y) with y = (x - mean) * inv.
    const T mean_dy_y = T(sum_dy_xc * inv / D);
    blend_row(r.dim, blend, dx + row * r.dim, [=](int64_t i) {
      const T yi = (xr[i] - tm) * ti;
      return (g[i] - mean_dy - yi * mean_dy_y) * ti;
    });
  }
}

}  // namespace

void mvn_bwd(Handle&, const MvnDesc& md, const TensorDesc& xd, const void* x, const void* dy,
             const TensorDesc&, void* dx, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "mvn_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd(md, xd, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), blend);
  });
}

void mvn_fwd(Handle&, const MvnDesc& md, const TensorDesc& xd, const void* x, const TensorDesc&,
             void* y, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "mvn_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(md, xd, static_cast<const T*>(x), static_cast<T*>(y), blend);
  });
}

}  // namespace crema::prim::cpu
