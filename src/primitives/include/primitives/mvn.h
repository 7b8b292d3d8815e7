// Mean-variance normalization (Caffe's MVN) on packed NCHW tensors. Each row is normalized on
// its own: a row is one (n, c) plane of D = H*W values, or with across_channels one image of
// D = C*H*W values.
//
//   mean = 1/D * sum x            sigma = sqrt(1/D * sum (x - mean)^2)
//   normalize_variance:  y = (x - mean) / (sigma + eps)
//                        dx = (dy - mean(dy) - y * mean(dy * y)) / (sigma + eps)
//   mean only:           y = x - mean
//                        dx = dy - mean(dy)
// (mean(v) is the row mean of v.) The variance gradient is Caffe's: exact for eps = 0, and with
// eps > 0 it treats sigma + eps as sigma in the y * mean(dy * y) term, a relative difference of
// eps / sigma that keeps the gradient finite for constant rows.
//
// mvn_bwd recomputes the row statistics (and y) from x rather than keeping them from the forward
// pass: one more pass over x, and the two calls share no hidden state. Blends: out = alpha * op +
// beta * out. y may be x and dx may be dy (each row's sums are complete before it is written).
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct MvnDesc {
  bool normalize_variance = true;
  bool across_channels = false;
  double eps = 1e-9;  // added to sigma (not to the variance, as Caffe); >= 0
};

void mvn_bwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x, const void* dy,
             const TensorDesc& dxd, void* dx, Blend blend = {});
void mvn_fwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend = {});

}  // namespace crema::prim
