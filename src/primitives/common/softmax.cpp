// Softmax, log-softmax, softmax loss and accuracy: descriptor validation, softmax's
// implementation table (softmax_impl.h) and the one device dispatcher of the others.
#include "primitives/softmax.h"

#include <string>

#include "primitives/common/dispatch.h"
#include "primitives/common/softmax_impl.h"

namespace crema::prim {

// The loss and accuracy implementations (softmax_cpu.cpp, softmax_loss_cuda.cu), with the public
// signatures.
CREMA_BACKENDS(void softmax_loss_fwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob,
                                     const void* label, void* loss);
               void softmax_loss_bwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob,
                                     const void* label, double loss_weight, void* dx);
               void accuracy_fwd(Handle& h, const AccuracyDesc& ad, const void* scores,
                                 const void* label, void* accuracy, void* per_class);)

namespace {

// Each device's softmax rows in order of preference (the kAuto walk).
const SoftmaxImpl* const kTable[] = {
#ifdef CREMA_WITH_CUDA
    &cuda::kSoftmaxWarpRows, &cuda::kSoftmaxBlockRows, &cuda::kSoftmaxSpatial,
#endif
    &cpu::kSoftmaxRows,      &cpu::kSoftmaxSpatial,
};

constexpr std::pair<SoftmaxAlgo, const char*> kNames[] = {
    {SoftmaxAlgo::kAuto, "auto"},          {SoftmaxAlgo::kRows, "rows"},
    {SoftmaxAlgo::kWarpRows, "warp_rows"}, {SoftmaxAlgo::kBlockRows, "block_rows"},
    {SoftmaxAlgo::kSpatial, "spatial"},
};

// "f32 softmax outer 256 channels 1000 inner 1".
std::string call_key(const SoftmaxArgs& a) {
  const SoftmaxDesc& sd = a.sd;
  return std::string(dtype_name(sd.dtype)) + (sd.log ? " log_softmax" : " softmax") + " outer " +
         std::to_string(sd.outer) + " channels " + std::to_string(sd.channels) + " inner " +
         std::to_string(sd.inner);
}

void run(Handle& h, const SoftmaxArgs& a) {
  choose_row(kTable, h, a.sd.algo, a, a.forward ? "softmax_fwd" : "softmax_bwd", softmax_algo_name,
             [&] { return call_key(a); })
      .run(h, a);
}

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
  run(h, SoftmaxArgs{true, sd, x, nullptr, y, blend});
}

void softmax_bwd(Handle& h, const SoftmaxDesc& sd, const void* y, const void* dy, void* dx,
                 Blend blend) {
  check_shape("softmax_bwd", sd, false);
  if (sd.outer * sd.channels * sd.inner == 0) return;
  check_ptrs("softmax_bwd", y && dy && dx);
  run(h, SoftmaxArgs{false, sd, y, dy, dx, blend});
}

const char* softmax_algo_name(SoftmaxAlgo a) { return name_in(kNames, a); }

SoftmaxAlgo softmax_algo_of(const std::string& name) { return algo_in(kNames, name, "softmax"); }

std::vector<SoftmaxAlgo> softmax_algos(Device device) { return table_algos(kTable, device); }

const char* softmax_fwd_unsupported(Handle& h, const SoftmaxDesc& sd, const void* x, const void* y,
                                    Blend blend) {
  return forced_unsupported(kTable, h.device(), sd.algo,
                            SoftmaxArgs{true, sd, x, nullptr, const_cast<void*>(y), blend});
}

const char* softmax_bwd_unsupported(Handle& h, const SoftmaxDesc& sd, const void* y, const void* dy,
                                    const void* dx, Blend blend) {
  return forced_unsupported(kTable, h.device(), sd.algo,
                            SoftmaxArgs{false, sd, y, dy, const_cast<void*>(dx), blend});
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
