// Broadcast scale and bias: descriptor validation and the one device dispatcher.
#include "primitives/scale_bias.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (scale_bias_cpu.cpp, scale_bias_cuda.cu), with the public signatures.
CREMA_BACKENDS(void scale_bias_bwd_bias(Handle& h, const ScaleBiasDesc& sd, const void* dy,
                                        void* dbias, Blend blend);
               void scale_bias_bwd_data(Handle& h, const ScaleBiasDesc& sd, const void* dy,
                                        const void* scale, void* dx, Blend blend);
               void scale_bias_bwd_scale(Handle& h, const ScaleBiasDesc& sd, const void* dy,
                                         const void* x, void* dscale, Blend blend);
               void scale_bias_fwd(Handle& h, const ScaleBiasDesc& sd, const void* x,
                                   const void* scale, const void* bias, void* y, Blend blend);)

namespace {

// Returns false when there is nothing to do.
bool check(const char* op, const ScaleBiasDesc& sd) {
  if (sd.outer < 0 || sd.channels < 0 || sd.inner < 0)
    throw PrimError(std::string(op) + ": negative size " + std::to_string(sd.outer) + "x" +
                    std::to_string(sd.channels) + "x" + std::to_string(sd.inner));
  return sd.count() > 0;
}

}  // namespace

void scale_bias_bwd_bias(Handle& h, const ScaleBiasDesc& sd, const void* dy, void* dbias,
                         Blend blend) {
  if (!check("scale_bias_bwd_bias", sd)) return;
  if (!dy || !dbias) throw PrimError("scale_bias_bwd_bias: null dy or dbias");
  CREMA_DISPATCH(h, scale_bias_bwd_bias, h, sd, dy, dbias, blend);
}

void scale_bias_bwd_data(Handle& h, const ScaleBiasDesc& sd, const void* dy, const void* scale,
                         void* dx, Blend blend) {
  if (!check("scale_bias_bwd_data", sd)) return;
  if (!dy || !scale || !dx) throw PrimError("scale_bias_bwd_data: null dy, scale or dx");
  CREMA_DISPATCH(h, scale_bias_bwd_data, h, sd, dy, scale, dx, blend);
}

void scale_bias_bwd_scale(Handle& h, const ScaleBiasDesc& sd, const void* dy, const void* x,
                          void* dscale, Blend blend) {
  if (!check("scale_bias_bwd_scale", sd)) return;
  if (!dy || !x || !dscale) throw PrimError("scale_bias_bwd_scale: null dy, x or dscale");
  CREMA_DISPATCH(h, scale_bias_bwd_scale, h, sd, dy, x, dscale, blend);
}

void scale_bias_fwd(Handle& h, const ScaleBiasDesc& sd, const void* x, const void* scale,
                    const void* bias, void* y, Blend blend) {
  if (!check("scale_bias_fwd", sd)) return;
  if (!x || !y) throw PrimError("scale_bias_fwd: null x or y");
  if (!scale && !bias) throw PrimError("scale_bias_fwd: neither scale nor bias given");
  CREMA_DISPATCH(h, scale_bias_fwd, h, sd, x, scale, bias, y, blend);
}

}  // namespace crema::prim
