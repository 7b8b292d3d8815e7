// Broadcast scale and bias on the CPU: for each (outer, channel) row of `inner` contiguous
// values the channel's scale and bias are constants, so every inner loop is a plain vectorizable
// pass. The reductions sum each channel's rows in double.
#include <cstdint>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/cpu/cpu_blend.h"
#include "primitives/scale_bias.h"

namespace crema::prim::cpu {
namespace {

template <typename T>
void fwd(const ScaleBiasDesc& sd, const T* x, const T* scale, const T* bias, T* y, Blend blend) {
  const int64_t C = sd.channels, I = sd.inner;
  for (int64_t o = 0; o < sd.outer; ++o) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t off = (o * C + c) * I;
      const T* xp = x + off;
      const T s = scale ? scale[c] : T(1), b = bias ? bias[c] : T(0);
      if (!bias)
        blend_row(I, blend, y + off, [=](int64_t i) { return xp[i] * s; });
      else if (!scale)
        blend_row(I, blend, y + off, [=](int64_t i) { return xp[i] + b; });
      else
        blend_row(I, blend, y + off, [=](int64_t i) { return xp[i] * s + b; });
    }
  }
}

// acc[c] = sum_{o,i} f(off + i) for the rows of channel c, then the blended store.
template <typename T, typename F>
void reduce_channels(const ScaleBiasDesc& sd, T* out, Blend blend, F f) {
  const int64_t C = sd.channels, I = sd.inner;
  std::vector<double> acc(size_t(C), 0.0);
  for (int64_t o = 0; o < sd.outer; ++o) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t off = (o * C + c) * I;
      double s = 0;
      for (int64_t i = 0; i < I; ++i) s += f(off + i);
      acc[size_t(c)] += s;
    }
  }
  blend_row(C, blend, out, [&](int64_t c) { return T(acc[size_t(c)]); });
}

}  // namespace

void scale_bias_bwd_bias(Handle&, const ScaleBiasDesc& sd, const void* dy, void* dbias,
                         Blend blend) {
  visit_dtype(kFloatTypes, sd.dtype, "scale_bias_bwd_bias", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = static_cast<const T*>(dy);
    reduce_channels(sd, static_cast<T*>(dbias), blend, [=](int64_t j) { return double(g[j]); });
  });
}

void scale_bias_bwd_data(Handle&, const ScaleBiasDesc& sd, const void* dy, const void* scale,
                         void* dx, Blend blend) {
  visit_dtype(kFloatTypes, sd.dtype, "scale_bias_bwd_data", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(sd, static_cast<const T*>(dy), static_cast<const T*>(scale), static_cast<const T*>(nullptr),
        static_cast<T*>(dx), blend);
  });
}

void scale_bias_bwd_scale(Handle&, const ScaleBiasDesc& sd, const void* dy, const void* x,
                          void* dscale, Blend blend) {
  visit_dtype(kFloatTypes, sd.dtype, "scale_bias_bwd_scale", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = static_cast<const T*>(dy);
    const T* v = static_cast<const T*>(x);
    reduce_channels(sd, static_cast<T*>(dscale), blend,
                    [=](int64_t j) { return double(g[j]) * double(v[j]); });
  });
}

void scale_bias_fwd(Handle&, const ScaleBiasDesc& sd, const void* x, const void* scale,
                    const void* bias, void* y, Blend blend) {
  visit_dtype(kFloatTypes, sd.dtype, "scale_bias_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(sd, static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias),
        static_cast<T*>(y), blend);
  });
}

}  // namespace crema::prim::cpu
