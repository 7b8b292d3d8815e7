// Convolution layer: parameter parsing, shape inference and the calls into the conv primitives.
#include "layers/convolution_layer.h"

#include "core/filler.h"
#include "core/precision.h"
#include "layers/conv_geometry.h"

namespace crema {

template <typename Dtype>
void ConvolutionLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  (void)top;
  const ConvolutionParameter& p = this->param_.convolution_param();

  channel_axis_ = bottom[0]->canonical_axis(p.axis());
  const int spatial_axes = bottom[0]->num_axes() - channel_axis_ - 1;
  if (spatial_axes != 2)
    this->error("only 2-d convolution is supported, but input (", bottom[0]->shape_string(),
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
  filter_.k = num_output_;
  filter_.c = int(channels / conv_.groups);
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
void ConvolutionLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  for (size_t i = 1; i < bottom.size(); ++i)
    if (bottom[i]->shape() != x.shape())
      this->error("all bottoms must have the same shape: bottom 0 is (", x.shape_string(),
                  ") but bottom ", i, " is (", bottom[i]->shape_string(), ")");
  if (x.num_axes() != channel_axis_ + 3)
    this->error("input (", x.shape_string(), ") must keep ", channel_axis_ + 3, " axes");
  if (x.shape(channel_axis_) != int64_t(filter_.c) * conv_.groups)
    this->error("input has ", x.shape(channel_axis_), " channels but the weights expect ",
                int64_t(filter_.c) * conv_.groups);

  const int n = int(x.count(0, channel_axis_));
  const int c = int(x.shape(channel_axis_));
  const int in_h = int(x.shape(channel_axis_ + 1));
  const int in_w = int(x.shape(channel_axis_ + 2));
  int out_h = 0, out_w = 0;
  try {
    out_h = prim::conv_out_dim(in_h, filter_.r, conv_.pad_h, conv_.stride_h, conv_.dilation_h);
    out_w = prim::conv_out_dim(in_w, filter_.s, conv_.pad_w, conv_.stride_w, conv_.dilation_w);
  } catch (const prim::PrimError& e) {
    this->error("kernel ", filter_.r, "x", filter_.s, " (dilation ", conv_.dilation_h, "x",
                conv_.dilation_w, ") is larger than the padded input ", in_h, "x", in_w, " + pad ",
                conv_.pad_h, "x", conv_.pad_w, ": ", e.what());
  }
  x_desc_ = prim::TensorDesc::nchw(dtype_of<Dtype>(), n, c, in_h, in_w);
  y_desc_ = prim::TensorDesc::nchw(dtype_of<Dtype>(), n, num_output_, out_h, out_w);
  try {
    prim::conv_check(conv_, x_desc_, filter_, y_desc_);
  } catch (const prim::PrimError& e) {
    this->error(e.what());
  }

  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + channel_axis_);
  shape.insert(shape.end(), {num_output_, out_h, out_w});
  try {
    for (Tensor<Dtype>* t : top) t->reshape(shape);
  } catch (const Error& e) {
    this->error(e.what());
  }
}

template <typename Dtype>
void ConvolutionLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::ConvEpilogue ep;
  if (bias_term_) ep.bias = this->blobs_[1]->data();
  const Dtype* w = this->blobs_[0]->data();
  for (size_t i = 0; i < bottom.size(); ++i)
    prim::conv_fwd(h, conv_, prim::ConvAlgo::kAuto, x_desc_, bottom[i]->data(), filter_, w, y_desc_,
                   top[i]->mutable_data(), prim::Blend{1, 0}, ep);
}

template <typename Dtype>
void ConvolutionLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                       const std::vector<bool>& propagate_down,
                                       const Tensors& bottom) {
  const prim::Blend accumulate{1, 1};
  for (size_t i = 0; i < top.size(); ++i) {
    const Dtype* dy = top[i]->diff();
    if (bias_term_ && this->param_propagate_down(1))
      prim::conv_bwd_bias(h, y_desc_, dy, this->blobs_[1]->mutable_diff(), accumulate);
    if (this->param_propagate_down(0))
      prim::conv_bwd_filter(h, conv_bwd_, prim::ConvAlgo::kAuto, x_desc_, bottom[i]->data(), y_desc_,
                            dy, filter_, this->blobs_[0]->mutable_diff(), accumulate);
    if (propagate_down[i])
      prim::conv_bwd_data(h, conv_bwd_, prim::ConvAlgo::kAuto, filter_, this->blobs_[0]->data(),
                          y_desc_, dy, x_desc_, bottom[i]->mutable_diff(), prim::Blend{1, 0});
  }
}

template class ConvolutionLayer<float>;
template class ConvolutionLayer<double>;

}  // namespace crema
