// Filter layer: the selection (nonzero_indices) and one row gather / scatter per data bottom.
#include "layers/filter_layer.h"

#include "layers/structure_util.h"
#include "primitives/blas.h"
#include "primitives/gather.h"

namespace crema {

template <typename Dtype>
void FilterLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  if (top.size() != bottom.size() - 1)
    this->error("needs one top per data bottom (", bottom.size() - 1, "), got ", top.size());
  for (size_t k = 0; k < top.size(); ++k)
    if (top[k] == bottom[k]) this->error("cannot run in place (a top must not be its bottom)");
  indices_ = std::make_unique<Tensor<Dtype>>(this->device_);
}

template <typename Dtype>
void FilterLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& sel = *bottom.back();
  if (sel.num_axes() < 1 || sel.count() != sel.shape(0))
    this->error(
        "the selector (last bottom) must hold one value per item, shape (N) or (N, 1, ..."
        "), got (",
        sel.shape_string(), ")");
  n_ = sel.shape(0);
  for (size_t k = 0; k < top.size(); ++k) {
    const Tensor<Dtype>& x = *bottom[k];
    if (x.num_axes() < 1 || x.shape(0) != n_)
      this->error("bottom ", k, " (", x.shape_string(), ") must have ", n_,
                  " items, as the selector (", sel.shape_string(), ")");
    structure::layer_reshape(*this, top[k], x.shape());
  }
  selected_ = n_;
  indices_->reshape({n_});
}

template <typename Dtype>
void FilterLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::DataType t = dtype_of<Dtype>();
  selected_ = prim::nonzero_indices(h, t, n_, bottom.back()->data(), indices_->mutable_data());
  for (size_t k = 0; k < top.size(); ++k) {
    std::vector<int64_t> shape = bottom[k]->shape();
    shape[0] = selected_;
    top[k]->reshape(shape);  // no larger than the bottom: cannot fail
    prim::gather_rows(h, prim::RowsDesc{t, selected_, bottom[k]->count(1), n_}, bottom[k]->data(),
                      indices_->data(), top[k]->mutable_data());
  }
}

template <typename Dtype>
void FilterLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                  const std::vector<bool>& propagate_down, const Tensors& bottom) {
  const prim::DataType t = dtype_of<Dtype>();
  // The output is piecewise constant in the selector: its gradient is 0.
  if (propagate_down.back())
    prim::fill(h, t, bottom.back()->count(), 0.0, bottom.back()->mutable_diff());
  for (size_t k = 0; k < top.size(); ++k)
    if (propagate_down[k])
      prim::scatter_add_rows(h, prim::RowsDesc{t, selected_, bottom[k]->count(1), n_},
                             top[k]->diff(), indices_->data(), bottom[k]->mutable_diff(),
                             prim::Blend{1, 0});
}

template class FilterLayer<float>;
template class FilterLayer<double>;

}  // namespace crema
