// Helpers shared by the structure layers (Concat, Slice, Crop, Tile, Reshape, ...): the strided
// views they hand to tensor_copy / reduce_*, and shape checks that report as layer errors.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "primitives/view.h"

namespace crema::structure {

// A packed (outer, size, inner) view.
template <typename Dtype>
prim::ViewDesc packed3(int64_t outer, int64_t size, int64_t inner) {
  return prim::ViewDesc::packed(dtype_of<Dtype>(), {outer, size, inner});
}

// The (outer, size, inner) window of a packed (outer, total, inner) tensor that starts at
// position `start` of the middle axis; the caller offsets the pointer by start * inner.
template <typename Dtype>
prim::ViewDesc window3(int64_t outer, int64_t size, int64_t inner, int64_t total) {
  prim::ViewDesc d = packed3<Dtype>(outer, size, inner);
  d.stride[0] = total * inner;
  return d;
}

// The layer's canonical index of `axis` for tensor t; an out-of-range axis is a layer error.
template <typename Dtype>
int layer_axis(const Layer<Dtype>& layer, const Tensor<Dtype>& t, int axis) {
  if (axis < -t.num_axes() || axis >= t.num_axes())
    layer.error("axis ", axis, " is out of range for an input of shape (", t.shape_string(), ")");
  return axis < 0 ? axis + t.num_axes() : axis;
}

// Reshapes t, reporting an invalid or too large shape as a layer error.
template <typename Dtype>
void layer_reshape(const Layer<Dtype>& layer, Tensor<Dtype>* t, const std::vector<int64_t>& shape) {
  try {
    t->reshape(shape);
  } catch (const Error& e) {
    layer.error(e.what());
  }
}

}  // namespace crema::structure
