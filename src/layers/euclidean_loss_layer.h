// EuclideanLoss layer (Caffe's EuclideanLoss): half the mean over the batch of the squared
// distance between two bottoms a and b of the same count (N = a's first axis):
//   loss = 1/(2N) sum_i (a_i - b_i)^2
//   da = loss_weight/N * (a - b),  db = -loss_weight/N * (a - b)
// Both bottoms get gradients (either may be a target that simply ignores its diff).
#pragma once

#include "layers/loss_layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class EuclideanLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using LossLayer<Dtype>::LossLayer;

  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return this->signature_of("EuclideanLoss"); }
  // Both bottoms are predictions of each other: either takes the gradient, as in Caffe.
  bool allow_force_backward(int) const override { return true; }

 private:
  prim::EuclideanLossDesc desc_;
};

}  // namespace crema
