// Point-wise activations, forward and backward, over count = n*c*h*w packed elements. With
// u = shift + scale * x (Power, Exp, Log) and ln(base) = 1 for base = -1 (Caffe's "base e"):
//
//   relu:      y = x > 0 ? x : slope * x              dx = dy * (x > 0 ? 1 : slope)
//   sigmoid:   y = 1 / (1 + exp(-x))                  dx = dy * y * (1 - y)
//   tanh:      y = tanh(x)                            dx = dy * (1 - y^2)
//   elu:       y = x > 0 ? x : alpha * (exp(x) - 1)   dx = dy * (x > 0 ? 1 : y + alpha)
//   absval:    y = |x|                                dx = dy * sign(x)
//   power:     y = u^power                            dx = dy * power * scale * u^(power - 1)
//                                                     (0 when power * scale == 0, as Caffe)
//   exp:       y = base^u = exp(ln(base) * u)         dx = dy * y * ln(base) * scale
//   log:       y = ln(u) / ln(base)                   dx = dy * scale / (u * ln(base))
//   bnll:      y = log(1 + exp(x))                    dx = dy * sigmoid(x) = dy * (1 - exp(-y))
//   threshold: y = x > threshold ? 1 : 0              no gradient: act_bwd throws
//   clip:      y = min(max(x, clip_min), clip_max)    dx = dy * (clip_min <= x <= clip_max)
//   swish:     y = x * s, s = sigmoid(beta * x)       dx = dy * (beta * y + s * (1 - beta * y))
//
// Blends: out = alpha * op + beta * out. x and y may alias (in-place layers), and dx and dy.
// act_bwd reads only what act_bwd_reads_x / act_bwd_reads_y say; the other pointer may be null.
// In place, x holds y when act_bwd runs: that is right where the gradient reads only y, and for
// relu (slope >= 0) and elu (alpha >= 0), which read only the sign of x, that y shares.
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class ActMode {
  kRelu,
  kSigmoid,
  kTanh,
  kElu,
  kAbsVal,
  kPower,
  kExp,
  kLog,
  kBnll,
  kThreshold,
  kClip,
  kSwish,
};

struct ActDesc {
  ActMode mode = ActMode::kRelu;
  double relu_negative_slope = 0.0;  // relu
  double elu_alpha = 1.0;            // elu
  double power = 1.0;                // power
  double scale = 1.0;                // power, exp, log: u = shift + scale * x
  double shift = 0.0;                // power, exp, log
  double base = -1.0;                // exp, log: > 0, or -1 for e
  double threshold = 0.0;            // threshold
  double clip_min = 0.0;             // clip
  double clip_max = 0.0;             // clip
  double swish_beta = 1.0;           // swish
};

// Whether act_bwd reads x (the input) and y (the output) in this mode.
bool act_bwd_reads_x(const ActDesc& ad);
bool act_bwd_reads_y(const ActDesc& ad);
// False only for threshold, a step function whose gradient Caffe does not define.
bool act_has_bwd(const ActDesc& ad);

void act_fwd(Handle& h, const ActDesc& ad, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend = {});
void act_bwd(Handle& h, const ActDesc& ad, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend = {});

}  // namespace crema::prim
