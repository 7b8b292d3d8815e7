// MultinomialLogisticLoss layer (Caffe's MultinomialLogisticLoss): the negative log likelihood
// of N x D probabilities p (e.g. a Softmax top) at N integer labels l in [0, D):
//   loss = -sum_n log(max(p[n, l_n], 1e-20)) / N
//   dp[n, l_n] = -loss_weight/N / max(p[n, l_n], 1e-20), 0 elsewhere
// Labels get no gradient.
#pragma once

#include "core/layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class MultinomialLogisticLossLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using typename Layer<Dtype>::DataUse;
  using Layer<Dtype>::Layer;

  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  const char* type() const override { return "MultinomialLogisticLoss"; }
  int exact_num_bottom() const override { return 2; }
  int exact_num_top() const override { return 1; }
  bool auto_top_blobs() const override { return true; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 1; }
  bool is_loss() const override { return true; }
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::MultinomialLogisticLossDesc desc_;
};

}  // namespace crema
