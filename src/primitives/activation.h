// Point-wise activations, forward and backward, over count = n*c*h*w packed elements.
//
//   relu:    y = x > 0 ? x : slope * x          dx = dy * (x > 0 ? 1 : slope)
//   sigmoid: y = 1 / (1 + exp(-x))              dx = dy * y * (1 - y)
//   tanh:    y = tanh(x)                        dx = dy * (1 - y^2)
//
// Blends: out = alpha * op + beta * out. x and y may alias (in-place layers): act_bwd reads only
// y for sigmoid and tanh, and for relu uses x, which in place equals y (the sign is the same as
// long as slope >= 0).
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class ActMode { kRelu, kSigmoid, kTanh };

struct ActDesc {
  ActMode mode = ActMode::kRelu;
  double relu_negative_slope = 0.0;
};

void act_fwd(Handle& h, const ActDesc& ad, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend = {});
void act_bwd(Handle& h, const ActDesc& ad, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend = {});

}  // namespace crema::prim
