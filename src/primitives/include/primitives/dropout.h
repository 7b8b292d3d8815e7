// Dropout, as Caffe's (inverted) dropout: in training each element is kept with probability
// 1 - ratio and scaled by 1 / (1 - ratio) (scale_train, the default) so inference is the
// identity; with scale_train false, training does not scale and inference multiplies by
// (1 - ratio) -- that inference branch is a plain scal() done by the layer.
//
//   y = x * mask * scale,  dx = dy * mask * scale,  mask ~ Bernoulli(1 - ratio)
//
// The mask is drawn from a counter-based generator keyed by the Handle's seed and counter, so a
// seeded run is reproducible and CPU and CUDA draw the same mask for the same (seed, counter).
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct DropoutDesc {
  DataType dtype = DataType::kFloat32;
  int64_t count = 0;
  double ratio = 0.5;
  bool scale_train = true;
};

// mask: count bytes of device memory, written with 0/1.
void dropout_fwd(Handle& h, const DropoutDesc& dd, const void* x, void* y, uint8_t* mask);
void dropout_bwd(Handle& h, const DropoutDesc& dd, const void* dy, const uint8_t* mask, void* dx);

}  // namespace crema::prim
