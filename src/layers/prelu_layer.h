// PReLU layer (Caffe's PReLU): ReLU with a learned slope for negative inputs, one per channel
// (axis 1) or one shared by all channels (formulas in primitives/prelu.h):
//   y = x > 0 ? x : a_c * x     dx = dy * (x > 0 ? 1 : a_c)     da_c = sum_{x <= 0} dy * x
// prelu_param: filler of the slopes (constant 0.25 when unset), channel_shared (false; the
// slope blob is then a scalar). The input needs at least 2 axes. Works in place: the input is
// then kept for backward.
#pragma once

#include <memory>

#include "core/layer.h"
#include "primitives/prelu.h"

namespace crema {

template <typename Dtype>
class PreluLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"PReLU", exactly(1), exactly(1)}; }
  // Backward reads the input (in place: a copy of its own instead), never the output.
  DataUse bottom_data_use(int) const override {
    return in_place_ ? DataUse::kForward : DataUse::kBackward;
  }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::PreluDesc prelu_;
  prim::TensorDesc desc_;
  int64_t channels_ = 0;
  std::unique_ptr<Tensor<Dtype>> x_copy_;  // the input, when running in place
  bool in_place_ = false;
};

}  // namespace crema
