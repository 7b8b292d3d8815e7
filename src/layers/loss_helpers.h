// Helpers shared by the loss layers: LossParameter's normalization mode with Caffe's precedence.
#pragma once

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

}  // namespace crema
