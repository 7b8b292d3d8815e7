// EuclideanLoss layer (Caffe's EuclideanLoss): half the mean over the batch of the squared
// distance between two bottoms a and b of the same count (N = a's first axis):
//   loss = 1/(2N) sum_i (a_i - b_i)^2
//   da = loss_weight/N * (a - b),  db = -loss_weight/N * (a - b)
// Both bottoms get gradients (either may be a target that simply ignores its diff).
#pragma once

#include "core/layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class EuclideanLossLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using typename Layer<Dtype>::DataUse;
  using Layer<Dtype>::Layer;

  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  const char* type() const override { return "EuclideanLoss"; }
  int exact_num_bottom() const override { return 2; }
  int exact_num_top() const override { return 1; }
  bool auto_top_blobs() const override { return true; }
  bool is_loss() const override { return true; }
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::EuclideanLossDesc desc_;
};

}  // namespace crema
