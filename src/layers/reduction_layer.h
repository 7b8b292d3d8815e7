// Reduction layer (Caffe's Reduction): reduces every axis from reduction_param.axis on to one
// value, scaled by coeff; the top has the bottom's leading axes (a scalar for axis 0). With x
// viewed as (outer, n):
//   SUM:   y_o = coeff * sum_i x_oi            dx_oi = coeff * dy_o
//   ASUM:  y_o = coeff * sum_i |x_oi|          dx_oi = coeff * sign(x_oi) * dy_o
//   SUMSQ: y_o = coeff * sum_i x_oi^2          dx_oi = coeff * 2 x_oi * dy_o
//   MEAN:  y_o = coeff / n * sum_i x_oi        dx_oi = coeff / n * dy_o
// One reduce_fwd forward and one reduce_bwd backward.
#pragma once

#include "core/layer.h"
#include "primitives/reduce.h"

namespace crema {

template <typename Dtype>
class ReductionLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Reduction", exactly(1), exactly(1)}; }
  // Backward reads the input (ASUM's signs, SUMSQ's values).
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::ReduceDesc reduce_;
  double coeff_ = 1.0;
  int64_t outer_ = 0, n_ = 0;
};

}  // namespace crema
