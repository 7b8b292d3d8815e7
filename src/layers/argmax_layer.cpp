// ArgMax layer: Caffe's two output layouts mapped onto argmax_fwd's strided outputs.
#include "layers/argmax_layer.h"

#include <algorithm>

#include "layers/structure_util.h"

namespace crema {

template <typename Dtype>
void ArgMaxLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  const ArgMaxParameter& p = this->param_.argmax_param();
  if (p.top_k() < 1) this->error("top_k must be at least 1");
  has_axis_ = p.has_axis();
  out_max_val_ = p.out_max_val();
  desc_.dtype = dtype_of<Dtype>();
}

template <typename Dtype>
void ArgMaxLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const ArgMaxParameter& p = this->param_.argmax_param();
  const Tensor<Dtype>& x = *bottom[0];
  std::vector<int64_t> shape;
  if (has_axis_) {
    const int axis = structure::layer_axis(*this, x, p.axis());
    desc_.outer = x.count(0, axis);
    desc_.channels = x.shape(axis);
    desc_.inner = x.count(axis + 1);
    shape = x.shape();
    shape[axis] = p.top_k();
  } else {
    if (x.num_axes() < 1) this->error("needs an input with a batch axis, got a scalar");
    desc_.outer = x.shape(0);
    desc_.channels = x.count(1);
    desc_.inner = 1;
    shape.assign(size_t(std::max(3, x.num_axes())), 1);
    shape[0] = x.shape(0);
    shape[1] = out_max_val_ ? 2 : 1;
    shape[2] = p.top_k();
  }
  if (int64_t(p.top_k()) > desc_.channels)
    this->error("top_k ", p.top_k(), " is larger than the ", desc_.channels,
                " values searched in the input (", x.shape_string(), ")");
  desc_.top_k = int(p.top_k());
  // Caffe's pairs: per item the top_k indices, then the top_k values.
  desc_.out_outer_stride = !has_axis_ && out_max_val_ ? 2 * desc_.top_k : 0;
  structure::layer_reshape(*this, top[0], shape);
}

template <typename Dtype>
void ArgMaxLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  Dtype* y = top[0]->mutable_data();
  Dtype* index = has_axis_ && out_max_val_ ? nullptr : y;
  Dtype* value = !out_max_val_ ? nullptr : (has_axis_ ? y : y + desc_.top_k);
  prim::argmax_fwd(h, desc_, bottom[0]->data(), index, value);
}

template <typename Dtype>
void ArgMaxLayer<Dtype>::backward(Handle&, const Tensors&, const std::vector<bool>& propagate_down,
                                  const Tensors&) {
  if (propagate_down[0]) this->error("arg max has no gradient; it cannot be backpropagated");
}

template class ArgMaxLayer<float>;
template class ArgMaxLayer<double>;

}  // namespace crema
