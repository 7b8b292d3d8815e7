// MVN layer: mvn_param, the (image, channel, values) view and the mvn primitives.
#include "layers/mvn_layer.h"

namespace crema {

template <typename Dtype>
void MvnLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  const MVNParameter& p = this->param_.mvn_param();
  mvn_.normalize_variance = p.normalize_variance();
  mvn_.across_channels = p.across_channels();
  mvn_.eps = p.eps();
  if (!(mvn_.eps >= 0)) this->error("eps must be >= 0, got ", p.eps());
  if (top[0] == bottom[0])
    this->error("cannot run in place: backward needs the input, which the output would overwrite");
}

template <typename Dtype>
void MvnLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() < 1) this->error("input must have at least 1 axis, got a scalar");
  // Caffe's legacy view: num, channels, and everything after them as one row of values.
  const int64_t n = x.num(), c = x.channels();
  const int64_t inner = n * c == 0 ? 0 : x.count() / (n * c);
  desc_ = prim::TensorDesc::nchw(dtype_of<Dtype>(), desc_size(n, "the batch"),
                                 desc_size(c, "the channels"), 1,
                                 desc_size(inner, "the values per channel of an image"));
  top[0]->reshape_like(x);
}

template <typename Dtype>
void MvnLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::mvn_fwd(h, mvn_, desc_, bottom[0]->data(), desc_, top[0]->mutable_data());
}

template <typename Dtype>
void MvnLayer<Dtype>::backward(Handle& h, const Tensors& top,
                               const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  prim::mvn_bwd(h, mvn_, desc_, bottom[0]->data(), top[0]->diff(), desc_,
                bottom[0]->mutable_diff());
}

template class MvnLayer<float>;
template class MvnLayer<double>;

}  // namespace crema
