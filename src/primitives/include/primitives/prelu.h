// Parametric ReLU (Caffe's PReLU) on packed NCHW tensors, with a learned slope per channel
// (slope has C values) or one slope shared by all channels (channel_shared: slope has 1 value).
//
//   y        = x > 0 ? x : slope_c * x
//   dx       = dy * (x > 0 ? 1 : slope_c)
//   dslope_c = sum_{n,h,w with x <= 0} dy * x        (channel_shared: the sum over all channels)
//
// prelu_bwd computes either gradient or both: dx or dslope may be null, each with its own blend
// (parameter gradients accumulate with beta = 1, data gradients are overwritten). The slope
// gradient is summed before dx is written, so dx may be dy; y may be x in prelu_fwd. Blends:
// out = alpha * op + beta * out.
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct PreluDesc {
  bool channel_shared = false;
};

void prelu_bwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x, const void* dy,
               const void* slope, void* dx, void* dslope, Blend dx_blend = {},
               Blend dslope_blend = {});
void prelu_fwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x,
               const void* slope, const TensorDesc& yd, void* y, Blend blend = {});

}  // namespace crema::prim
