// Parameter layer: the blob, its data shared with the top, and the accumulated gradient.
#include "layers/parameter_layer.h"

#include "layers/structure_util.h"
#include "primitives/blas.h"

namespace crema {

template <typename Dtype>
void ParameterLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const BlobShape& s = this->param_.parameter_param().shape();
  std::vector<int64_t> shape(s.dim().begin(), s.dim().end());
  this->blobs_.clear();
  this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(this->device_));
  structure::layer_reshape(*this, this->blobs_[0].get(), shape);
}

template <typename Dtype>
void ParameterLayer<Dtype>::reshape(const Tensors&, const Tensors& top) {
  top[0]->reshape_like(*this->blobs_[0]);
  top[0]->share_data(*this->blobs_[0]);
}

template <typename Dtype>
void ParameterLayer<Dtype>::forward(Handle&, const Tensors&, const Tensors& top) {
  // Again on every forward: the Net may have made the blob share another net's memory since.
  top[0]->share_data(*this->blobs_[0]);
}

template <typename Dtype>
void ParameterLayer<Dtype>::backward(Handle& h, const Tensors& top, const std::vector<bool>&,
                                     const Tensors&) {
  if (this->param_propagate_down(0))
    prim::axpy(h, dtype_of<Dtype>(), top[0]->count(), 1.0, top[0]->diff(),
               this->blobs_[0]->mutable_diff());
}

template class ParameterLayer<float>;
template class ParameterLayer<double>;

}  // namespace crema
