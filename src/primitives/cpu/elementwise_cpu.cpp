// CPU implementation of the element-wise primitive: a loop the compiler vectorizes.
#include <cstdint>

#include "primitives/common/dtype_visit.h"
#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim::cpu {

void elt_add_scalar(Handle&, DataType t, int64_t n, double alpha, void* y) {
  visit_dtype(kFloatTypes, t, "elt_add_scalar", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* yy = static_cast<T*>(y);
    const T a = T(alpha);
    for (int64_t i = 0; i < n; ++i) yy[i] += a;
  });
}

}  // namespace crema::prim::cpu
