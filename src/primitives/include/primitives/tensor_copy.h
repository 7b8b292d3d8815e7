// tensor_copy: blended copy between two strided views of the same sizes (cudnnTransformTensor
// generalized to N-d views with broadcasting):
//   y[i] = alpha * x[i] + beta * y[i]          for every index i of the common sizes
// The views address the element i at sum_d i_d * stride_d. One primitive serves the structure
// layers, forward and backward with the views swapped:
//   Concat / Slice: x packed (outer, a_k, inner) <-> a window of y viewed (outer, a_k, inner)
//                   with y's strides (A * inner, inner, 1);
//   Crop:           the window of x at the offsets <-> packed y (backward: zero dx, then copy
//                   dy into the window);
//   Tile:           x read with stride 0 on the tiles axis, so each tile is one more copy of x
//                   (its backward is reduce_fwd SUM over that axis, see reduce.h).
// As a linear map, d/dx of sum(w * y) is alpha * w read back through the same views.
// x may repeat elements (stride 0); y must not (a zero stride on an axis of size > 1 is an
// error), and x and y must not overlap. beta == 0 never reads y.
// x and y may have different data types (cudnnTransformTensor's conversion): elements are read
// into fp32 (fp64 if either side is f64), blended there, and stored rounded to nearest even.
// This is how fp32 master weights become bf16/f16 working copies and gradients come back.
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"
#include "primitives/view.h"

namespace crema::prim {

void tensor_copy(Handle& h, const ViewDesc& xd, const void* x, const ViewDesc& yd, void* y,
                 Blend blend = {});

}  // namespace crema::prim
