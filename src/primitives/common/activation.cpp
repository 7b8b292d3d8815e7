// Activations: descriptor validation and the one device dispatcher.
#include "primitives/activation.h"

#include <cmath>
#include <string>

#include "primitives/common/desc_checks.h"
#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (activation_cpu.cpp, activation_cuda.cu), with the public signatures.
CREMA_BACKENDS(void act_fwd(Handle& h, const ActDesc& ad, const TensorDesc& xd, const void* x,
                            const TensorDesc& yd, void* y, Blend blend);
               void act_bwd(Handle& h, const ActDesc& ad, const TensorDesc& yd, const void* y,
                            const void* dy, const TensorDesc& xd, const void* x, void* dx,
                            Blend blend);)

namespace {

bool finite(std::initializer_list<double> values) {
  for (double v : values)
    if (!std::isfinite(v)) return false;
  return true;
}

void check_desc(const std::string& op, const ActDesc& ad) {
  if (int(ad.mode) < int(ActMode::kRelu) || int(ad.mode) > int(ActMode::kSwish))
    throw PrimError(op + ": unknown activation mode");
  if (!finite({ad.relu_negative_slope, ad.elu_alpha, ad.power, ad.scale, ad.shift, ad.base,
               ad.threshold, ad.clip_min, ad.clip_max, ad.swish_beta}))
    throw PrimError(op + ": activation parameters must be finite");
  if ((ad.mode == ActMode::kExp || ad.mode == ActMode::kLog) && !(ad.base == -1 || ad.base > 0))
    throw PrimError(op + ": base must be positive or -1 (for e), got " + std::to_string(ad.base));
  // ln(1) = 0 would divide by zero.
  if (ad.mode == ActMode::kLog && ad.base == 1) throw PrimError(op + ": log base 1 is undefined");
  if (ad.mode == ActMode::kClip && ad.clip_min > ad.clip_max)
    throw PrimError(op + ": clip min " + std::to_string(ad.clip_min) + " is above max " +
                    std::to_string(ad.clip_max));
}

}  // namespace

bool act_bwd_reads_x(const ActDesc& ad) {
  switch (ad.mode) {
    case ActMode::kRelu:
    case ActMode::kElu:
    case ActMode::kAbsVal:
    case ActMode::kLog:
    case ActMode::kClip:
    case ActMode::kSwish:
      return true;
    case ActMode::kPower:  // an affine or constant map has a gradient independent of x
      return ad.power != 1 && ad.power * ad.scale != 0;
    default:
      return false;
  }
}

bool act_bwd_reads_y(const ActDesc& ad) {
  return ad.mode == ActMode::kSigmoid || ad.mode == ActMode::kTanh || ad.mode == ActMode::kElu ||
         ad.mode == ActMode::kExp || ad.mode == ActMode::kBnll;
}

bool act_has_bwd(const ActDesc& ad) { return ad.mode != ActMode::kThreshold; }

void act_fwd(Handle& h, const ActDesc& ad, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend) {
  check_desc("act_fwd", ad);
  check_dense_pair("act_fwd", xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("act_fwd: null x or y");
  CREMA_DISPATCH(h, act_fwd, h, ad, xd, x, yd, y, blend);
}

void act_bwd(Handle& h, const ActDesc& ad, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  check_desc("act_bwd", ad);
  check_dense_pair("act_bwd", xd, yd);
  if (!act_has_bwd(ad))
    throw PrimError("act_bwd: threshold is a step function and has no gradient");
  if (xd.count() == 0) return;
  if (!dy || !dx) throw PrimError("act_bwd: null dy or dx");
  if (act_bwd_reads_x(ad) && !x) throw PrimError("act_bwd: this mode's gradient needs x");
  if (act_bwd_reads_y(ad) && !y) throw PrimError("act_bwd: this mode's gradient needs y");
  CREMA_DISPATCH(h, act_bwd, h, ad, yd, y, dy, xd, x, dx, blend);
}

}  // namespace crema::prim
