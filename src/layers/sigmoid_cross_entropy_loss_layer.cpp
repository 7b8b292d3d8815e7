// SigmoidCrossEntropyLoss layer: loss parameters, the shape check and the fused primitives.
#include "layers/sigmoid_cross_entropy_loss_layer.h"

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const LossParameter& p = this->param_.loss_param();
  this->desc_.has_ignore_label = p.has_ignore_label();
  this->desc_.ignore_label = p.ignore_label();
  this->desc_.normalization = loss_normalization(p, LossParameter::BATCH_SIZE);
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.count() != bottom[1]->count() || x.count() == 0)
    this->error(
        "the scores and the targets must have the same non-zero count, but bottom 0 "
        "is (",
        x.shape_string(), ") and bottom 1 is (", bottom[1]->shape_string(), ")");
  this->shape_rows(bottom, top, &this->desc_);
}

template class SigmoidCrossEntropyLossLayer<float>;
template class SigmoidCrossEntropyLossLayer<double>;

}  // namespace crema
