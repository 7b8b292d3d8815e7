// The label rules of the softmax loss and accuracy, written once for both backends: which class
// a stored label names (or that it is ignored or invalid), the error naming an invalid one,
// Caffe's loss normalizer, and the top-k test with Caffe's tie rule. Formulas: softmax.h.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>

#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE
#include "primitives/softmax.h"

namespace crema::prim::softmax_ops {

inline constexpr int64_t kIgnored = -1;
inline constexpr int64_t kInvalid = -2;

// Labels are stored in the data type, as Caffe stores them: the class, kIgnored for the ignore
// label, or kInvalid for anything that is not an integer in [0, channels) (NaN included).
template <typename T>
CREMA_HOST_DEVICE inline int64_t label_class(T label, int64_t channels, bool has_ignore,
                                             int ignore) {
  if (has_ignore && label == T(ignore)) return kIgnored;
  if (!(label >= T(0) && label < T(channels) && std::floor(label) == label)) return kInvalid;
  return int64_t(label);
}

// The user error for an invalid label: names the label and where it is.
inline std::string bad_label_message(const char* op, double label, int64_t pos, int64_t inner,
                                     int64_t channels, bool has_ignore, int ignore) {
  return std::string(op) + ": label " + std::to_string(label) + " at position " +
         std::to_string(pos) + " (outer " + std::to_string(pos / inner) + ", inner " +
         std::to_string(pos % inner) + ") is not an integer in [0, " + std::to_string(channels) +
         ")" + (has_ignore ? " nor the ignore label " + std::to_string(ignore) : "");
}

[[noreturn]] inline void throw_bad_label(const char* op, double label, int64_t pos, int64_t inner,
                                         int64_t channels, bool has_ignore, int ignore) {
  throw PrimError(bad_label_message(op, label, pos, inner, channels, has_ignore, ignore));
}

// Caffe's LossLayer::GetNormalizer, including its clamp to at least 1 so an all-ignored batch
// gives loss 0 rather than 0/0.
CREMA_HOST_DEVICE inline double normalizer(LossNormalization mode, int64_t outer, int64_t inner,
                                           int64_t valid) {
  double n = 1;
  switch (mode) {
    case LossNormalization::kFull:
      n = double(outer * inner);
      break;
    case LossNormalization::kValid:
      n = double(valid);
      break;
    case LossNormalization::kBatchSize:
      n = double(outer);
      break;
    case LossNormalization::kNone:
      n = 1;
      break;
  }
  return n > 1.0 ? n : 1.0;
}

// The label's class is in the top k when fewer than k other classes score at least as high (a
// tie counts against the label, as in Caffe). `at_least` counts the classes scoring >= the
// label's score, the label itself included.
CREMA_HOST_DEVICE inline bool in_top_k(int64_t at_least, int top_k) { return at_least - 1 < top_k; }
// The verdict once counting is done: the label's own score counts itself unless it is NaN, and a
// NaN score is never a correct prediction (for finite scores this is in_top_k).
CREMA_HOST_DEVICE inline bool label_correct(int64_t at_least, int top_k) {
  return at_least >= 1 && in_top_k(at_least, top_k);
}

// The loss term of one valid position: -log of the label's probability, clamped to FLT_MIN. A
// NaN stays NaN, as with Caffe's std::max(p, FLT_MIN): a diverged net must not report the
// clamp's 87.3365 as its loss.
CREMA_HOST_DEVICE inline double loss_term(double p) {
  return -std::log(p < double(FLT_MIN) ? double(FLT_MIN) : p);
}

}  // namespace crema::prim::softmax_ops
