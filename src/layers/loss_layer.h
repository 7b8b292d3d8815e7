// The base of the loss layers, as Caffe's LossLayer: predictions (bottom 0) and targets (bottom
// 1, which takes no gradient) in, one scalar loss out (loss_weight 1 unless the layer sets it).
// The loss reads its bottoms again in backward and nothing reads its top.
#pragma once

#include <memory>
#include <vector>

#include "core/layer.h"
#include "layers/loss_helpers.h"
#include "primitives/softmax.h"

namespace crema {

template <typename Dtype>
class LossLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  bool auto_top_blobs() const override { return true; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 1; }
  bool is_loss() const override { return true; }
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 protected:
  // The signature of most losses: predictions and targets in, the loss out.
  static LayerSignature signature_of(const char* type) { return {type, exactly(2), exactly(1)}; }
  // Backward's first step: bottom 1 (the labels, or the targets: `what`) never takes a gradient.
  // Returns whether bottom 0 wants its gradient.
  bool propagate_to_predictions(const std::vector<bool>& propagate_down,
                                const char* what = "label") const {
    if (propagate_down.size() > 1 && propagate_down[1])
      this->error("cannot backpropagate to the ", what, " input");
    return propagate_down[0];
  }
  // reshape's checks of the bottoms, each one error naming both shapes. Bottom 1 holds one label
  // per sample of bottom 0, which is not empty (`what` names bottom 0: "scores").
  void check_one_label_per_sample(const Tensors& bottom, const char* what) const {
    const Tensor<Dtype>& x = *bottom[0];
    if (x.count() == 0 || bottom[1]->count() != x.num())
      this->error("expected one label per sample: the ", what, " are (", x.shape_string(),
                  ") but the labels are (", bottom[1]->shape_string(), ")");
  }
  // The end of a per-row loss's reshape: its descriptor's storage type, rows (bottom 0's first
  // axis) and row length (the rest), and the scalar loss top.
  template <typename Desc>
  static void shape_rows(const Tensors& bottom, const Tensors& top, Desc* desc) {
    const Tensor<Dtype>& x = *bottom[0];
    desc->dtype = dtype_of<Dtype>();
    desc->num = x.num();
    desc->dim = x.count() / x.num();
    top[0]->reshape({});
  }
  // Bottoms 0 and 1 (`what`: "bottoms") of the same non-zero count and first axis.
  void check_same_count(const Tensors& bottom, const char* what) const {
    const Tensor<Dtype>& a = *bottom[0];
    const Tensor<Dtype>& b = *bottom[1];
    if (a.count() != b.count() || a.num() != b.num() || a.count() == 0)
      this->error("the two ", what,
                  " must have the same non-zero count and first axis, but bottom 0 is (",
                  a.shape_string(), ") and bottom 1 is (", b.shape_string(), ")");
  }
};

// A loss that is one primitive pair over the predictions (bottom 0) and the labels or targets
// (bottom 1), with a descriptor Desc of rows (shape_rows): kForward(h, desc, x, t, loss) and
// kBackward(h, desc, x, t, loss_weight, dx). The derived layer fills desc_ (its parameters in
// layer_setup; its checks of the bottoms, then shape_rows, in reshape). Primitive errors (a label
// out of range) name the layer.
template <typename Dtype, typename Desc, auto kForward, auto kBackward>
class PrimLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using LossLayer<Dtype>::LossLayer;

  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override {
    this->naming_layer_prim(
        [&] { kForward(h, desc_, bottom[0]->data(), bottom[1]->data(), top[0]->mutable_data()); });
  }
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override {
    if (!this->propagate_to_predictions(propagate_down, targets_name())) return;
    this->naming_layer_prim([&] {
      kBackward(h, desc_, bottom[0]->data(), bottom[1]->data(), this->top_loss_weight(0, *top[0]),
                bottom[0]->mutable_diff());
    });
  }

 protected:
  // What bottom 1 holds, for the error of a backward asked to reach it.
  virtual const char* targets_name() const { return "label"; }

  Desc desc_;
};

// The losses computed through a softmax of the scores (bottom 0) over an axis, SoftmaxWithLoss
// and InfogainLoss: loss_param's ignore_label and normalization (VALID by default), and the
// probabilities, which top 1 shares where the net asks for it. Backward reads the probabilities
// and the labels (and any further bottom), not the scores.
template <typename Dtype, typename LossDesc>
class SoftmaxLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using LossLayer<Dtype>::LossLayer;

  void layer_setup(const Tensors&, const Tensors&) override {
    const LossParameter& p = this->param_.loss_param();
    loss_.dtype = softmax_.dtype = dtype_of<Dtype>();
    loss_.has_ignore_label = p.has_ignore_label();
    loss_.ignore_label = p.ignore_label();
    loss_.normalization = loss_normalization(p, LossParameter::VALID);
    prob_ = std::make_unique<Tensor<Dtype>>(this->device_);
  }

  DataUse bottom_data_use(int i) const override {
    return i == 0 ? DataUse::kForward : DataUse::kBackward;
  }
  // Top 1 views the probabilities (out of the plan).
  DataUse top_data_use(int j) const override {
    return j == 0 ? DataUse::kForward : DataUse::kUnknown;
  }

 protected:
  // reshape's first step: the softmax and the loss over x viewed as outer x channels x inner
  // around `axis` (negative: from the end). Returns the axis, counted from the front.
  int shape_softmax(const Tensor<Dtype>& x, int axis) {
    axis = x.canonical_axis(axis);
    softmax_.outer = loss_.outer = x.count(0, axis);
    softmax_.channels = loss_.channels = x.shape(axis);
    softmax_.inner = loss_.inner = x.count(axis + 1);
    return axis;
  }
  // reshape's last step: top 0 the scalar loss, top 1 (where asked for) the probabilities.
  void shape_tops(const Tensor<Dtype>& x, const Tensors& top) {
    prob_->reshape_like(x);
    top[0]->reshape({});
    if (top.size() > 1) {
      top[1]->reshape_like(x);
      top[1]->share_data(*prob_);
    }
  }
  // forward's first step: the probabilities of the scores x.
  void softmax_forward(Handle& h, const Tensor<Dtype>& x) {
    prim::softmax_fwd(h, softmax_, x.data(), prob_->mutable_data(), prim::Blend{1, 0});
  }

  prim::SoftmaxDesc softmax_;
  LossDesc loss_;
  std::unique_ptr<Tensor<Dtype>> prob_;  // on the layer's device, made in layer_setup
};

}  // namespace crema
