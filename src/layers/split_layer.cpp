// Split layer: shared data forward, summed diffs backward.
#include "layers/split_layer.h"

#include "primitives/blas.h"

namespace crema {

template <typename Dtype>
void SplitLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  // In place would make a top's diff the bottom's diff, which backward overwrites with the sum.
  for (const Tensor<Dtype>* t : top)
    if (t == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
}

template <typename Dtype>
void SplitLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  for (Tensor<Dtype>* t : top) {
    t->reshape_like(*bottom[0]);
    // Re-shared on every reshape: the bottom's memory may have been reallocated to grow.
    t->share_data(*bottom[0]);
  }
}

template <typename Dtype>
void SplitLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                 const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  const prim::DataType t = dtype_of<Dtype>();
  const int64_t n = bottom[0]->count();
  Dtype* dx = bottom[0]->mutable_diff();
  prim::axpby(h, t, n, 1.0, top[0]->diff(), 0.0, dx);
  for (size_t i = 1; i < top.size(); ++i) prim::axpy(h, t, n, 1.0, top[i]->diff(), dx);
}

template class SplitLayer<float>;
template class SplitLayer<double>;

}  // namespace crema
