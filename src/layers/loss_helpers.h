// Helpers shared by the loss layers: LossParameter's normalization mode with Caffe's precedence,
// and the tops of the losses computed through a softmax.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "crema.pb.h"
#include "primitives/softmax.h"  // LossNormalization

namespace crema {

// normalization when set; else the legacy normalize (true = VALID, false = BATCH_SIZE); else
// the layer's own default (VALID for most, BATCH_SIZE for SigmoidCrossEntropyLoss).
inline prim::LossNormalization loss_normalization(const LossParameter& p,
                                                  LossParameter::NormalizationMode fallback) {
  LossParameter::NormalizationMode mode = fallback;
  if (p.has_normalization())
    mode = p.normalization();
  else if (p.has_normalize())
    mode = p.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
  switch (mode) {
    case LossParameter::FULL:
      return prim::LossNormalization::kFull;
    case LossParameter::BATCH_SIZE:
      return prim::LossNormalization::kBatchSize;
    case LossParameter::NONE:
      return prim::LossNormalization::kNone;
    default:
      return prim::LossNormalization::kValid;
  }
}

// The tops of a loss computed through a softmax of x: top 0 the scalar loss, and top 1, where
// the net asks for it, the probabilities, which share prob's data.
template <typename Dtype>
void reshape_softmax_loss_tops(const Tensor<Dtype>& x, Tensor<Dtype>& prob,
                               const std::vector<Tensor<Dtype>*>& top) {
  prob.reshape_like(x);
  top[0]->reshape({});
  if (top.size() > 1) {
    top[1]->reshape_like(x);
    top[1]->share_data(prob);
  }
}

}  // namespace crema
