// SoftmaxWithLoss layer: loss parameters, label checks and the fused softmax-loss primitives.
#include "layers/softmax_with_loss_layer.h"

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const LossParameter& p = this->param_.loss_param();
  loss_.dtype = dtype_of<Dtype>();
  loss_.has_ignore_label = p.has_ignore_label();
  loss_.ignore_label = p.ignore_label();
  loss_.normalization = loss_normalization(p, LossParameter::VALID);
  prob_ = std::make_unique<Tensor<Dtype>>(this->device_);
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  const int axis = x.canonical_axis(this->param_.softmax_param().axis());
  softmax_.dtype = dtype_of<Dtype>();
  softmax_.outer = loss_.outer = x.count(0, axis);
  softmax_.channels = loss_.channels = x.shape(axis);
  softmax_.inner = loss_.inner = x.count(axis + 1);
  if (bottom[1]->count() != loss_.outer * loss_.inner)
    this->error("the number of labels (", bottom[1]->count(),
                ") must match the number of predictions (", loss_.outer * loss_.inner,
                "): for scores of shape (", x.shape_string(), ") and softmax axis ", axis,
                " the labels hold one class index in [0, ", loss_.channels,
                ") per position outside that axis");
  reshape_softmax_loss_tops(x, *prob_, top);
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::softmax_fwd(h, softmax_, bottom[0]->data(), prob_->mutable_data(), prim::Blend{1, 0});
  this->naming_layer_prim([&] {
    prim::softmax_loss_fwd(h, loss_, prob_->data(), bottom[1]->data(), top[0]->mutable_data());
  });
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                           const std::vector<bool>& propagate_down,
                                           const Tensors& bottom) {
  if (!this->propagate_to_predictions(propagate_down)) return;
  prim::softmax_loss_bwd(h, loss_, prob_->data(), bottom[1]->data(),
                         this->top_loss_weight(0, *top[0]), bottom[0]->mutable_diff());
}

template class SoftmaxWithLossLayer<float>;
template class SoftmaxWithLossLayer<double>;

}  // namespace crema
