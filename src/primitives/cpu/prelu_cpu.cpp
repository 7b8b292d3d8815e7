// Parametric ReLU on the CPU: per (n, c) plane the slope is a constant, so each pass over the
// H*W contiguous values is a branch-free select the compiler vectorizes.
#include <cstdint>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/cpu/cpu_blend.h"
#include "primitives/prelu.h"

namespace crema::prim::cpu {
namespace {

template <typename T>
void fwd(const PreluDesc& pd, const TensorDesc& d, const T* x, const T* slope, T* y, Blend blend) {
  const int64_t hw = int64_t(d.h) * d.w;
  for (int n = 0; n < d.n; ++n) {
    for (int c = 0; c < d.c; ++c) {
      const int64_t o = (int64_t(n) * d.c + c) * hw;
      const T* xp = x + o;
      const T a = slope[pd.channel_shared ? 0 : c];
      blend_row(hw, blend, y + o, [=](int64_t i) { return xp[i] > T(0) ? xp[i] : a * xp[i]; });
    }
  }
}

template <typename T>
void bwd(const PreluDesc& pd, const TensorDesc& d, const T* x, const T* dy, const T* slope, T* dx,
         T* dslope, Blend dx_blend, Blend dslope_blend) {
  const int64_t hw = int64_t(d.h) * d.w;
  if (dslope) {
    std::vector<double> acc(pd.channel_shared ? 1 : size_t(d.c), 0.0);
    for (int n = 0; n < d.n; ++n) {
      for (int c = 0; c < d.c; ++c) {
        const int64_t o = (int64_t(n) * d.c + c) * hw;
        double s = 0;
        for (int64_t i = 0; i < hw; ++i)
          s += x[o + i] > T(0) ? 0.0 : double(dy[o + i]) * double(x[o + i]);
        acc[pd.channel_shared ? 0 : size_t(c)] += s;
      }
    }
    blend_row(int64_t(acc.size()), dslope_blend, dslope,
              [&](int64_t c) { return T(acc[size_t(c)]); });
  }
  if (dx) {
    for (int n = 0; n < d.n; ++n) {
      for (int c = 0; c < d.c; ++c) {
        const int64_t o = (int64_t(n) * d.c + c) * hw;
        const T* xp = x + o;
        const T* g = dy + o;
        const T a = slope[pd.channel_shared ? 0 : c];
        blend_row(hw, dx_blend, dx + o, [=](int64_t i) { return xp[i] > T(0) ? g[i] : a * g[i]; });
      }
    }
  }
}

}  // namespace

void prelu_bwd(Handle&, const PreluDesc& pd, const TensorDesc& xd, const void* x, const void* dy,
               const void* slope, void* dx, void* dslope, Blend dx_blend, Blend dslope_blend) {
  visit_dtype(kFloatTypes, xd.dtype, "prelu_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd(pd, xd, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<const T*>(slope),
        static_cast<T*>(dx), static_cast<T*>(dslope), dx_blend, dslope_blend);
  });
}

void prelu_fwd(Handle&, const PreluDesc& pd, const TensorDesc& xd, const void* x, const void* slope,
               const TensorDesc&, void* y, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "prelu_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(pd, xd, static_cast<const T*>(x), static_cast<const T*>(slope), static_cast<T*>(y), blend);
  });
}

}  // namespace crema::prim::cpu
