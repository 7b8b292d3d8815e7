// Parameter layer (Caffe's Parameter): a learned tensor of parameter_param.shape exposed as the
// top, for nets that feed a parameter into other layers. No bottoms.
//   y = W                          (the top shares the blob's data)
//   dW += dy                       (accumulated, as every parameter gradient)
// The blob starts at zero (Caffe has no filler here); trained values come from a .caffemodel.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class ParameterLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Parameter", exactly(0), exactly(1)}; }
};

}  // namespace crema
