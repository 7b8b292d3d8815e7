// Activations on the CPU: one tight loop per mode functor (activation_ops.h) and blend case, so
// the compiler can vectorize them; the mode is chosen once per call, never per element.
#include <cstdint>

#include "primitives/activation.h"
#include "primitives/activation_ops.h"

namespace crema::prim::cpu {
namespace {

// out[i] = alpha * f(i) + beta * out[i]; with beta == 0 out is never read, since it may hold
// garbage. f is a lambda, inlined into each loop.
template <typename T, typename F>
void blend_store(int64_t n, Blend blend, T* out, F f) {
  const T alpha = T(blend.alpha), beta = T(blend.beta);
  if (beta == T(0)) {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * f(i) + beta * out[i];
  }
}

template <typename T>
void fwd(const ActDesc& ad, int64_t n, const T* x, T* y, Blend blend) {
  act_ops::visit<T>(
      ad, [&](auto op) { blend_store(n, blend, y, [=](int64_t i) { return op.fwd(x[i]); }); });
}

// Modes read only what act_bwd_reads_x/y say; the other pointer may be null, so it is replaced
// by one that is read harmlessly (the functor ignores that argument).
template <typename T>
void bwd(const ActDesc& ad, int64_t n, const T* y, const T* dy, const T* x, T* dx, Blend blend) {
  if (!x) x = dy;
  if (!y) y = dy;
  act_ops::visit<T>(ad, [&](auto op) {
    blend_store(n, blend, dx, [=](int64_t i) { return op.bwd(x[i], y[i], dy[i]); });
  });
}

}  // namespace

void act_fwd(Handle&, const ActDesc& ad, const TensorDesc& xd, const void* x, const TensorDesc&,
             void* y, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    fwd(ad, xd.count(), static_cast<const double*>(x), static_cast<double*>(y), blend);
  else
    fwd(ad, xd.count(), static_cast<const float*>(x), static_cast<float*>(y), blend);
}

void act_bwd(Handle&, const ActDesc& ad, const TensorDesc&, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    bwd(ad, xd.count(), static_cast<const double*>(y), static_cast<const double*>(dy),
        static_cast<const double*>(x), static_cast<double*>(dx), blend);
  else
    bwd(ad, xd.count(), static_cast<const float*>(y), static_cast<const float*>(dy),
        static_cast<const float*>(x), static_cast<float*>(dx), blend);
}

}  // namespace crema::prim::cpu
