// Deconvolution layer: parameters, output-size rule and the swapped conv primitive calls.
#include "layers/deconvolution_layer.h"

#include "core/filler.h"
#include "core/precision.h"
#include "layers/conv_geometry.h"
#include "primitives/blas.h"

namespace crema {

template <typename Dtype>
void DeconvolutionLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  (void)top;
  const ConvolutionParameter& p = this->param_.convolution_param();
  channel_axis_ = bottom[0]->canonical_axis(p.axis());
  const int spatial_axes = bottom[0]->num_axes() - channel_axis_ - 1;
  if (spatial_axes != 2)
    this->error("only 2-d deconvolution is supported, but input (", bottom[0]->shape_string(),
                ") with axis ", channel_axis_, " has ", spatial_axes, " spatial axes");
  const ConvGeometry g = read_conv_geometry(*this, p);
  const int64_t channels = bottom[0]->shape(channel_axis_);
  const ConvChannels ch = read_conv_channels(*this, p, channels);
  num_output_ = ch.num_output;
  conv_ = g.conv_desc(ch.groups);
  conv_.math = layer_forward_math(this->param(), this->device());
  conv_bwd_ = conv_;
  conv_bwd_.math = layer_backward_math(this->param(), this->device());

  filter_.dtype = dtype_of<Dtype>();
  filter_.k = int(channels);
  filter_.c = num_output_ / conv_.groups;
  filter_.r = g.kernel_h;
  filter_.s = g.kernel_w;
  bias_term_ = p.bias_term();
  try {
    this->blobs_.clear();
    this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(
        std::vector<int64_t>{filter_.k, filter_.c, filter_.r, filter_.s}, this->device_));
    fill_tensor(p.weight_filler(), this->blobs_[0].get());
    if (bias_term_) {
      this->blobs_.push_back(
          std::make_shared<Tensor<Dtype>>(std::vector<int64_t>{num_output_}, this->device_));
      fill_tensor(p.bias_filler(), this->blobs_[1].get());
    }
  } catch (const Error& e) {
    this->error(e.what());
  }
}

template <typename Dtype>
void DeconvolutionLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  for (size_t i = 1; i < bottom.size(); ++i)
    if (bottom[i]->shape() != x.shape())
      this->error("all bottoms must have the same shape: bottom 0 is (", x.shape_string(),
                  ") but bottom ", i, " is (", bottom[i]->shape_string(), ")");
  if (x.num_axes() != channel_axis_ + 3)
    this->error("input (", x.shape_string(), ") must keep ", channel_axis_ + 3, " axes");
  if (x.shape(channel_axis_) != filter_.k)
    this->error("input has ", x.shape(channel_axis_), " channels but the weights expect ",
                filter_.k);
  const int64_t n = x.count(0, channel_axis_);
  const int64_t in_h = x.shape(channel_axis_ + 1), in_w = x.shape(channel_axis_ + 2);
  // The inverse of the convolution output rule; computed in 64 bits from untrusted sizes.
  const int64_t out_h = int64_t(conv_.stride_h) * (in_h - 1) +
                        int64_t(conv_.dilation_h) * (filter_.r - 1) + 1 - 2 * int64_t(conv_.pad_h);
  const int64_t out_w = int64_t(conv_.stride_w) * (in_w - 1) +
                        int64_t(conv_.dilation_w) * (filter_.s - 1) + 1 - 2 * int64_t(conv_.pad_w);
  if (out_h < 1 || out_w < 1)
    this->error("output would be ", out_h, "x", out_w, " for input ", in_h, "x", in_w, ": pad ",
                conv_.pad_h, "x", conv_.pad_w, " is too large");
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + channel_axis_);
  shape.insert(shape.end(), {num_output_, out_h, out_w});
  try {
    for (Tensor<Dtype>* t : top) t->reshape(shape);
  } catch (const Error& e) {
    this->error(e.what());
  }
  top_desc_ =
      prim::TensorDesc::nchw(dtype_of<Dtype>(), int(n), num_output_, int(out_h), int(out_w));
  bottom_desc_ = prim::TensorDesc::nchw(dtype_of<Dtype>(), int(n), filter_.k, int(in_h), int(in_w));
  try {
    prim::conv_check(conv_, top_desc_, filter_, bottom_desc_);
  } catch (const prim::PrimError& e) {
    this->error(e.what());
  }
}

template <typename Dtype>
void DeconvolutionLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const Dtype* w = this->blobs_[0]->data();
  for (size_t i = 0; i < bottom.size(); ++i) {
    Dtype* y = top[i]->mutable_data();
    prim::conv_bwd_data(h, conv_, prim::ConvAlgo::kAuto, filter_, w, bottom_desc_,
                        bottom[i]->data(), top_desc_, y, prim::Blend{1, 0});
    if (bias_term_) prim::bias_add(h, top_desc_, y, this->blobs_[1]->data());
  }
}

template <typename Dtype>
void DeconvolutionLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                         const std::vector<bool>& propagate_down,
                                         const Tensors& bottom) {
  const prim::Blend accumulate{1, 1};
  for (size_t i = 0; i < top.size(); ++i) {
    const Dtype* dy = top[i]->diff();
    if (bias_term_ && this->param_propagate_down(1))
      prim::conv_bwd_bias(h, top_desc_, dy, this->blobs_[1]->mutable_diff(), accumulate);
    // The convolution's input is our top (its gradient dy here) and its output our bottom.
    if (this->param_propagate_down(0))
      prim::conv_bwd_filter(h, conv_bwd_, prim::ConvAlgo::kAuto, top_desc_, dy, bottom_desc_,
                            bottom[i]->data(), filter_, this->blobs_[0]->mutable_diff(),
                            accumulate);
    if (propagate_down[i])
      prim::conv_fwd(h, conv_bwd_, prim::ConvAlgo::kAuto, top_desc_, dy, filter_,
                     this->blobs_[0]->data(), bottom_desc_, bottom[i]->mutable_diff(),
                     prim::Blend{1, 0});
  }
}

template class DeconvolutionLayer<float>;
template class DeconvolutionLayer<double>;

}  // namespace crema
