// BatchReindex layer: shape checks and the row gather / scatter-add.
#include "layers/batch_reindex_layer.h"

#include "layers/structure_util.h"
#include "primitives/blas.h"
#include "primitives/gather.h"

namespace crema {

template <typename Dtype>
void BatchReindexLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  if (x.num_axes() < 1) this->error("bottom 0 needs a batch axis, got a scalar");
  if (bottom[1]->num_axes() != 1)
    this->error("bottom 1 (the indices) must be 1-d, got shape (", bottom[1]->shape_string(), ")");
  n_ = x.shape(0);
  m_ = bottom[1]->shape(0);
  inner_ = x.count(1);
  std::vector<int64_t> shape = x.shape();
  shape[0] = m_;
  structure::layer_reshape(*this, top[0], shape);
}

template <typename Dtype>
void BatchReindexLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  // The indices are user data.
  this->naming_layer_prim([&] {
    prim::gather_rows(h, prim::RowsDesc{dtype_of<Dtype>(), m_, inner_, n_}, bottom[0]->data(),
                      bottom[1]->data(), top[0]->mutable_data());
  });
}

template <typename Dtype>
void BatchReindexLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                        const std::vector<bool>& propagate_down,
                                        const Tensors& bottom) {
  // The output is piecewise constant in the indices: their gradient is 0.
  if (propagate_down[1])
    prim::fill(h, dtype_of<Dtype>(), bottom[1]->count(), 0.0, bottom[1]->mutable_diff());
  if (!propagate_down[0]) return;
  this->naming_layer_prim([&] {
    prim::scatter_add_rows(h, prim::RowsDesc{dtype_of<Dtype>(), m_, inner_, n_}, top[0]->diff(),
                           bottom[1]->data(), bottom[0]->mutable_diff(), prim::Blend{1, 0});
  });
}

template class BatchReindexLayer<float>;
template class BatchReindexLayer<double>;

}  // namespace crema
