// HingeLoss layer: the norm, the label-count check and the hinge loss primitives.
#include "layers/hinge_loss_layer.h"

#include "layers/loss_helpers.h"
#include "layers/proto_enum.h"

namespace crema {

template <typename Dtype>
void HingeLossLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  this->desc_.norm = from_proto<prim::HingeNorm>(*this, this->param_.hinge_loss_param().norm(),
                                                 "hinge_loss_param.norm",
                                                 {{HingeLossParameter::L1, prim::HingeNorm::kL1},
                                                  {HingeLossParameter::L2, prim::HingeNorm::kL2}});
}

template <typename Dtype>
void HingeLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  this->check_one_label_per_sample(bottom, "scores");
  this->shape_rows(bottom, top, &this->desc_);
}

template class HingeLossLayer<float>;
template class HingeLossLayer<double>;

}  // namespace crema
