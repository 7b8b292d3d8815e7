// SoftmaxWithLoss layer: the label checks and the fused softmax-loss primitives.
#include "layers/softmax_with_loss_layer.h"

namespace crema {

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  const int axis = this->shape_softmax(x, this->param_.softmax_param().axis());
  const prim::SoftmaxLossDesc& loss = this->loss_;
  if (bottom[1]->count() != loss.outer * loss.inner)
    this->error("the number of labels (", bottom[1]->count(),
                ") must match the number of predictions (", loss.outer * loss.inner,
                "): for scores of shape (", x.shape_string(), ") and softmax axis ", axis,
                " the labels hold one class index in [0, ", loss.channels,
                ") per position outside that axis");
  this->shape_tops(x, top);
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  this->softmax_forward(h, *bottom[0]);
  this->naming_layer_prim([&] {
    prim::softmax_loss_fwd(h, this->loss_, this->prob_->data(), bottom[1]->data(),
                           top[0]->mutable_data());
  });
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                           const std::vector<bool>& propagate_down,
                                           const Tensors& bottom) {
  if (!this->propagate_to_predictions(propagate_down)) return;
  prim::softmax_loss_bwd(h, this->loss_, this->prob_->data(), bottom[1]->data(),
                         this->top_loss_weight(0, *top[0]), bottom[0]->mutable_diff());
}

template class SoftmaxWithLossLayer<float>;
template class SoftmaxWithLossLayer<double>;

}  // namespace crema
