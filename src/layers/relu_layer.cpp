// ReLU layer: shape passthrough and the act_fwd / act_bwd calls.
#include "layers/relu_layer.h"

namespace crema {
namespace {

// Element-wise: any rank is viewed as one packed row of count() values.
template <typename Dtype>
prim::TensorDesc flat_desc(const Tensor<Dtype>& t) {
  return prim::TensorDesc::nchw(dtype_of<Dtype>(), 1, 1, 1, int(t.count()));
}

}  // namespace

template <typename Dtype>
void ReluLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  act_.mode = prim::ActMode::kRelu;
  act_.relu_negative_slope = this->param_.relu_param().negative_slope();
  if (act_.relu_negative_slope < 0 && top[0] == bottom[0])
    this->error(
        "a negative negative_slope cannot run in place: the gradient needs the sign of "
        "the input");
}

template <typename Dtype>
void ReluLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  if (top[0] != bottom[0]) top[0]->reshape_like(*bottom[0]);
}

template <typename Dtype>
void ReluLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::TensorDesc d = flat_desc(*bottom[0]);
  prim::act_fwd(h, act_, d, bottom[0]->data(), d, top[0]->mutable_data(), prim::Blend{1, 0});
}

template <typename Dtype>
typename Layer<Dtype>::DataUse ReluLayer<Dtype>::bottom_data_use(int) const {
  return prim::act_bwd_reads_x(act_) ? DataUse::kBackward : DataUse::kForward;
}

template <typename Dtype>
typename Layer<Dtype>::DataUse ReluLayer<Dtype>::top_data_use(int) const {
  return prim::act_bwd_reads_y(act_) ? DataUse::kBackward : DataUse::kForward;
}

template <typename Dtype>
void ReluLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  const prim::TensorDesc d = flat_desc(*bottom[0]);
  // Only what the gradient reads (the data uses above); the other pointer stays null.
  prim::act_bwd(h, act_, d, prim::act_bwd_reads_y(act_) ? top[0]->data() : nullptr, top[0]->diff(),
                d, prim::act_bwd_reads_x(act_) ? bottom[0]->data() : nullptr,
                bottom[0]->mutable_diff(), prim::Blend{1, 0});
}

template class ReluLayer<float>;
template class ReluLayer<double>;

}  // namespace crema
