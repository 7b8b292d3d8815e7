// Concat layer: shape checks and one tensor_copy per bottom each way.
#include "layers/concat_layer.h"

#include "layers/structure_util.h"
#include "primitives/tensor_copy.h"

namespace crema {

template <typename Dtype>
void ConcatLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  for (Tensor<Dtype>* b : bottom)
    if (b == top[0]) this->error("cannot run in place (a top must not be one of its bottoms)");
  const ConcatParameter& p = this->param_.concat_param();
  if (p.has_axis() && p.has_concat_dim())
    this->error("set either axis or the legacy concat_dim, not both");
}

template <typename Dtype>
void ConcatLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const ConcatParameter& p = this->param_.concat_param();
  const Tensor<Dtype>& x0 = *bottom[0];
  axis_ = p.has_concat_dim() ? int(p.concat_dim()) : structure::layer_axis(*this, x0, p.axis());
  if (axis_ >= x0.num_axes())
    this->error("concat_dim ", axis_, " is out of range for an input of shape (", x0.shape_string(),
                ")");
  std::vector<int64_t> shape = x0.shape();
  for (size_t k = 1; k < bottom.size(); ++k) {
    const Tensor<Dtype>& x = *bottom[k];
    bool ok = x.num_axes() == x0.num_axes();
    for (int i = 0; ok && i < x.num_axes(); ++i) ok = i == axis_ || x.shape(i) == x0.shape(i);
    if (!ok)
      this->error("bottom ", k, " has shape (", x.shape_string(), ") but bottom 0 has (",
                  x0.shape_string(), "): they may differ only along the concatenation axis ",
                  axis_);
    shape[axis_] += x.shape(axis_);
  }
  structure::layer_reshape(*this, top[0], shape);
  outer_ = x0.count(0, axis_);
  inner_ = x0.count(axis_ + 1);
  total_ = shape[axis_];
}

template <typename Dtype>
void ConcatLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  Dtype* y = top[0]->mutable_data();
  int64_t offset = 0;
  for (Tensor<Dtype>* b : bottom) {
    const int64_t a = b->shape(axis_);
    prim::tensor_copy(h, structure::packed3<Dtype>(outer_, a, inner_), b->data(),
                      structure::window3<Dtype>(outer_, a, inner_, total_), y + offset * inner_);
    offset += a;
  }
}

template <typename Dtype>
void ConcatLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                  const std::vector<bool>& propagate_down, const Tensors& bottom) {
  const Dtype* dy = top[0]->diff();
  int64_t offset = 0;
  for (size_t k = 0; k < bottom.size(); ++k) {
    const int64_t a = bottom[k]->shape(axis_);
    if (propagate_down[k])
      prim::tensor_copy(h, structure::window3<Dtype>(outer_, a, inner_, total_),
                        dy + offset * inner_, structure::packed3<Dtype>(outer_, a, inner_),
                        bottom[k]->mutable_diff());
    offset += a;
  }
}

template class ConcatLayer<float>;
template class ConcatLayer<double>;

}  // namespace crema
