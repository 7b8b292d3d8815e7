// ContrastiveLoss layer: margin and legacy form, the pair/label shape checks, the primitives.
#include "layers/contrastive_loss_layer.h"

#include <cmath>

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const ContrastiveLossParameter& p = this->param_.contrastive_loss_param();
  if (!std::isfinite(p.margin())) this->error("margin must be finite, got ", p.margin());
  desc_.margin = p.margin();
  desc_.legacy = p.legacy_version();
}

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& a = *bottom[0];
  this->check_same_count(bottom, "feature bottoms");
  if (bottom[2]->count() != a.num())
    this->error("expected one similarity label per pair: the features are (", a.shape_string(),
                ") but the labels are (", bottom[2]->shape_string(), ")");
  this->shape_rows(bottom, top, &desc_);
}

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::contrastive_loss_fwd(h, desc_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(),
                             top[0]->mutable_data());
}

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                           const std::vector<bool>& propagate_down,
                                           const Tensors& bottom) {
  if (propagate_down[2]) this->error("cannot backpropagate to the similarity label input");
  Dtype* da = propagate_down[0] ? bottom[0]->mutable_diff() : nullptr;
  Dtype* db = propagate_down[1] ? bottom[1]->mutable_diff() : nullptr;
  prim::contrastive_loss_bwd(h, desc_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(),
                             this->top_loss_weight(0, *top[0]), da, db);
}

template class ContrastiveLossLayer<float>;
template class ContrastiveLossLayer<double>;

}  // namespace crema
