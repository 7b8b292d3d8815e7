// CPU implementation of the element-wise primitives: plain loops the compiler vectorizes, one
// template per operation instantiated for float and double.
#include <cmath>
#include <cstdint>

#include "primitives/dtype_visit.h"
#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim::cpu {

void elt_sign(Handle&, DataType t, int64_t n, const void* x, void* y) {
  visit_dtype(kFloatTypes, t, "elt_sign", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xx = static_cast<const T*>(x);
    T* yy = static_cast<T*>(y);
    // (0 < x) - (x < 0): 0 stays 0, so L1 decay leaves exact zeros alone.
    for (int64_t i = 0; i < n; ++i) yy[i] = T((T(0) < xx[i]) - (xx[i] < T(0)));
  });
}

void elt_mul(Handle&, DataType t, int64_t n, const void* a, const void* b, void* y) {
  visit_dtype(kFloatTypes, t, "elt_mul", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* aa = static_cast<const T*>(a);
    const T* bb = static_cast<const T*>(b);
    T* yy = static_cast<T*>(y);
    for (int64_t i = 0; i < n; ++i) yy[i] = aa[i] * bb[i];
  });
}

void elt_div(Handle&, DataType t, int64_t n, const void* a, const void* b, void* y) {
  visit_dtype(kFloatTypes, t, "elt_div", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* aa = static_cast<const T*>(a);
    const T* bb = static_cast<const T*>(b);
    T* yy = static_cast<T*>(y);
    for (int64_t i = 0; i < n; ++i) yy[i] = aa[i] / bb[i];
  });
}

void elt_sqrt(Handle&, DataType t, int64_t n, const void* x, void* y) {
  visit_dtype(kFloatTypes, t, "elt_sqrt", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xx = static_cast<const T*>(x);
    T* yy = static_cast<T*>(y);
    for (int64_t i = 0; i < n; ++i) yy[i] = std::sqrt(xx[i]);
  });
}

void elt_add_scalar(Handle&, DataType t, int64_t n, double alpha, void* y) {
  visit_dtype(kFloatTypes, t, "elt_add_scalar", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* yy = static_cast<T*>(y);
    const T a = T(alpha);
    for (int64_t i = 0; i < n; ++i) yy[i] += a;
  });
}

}  // namespace crema::prim::cpu
