// Top-k arg max over the middle axis of a packed (outer, channels, inner) tensor (Caffe's
// ArgMax). For each (o, i) the channels are ranked by value, larger first; equal values rank
// the larger channel index first, as Caffe's sort of (value, index) pairs does. For rank
// j < top_k:
//   index[o, j, i] = the channel of rank j       (written as a value of the data type)
//   value[o, j, i] = x[o, channel, i]
// Output element (o, j, i) lives at o * out_outer_stride + j * inner + i, so index and value
// can be separate tensors or interleaved in one (Caffe's (N, 2, top_k) pairs: value = index +
// top_k, out_outer_stride = 2 * top_k). Either output may be null. Not differentiable.
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct ArgMaxDesc {
  DataType dtype = DataType::kFloat32;
  int64_t outer = 1, channels = 1, inner = 1;
  int top_k = 1;
  int64_t out_outer_stride = 0;  // 0: packed, top_k * inner
};

void argmax_fwd(Handle& h, const ArgMaxDesc& ad, const void* x, void* index, void* value);

}  // namespace crema::prim
