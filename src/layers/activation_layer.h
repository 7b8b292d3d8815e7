// The point-wise activation layers of Caffe's catalogue, as one class whose Caffe type name picks
// the mode (formulas and gradients in primitives/activation.h):
//   ReLU       relu_param.negative_slope (0)            y = x > 0 ? x : negative_slope * x
//   Sigmoid                                             y = 1 / (1 + exp(-x))
//   TanH                                                y = tanh(x)
//   ELU        elu_param.alpha (1)                      y = x > 0 ? x : alpha * (exp(x) - 1)
//   AbsVal                                              y = |x|
//   Power      power_param.power, scale, shift (1, 1, 0) y = (shift + scale * x)^power
//   Exp        exp_param.base (-1: e), scale, shift      y = base^(shift + scale * x)
//   Log        log_param.base (-1: e), scale, shift      y = log_base(shift + scale * x)
//   BNLL                                                y = log(1 + exp(x))
//   Threshold  threshold_param.threshold (0)            y = x > threshold ? 1 : 0
//   Clip       clip_param.min, max                      y = min(max(x, min), max)
//   Swish      swish_param.beta (1)                     y = x * sigmoid(beta * x)
// In place where the gradient can do without the input (it reads only the output, or only the
// sign of the input that the output keeps: ReLU with negative_slope >= 0, ELU with alpha >= 0);
// otherwise in place is an error at setup. Threshold has no gradient (Caffe does not define one):
// a backward that asks for it is an error.
#pragma once

#include "core/layer.h"
#include "primitives/activation.h"

namespace crema {

template <typename Dtype>
class ActivationLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  // The registered name it was created under: one of the types listed above.
  LayerSignature signature() const override {
    return {this->param_.type().c_str(), exactly(1), exactly(1)};
  }
  // As act_bwd_reads_x / act_bwd_reads_y say for the mode.
  DataUse bottom_data_use(int) const override;
  DataUse top_data_use(int) const override;
  StorageSupport half_storage() const override { return StorageSupport::kUniform; }
  // Element-wise on flat memory: any layout its input and output share.
  StorageSupport channels_last() const override { return StorageSupport::kUniform; }

 private:
  prim::ActDesc act_;
};

}  // namespace crema
