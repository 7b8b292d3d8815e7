// Accuracy layer: shape checks and the accuracy primitive call.
#include "layers/accuracy_layer.h"

namespace crema {

template <typename Dtype>
void AccuracyLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const AccuracyParameter& p = this->param_.accuracy_param();
  if (p.top_k() == 0) this->error("top_k must be positive");
  desc_.dtype = dtype_of<Dtype>();
  desc_.has_ignore_label = p.has_ignore_label();
  desc_.ignore_label = p.ignore_label();
}

template <typename Dtype>
void AccuracyLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const AccuracyParameter& p = this->param_.accuracy_param();
  const Tensor<Dtype>& x = *bottom[0];
  const int axis = x.canonical_axis(p.axis());
  desc_.outer = x.count(0, axis);
  desc_.channels = x.shape(axis);
  desc_.inner = x.count(axis + 1);
  if (int64_t(p.top_k()) > desc_.channels)
    this->error("top_k (", p.top_k(), ") must not exceed the number of classes (", desc_.channels,
                ")");
  desc_.top_k = int(p.top_k());
  if (bottom[1]->count() != desc_.outer * desc_.inner)
    this->error("the number of labels (", bottom[1]->count(),
                ") must match the number of predictions (", desc_.outer * desc_.inner,
                ") for scores of shape (", x.shape_string(), ") and axis ", axis);
  top[0]->reshape({});
  if (top.size() > 1) top[1]->reshape({desc_.channels});
}

template <typename Dtype>
void AccuracyLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  // Labels are user data: a bad one is a user error, reported with the layer's name.
  this->naming_layer_prim([&] {
    prim::accuracy_fwd(h, desc_, bottom[0]->data(), bottom[1]->data(), top[0]->mutable_data(),
                       top.size() > 1 ? top[1]->mutable_data() : nullptr);
  });
}

template <typename Dtype>
void AccuracyLayer<Dtype>::backward(Handle&, const Tensors&,
                                    const std::vector<bool>& propagate_down, const Tensors&) {
  for (bool down : propagate_down)
    if (down) this->error("accuracy has no gradient; it cannot be backpropagated");
}

template class AccuracyLayer<float>;
template class AccuracyLayer<double>;

}  // namespace crema
