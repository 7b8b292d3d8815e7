// Softmax layer (Caffe's Softmax): normalized exponentials over softmax_param.axis (default 1,
// the channels; any other axis too, e.g. a spatial softmax). The input is viewed as
// (outer, channels, inner) with channels the size of that axis:
//   y_c = exp(x_c - max_j x_j) / sum_j exp(x_j - max_j x_j)
//   dx_c = y_c * (dy_c - sum_j dy_j * y_j)
#pragma once

#include "core/layer.h"
#include "primitives/softmax.h"

namespace crema {

template <typename Dtype>
class SoftmaxLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Softmax", exactly(1), exactly(1)}; }
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kBackward; }

 private:
  prim::SoftmaxDesc desc_;
};

}  // namespace crema
