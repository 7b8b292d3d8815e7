// Reshape layer (Caffe's Reshape): changes the shape, not the data. The axes
// [reshape_param.axis, axis + num_axes) of the bottom (num_axes -1: to the end; a negative axis
// counts from the end, -1 meaning after the last axis) are replaced by reshape_param.shape,
// where a 0 copies the bottom's size at that position and one -1 is inferred so the element
// count is kept. The top shares the bottom's data and diff: y = x, dx = dy, nothing moves.
#pragma once

#include "layers/view_layer.h"

namespace crema {

template <typename Dtype>
class ReshapeLayer : public ViewLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using ViewLayer<Dtype>::ViewLayer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  LayerSignature signature() const override { return {"Reshape", exactly(1), exactly(1)}; }
};

}  // namespace crema
