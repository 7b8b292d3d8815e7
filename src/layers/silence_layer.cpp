// Silence layer: zero gradients for its bottoms.
#include "layers/silence_layer.h"

#include "primitives/blas.h"

namespace crema {

template <typename Dtype>
void SilenceLayer<Dtype>::backward(Handle& h, const Tensors&,
                                   const std::vector<bool>& propagate_down, const Tensors& bottom) {
  for (size_t i = 0; i < bottom.size(); ++i)
    if (propagate_down[i])
      prim::fill(h, dtype_of<Dtype>(), bottom[i]->count(), 0.0, bottom[i]->mutable_diff());
}

template class SilenceLayer<float>;
template class SilenceLayer<double>;

}  // namespace crema
