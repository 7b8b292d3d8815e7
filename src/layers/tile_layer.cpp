// Tile layer: a broadcasting tensor_copy forward and a sum over the tiles backward.
#include "layers/tile_layer.h"

#include "layers/structure_util.h"
#include "primitives/reduce.h"
#include "primitives/tensor_copy.h"

namespace crema {

template <typename Dtype>
void TileLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  const TileParameter& p = this->param_.tile_param();
  if (!p.has_tiles()) this->error("tile_param.tiles is required");
  if (p.tiles() < 1) this->error("tiles must be positive, got ", p.tiles());
  tiles_ = p.tiles();
}

template <typename Dtype>
void TileLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  const int axis = structure::layer_axis(*this, x, this->param_.tile_param().axis());
  std::vector<int64_t> shape = x.shape();
  shape[axis] *= tiles_;  // at most 2^31 * 2^31: no overflow; Tensor rejects a too large count
  structure::layer_reshape(*this, top[0], shape);
  outer_ = x.count(0, axis);
  inner_ = x.count(axis);
}

template <typename Dtype>
void TileLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::ViewDesc xd = structure::packed3<Dtype>(outer_, tiles_, inner_);
  xd.stride[0] = inner_;
  xd.stride[1] = 0;  // every tile reads the same x
  prim::tensor_copy(h, xd, bottom[0]->data(), structure::packed3<Dtype>(outer_, tiles_, inner_),
                    top[0]->mutable_data());
}

template <typename Dtype>
void TileLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  prim::reduce_fwd(h, prim::ReduceDesc{prim::ReduceOp::kSum},
                   structure::packed3<Dtype>(outer_, tiles_, inner_), top[0]->diff(),
                   structure::packed3<Dtype>(outer_, 1, inner_), bottom[0]->mutable_diff());
}

template class TileLayer<float>;
template class TileLayer<double>;

}  // namespace crema
