// Sigmoid layer (Caffe's Sigmoid): the logistic function, element-wise.
//   y = 1 / (1 + exp(-x))
//   dx = dy * y * (1 - y)
// Works in place (top == bottom): the gradient reads only y.
#pragma once

#include "core/layer.h"
#include "primitives/activation.h"

namespace crema {

template <typename Dtype>
class SigmoidLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  const char* type() const override { return "Sigmoid"; }
  int exact_num_bottom() const override { return 1; }
  int exact_num_top() const override { return 1; }

 private:
  prim::ActDesc act_;
};

}  // namespace crema
