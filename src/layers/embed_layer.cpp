// Embed layer: the table and bias blobs, the row gather forward and the scatter-add backward.
#include "layers/embed_layer.h"

#include "layers/structure_util.h"
#include "primitives/blas.h"
#include "primitives/gather.h"

namespace crema {

template <typename Dtype>
void EmbedLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  const EmbedParameter& p = this->param_.embed_param();
  if (p.num_output() == 0) this->error("num_output must be positive");
  if (p.input_dim() == 0) this->error("input_dim must be positive");
  input_dim_ = p.input_dim();
  num_output_ = p.num_output();
  bias_term_ = p.bias_term();
  // Sizes come from the model file: check the table before allocating it.
  if (num_output_ > kMaxTensorElements / input_dim_)
    this->error("weight of ", input_dim_, " x ", num_output_, " elements is too large (at most ",
                kMaxTensorElements, " elements per tensor)");
  this->make_weight_and_bias({input_dim_, num_output_}, p.weight_filler(), bias_term_, num_output_,
                             p.bias_filler());
}

template <typename Dtype>
void EmbedLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  std::vector<int64_t> shape = bottom[0]->shape();
  shape.push_back(num_output_);
  structure::layer_reshape(*this, top[0], shape);
  m_ = bottom[0]->count();
}

template <typename Dtype>
void EmbedLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::DataType t = dtype_of<Dtype>();
  Dtype* y = top[0]->mutable_data();
  // The indices are user data: a bad one is a user error, reported with the layer's name.
  this->naming_layer_prim([&] {
    prim::gather_rows(h, prim::RowsDesc{t, m_, num_output_, input_dim_}, this->blobs_[0]->data(),
                      bottom[0]->data(), y);
  });
  if (bias_term_)
    prim::bias_add(h,
                   prim::TensorDesc::nchw(t, desc_size(m_, "the indices"),
                                          desc_size(num_output_, "num_output"), 1, 1),
                   y, this->blobs_[1]->data());
}

template <typename Dtype>
void EmbedLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                 const std::vector<bool>& propagate_down, const Tensors& bottom) {
  const prim::DataType t = dtype_of<Dtype>();
  // The output is piecewise constant in the indices: their gradient is 0.
  if (propagate_down[0]) prim::fill(h, t, bottom[0]->count(), 0.0, bottom[0]->mutable_diff());
  const Dtype* dy = top[0]->diff();
  if (this->param_propagate_down(0)) {
    this->naming_layer_prim([&] {
      prim::scatter_add_rows(h, prim::RowsDesc{t, m_, num_output_, input_dim_}, dy,
                             bottom[0]->data(), this->blobs_[0]->mutable_diff(), prim::Blend{1, 1});
    });
  }
  if (bias_term_ && this->param_propagate_down(1))
    prim::bias_bwd(h,
                   prim::TensorDesc::nchw(t, desc_size(m_, "the indices"),
                                          desc_size(num_output_, "num_output"), 1, 1),
                   dy, this->blobs_[1]->mutable_diff(), prim::Blend{1, 1});
}

template class EmbedLayer<float>;
template class EmbedLayer<double>;

}  // namespace crema
