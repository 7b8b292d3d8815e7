// Reduction layer: the operation, the output shape, and the reduce primitives.
#include "layers/reduction_layer.h"

#include "layers/proto_enum.h"
#include "layers/structure_util.h"

namespace crema {

template <typename Dtype>
void ReductionLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  const ReductionParameter& p = this->param_.reduction_param();
  reduce_.op = from_proto<prim::ReduceOp>(*this, p.operation(), "reduction operation",
                                          {{ReductionParameter::SUM, prim::ReduceOp::kSum},
                                           {ReductionParameter::ASUM, prim::ReduceOp::kAsum},
                                           {ReductionParameter::SUMSQ, prim::ReduceOp::kSumSq},
                                           {ReductionParameter::MEAN, prim::ReduceOp::kMean}});
  coeff_ = p.coeff();
}

template <typename Dtype>
void ReductionLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  const int axis = structure::layer_axis(*this, x, this->param_.reduction_param().axis());
  structure::layer_reshape(*this, top[0],
                           std::vector<int64_t>(x.shape().begin(), x.shape().begin() + axis));
  outer_ = x.count(0, axis);
  n_ = x.count(axis);
}

template <typename Dtype>
void ReductionLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::DataType t = dtype_of<Dtype>();
  prim::reduce_fwd(h, reduce_, prim::ViewDesc::packed(t, {outer_, n_}), bottom[0]->data(),
                   prim::ViewDesc::packed(t, {outer_, 1}), top[0]->mutable_data(),
                   prim::Blend{coeff_, 0});
}

template <typename Dtype>
void ReductionLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                     const std::vector<bool>& propagate_down,
                                     const Tensors& bottom) {
  if (!propagate_down[0]) return;
  const prim::DataType t = dtype_of<Dtype>();
  const prim::ViewDesc xd = prim::ViewDesc::packed(t, {outer_, n_});
  prim::reduce_bwd(h, reduce_, xd, bottom[0]->data(), prim::ViewDesc::packed(t, {outer_, 1}),
                   top[0]->diff(), xd, bottom[0]->mutable_diff(), prim::Blend{coeff_, 0});
}

template class ReductionLayer<float>;
template class ReductionLayer<double>;

}  // namespace crema
