// Reductions over axes of a strided N-d view (cudnnReduceTensor's convention: the output view
// has x's rank, with size 1 on every reduced axis and x's size on every kept one). With R(j) the
// set of input indices that reduce into output element j and n = |R(j)| = x.count / y.count:
//   kSum:   y_j = alpha * sum_{i in R(j)} x_i              + beta * y_j
//   kAsum:  y_j = alpha * sum |x_i|                         + beta * y_j
//   kSumSq: y_j = alpha * sum x_i^2                         + beta * y_j
//   kMean:  y_j = alpha * (1/n) * sum x_i                   + beta * y_j
// reduce_bwd is the gradient, dy broadcast back over the reduced axes:
//   dx_i = alpha * g(x_i) * dy_j(i) + beta * dx_i,  g = 1 | sign(x_i) | 2 x_i | 1/n
// (sign(0) = 0; x is read only by kAsum and kSumSq and may be null otherwise).
// Users: the Reduction layer (all trailing axes to one value), Tile's backward (the sum of the
// tiles, kSum over the tiles axis). Accumulation is in double. beta == 0 never reads y / dx.
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"
#include "primitives/view.h"

namespace crema::prim {

enum class ReduceOp { kSum, kAsum, kSumSq, kMean };

struct ReduceDesc {
  ReduceOp op = ReduceOp::kSum;
};

void reduce_fwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& yd, void* y, Blend blend = {});
// dxd must have xd's sizes; dyd the reduced sizes of yd in reduce_fwd.
void reduce_bwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& dyd, const void* dy, const ViewDesc& dxd, void* dx,
                Blend blend = {});

}  // namespace crema::prim
