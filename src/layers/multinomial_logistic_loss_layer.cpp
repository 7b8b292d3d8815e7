// MultinomialLogisticLoss layer: the label-count check and the loss primitives.
#include "layers/multinomial_logistic_loss_layer.h"

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  this->check_one_label_per_sample(bottom, "probabilities");
  this->shape_rows(bottom, top, &desc_);
}

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom,
                                                  const Tensors& top) {
  this->naming_layer_prim([&] {
    prim::multinomial_logistic_loss_fwd(h, desc_, bottom[0]->data(), bottom[1]->data(),
                                        top[0]->mutable_data());
  });
}

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                                   const std::vector<bool>& propagate_down,
                                                   const Tensors& bottom) {
  if (!this->propagate_to_predictions(propagate_down)) return;
  this->naming_layer_prim([&] {
    prim::multinomial_logistic_loss_bwd(h, desc_, bottom[0]->data(), bottom[1]->data(),
                                        this->top_loss_weight(0, *top[0]),
                                        bottom[0]->mutable_diff());
  });
}

template class MultinomialLogisticLossLayer<float>;
template class MultinomialLogisticLossLayer<double>;

}  // namespace crema
