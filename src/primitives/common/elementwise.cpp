// Element-wise primitives: argument validation and the one device dispatcher.
#include "primitives/elementwise.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (elementwise_cpu.cpp, elementwise_cuda.cu), with the public signature.
CREMA_BACKENDS(void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y);)

void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y) {
  if (n < 0) throw PrimError("elt_add_scalar: negative length");
  if (n == 0) return;
  CREMA_DISPATCH(h, elt_add_scalar, h, t, n, alpha, y);
}

}  // namespace crema::prim
