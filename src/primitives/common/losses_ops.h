// The per-item math of the loss primitives, written once for both backends (CREMA_HOST_DEVICE:
// the CPU loops and the CUDA kernels call the same functions). Formulas: losses.h. Everything is
// in double, as the CPU accumulates.
#pragma once

#include <cmath>
#include <cstdint>

#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE
#include "primitives/softmax.h"        // LossNormalization

namespace crema::prim::loss_ops {

// Caffe's LossLayer::GetNormalizer, clamped to at least 1 so an all-ignored batch gives 0.
CREMA_HOST_DEVICE inline double normalizer(LossNormalization mode, int64_t num, int64_t per_sample,
                                           int64_t valid) {
  double n = 1;
  switch (mode) {
    case LossNormalization::kFull:
      n = double(num) * double(per_sample);
      break;
    case LossNormalization::kValid:
      n = double(valid);
      break;
    case LossNormalization::kBatchSize:
      n = double(num);
      break;
    case LossNormalization::kNone:
      n = 1;
      break;
  }
  return n > 1.0 ? n : 1.0;
}

// Contrastive: one sample's loss term from its squared distance.
CREMA_HOST_DEVICE inline double contrastive_term(bool similar, bool legacy, double margin,
                                                 double dsq) {
  if (similar) return dsq;
  if (legacy) return margin - dsq > 0.0 ? margin - dsq : 0.0;
  const double m = margin - sqrt(dsq);
  return m > 0.0 ? m * m : 0.0;
}

// Contrastive: the gradient w.r.t. a_n is scale * (a_n - b_n); alpha = loss_weight / N.
CREMA_HOST_DEVICE inline double contrastive_scale(bool similar, bool legacy, double margin,
                                                  double dsq, double alpha) {
  if (similar) return alpha;
  if (legacy) return margin - dsq > 0 ? -alpha : 0.0;
  const double dist = sqrt(dsq), m = margin - dist;
  return m > 0 ? -alpha * m / (dist + 1e-4) : 0.0;
}

// Hinge: v = max(0, 1 + s x) with s = -1 for the true class, +1 otherwise.
CREMA_HOST_DEVICE inline double hinge_margin(bool is_label, double x) {
  const double v = 1.0 + (is_label ? -1.0 : 1.0) * x;
  return v > 0.0 ? v : 0.0;
}
CREMA_HOST_DEVICE inline double hinge_term(bool l2, double v) { return l2 ? v * v : v; }
// d loss / d x before the loss_weight / N factor.
CREMA_HOST_DEVICE inline double hinge_grad(bool l2, bool is_label, double v) {
  const double s = is_label ? -1.0 : 1.0;
  return s * (l2 ? 2 * v : (v > 0 ? 1.0 : 0.0));
}

// -log of a probability clamped to the log threshold. A NaN stays NaN (Caffe's std::max(p,
// FLT_MIN) keeps it too): a diverged net must not report the clamp's 87.3365 as its loss.
CREMA_HOST_DEVICE inline double neg_log_clamped(double p, double threshold) {
  return -log(p < threshold ? threshold : p);
}

// Sigmoid cross entropy: log(1 + exp(v)) - v t, written so exp never overflows.
CREMA_HOST_DEVICE inline double sce_term(double v, double t) {
  return (v > 0.0 ? v : 0.0) - v * t + log1p(exp(-fabs(v)));
}
// sigmoid(v) without overflow on either side.
CREMA_HOST_DEVICE inline double sce_sigmoid(double v) {
  const double e = exp(-fabs(v));
  return v >= 0 ? 1 / (1 + e) : e / (1 + e);
}

}  // namespace crema::prim::loss_ops
