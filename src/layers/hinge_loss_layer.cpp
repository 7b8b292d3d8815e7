// HingeLoss layer: the norm, the label-count check and the hinge loss primitives.
#include "layers/hinge_loss_layer.h"

#include "layers/loss_helpers.h"
#include "layers/proto_enum.h"

namespace crema {

template <typename Dtype>
void HingeLossLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  desc_.norm = from_proto<prim::HingeNorm>(*this, this->param_.hinge_loss_param().norm(),
                                           "hinge_loss_param.norm",
                                           {{HingeLossParameter::L1, prim::HingeNorm::kL1},
                                            {HingeLossParameter::L2, prim::HingeNorm::kL2}});
}

template <typename Dtype>
void HingeLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  this->check_one_label_per_sample(bottom, "scores");
  this->shape_rows(bottom, top, &desc_);
}

template <typename Dtype>
void HingeLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  this->naming_layer_prim([&] {
    prim::hinge_loss_fwd(h, desc_, bottom[0]->data(), bottom[1]->data(), top[0]->mutable_data());
  });
}

template <typename Dtype>
void HingeLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                     const std::vector<bool>& propagate_down,
                                     const Tensors& bottom) {
  if (!this->propagate_to_predictions(propagate_down)) return;
  this->naming_layer_prim([&] {
    prim::hinge_loss_bwd(h, desc_, bottom[0]->data(), bottom[1]->data(),
                         this->top_loss_weight(0, *top[0]), bottom[0]->mutable_diff());
  });
}

template class HingeLossLayer<float>;
template class HingeLossLayer<double>;

}  // namespace crema
