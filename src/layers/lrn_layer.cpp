// LRN layer: lrn_param validation, shape passthrough and the lrn_fwd / lrn_bwd calls.
#include "layers/lrn_layer.h"

namespace crema {

template <typename Dtype>
void LrnLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  const LRNParameter& p = this->param_.lrn_param();
  // An even window has no centre channel or pixel; Caffe refuses it too.
  if (p.local_size() % 2 == 0) this->error("local_size must be odd, got ", p.local_size());
  if (p.local_size() > 1023) this->error("local_size ", p.local_size(), " is too large");
  if (top[0] == bottom[0])
    this->error("cannot run in place: backward needs both the input and the output");
  lrn_.local_size = int(p.local_size());
  lrn_.alpha = p.alpha();
  lrn_.beta = p.beta();
  if (p.norm_region() == LRNParameter::WITHIN_CHANNEL) {
    lrn_.mode = prim::LrnMode::kWithinChannel;
    // Caffe builds this mode from a Power layer with shift 1 and never reads k.
    lrn_.k = 1.0;
  } else {
    lrn_.mode = prim::LrnMode::kAcrossChannels;
    lrn_.k = p.k();
  }
}

template <typename Dtype>
void LrnLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() != 4)
    this->error("input must have 4 axes (num, channels, height, width), got (", x.shape_string(),
                ")");
  desc_ = x.desc();
  top[0]->reshape_like(x);
}

template <typename Dtype>
void LrnLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::lrn_fwd(h, lrn_, desc_, bottom[0]->raw_data(), desc_, top[0]->mutable_raw_data(),
                prim::Blend{1, 0});
}

template <typename Dtype>
void LrnLayer<Dtype>::backward(Handle& h, const Tensors& top,
                               const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  prim::lrn_bwd(h, lrn_, desc_, top[0]->raw_data(), top[0]->raw_diff(), desc_,
                bottom[0]->raw_data(), bottom[0]->mutable_raw_diff(), prim::Blend{1, 0});
}

template class LrnLayer<float>;
template class LrnLayer<double>;

}  // namespace crema
