// Convolution layer: the calls into the conv primitives (setup and shapes: base_conv_layer.cpp).
#include "layers/convolution_layer.h"

#include <string>

#include "layers/batch_norm_layer.h"
#include "primitives/activation.h"

namespace crema {

template <typename Dtype>
bool ConvolutionLayer<Dtype>::absorb(Layer<Dtype>& next, bool backward) {
  const std::string type = next.type();
  if (this->param_.top_size() != 1) return false;
  if (type == "ReLU") {
    if (relu_ || next.param().relu_param().negative_slope() != 0) return false;
    relu_ = true;
    return true;
  }
  if (relu_) return false;  // a normalization after the ReLU does not fold
  if (type == "Scale") return bn_ && bn_->absorb(next, backward);
  auto* bn = dynamic_cast<BatchNormLayer<Dtype>*>(&next);
  if (type != "BatchNorm" || !bn || bn_ || backward || !bn->use_global_stats() ||
      this->channel_axis_ != 1)
    return false;
  bn_ = bn;
  const std::vector<int64_t> k{this->num_output_};
  folded_w_ = std::make_unique<Tensor<Dtype>>(this->blobs_[0]->shape(), this->device_);
  folded_b_ = std::make_unique<Tensor<Dtype>>(k, this->device_);
  return true;
}

template <typename Dtype>
void ConvolutionLayer<Dtype>::release_absorbed() {
  if (bn_) bn_->release_absorbed();
  bn_ = nullptr;
  folded_w_.reset();
  folded_b_.reset();
  relu_ = false;
}

template <typename Dtype>
void ConvolutionLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::ConvEpilogue ep;
  const Dtype* w = this->blobs_[0]->data();
  const Dtype* b = this->bias_term_ ? this->blobs_[1]->data() : nullptr;
  if (bn_) {
    bn_->fold_into(h, this->blobs_[0]->count() / this->num_output_, w, folded_w_->mutable_data(), b,
                   folded_b_->mutable_data());
    w = folded_w_->data();
    b = folded_b_->data();
  }
  ep.bias = b;
  ep.relu = relu_;
  for (size_t i = 0; i < bottom.size(); ++i)
    prim::conv_fwd(h, this->conv_, prim::ConvAlgo::kAuto, this->x_desc_, bottom[i]->raw_data(),
                   this->filter_, w, this->y_desc_, top[i]->mutable_raw_data(), prim::Blend{1, 0},
                   ep);
}

template <typename Dtype>
void ConvolutionLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                       const std::vector<bool>& propagate_down,
                                       const Tensors& bottom) {
  if (bn_) this->error("backward with a folded BatchNorm: the net was declared forward-only");
  const prim::Blend accumulate{1, 1};
  const bool beside = this->filter_grad_beside();
  for (size_t i = 0; i < top.size(); ++i) {
    if (relu_) {  // the absorbed ReLU's backward, in place: y > 0 where the sum was
      const prim::TensorDesc d = flat_desc(top[i]->storage(), top[i]->count());
      prim::act_bwd(h, prim::ActDesc{}, d, nullptr, top[i]->raw_diff(), d, top[i]->raw_data(),
                    top[i]->mutable_raw_diff());
    }
    const void* dy = top[i]->raw_diff();
    if (beside) h.fork();
    if (this->param_propagate_down(0))
      prim::conv_bwd_filter(beside ? h.side() : h, this->conv_bwd_, prim::ConvAlgo::kAuto,
                            this->x_desc_, bottom[i]->raw_data(), this->y_desc_, dy, this->filter_,
                            this->blobs_[0]->mutable_diff(), accumulate);
    if (this->bias_term_ && this->param_propagate_down(1))
      prim::conv_bwd_bias(h, this->y_desc_, dy, this->blobs_[1]->mutable_diff(), accumulate);
    if (propagate_down[i])
      prim::conv_bwd_data(h, this->conv_bwd_, prim::ConvAlgo::kAuto, this->filter_,
                          this->blobs_[0]->data(), this->y_desc_, dy, this->x_desc_,
                          bottom[i]->mutable_raw_diff(), prim::Blend{1, 0});
  }
  if (beside) h.join();
}

template class ConvolutionLayer<float>;
template class ConvolutionLayer<double>;

}  // namespace crema
