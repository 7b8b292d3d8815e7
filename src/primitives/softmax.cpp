// Softmax, log-softmax, softmax loss and accuracy: descriptor validation and the one device
// dispatcher per entry point.
#include "primitives/softmax.h"

#include <string>

#include "primitives/dispatch.h"

namespace crema::prim {

// The implementations (softmax_cpu.cpp, softmax_cuda.cu), with the public signatures.
CREMA_BACKENDS(void softmax_fwd(Handle& h, const SoftmaxDesc& sd, const void* x, void* y,
                                Blend blend);
               void softmax_bwd(Handle& h, const SoftmaxDesc& sd, const void* y, const void* dy,
                                void* dx, Blend blend);
               void softmax_loss_fwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob,
                                     const void* label, void* loss);
               void softmax_loss_bwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob,
                                     const void* label, double loss_weight, void* dx);
               void accuracy_fwd(Handle& h, const AccuracyDesc& ad, const void* scores,
                                 const void* label, void* accuracy, void* per_class);)

namespace {

// Shared by every descriptor here: each views its data as (outer, channels, inner), packed.
template <typename D>
void check_shape(const char* op, const D& d, bool need_channels) {
  if (d.outer < 0 || d.channels < 0 || d.inner < 0)
    throw PrimError(std::string(op) + ": negative size (outer " + std::to_string(d.outer) +
                    ", channels " + std::to_string(d.channels) + ", inner " +
                    std::to_string(d.inner) + ")");
  // A label needs at least one class to point at.
  if (need_channels && d.channels < 1)
    throw PrimError(std::string(op) + ": channels must be at least 1");
}

void check_ptrs(const char* op, bool ok) {
  if (!ok) throw PrimError(std::string(op) + ": null data pointer");
}

}  // namespace

void softmax_fwd(Handle& h, const SoftmaxDesc& sd, const void* x, void* y, Blend blend) {
  check_shape("softmax_fwd", sd, false);
  if (sd.outer * sd.channels * sd.inner == 0) return;
  check_ptrs("softmax_fwd", x && y);
  CREMA_DISPATCH(h, softmax_fwd, h, sd, x, y, blend);
}

void softmax_bwd(Handle& h, const SoftmaxDesc& sd, const void* y, const void* dy, void* dx,
                 Blend blend) {
  check_shape("softmax_bwd", sd, false);
  if (sd.outer * sd.channels * sd.inner == 0) return;
  check_ptrs("softmax_bwd", y && dy && dx);
  CREMA_DISPATCH(h, softmax_bwd, h, sd, y, dy, dx, blend);
}

void softmax_loss_fwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      void* loss) {
  check_shape("softmax_loss_fwd", ld, true);
  // The loss is written even for an empty batch (as 0), so only its pointer is always needed.
  check_ptrs("softmax_loss_fwd", loss && (ld.outer * ld.inner == 0 || (prob && label)));
  CREMA_DISPATCH(h, softmax_loss_fwd, h, ld, prob, label, loss);
}

void softmax_loss_bwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      double loss_weight, void* dx) {
  check_shape("softmax_loss_bwd", ld, true);
  if (ld.outer * ld.inner == 0) return;
  check_ptrs("softmax_loss_bwd", prob && label && dx);
  CREMA_DISPATCH(h, softmax_loss_bwd, h, ld, prob, label, loss_weight, dx);
}

void accuracy_fwd(Handle& h, const AccuracyDesc& ad, const void* scores, const void* label,
                  void* accuracy, void* per_class) {
  check_shape("accuracy_fwd", ad, true);
  // As Caffe: asking for more guesses than there are classes is a configuration mistake.
  if (ad.top_k < 1 || ad.top_k > ad.channels)
    throw PrimError("accuracy_fwd: top_k " + std::to_string(ad.top_k) + " is not in [1, " +
                    std::to_string(ad.channels) + "]");
  check_ptrs("accuracy_fwd", accuracy && (ad.outer * ad.inner == 0 || (scores && label)));
  CREMA_DISPATCH(h, accuracy_fwd, h, ad, scores, label, accuracy, per_class);
}

}  // namespace crema::prim
