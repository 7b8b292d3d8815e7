// Flatten layer: the flattened shape and the shared memory.
#include "layers/flatten_layer.h"

namespace crema {

template <typename Dtype>
void FlattenLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
}

template <typename Dtype>
void FlattenLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const FlattenParameter& p = this->param_.flatten_param();
  const Tensor<Dtype>& x = *bottom[0];
  const int start = x.canonical_axis(p.axis());
  const int end = x.canonical_axis(p.end_axis());
  if (end < start)
    this->error("end_axis (", p.end_axis(), ") comes before axis (", p.axis(), ") for input (",
                x.shape_string(), ")");
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + start);
  shape.push_back(x.count(start, end + 1));
  shape.insert(shape.end(), x.shape().begin() + end + 1, x.shape().end());
  top[0]->reshape(shape);
  // Re-shared on every reshape: the bottom's memory may have been reallocated to grow.
  top[0]->share_data(x);
  top[0]->share_diff(x);
}

template class FlattenLayer<float>;
template class FlattenLayer<double>;

}  // namespace crema
