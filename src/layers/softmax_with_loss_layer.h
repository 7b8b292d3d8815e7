// SoftmaxWithLoss layer (Caffe's SoftmaxWithLoss): softmax over softmax_param.axis followed by
// the multinomial logistic loss, fused for a stable gradient. Bottoms: scores (outer x C x inner
// when viewed around the axis) and labels (outer * inner values, integers stored in the data
// type). Tops: the scalar loss, and optionally the probabilities.
//   prob = softmax(x)
//   loss = -sum_{valid i} log(max(prob[i, label_i], FLT_MIN)) / normalizer
//   dx   = loss_weight / normalizer * (prob - onehot(label)), 0 at ignored positions
// Positions whose label equals loss_param.ignore_label are skipped. normalizer follows
// loss_param.normalization: FULL = outer * inner, VALID = non-ignored count (default),
// BATCH_SIZE = outer, NONE = 1; the legacy loss_param.normalize maps true to VALID and false to
// BATCH_SIZE. Labels get no gradient.
#pragma once

#include "layers/loss_layer.h"

namespace crema {

template <typename Dtype>
class SoftmaxWithLossLayer : public SoftmaxLossLayer<Dtype, prim::SoftmaxLossDesc> {
 public:
  using typename Layer<Dtype>::Tensors;
  using SoftmaxLossLayer<Dtype, prim::SoftmaxLossDesc>::SoftmaxLossLayer;

  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override {
    return {"SoftmaxWithLoss", exactly(2), between(1, 2)};
  }
};

}  // namespace crema
