// Activation layers: each Caffe type's parameters into an ActDesc, the in-place rules, shape
// passthrough and the act_fwd / act_bwd calls.
#include "layers/activation_layer.h"

#include <cmath>
#include <string>

namespace crema {
namespace {

// Element-wise: any rank is viewed as one packed array of count() values.
template <typename Dtype>
prim::TensorDesc flat_desc(const Tensor<Dtype>& t) {
  return crema::flat_desc(t.storage(), t.count());
}

}  // namespace

template <typename Dtype>
void ActivationLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  const LayerParameter& p = this->param_;
  const std::string& t = p.type();
  prim::ActDesc& a = act_;
  a = prim::ActDesc{};
  if (t == "ReLU") {
    a.mode = prim::ActMode::kRelu;
    a.relu_negative_slope = p.relu_param().negative_slope();
    if (a.relu_negative_slope < 0 && top[0] == bottom[0])
      this->error(
          "a negative negative_slope cannot run in place: the gradient needs the sign of "
          "the input");
  } else if (t == "Sigmoid") {
    a.mode = prim::ActMode::kSigmoid;
  } else if (t == "TanH") {
    a.mode = prim::ActMode::kTanh;
  } else if (t == "ELU") {
    a.mode = prim::ActMode::kElu;
    a.elu_alpha = p.elu_param().alpha();
  } else if (t == "AbsVal") {
    a.mode = prim::ActMode::kAbsVal;
  } else if (t == "Power") {
    a.mode = prim::ActMode::kPower;
    a.power = p.power_param().power();
    a.scale = p.power_param().scale();
    a.shift = p.power_param().shift();
  } else if (t == "Exp" || t == "Log") {
    a.mode = t == "Exp" ? prim::ActMode::kExp : prim::ActMode::kLog;
    const bool exp = t == "Exp";
    a.base = exp ? p.exp_param().base() : p.log_param().base();
    a.scale = exp ? p.exp_param().scale() : p.log_param().scale();
    a.shift = exp ? p.exp_param().shift() : p.log_param().shift();
    if (!(a.base == -1 || a.base > 0))
      this->error("base must be strictly positive, or -1 for e, got ", a.base);
    if (!exp && a.base == 1) this->error("base 1 has no logarithm");
  } else if (t == "BNLL") {
    a.mode = prim::ActMode::kBnll;
  } else if (t == "Threshold") {
    a.mode = prim::ActMode::kThreshold;
    a.threshold = p.threshold_param().threshold();
  } else if (t == "Clip") {
    a.mode = prim::ActMode::kClip;
    if (!p.clip_param().has_min() || !p.clip_param().has_max())
      this->error("clip_param needs both min and max");
    a.clip_min = p.clip_param().min();
    a.clip_max = p.clip_param().max();
    if (!(a.clip_min <= a.clip_max))
      this->error("clip_param min ", a.clip_min, " must not exceed max ", a.clip_max);
  } else if (t == "Swish") {
    a.mode = prim::ActMode::kSwish;
    a.swish_beta = p.swish_param().beta();
  } else {
    this->error("not an activation type this layer implements");
  }
  for (double v : {a.elu_alpha, a.power, a.scale, a.shift, a.base, a.threshold, a.clip_min,
                   a.clip_max, a.swish_beta})
    if (!std::isfinite(v)) this->error("parameters must be finite");
  // In place, backward finds the output where it reads the input: fine when the gradient does
  // not read the input, or reads only a sign the output keeps (ELU with alpha >= 0).
  const bool sign_only = (a.mode == prim::ActMode::kRelu && a.relu_negative_slope >= 0) ||
                         (a.mode == prim::ActMode::kElu && a.elu_alpha >= 0);
  if (top[0] == bottom[0] && prim::act_has_bwd(a) && prim::act_bwd_reads_x(a) && !sign_only)
    this->error(
        "cannot run in place: the gradient needs the input, which the output would "
        "overwrite");
}

template <typename Dtype>
void ActivationLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  if (top[0] != bottom[0]) top[0]->reshape_like(*bottom[0]);
}

template <typename Dtype>
void ActivationLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::TensorDesc d = flat_desc(*bottom[0]);
  prim::act_fwd(h, act_, d, bottom[0]->raw_data(), d, top[0]->mutable_raw_data());
}

template <typename Dtype>
auto ActivationLayer<Dtype>::bottom_data_use(int) const -> DataUse {
  return prim::act_bwd_reads_x(act_) ? DataUse::kBackward : DataUse::kForward;
}

template <typename Dtype>
auto ActivationLayer<Dtype>::top_data_use(int) const -> DataUse {
  return prim::act_bwd_reads_y(act_) ? DataUse::kBackward : DataUse::kForward;
}

template <typename Dtype>
void ActivationLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                      const std::vector<bool>& propagate_down,
                                      const Tensors& bottom) {
  if (!propagate_down[0]) return;
  if (!prim::act_has_bwd(act_))
    this->error(
        "has no gradient (a step function; Caffe does not define one): set "
        "propagate_down: false for its bottom or keep it off the backward path");
  const prim::TensorDesc d = flat_desc(*bottom[0]);
  // Only what the gradient reads (the data uses above); the other pointer stays null.
  prim::act_bwd(
      h, act_, d, prim::act_bwd_reads_y(act_) ? top[0]->raw_data() : nullptr, top[0]->raw_diff(), d,
      prim::act_bwd_reads_x(act_) ? bottom[0]->raw_data() : nullptr, bottom[0]->mutable_raw_diff());
}

template class ActivationLayer<float>;
template class ActivationLayer<double>;

}  // namespace crema
