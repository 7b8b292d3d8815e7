// Batch normalization: descriptor validation and the one device dispatcher.
#include "primitives/batchnorm.h"

#include <cmath>
#include <string>

#include "primitives/dispatch.h"

namespace crema::prim {

// The implementations (batchnorm_cpu.cpp, batchnorm_cuda.cu), with the public signatures.
CREMA_BACKENDS(void batchnorm_bwd_inference(Handle& h, const BatchNormDesc& bd,
                                            const TensorDesc& dyd, const void* dy, const void* var,
                                            const TensorDesc& dxd, void* dx, Blend blend);
               void batchnorm_bwd_training(Handle& h, const BatchNormDesc& bd, const TensorDesc& yd,
                                           const void* y, const void* dy, const void* inv_std,
                                           const TensorDesc& dxd, void* dx, Blend blend);
               void batchnorm_fwd_inference(Handle& h, const BatchNormDesc& bd,
                                            const TensorDesc& xd, const void* x,
                                            const TensorDesc& yd, void* y, const void* mean,
                                            const void* var, Blend blend);
               void batchnorm_fwd_training(Handle& h, const BatchNormDesc& bd, const TensorDesc& xd,
                                           const void* x, const TensorDesc& yd, void* y, void* mean,
                                           void* var, void* inv_std, Blend blend);)

namespace {

std::string dims(const TensorDesc& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w);
}

// The kernels walk packed (n, c) planes, so both tensors must be packed, of one shape and type.
void check(const std::string& op, const BatchNormDesc& bd, const TensorDesc& a,
           const TensorDesc& b) {
  if (!std::isfinite(bd.eps) || bd.eps < 0)
    throw PrimError(op + ": eps must be finite and >= 0, got " + std::to_string(bd.eps));
  if (a.n < 0 || a.c < 0 || a.h < 0 || a.w < 0) throw PrimError(op + ": negative size " + dims(a));
  if (a.dtype != b.dtype)
    throw PrimError(op + ": tensors are " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  if (a.n != b.n || a.c != b.c || a.h != b.h || a.w != b.w)
    throw PrimError(op + ": shapes differ: " + dims(a) + " and " + dims(b));
  if (!a.is_packed_nchw() || !b.is_packed_nchw())
    throw PrimError(op + ": tensors must be packed NCHW");
}

}  // namespace

void batchnorm_bwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& dyd,
                             const void* dy, const void* var, const TensorDesc& dxd, void* dx,
                             Blend blend) {
  check("batchnorm_bwd_inference", bd, dyd, dxd);
  if (dyd.count() == 0) return;
  if (!dy || !var || !dx) throw PrimError("batchnorm_bwd_inference: null dy, var or dx");
  CREMA_DISPATCH(h, batchnorm_bwd_inference, h, bd, dyd, dy, var, dxd, dx, blend);
}

void batchnorm_bwd_training(Handle& h, const BatchNormDesc& bd, const TensorDesc& yd, const void* y,
                            const void* dy, const void* inv_std, const TensorDesc& dxd, void* dx,
                            Blend blend) {
  check("batchnorm_bwd_training", bd, yd, dxd);
  if (yd.count() == 0) return;
  if (!y || !dy || !inv_std || !dx)
    throw PrimError("batchnorm_bwd_training: null y, dy, inv_std or dx");
  CREMA_DISPATCH(h, batchnorm_bwd_training, h, bd, yd, y, dy, inv_std, dxd, dx, blend);
}

void batchnorm_fwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& xd,
                             const void* x, const TensorDesc& yd, void* y, const void* mean,
                             const void* var, Blend blend) {
  check("batchnorm_fwd_inference", bd, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y || !mean || !var) throw PrimError("batchnorm_fwd_inference: null x, y, mean or var");
  CREMA_DISPATCH(h, batchnorm_fwd_inference, h, bd, xd, x, yd, y, mean, var, blend);
}

void batchnorm_fwd_training(Handle& h, const BatchNormDesc& bd, const TensorDesc& xd, const void* x,
                            const TensorDesc& yd, void* y, void* mean, void* var, void* inv_std,
                            Blend blend) {
  check("batchnorm_fwd_training", bd, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("batchnorm_fwd_training: null x or y");
  CREMA_DISPATCH(h, batchnorm_fwd_training, h, bd, xd, x, yd, y, mean, var, inv_std, blend);
}

}  // namespace crema::prim
