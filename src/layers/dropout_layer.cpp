// Dropout layer: the dropout primitives in TRAIN, a (scaled) copy in TEST.
#include "layers/dropout_layer.h"

#include "primitives/blas.h"

namespace crema {
namespace {

// scale_train is not in every Caffe schema: read it when the generated message has it. A
// template, so that a missing member is a failed requirement rather than a compile error.
template <typename Param>
bool scale_train_of(const Param& p) {
  if constexpr (requires { p.scale_train(); }) {
    return p.scale_train();
  } else {
    return true;
  }
}

}  // namespace

template <typename Dtype>
void DropoutLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const DropoutParameter& p = this->param_.dropout_param();
  desc_.dtype = dtype_of<Dtype>();
  desc_.ratio = p.dropout_ratio();
  // ratio 1 would keep nothing and scale by infinity.
  if (!(desc_.ratio >= 0.0 && desc_.ratio < 1.0))
    this->error("dropout_ratio must be in [0, 1), got ", desc_.ratio);
  desc_.scale_train = scale_train_of(p);
}

template <typename Dtype>
void DropoutLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  if (top[0] != bottom[0]) top[0]->reshape_like(*bottom[0]);
  desc_.count = bottom[0]->count();
  // The mask only grows, like tensor memory, so alternating batch sizes do not reallocate.
  if (this->phase() == TRAIN && mask_.bytes() < size_t(desc_.count))
    mask_ = prim::DeviceBuffer(this->device_, size_t(desc_.count));
}

template <typename Dtype>
void DropoutLayer<Dtype>::scaled_copy(Handle& h, double scale, const Dtype* x, Dtype* y) const {
  if (x == y) {
    if (scale != 1.0) prim::scal(h, desc_.dtype, desc_.count, scale, y);
  } else {
    prim::axpby(h, desc_.dtype, desc_.count, scale, x, 0.0, y);
  }
}

template <typename Dtype>
void DropoutLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  if (this->phase() == TRAIN) {
    prim::dropout_fwd(h, desc_, bottom[0]->data(), top[0]->mutable_data(),
                      static_cast<uint8_t*>(mask_.get()));
  } else {
    scaled_copy(h, desc_.scale_train ? 1.0 : 1.0 - desc_.ratio, bottom[0]->data(),
                top[0]->mutable_data());
  }
}

template <typename Dtype>
void DropoutLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                   const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  if (this->phase() == TRAIN) {
    prim::dropout_bwd(h, desc_, top[0]->diff(), static_cast<const uint8_t*>(mask_.get()),
                      bottom[0]->mutable_diff());
  } else {
    scaled_copy(h, desc_.scale_train ? 1.0 : 1.0 - desc_.ratio, top[0]->diff(),
                bottom[0]->mutable_diff());
  }
}

template class DropoutLayer<float>;
template class DropoutLayer<double>;

}  // namespace crema
