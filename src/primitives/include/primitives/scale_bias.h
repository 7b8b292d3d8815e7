// Broadcast scale and bias (Caffe's Scale and Bias layers; cuDNN's OpTensor with a broadcast
// operand): data viewed as packed (outer, channels, inner), one scale and one bias value per
// channel, broadcast over outer and inner.
//
//   scale_bias_fwd:       y[o,c,i] = x[o,c,i] * scale[c] + bias[c]   (scale or bias may be null:
//                                                                     1 and 0 then)
//   scale_bias_bwd_data:  dx[o,c,i] = dy[o,c,i] * scale[c]
//   scale_bias_bwd_scale: dscale[c] = sum_{o,i} dy[o,c,i] * x[o,c,i]
//   scale_bias_bwd_bias:  dbias[c]  = sum_{o,i} dy[o,c,i]
//
// Blends: out = alpha * op + beta * out (beta = 1 accumulates parameter gradients). y may be x
// and dx may be dy (in place); the reductions accumulate in double.
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct ScaleBiasDesc {
  DataType dtype = DataType::kFloat32;
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t count() const { return outer * channels * inner; }
};

void scale_bias_bwd_bias(Handle& h, const ScaleBiasDesc& sd, const void* dy, void* dbias,
                         Blend blend = {});
void scale_bias_bwd_data(Handle& h, const ScaleBiasDesc& sd, const void* dy, const void* scale,
                         void* dx, Blend blend = {});
void scale_bias_bwd_scale(Handle& h, const ScaleBiasDesc& sd, const void* dy, const void* x,
                          void* dscale, Blend blend = {});
void scale_bias_fwd(Handle& h, const ScaleBiasDesc& sd, const void* x, const void* scale,
                    const void* bias, void* y, Blend blend = {});

}  // namespace crema::prim
