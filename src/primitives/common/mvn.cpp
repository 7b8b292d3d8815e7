// Mean-variance normalization: descriptor validation and the one device dispatcher.
#include "primitives/mvn.h"

#include <string>

#include "primitives/common/desc_checks.h"
#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (mvn_cpu.cpp, mvn_cuda.cu), with the public signatures.
CREMA_BACKENDS(void mvn_bwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x,
                            const void* dy, const TensorDesc& dxd, void* dx, Blend blend);
               void mvn_fwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x,
                            const TensorDesc& yd, void* y, Blend blend);)

namespace {

// eps and the two tensors (desc_checks.h).
void check(const std::string& op, const MvnDesc& md, const TensorDesc& a, const TensorDesc& b) {
  check_eps(op, md.eps);
  check_packed_pair(op, a, b);
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
