// Convolution and Deconvolution's shared setup and shape inference.
#include "layers/base_conv_layer.h"

#include "core/precision.h"
#include "layers/conv_geometry.h"

namespace crema {

template <typename Dtype>
void BaseConvLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const ConvolutionParameter& p = this->param_.convolution_param();
  channel_axis_ = bottom[0]->canonical_axis(p.axis());
  const int spatial_axes = bottom[0]->num_axes() - channel_axis_ - 1;
  if (spatial_axes != 2)
    this->error("only 2-d ", transposed_ ? "deconvolution" : "convolution",
                " is supported, but input (", bottom[0]->shape_string(), ") with axis ",
                channel_axis_, " has ", spatial_axes, " spatial axes");

  const ConvGeometry g = read_conv_geometry(*this, p);
  const int64_t channels = bottom[0]->shape(channel_axis_);
  const ConvChannels ch = read_conv_channels(*this, p, channels);
  num_output_ = ch.num_output;
  conv_ = g.conv_desc(ch.groups);
  conv_.math = layer_forward_math(this->param(), this->device());
  conv_bwd_ = conv_;
  conv_bwd_.math = layer_backward_math(this->param(), this->device());

  // The filter of the convolution from x to y: x has num_output channels in a Deconvolution.
  filter_.dtype = dtype_of<Dtype>();
  filter_.k = transposed_ ? int(channels) : num_output_;
  filter_.c = transposed_ ? num_output_ / conv_.groups : int(channels / conv_.groups);
  filter_.r = g.kernel_h;
  filter_.s = g.kernel_w;
  bias_term_ = p.bias_term();
  // The output must be possible before the weights are allocated and filled: a Deconvolution
  // with num_output 10^8 would otherwise fill a 1.6-G-value filter before its output is refused.
  this->naming_layer([&] {
    Tensor<Dtype> probe(output_shape(*bottom[0]), this->device_);  // sizes only, no memory
  });
  this->make_weight_and_bias({filter_.k, filter_.c, filter_.r, filter_.s}, p.weight_filler(),
                             bias_term_, num_output_, p.bias_filler());
}

template <typename Dtype>
std::vector<int64_t> BaseConvLayer<Dtype>::output_shape(const Tensor<Dtype>& x) const {
  if (x.num_axes() != channel_axis_ + 3)
    this->error("input (", x.shape_string(), ") must keep ", channel_axis_ + 3, " axes");
  const int64_t in_c = transposed_ ? filter_.k : int64_t(filter_.c) * conv_.groups;
  if (x.shape(channel_axis_) != in_c)
    this->error("input has ", x.shape(channel_axis_), " channels but the weights expect ", in_c);

  const int64_t in_h = x.shape(channel_axis_ + 1), in_w = x.shape(channel_axis_ + 2);
  int64_t out_h = 0, out_w = 0;
  if (transposed_) {
    // The inverse of the convolution output rule; computed in 64 bits from untrusted sizes.
    out_h = int64_t(conv_.stride_h) * (in_h - 1) + int64_t(conv_.dilation_h) * (filter_.r - 1) + 1 -
            2 * int64_t(conv_.pad_h);
    out_w = int64_t(conv_.stride_w) * (in_w - 1) + int64_t(conv_.dilation_w) * (filter_.s - 1) + 1 -
            2 * int64_t(conv_.pad_w);
    if (out_h < 1 || out_w < 1)
      this->error("output would be ", out_h, "x", out_w, " for input ", in_h, "x", in_w, ": pad ",
                  conv_.pad_h, "x", conv_.pad_w, " is too large");
  } else {
    try {
      out_h =
          prim::conv_out_dim(int(in_h), filter_.r, conv_.pad_h, conv_.stride_h, conv_.dilation_h);
      out_w =
          prim::conv_out_dim(int(in_w), filter_.s, conv_.pad_w, conv_.stride_w, conv_.dilation_w);
    } catch (const prim::PrimError& e) {
      this->error("kernel ", filter_.r, "x", filter_.s, " (dilation ", conv_.dilation_h, "x",
                  conv_.dilation_w, ") is larger than the padded input ", in_h, "x", in_w,
                  " + pad ", conv_.pad_h, "x", conv_.pad_w, ": ", e.what());
    }
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + channel_axis_);
  shape.insert(shape.end(), {num_output_, out_h, out_w});
  return shape;
}

template <typename Dtype>
void BaseConvLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  for (size_t i = 1; i < bottom.size(); ++i)
    if (bottom[i]->shape() != x.shape())
      this->error("all bottoms must have the same shape: bottom 0 is (", x.shape_string(),
                  ") but bottom ", i, " is (", bottom[i]->shape_string(), ")");
  const std::vector<int64_t> shape = output_shape(x);
  this->naming_layer([&] {
    for (Tensor<Dtype>* t : top) t->reshape(shape);
  });
  const int64_t n = x.count(0, channel_axis_), in_c = x.shape(channel_axis_);
  const int64_t in_h = x.shape(channel_axis_ + 1), in_w = x.shape(channel_axis_ + 2);
  const int64_t out_h = shape[size_t(channel_axis_) + 1], out_w = shape[size_t(channel_axis_) + 2];
  // Each side in its storage type and layout (a Convolution converts at the edges of half-size
  // and channels-last regions).
  auto layout = [](const Tensor<Dtype>& t) {
    return t.channels_last() ? prim::TensorDesc::nhwc : prim::TensorDesc::nchw;
  };
  const prim::TensorDesc in =
      layout(x)(x.storage(), desc_size(n, "the batch"), desc_size(in_c, "the input channels"),
                desc_size(in_h, "the input height"), desc_size(in_w, "the input width"));
  const prim::TensorDesc out =
      layout(*top[0])(top[0]->storage(), int(n), num_output_, desc_size(out_h, "the output height"),
                      desc_size(out_w, "the output width"));
  x_desc_ = transposed_ ? out : in;
  y_desc_ = transposed_ ? in : out;
  this->naming_layer_prim([&] { prim::conv_check(conv_, x_desc_, filter_, y_desc_); });
}

template class BaseConvLayer<float>;
template class BaseConvLayer<double>;

}  // namespace crema
