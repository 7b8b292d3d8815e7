// TanH layer: shape passthrough and the act_fwd / act_bwd calls.
#include "layers/tanh_layer.h"

namespace crema {
namespace {

// Element-wise: any rank is viewed as one packed row of count() values.
template <typename Dtype>
prim::TensorDesc flat_desc(const Tensor<Dtype>& t) {
  return prim::TensorDesc::nchw(dtype_of<Dtype>(), 1, 1, 1, int(t.count()));
}

}  // namespace

template <typename Dtype>
void TanhLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  (void)bottom;
  (void)top;
  act_.mode = prim::ActMode::kTanh;
}

template <typename Dtype>
void TanhLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  if (top[0] != bottom[0]) top[0]->reshape_like(*bottom[0]);
}

template <typename Dtype>
void TanhLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::TensorDesc d = flat_desc(*bottom[0]);
  prim::act_fwd(h, act_, d, bottom[0]->data(), d, top[0]->mutable_data(), prim::Blend{1, 0});
}

template <typename Dtype>
void TanhLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  const prim::TensorDesc d = flat_desc(*bottom[0]);
  prim::act_bwd(h, act_, d, top[0]->data(), top[0]->diff(), d, bottom[0]->data(),
                bottom[0]->mutable_diff(), prim::Blend{1, 0});
}

template class TanhLayer<float>;
template class TanhLayer<double>;

}  // namespace crema
