// Softmax layer: the (outer, channels, inner) view and the softmax primitive calls.
#include "layers/softmax_layer.h"

namespace crema {

template <typename Dtype>
void SoftmaxLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  const int axis = x.canonical_axis(this->param_.softmax_param().axis());
  desc_.dtype = dtype_of<Dtype>();
  desc_.outer = x.count(0, axis);
  desc_.channels = x.shape(axis);
  desc_.inner = x.count(axis + 1);
  if (top[0] != bottom[0]) top[0]->reshape_like(x);
}

template <typename Dtype>
void SoftmaxLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::softmax_fwd(h, desc_, bottom[0]->data(), top[0]->mutable_data(), prim::Blend{1, 0});
}

template <typename Dtype>
void SoftmaxLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                   const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  prim::softmax_bwd(h, desc_, top[0]->data(), top[0]->diff(), bottom[0]->mutable_diff(),
                    prim::Blend{1, 0});
}

template class SoftmaxLayer<float>;
template class SoftmaxLayer<double>;

}  // namespace crema
