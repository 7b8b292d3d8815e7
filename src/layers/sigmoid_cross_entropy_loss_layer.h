// SigmoidCrossEntropyLoss layer (Caffe's SigmoidCrossEntropyLoss): the cross entropy between
// sigmoid(x) and targets t in [0, 1] of the same count, fused for stability:
//   loss = sum_{valid i} [max(x_i, 0) - x_i t_i + log(1 + exp(-|x_i|))] / normalizer
//   dx_i = loss_weight / normalizer * (sigmoid(x_i) - t_i), 0 where t_i == ignore_label
// normalizer follows loss_param.normalization over N = x's first axis and D = count / N:
// FULL = N*D, VALID = non-ignored count, BATCH_SIZE = N (the default here, as in Caffe, for
// compatibility with its older releases), NONE = 1; the legacy normalize maps true to VALID and
// false to BATCH_SIZE. Targets get no gradient.
#pragma once

#include "layers/loss_layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class SigmoidCrossEntropyLossLayer : public PrimLossLayer<Dtype, prim::SigmoidCrossEntropyLossDesc,
                                                          prim::sigmoid_cross_entropy_loss_fwd,
                                                          prim::sigmoid_cross_entropy_loss_bwd> {
 public:
  using typename Layer<Dtype>::Tensors;
  using PrimLossLayer<Dtype, prim::SigmoidCrossEntropyLossDesc,
                      prim::sigmoid_cross_entropy_loss_fwd,
                      prim::sigmoid_cross_entropy_loss_bwd>::PrimLossLayer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;

  LayerSignature signature() const override {
    return this->signature_of("SigmoidCrossEntropyLoss");
  }

 protected:
  const char* targets_name() const override { return "target"; }
};

}  // namespace crema
