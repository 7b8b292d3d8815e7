// Slice layer: piece boundaries from slice_point (validated) and one tensor_copy per top.
#include "layers/slice_layer.h"

#include "layers/structure_util.h"
#include "primitives/tensor_copy.h"

namespace crema {

template <typename Dtype>
void SliceLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  for (Tensor<Dtype>* t : top)
    if (t == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  const SliceParameter& p = this->param_.slice_param();
  if (p.has_axis() && p.has_slice_dim())
    this->error("set either axis or the legacy slice_dim, not both");
  if (p.slice_point_size() > 0 && p.slice_point_size() != int(top.size()) - 1)
    this->error(p.slice_point_size(), " slice_point(s) for ", top.size(),
                " tops: give one fewer than the tops, or none for equal pieces");
}

template <typename Dtype>
void SliceLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const SliceParameter& p = this->param_.slice_param();
  const Tensor<Dtype>& x = *bottom[0];
  axis_ = p.has_slice_dim() ? int(p.slice_dim()) : structure::layer_axis(*this, x, p.axis());
  if (axis_ >= x.num_axes())
    this->error("slice_dim ", axis_, " is out of range for an input of shape (", x.shape_string(),
                ")");
  total_ = x.shape(axis_);
  const int64_t n = int64_t(top.size());
  starts_.assign(1, 0);
  if (p.slice_point_size() > 0) {
    for (int k = 0; k < p.slice_point_size(); ++k) {
      const int64_t s = p.slice_point(k);
      if (s <= starts_.back() || s >= total_)
        this->error("slice_point ", s, " (number ", k, ") must be larger than ", starts_.back(),
                    " and smaller than ", total_, ", the size of axis ", axis_, " of the input (",
                    x.shape_string(),
                    "): slice points are strictly increasing and inside the axis");
      starts_.push_back(s);
    }
  } else {
    if (total_ % n != 0)
      this->error("axis ", axis_, " of size ", total_, " of the input (", x.shape_string(),
                  ") does not split into ", n, " equal pieces; give slice_point");
    for (int64_t k = 1; k < n; ++k) starts_.push_back(k * (total_ / n));
  }
  starts_.push_back(total_);
  outer_ = x.count(0, axis_);
  inner_ = x.count(axis_ + 1);
  std::vector<int64_t> shape = x.shape();
  for (size_t k = 0; k < top.size(); ++k) {
    shape[axis_] = starts_[k + 1] - starts_[k];
    structure::layer_reshape(*this, top[k], shape);
  }
}

template <typename Dtype>
void SliceLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const Dtype* x = bottom[0]->data();
  for (size_t k = 0; k < top.size(); ++k) {
    const int64_t a = starts_[k + 1] - starts_[k];
    prim::tensor_copy(h, structure::window3<Dtype>(outer_, a, inner_, total_),
                      x + starts_[k] * inner_, structure::packed3<Dtype>(outer_, a, inner_),
                      top[k]->mutable_data());
  }
}

template <typename Dtype>
void SliceLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                 const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  Dtype* dx = bottom[0]->mutable_diff();
  for (size_t k = 0; k < top.size(); ++k) {
    const int64_t a = starts_[k + 1] - starts_[k];
    prim::tensor_copy(h, structure::packed3<Dtype>(outer_, a, inner_), top[k]->diff(),
                      structure::window3<Dtype>(outer_, a, inner_, total_),
                      dx + starts_[k] * inner_);
  }
}

template class SliceLayer<float>;
template class SliceLayer<double>;

}  // namespace crema
