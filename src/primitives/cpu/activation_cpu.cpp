// Activations on the CPU: one tight loop per mode functor (activation_ops.h) and blend case, so
// the compiler can vectorize them; the mode is chosen once per call, never per element.
#include <cstdint>

#include "primitives/activation.h"
#include "primitives/common/activation_ops.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cpu/cpu_blend.h"

namespace crema::prim::cpu {
namespace {

template <typename T>
void fwd(const ActDesc& ad, int64_t n, const T* x, T* y, Blend blend) {
  act_ops::visit<T>(
      ad, [&](auto op) { blend_row(n, blend, y, [=](int64_t i) { return op.fwd(x[i]); }); });
}

// Modes read only what act_bwd_reads_x/y say; the other pointer may be null, so it is replaced
// by one that is read harmlessly (the functor ignores that argument).
template <typename T>
void bwd(const ActDesc& ad, int64_t n, const T* y, const T* dy, const T* x, T* dx, Blend blend) {
  if (!x) x = dy;
  if (!y) y = dy;
  act_ops::visit<T>(ad, [&](auto op) {
    blend_row(n, blend, dx, [=](int64_t i) { return op.bwd(x[i], y[i], dy[i]); });
  });
}

}  // namespace

void act_fwd(Handle&, const ActDesc& ad, const TensorDesc& xd, const void* x, const TensorDesc&,
             void* y, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "act_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(ad, xd.count(), static_cast<const T*>(x), static_cast<T*>(y), blend);
  });
}

void act_bwd(Handle&, const ActDesc& ad, const TensorDesc&, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "act_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd(ad, xd.count(), static_cast<const T*>(y), static_cast<const T*>(dy),
        static_cast<const T*>(x), static_cast<T*>(dx), blend);
  });
}

}  // namespace crema::prim::cpu
