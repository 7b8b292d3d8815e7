// Input layer: declares the net's external inputs (Caffe's Input, input_param.shape). It only
// shapes its tops; the caller writes their data before forward. No forward or backward math.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class InputLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  // Shapes the tops from input_param.shape: one shape for every top, or one per top.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  // The tops keep whatever shape the caller gives them after setup, as in Caffe.
  void reshape(const Tensors&, const Tensors&) override {}
  void forward(Handle&, const Tensors&, const Tensors&) override {}
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  LayerSignature signature() const override { return {"Input", exactly(0), at_least(1)}; }
};

}  // namespace crema
