// Split layer: shared data forward, summed diffs backward (eltwise's sum).
#include "layers/split_layer.h"

#include <vector>

#include "primitives/eltwise.h"

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
  // One pass: the tops' gradients read once each, the sum written once.
  std::vector<const void*> dy;
  for (const Tensor<Dtype>* t : top) dy.push_back(t->raw_diff());
  prim::EltwiseDesc sum;
  sum.dtype = bottom[0]->storage();
  sum.n = bottom[0]->count();
  sum.num_inputs = int(top.size());
  prim::eltwise_fwd(h, sum, dy.data(), bottom[0]->mutable_raw_diff(), nullptr);
}

template class SplitLayer<float>;
template class SplitLayer<double>;

}  // namespace crema
