// Bias layer: bias_param, the broadcast view shared with Scale, and the scale_bias primitives.
#include "layers/bias_layer.h"

#include "core/filler.h"

namespace crema {

std::string broadcast_param_shape(const std::vector<int64_t>& x_shape, int axis, int num_axes,
                                  std::vector<int64_t>* shape) {
  const int rank = int(x_shape.size());
  if (num_axes < -1) return "num_axes must be -1 or more, got " + std::to_string(num_axes);
  const int end = num_axes == -1 ? rank : axis + num_axes;
  if (end > rank)
    return "axis " + std::to_string(axis) + " with num_axes " + std::to_string(num_axes) +
           " reaches past the input's " + std::to_string(rank) + " axes";
  shape->assign(x_shape.begin() + axis, x_shape.begin() + end);
  return "";
}

std::string broadcast_view(const std::vector<int64_t>& x_shape, int axis,
                           const std::vector<int64_t>& param_shape, prim::ScaleBiasDesc* view) {
  const int rank = int(x_shape.size()), k = int(param_shape.size());
  if (k == 0) axis = 0;
  if (axis + k > rank)
    return "a parameter of " + std::to_string(k) + " axes from axis " + std::to_string(axis) +
           " does not fit an input of " + std::to_string(rank) + " axes";
  auto product = [&](int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; ++i) p *= x_shape[size_t(i)];
    return p;
  };
  for (int i = 0; i < k; ++i)
    if (param_shape[size_t(i)] != x_shape[size_t(axis + i)])
      return "dimension " + std::to_string(i) + " of the parameter is " +
             std::to_string(param_shape[size_t(i)]) + " but input axis " +
             std::to_string(axis + i) + " is " + std::to_string(x_shape[size_t(axis + i)]);
  view->outer = product(0, axis);
  view->channels = product(axis, axis + k);
  view->inner = product(axis + k, rank);
  return "";
}

template <typename Dtype>
void BiasLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const BiasParameter& p = this->param_.bias_param();
  const Tensor<Dtype>& x = *bottom[0];
  this->naming_layer([&] { axis_ = x.canonical_axis(p.axis()); });
  this->blobs_.clear();
  if (bottom.size() > 1) return;  // the bias is bottom[1]
  std::vector<int64_t> shape;
  const std::string bad = broadcast_param_shape(x.shape(), axis_, p.num_axes(), &shape);
  if (!bad.empty()) this->error(bad);
  this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(shape, this->device_));
  this->naming_layer([&] {
    fill_tensor(p.filler(), this->blobs_[0].get());  // FillerParameter's default: constant 0
  });
}

template <typename Dtype>
void BiasLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& b = bottom.size() > 1 ? *bottom[1] : *this->blobs_[0];
  view_.dtype = dtype_of<Dtype>();
  const std::string bad = broadcast_view(bottom[0]->shape(), axis_, b.shape(), &view_);
  if (!bad.empty())
    this->error("bias (", b.shape_string(), ") does not broadcast over input (",
                bottom[0]->shape_string(), ") at axis ", axis_, ": ", bad);
  if (top[0] != bottom[0]) top[0]->reshape_like(*bottom[0]);
}

template <typename Dtype>
void BiasLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& b = bottom.size() > 1 ? *bottom[1] : *this->blobs_[0];
  prim::scale_bias_fwd(h, view_, bottom[0]->data(), nullptr, b.data(), top[0]->mutable_data());
}

template <typename Dtype>
void BiasLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                const std::vector<bool>& propagate_down, const Tensors& bottom) {
  const Dtype* dy = top[0]->diff();
  // A learned bias accumulates its gradient; a bottom's gradient is overwritten.
  if (bottom.size() > 1 ? propagate_down[1] : this->param_propagate_down(0)) {
    Dtype* db = bottom.size() > 1 ? bottom[1]->mutable_diff() : this->blobs_[0]->mutable_diff();
    prim::scale_bias_bwd_bias(h, view_, dy, db, prim::Blend{1, bottom.size() > 1 ? 0.0 : 1.0});
  }
  if (propagate_down[0] && bottom[0] != top[0])
    prim::memcpy_async(h, bottom[0]->mutable_diff(), bottom[0]->device(), dy, top[0]->device(),
                       top[0]->bytes());
}

template class BiasLayer<float>;
template class BiasLayer<double>;

}  // namespace crema
