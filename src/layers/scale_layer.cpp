// Scale layer: scale_param, the learned scale and bias blobs, and the scale_bias primitives.
#include "layers/scale_layer.h"

#include "core/filler.h"
#include "layers/bias_layer.h"

namespace crema {

template <typename Dtype>
void ScaleLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const ScaleParameter& p = this->param_.scale_param();
  const Tensor<Dtype>& x = *bottom[0];
  this->naming_layer([&] { axis_ = x.canonical_axis(p.axis()); });
  this->blobs_.clear();
  learned_ = bottom.size() == 1;
  std::vector<int64_t> shape;
  if (bottom.size() > 1) {
    shape = bottom[1]->shape();
  } else {
    const std::string bad = broadcast_param_shape(x.shape(), axis_, p.num_axes(), &shape);
    if (!bad.empty()) this->error(bad);
  }
  this->naming_layer([&] {
    if (bottom.size() == 1) {
      this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(shape, this->device_));
      FillerParameter ones;
      ones.set_type("constant");
      ones.set_value(1);
      fill_tensor(p.has_filler() ? p.filler() : ones, this->blobs_.back().get());
    }
    bias_index_ = -1;
    if (p.bias_term()) {
      bias_index_ = int(this->blobs_.size());
      this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(shape, this->device_));
      fill_tensor(p.bias_filler(), this->blobs_.back().get());
    }
  });
  x_copy_ = std::make_unique<Tensor<Dtype>>(this->device_);
}

template <typename Dtype>
void ScaleLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& s = scale(bottom);
  view_.dtype = bottom[0]->storage();
  const std::string bad = broadcast_view(bottom[0]->shape(), axis_, s.shape(), &view_);
  if (!bad.empty())
    this->error("scale (", s.shape_string(), ") does not broadcast over input (",
                bottom[0]->shape_string(), ") at axis ", axis_, ": ", bad);
  if (bias_index_ >= 0 && this->blobs_[bias_index_]->count() != view_.channels)
    this->error("bias has ", this->blobs_[bias_index_]->count(), " values but the scale has ",
                view_.channels);
  const Tensor<Dtype>& x = *bottom[0];
  per_channel_4d_ = x.num_axes() == 4 && learned_per_channel(x.shape(1));
  if (x.channels_last()) {
    if (!per_channel_4d_) this->error("channels-last input, but not one learned value a channel");
    view_.outer *= view_.inner;  // N*H*W rows of C values
    view_.inner = 1;
  }
  in_place_ = top[0] == bottom[0];
  if (!in_place_) {
    top[0]->reshape_like(x);
  } else if (!kept_input_) {
    x_copy_->set_storage(x.storage());
    x_copy_->set_channels_last(x.channels_last());
    x_copy_->reshape_like(x);
  }
}

template <typename Dtype>
auto ScaleLayer<Dtype>::bottom_data_use(int i) const -> DataUse {
  return i == 0 && in_place_ ? DataUse::kForward : DataUse::kBackward;
}

template <typename Dtype>
bool ScaleLayer<Dtype>::use_kept_bottom(int j, const Tensor<Dtype>* kept) {
  if (j != 0 || kept == nullptr) return false;
  kept_input_ = kept;
  return true;
}

template <typename Dtype>
void ScaleLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  // In place, the output overwrites the input the scale gradient needs: keep a copy (unless the
  // layer before keeps one).
  if (in_place_ && !kept_input_)
    prim::memcpy_async(h, x_copy_->mutable_raw_data(), x_copy_->device(), bottom[0]->raw_data(),
                       bottom[0]->device(), bottom[0]->bytes());
  const Dtype* bias = bias_index_ >= 0 ? this->blobs_[bias_index_]->data() : nullptr;
  prim::scale_bias_fwd(h, view_, bottom[0]->raw_data(), scale(bottom).data(), bias,
                       top[0]->mutable_raw_data());
}

template <typename Dtype>
void ScaleLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                 const std::vector<bool>& propagate_down, const Tensors& bottom) {
  const void* dy = top[0]->raw_diff();
  const void* x = !in_place_    ? bottom[0]->raw_data()
                  : kept_input_ ? kept_input_->raw_data()
                                : x_copy_->raw_data();
  // Parameter gradients first: in place, dx overwrites dy. Learned parameters accumulate
  // (beta 1); a bottom's gradient is overwritten.
  const bool scale_is_bottom = bottom.size() > 1;
  if (scale_is_bottom ? propagate_down[1] : this->param_propagate_down(0)) {
    Dtype* ds = scale_is_bottom ? bottom[1]->mutable_diff() : this->blobs_[0]->mutable_diff();
    prim::scale_bias_bwd_scale(h, view_, dy, x, ds, prim::Blend{1, scale_is_bottom ? 0.0 : 1.0});
  }
  if (bias_index_ >= 0 && this->param_propagate_down(bias_index_))
    prim::scale_bias_bwd_bias(h, view_, dy, this->blobs_[bias_index_]->mutable_diff(),
                              prim::Blend{1, 1});
  if (propagate_down[0])
    prim::scale_bias_bwd_data(h, view_, dy, scale(bottom).data(), bottom[0]->mutable_raw_diff());
}

template class ScaleLayer<float>;
template class ScaleLayer<double>;

}  // namespace crema
