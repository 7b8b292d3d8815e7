// Im2col layer: convolution_param geometry and the im2col / col2im primitive calls.
#include "layers/im2col_layer.h"

#include "layers/conv_geometry.h"

namespace crema {

template <typename Dtype>
void Im2colLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const ConvolutionParameter& p = this->param_.convolution_param();
  channel_axis_ = bottom[0]->canonical_axis(p.axis());
  const ConvGeometry g = read_conv_geometry(*this, p);
  desc_.dtype = dtype_of<Dtype>();
  desc_.kernel_h = g.kernel_h;
  desc_.kernel_w = g.kernel_w;
  desc_.pad_h = g.pad_h;
  desc_.pad_w = g.pad_w;
  desc_.stride_h = g.stride_h;
  desc_.stride_w = g.stride_w;
  desc_.dilation_h = g.dilation_h;
  desc_.dilation_w = g.dilation_w;
}

template <typename Dtype>
void Im2colLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() != channel_axis_ + 3)
    this->error("only 2-d im2col is supported: input (", x.shape_string(), ") with axis ",
                channel_axis_, " must have ", channel_axis_ + 3, " axes");
  desc_.n = desc_size(x.count(0, channel_axis_), "the batch");
  desc_.c = desc_size(x.shape(channel_axis_), "the channels");
  desc_.h = desc_size(x.shape(channel_axis_ + 1), "the height");
  desc_.w = desc_size(x.shape(channel_axis_ + 2), "the width");
  prim::TensorDesc cd;
  try {
    cd = prim::im2col_col_desc(desc_);
  } catch (const prim::PrimError& e) {
    this->error("input (", x.shape_string(), "): ", e.what());
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + channel_axis_);
  shape.insert(shape.end(), {cd.c, cd.h, cd.w});
  this->naming_layer([&] { top[0]->reshape(shape); });
}

template <typename Dtype>
void Im2colLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::im2col(h, desc_, bottom[0]->data(), top[0]->mutable_data(), prim::Blend{1, 0});
}

template <typename Dtype>
void Im2colLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                  const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  prim::col2im(h, desc_, top[0]->diff(), bottom[0]->mutable_diff(), prim::Blend{1, 0});
}

template class Im2colLayer<float>;
template class Im2colLayer<double>;

}  // namespace crema
