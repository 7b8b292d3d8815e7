// Input layer: top shapes from input_param.
#include "layers/input_layer.h"

namespace crema {

template <typename Dtype>
void InputLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const InputParameter& p = this->param_.input_param();
  const int num_shape = p.shape_size();
  if (num_shape != 0 && num_shape != 1 && num_shape != int(top.size()))
    this->error("input_param.shape must be given once, once per top (", top.size(),
                "), or not at all; got ", num_shape);
  if (num_shape == 0) return;
  for (size_t i = 0; i < top.size(); ++i) {
    const BlobShape& s = p.shape(num_shape == 1 ? 0 : int(i));
    const std::vector<int64_t> shape(s.dim().begin(), s.dim().end());
    try {
      top[i]->reshape(shape);
    } catch (const Error& e) {
      this->error("top ", i, ": ", e.what());
    }
  }
}

template class InputLayer<float>;
template class InputLayer<double>;

}  // namespace crema
