// Element-wise primitives: argument validation and the one device dispatcher.
#include "primitives/elementwise.h"

#include <string>

#include "primitives/dispatch.h"

namespace crema::prim {

// The implementations (elementwise_cpu.cpp, elementwise_cuda.cu), with the public signatures.
CREMA_BACKENDS(void elt_sign(Handle& h, DataType t, int64_t n, const void* x, void* y);
               void elt_mul(Handle& h, DataType t, int64_t n, const void* a, const void* b,
                            void* y);
               void elt_div(Handle& h, DataType t, int64_t n, const void* a, const void* b,
                            void* y);
               void elt_sqrt(Handle& h, DataType t, int64_t n, const void* x, void* y);
               void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y);)

namespace {

// Returns false when there is nothing to do.
bool check(int64_t n, const char* op) {
  if (n < 0) throw PrimError(std::string(op) + ": negative length");
  return n > 0;
}

}  // namespace

void elt_sign(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  if (!check(n, "elt_sign")) return;
  CREMA_DISPATCH(h, elt_sign, h, t, n, x, y);
}

void elt_mul(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  if (!check(n, "elt_mul")) return;
  CREMA_DISPATCH(h, elt_mul, h, t, n, a, b, y);
}

void elt_div(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  if (!check(n, "elt_div")) return;
  CREMA_DISPATCH(h, elt_div, h, t, n, a, b, y);
}

void elt_sqrt(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  if (!check(n, "elt_sqrt")) return;
  CREMA_DISPATCH(h, elt_sqrt, h, t, n, x, y);
}

void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y) {
  if (!check(n, "elt_add_scalar")) return;
  CREMA_DISPATCH(h, elt_add_scalar, h, t, n, alpha, y);
}

}  // namespace crema::prim
