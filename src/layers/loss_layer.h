// The base of the loss layers, as Caffe's LossLayer: predictions (bottom 0) and targets (bottom
// 1, which takes no gradient) in, one scalar loss out (loss_weight 1 unless the layer sets it).
// The loss reads its bottoms again in backward and nothing reads its top.
#pragma once

#include <vector>

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class LossLayer : public Layer<Dtype> {
 public:
  using Layer<Dtype>::Layer;

  bool auto_top_blobs() const override { return true; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 1; }
  bool is_loss() const override { return true; }
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 protected:
  // Backward's first step: bottom 1 (the labels, or the targets: `what`) never takes a gradient.
  // Returns whether bottom 0 wants its gradient.
  bool propagate_to_predictions(const std::vector<bool>& propagate_down,
                                const char* what = "label") const {
    if (propagate_down.size() > 1 && propagate_down[1])
      this->error("cannot backpropagate to the ", what, " input");
    return propagate_down[0];
  }
};

}  // namespace crema
