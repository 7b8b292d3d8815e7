// Element-wise vector primitives the solvers need beyond BLAS level 1, on raw device pointers of
// n elements. The output y may alias any input (in-place updates).
//   elt_sign:       y[i] = sign(x[i]) in {-1, 0, +1}   (L1 regularization: d|w|/dw)
//   elt_mul:        y[i] = a[i] * b[i]                 (squared gradients)
//   elt_div:        y[i] = a[i] / b[i]                 (adaptive step sizes)
//   elt_sqrt:       y[i] = sqrt(x[i])                  (root of mean squares)
//   elt_add_scalar: y[i] = y[i] + alpha                (the delta that guards the divisions)
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

void elt_sign(Handle& h, DataType t, int64_t n, const void* x, void* y);
void elt_mul(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y);
void elt_div(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y);
void elt_sqrt(Handle& h, DataType t, int64_t n, const void* x, void* y);
void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y);

}  // namespace crema::prim
