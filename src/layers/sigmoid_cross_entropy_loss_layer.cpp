// SigmoidCrossEntropyLoss layer: loss parameters, the shape check and the fused primitives.
#include "layers/sigmoid_cross_entropy_loss_layer.h"

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const LossParameter& p = this->param_.loss_param();
  desc_.has_ignore_label = p.has_ignore_label();
  desc_.ignore_label = p.ignore_label();
  desc_.normalization = loss_normalization(p, LossParameter::BATCH_SIZE);
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.count() != bottom[1]->count() || x.count() == 0)
    this->error(
        "the scores and the targets must have the same non-zero count, but bottom 0 "
        "is (",
        x.shape_string(), ") and bottom 1 is (", bottom[1]->shape_string(), ")");
  this->shape_rows(bottom, top, &desc_);
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom,
                                                  const Tensors& top) {
  prim::sigmoid_cross_entropy_loss_fwd(h, desc_, bottom[0]->data(), bottom[1]->data(),
                                       top[0]->mutable_data());
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                                   const std::vector<bool>& propagate_down,
                                                   const Tensors& bottom) {
  if (!this->propagate_to_predictions(propagate_down, "target")) return;
  prim::sigmoid_cross_entropy_loss_bwd(h, desc_, bottom[0]->data(), bottom[1]->data(),
                                       this->top_loss_weight(0, *top[0]),
                                       bottom[0]->mutable_diff());
}

template class SigmoidCrossEntropyLossLayer<float>;
template class SigmoidCrossEntropyLossLayer<double>;

}  // namespace crema
