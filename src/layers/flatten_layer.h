// Flatten layer (Caffe's Flatten): merges axes [flatten_param.axis, flatten_param.end_axis] into
// one. The top is a view of the bottom (view_layer.h).
#pragma once

#include "layers/view_layer.h"

namespace crema {

template <typename Dtype>
class FlattenLayer : public ViewLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using ViewLayer<Dtype>::ViewLayer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  LayerSignature signature() const override { return {"Flatten", exactly(1), exactly(1)}; }
};

}  // namespace crema
