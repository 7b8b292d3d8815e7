// MultinomialLogisticLoss layer: the label-count check and the loss primitives.
#include "layers/multinomial_logistic_loss_layer.h"

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  this->check_one_label_per_sample(bottom, "probabilities");
  this->shape_rows(bottom, top, &this->desc_);
}

template class MultinomialLogisticLossLayer<float>;
template class MultinomialLogisticLossLayer<double>;

}  // namespace crema
