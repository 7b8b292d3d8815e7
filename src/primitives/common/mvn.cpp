// Mean-variance normalization: descriptor validation and the one device dispatcher.
#include "primitives/mvn.h"

#include <cmath>
#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (mvn_cpu.cpp, mvn_cuda.cu), with the public signatures.
CREMA_BACKENDS(void mvn_bwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x,
                            const void* dy, const TensorDesc& dxd, void* dx, Blend blend);
               void mvn_fwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x,
                            const TensorDesc& yd, void* y, Blend blend);)

namespace {

std::string dims(const TensorDesc& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w);
}

// Rows are contiguous runs of a packed tensor: both tensors packed, of one shape and type.
void check(const std::string& op, const MvnDesc& md, const TensorDesc& a, const TensorDesc& b) {
  if (!std::isfinite(md.eps) || md.eps < 0)
    throw PrimError(op + ": eps must be finite and >= 0, got " + std::to_string(md.eps));
  if (a.n < 0 || a.c < 0 || a.h < 0 || a.w < 0) throw PrimError(op + ": negative size " + dims(a));
  if (a.dtype != b.dtype)
    throw PrimError(op + ": tensors are " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  if (a.n != b.n || a.c != b.c || a.h != b.h || a.w != b.w)
    throw PrimError(op + ": shapes differ: " + dims(a) + " and " + dims(b));
  if (!a.is_packed_nchw() || !b.is_packed_nchw())
    throw PrimError(op + ": tensors must be packed NCHW");
}

}  // namespace

void mvn_bwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x, const void* dy,
             const TensorDesc& dxd, void* dx, Blend blend) {
  check("mvn_bwd", md, xd, dxd);
  if (xd.count() == 0) return;
  if (!x || !dy || !dx) throw PrimError("mvn_bwd: null x, dy or dx");
  CREMA_DISPATCH(h, mvn_bwd, h, md, xd, x, dy, dxd, dx, blend);
}

void mvn_fwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend) {
  check("mvn_fwd", md, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("mvn_fwd: null x or y");
  CREMA_DISPATCH(h, mvn_fwd, h, md, xd, x, yd, y, blend);
}

}  // namespace crema::prim
