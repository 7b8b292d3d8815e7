// MultinomialLogisticLoss layer (Caffe's MultinomialLogisticLoss): the negative log likelihood
// of N x D probabilities p (e.g. a Softmax top) at N integer labels l in [0, D):
//   loss = -sum_n log(max(p[n, l_n], 1e-20)) / N
//   dp[n, l_n] = -loss_weight/N / max(p[n, l_n], 1e-20), 0 elsewhere
// Labels get no gradient.
#pragma once

#include "layers/loss_layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class MultinomialLogisticLossLayer : public PrimLossLayer<Dtype, prim::MultinomialLogisticLossDesc,
                                                          prim::multinomial_logistic_loss_fwd,
                                                          prim::multinomial_logistic_loss_bwd> {
 public:
  using typename Layer<Dtype>::Tensors;
  using PrimLossLayer<Dtype, prim::MultinomialLogisticLossDesc, prim::multinomial_logistic_loss_fwd,
                      prim::multinomial_logistic_loss_bwd>::PrimLossLayer;

  void reshape(const Tensors& bottom, const Tensors& top) override;

  LayerSignature signature() const override {
    return this->signature_of("MultinomialLogisticLoss");
  }
  const char* not_replayable() const override { return "waits for the GPU to check its labels"; }
};

}  // namespace crema
