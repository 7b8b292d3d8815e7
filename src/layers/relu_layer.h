// ReLU layer (Caffe's ReLU): rectified linear unit, leaky with relu_param.negative_slope.
//   y = x > 0 ? x : negative_slope * x
//   dx = dy * (x > 0 ? 1 : negative_slope)
// Works in place (top == bottom): the gradient then reads the sign from y, which equals the sign
// of x as long as negative_slope >= 0, so a negative slope in place is refused.
#pragma once

#include "core/layer.h"
#include "primitives/activation.h"

namespace crema {

template <typename Dtype>
class ReluLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using typename Layer<Dtype>::DataUse;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  const char* type() const override { return "ReLU"; }
  int exact_num_bottom() const override { return 1; }
  int exact_num_top() const override { return 1; }
  // As act_bwd_reads_x / act_bwd_reads_y say for the slope.
  DataUse bottom_data_use(int) const override;
  DataUse top_data_use(int) const override;

 private:
  prim::ActDesc act_;
};

}  // namespace crema
