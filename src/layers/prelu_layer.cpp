// PReLU layer: prelu_param, the slope blob and the prelu primitives.
#include "layers/prelu_layer.h"

#include "core/filler.h"

namespace crema {

template <typename Dtype>
void PreluLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const PReLUParameter& p = this->param_.prelu_param();
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() < 2)
    this->error("input must have at least 2 axes (num, channels, ...), got (", x.shape_string(),
                ")");
  prelu_.channel_shared = p.channel_shared();
  channels_ = x.shape(1);
  this->blobs_.clear();
  this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(
      prelu_.channel_shared ? std::vector<int64_t>{} : std::vector<int64_t>{channels_},
      this->device_));
  FillerParameter quarter;
  quarter.set_type("constant");
  quarter.set_value(0.25f);
  this->naming_layer(
      [&] { fill_tensor(p.has_filler() ? p.filler() : quarter, this->blobs_[0].get()); });
  x_copy_ = std::make_unique<Tensor<Dtype>>(this->device_);
}

template <typename Dtype>
void PreluLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() < 2 || x.shape(1) != channels_)
    this->error("input (", x.shape_string(), ") must have ", channels_,
                " channels on axis 1, as at setup");
  const int64_t n = x.shape(0), inner = x.count(2);
  desc_ = prim::TensorDesc::nchw(dtype_of<Dtype>(), desc_size(n, "the batch"), int(channels_), 1,
                                 desc_size(inner, "the values per channel of an image"));
  in_place_ = top[0] == bottom[0];
  if (!in_place_) {
    top[0]->reshape_like(x);
  } else {
    x_copy_->reshape_like(x);
  }
}

template <typename Dtype>
void PreluLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  // In place, the output overwrites the input both gradients need: keep a copy.
  if (in_place_)
    prim::memcpy_async(h, x_copy_->mutable_data(), x_copy_->device(), bottom[0]->data(),
                       bottom[0]->device(), bottom[0]->bytes());
  prim::prelu_fwd(h, prelu_, desc_, bottom[0]->data(), this->blobs_[0]->data(), desc_,
                  top[0]->mutable_data());
}

template <typename Dtype>
void PreluLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                 const std::vector<bool>& propagate_down, const Tensors& bottom) {
  const bool slope = this->param_propagate_down(0);
  if (!slope && !propagate_down[0]) return;
  const Dtype* x = in_place_ ? x_copy_->data() : bottom[0]->data();
  // The slope gradient accumulates (beta 1); the data gradient is overwritten. The primitive
  // sums the slope gradient before writing dx, so dx may be dy (in place).
  prim::prelu_bwd(h, prelu_, desc_, x, top[0]->diff(), this->blobs_[0]->data(),
                  propagate_down[0] ? bottom[0]->mutable_diff() : nullptr,
                  slope ? this->blobs_[0]->mutable_diff() : nullptr, prim::Blend{1, 0},
                  prim::Blend{1, 1});
}

template class PreluLayer<float>;
template class PreluLayer<double>;

}  // namespace crema
