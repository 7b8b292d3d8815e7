// Element-wise vector primitive the solvers and BatchNorm's running statistics need beyond BLAS
// level 1, on a raw device pointer of n elements:
//   elt_add_scalar: y[i] = y[i] + alpha
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y);

}  // namespace crema::prim
