// Parametric ReLU: descriptor validation and the one device dispatcher.
#include "primitives/prelu.h"

#include <string>

#include "primitives/common/desc_checks.h"
#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (prelu_cpu.cpp, prelu_cuda.cu), with the public signatures.
CREMA_BACKENDS(void prelu_bwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x,
                              const void* dy, const void* slope, void* dx, void* dslope,
                              Blend dx_blend, Blend dslope_blend);
               void prelu_fwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x,
                              const void* slope, const TensorDesc& yd, void* y, Blend blend);)

namespace {

void check(const std::string& op, const TensorDesc& d) {
  if (d.n < 0 || d.c < 0 || d.h < 0 || d.w < 0) throw PrimError(op + ": negative size " + dims(d));
  if (!d.is_packed_nchw()) throw PrimError(op + ": tensors must be packed NCHW");
}

}  // namespace

void prelu_bwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x, const void* dy,
               const void* slope, void* dx, void* dslope, Blend dx_blend, Blend dslope_blend) {
  check("prelu_bwd", xd);
  if (xd.count() == 0) return;
  if (!x || !dy || !slope) throw PrimError("prelu_bwd: null x, dy or slope");
  if (!dx && !dslope) throw PrimError("prelu_bwd: neither dx nor dslope requested");
  CREMA_DISPATCH(h, prelu_bwd, h, pd, xd, x, dy, slope, dx, dslope, dx_blend, dslope_blend);
}

void prelu_fwd(Handle& h, const PreluDesc& pd, const TensorDesc& xd, const void* x,
               const void* slope, const TensorDesc& yd, void* y, Blend blend) {
  check("prelu_fwd", xd);
  check("prelu_fwd", yd);
  if (xd.dtype != yd.dtype || xd.n != yd.n || xd.c != yd.c || xd.h != yd.h || xd.w != yd.w)
    throw PrimError("prelu_fwd: x is " + std::string(dtype_name(xd.dtype)) + " " + dims(xd) +
                    " but y is " + dtype_name(yd.dtype) + " " + dims(yd));
  if (xd.count() == 0) return;
  if (!x || !slope || !y) throw PrimError("prelu_fwd: null x, slope or y");
  CREMA_DISPATCH(h, prelu_fwd, h, pd, xd, x, slope, yd, y, blend);
}

}  // namespace crema::prim
