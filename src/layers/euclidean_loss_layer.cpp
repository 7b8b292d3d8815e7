// EuclideanLoss layer: the shape check and the euclidean loss primitives.
#include "layers/euclidean_loss_layer.h"

#include "layers/loss_helpers.h"

namespace crema {

template <typename Dtype>
void EuclideanLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  this->check_same_count(bottom, "bottoms");
  this->shape_rows(bottom, top, &desc_);
}

template <typename Dtype>
void EuclideanLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::euclidean_loss_fwd(h, desc_, bottom[0]->data(), bottom[1]->data(), top[0]->mutable_data());
}

template <typename Dtype>
void EuclideanLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                         const std::vector<bool>& propagate_down,
                                         const Tensors& bottom) {
  Dtype* da = propagate_down[0] ? bottom[0]->mutable_diff() : nullptr;
  Dtype* db = propagate_down[1] ? bottom[1]->mutable_diff() : nullptr;
  prim::euclidean_loss_bwd(h, desc_, bottom[0]->data(), bottom[1]->data(),
                           this->top_loss_weight(0, *top[0]), da, db);
}

template class EuclideanLossLayer<float>;
template class EuclideanLossLayer<double>;

}  // namespace crema
