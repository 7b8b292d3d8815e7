// HingeLoss layer: the norm, the label-count check and the hinge loss primitives.
#include "layers/hinge_loss_layer.h"

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void HingeLossLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  desc_.dtype = dtype_of<Dtype>();
  switch (this->param_.hinge_loss_param().norm()) {
    case HingeLossParameter::L1:
      desc_.norm = prim::HingeNorm::kL1;
      break;
    case HingeLossParameter::L2:
      desc_.norm = prim::HingeNorm::kL2;
      break;
    default:
      this->error("unknown hinge_loss_param.norm ", int(this->param_.hinge_loss_param().norm()));
  }
}

template <typename Dtype>
void HingeLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.count() == 0 || bottom[1]->count() != x.num())
    this->error("expected one label per sample: the scores are (", x.shape_string(),
                ") but the labels are (", bottom[1]->shape_string(), ")");
  desc_.num = x.num();
  desc_.dim = x.count() / x.num();
  top[0]->reshape({});
}

template <typename Dtype>
void HingeLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  try {
    prim::hinge_loss_fwd(h, desc_, bottom[0]->data(), bottom[1]->data(), top[0]->mutable_data());
  } catch (const prim::PrimError& e) {
    this->error(e.what());  // a bad label is user data
  }
}

template <typename Dtype>
void HingeLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                     const std::vector<bool>& propagate_down,
                                     const Tensors& bottom) {
  if (propagate_down[1]) this->error("cannot backpropagate to the label input");
  if (!propagate_down[0]) return;
  try {
    prim::hinge_loss_bwd(h, desc_, bottom[0]->data(), bottom[1]->data(),
                         this->top_loss_weight(0, *top[0]), bottom[0]->mutable_diff());
  } catch (const prim::PrimError& e) {
    this->error(e.what());
  }
}

template class HingeLossLayer<float>;
template class HingeLossLayer<double>;

}  // namespace crema
