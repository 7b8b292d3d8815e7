// Pooling, max and average, forward and backward, with Caffe's conventions.
//
// Output size: P = ceil((H + 2*ph - R) / sh) + 1 with Caffe's CEIL rounding (the default) or
// floor with FLOOR; when padded, the last window must start inside the input plus the top/left
// pad, else P is reduced by one (Caffe's clip rule).
//   max:     y = max over the window clipped to the input (pads never win); dx gets dy at the
//            first maximum in scan order (row-major), recomputed from x and y.
//   average: y = sum over the window clipped to the input / size of the window clipped to the
//            padded input (Caffe counts pad cells, not cells past the padded edge);
//            kAverageExcludePad divides by the number of input cells instead (cuDNN's
//            EXCLUDE_PADDING).
//   A window that covers no input cell (CEIL rounding with stride > kernel and no pad, where
//   Caffe's result is undefined) yields 0 and passes no gradient.
// Both blend: out = alpha * op + beta * out. pool_bwd's y must be the pool_fwd result computed
// with alpha = 1, beta = 0.
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class PoolMode { kMax, kAverage, kAverageExcludePad };

struct PoolDesc {
  PoolMode mode = PoolMode::kMax;
  int kernel_h = 1, kernel_w = 1;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
};

// Output size of one dimension (ceil_mode true = Caffe's default CEIL); throws PrimError when
// the kernel is larger than the padded input or pad >= kernel.
int pool_out_dim(int in, int kernel, int pad, int stride, bool ceil_mode);

void pool_fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
              const TensorDesc& yd, void* y, Blend blend = {});
void pool_bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y, const void* dy,
              const TensorDesc& xd, const void* x, void* dx, Blend blend = {});

}  // namespace crema::prim
