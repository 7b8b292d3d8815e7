// Batch normalization: descriptor validation and the one device dispatcher.
#include "primitives/batchnorm.h"

#include <cmath>
#include <string>

#include "primitives/common/desc_checks.h"
#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (batchnorm_cpu.cpp, batchnorm_cuda.cu): the training and forward
// inference ones take the epilogue of the fused forms (empty for the plain ones) and a blend.
CREMA_BACKENDS(
    void batchnorm_bwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& dyd,
                                 const void* dy, const void* var, const TensorDesc& dxd, void* dx,
                                 Blend blend);
    void batchnorm_bwd_training(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                const TensorDesc& yd, const void* x_hat, const void* dy,
                                const void* inv_std, void* dgamma, void* dbeta,
                                const TensorDesc& dxd, void* dx, Blend blend);
    void batchnorm_fwd_inference(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                 const TensorDesc& xd, const void* x, const TensorDesc& yd, void* y,
                                 const void* mean, const void* var, Blend blend);
    void batchnorm_fwd_training(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                const TensorDesc& xd, const void* x, const TensorDesc& yd, void* y,
                                void* x_hat, void* mean, void* var, void* inv_std, Blend blend);)

namespace {

// eps and the two tensors (desc_checks.h).
void check(const std::string& op, const BatchNormDesc& bd, const TensorDesc& a,
           const TensorDesc& b) {
  check_eps(op, bd.eps);
  check_dense_pair(op, a, b);
}

void check_epilogue(const std::string& op, const BatchNormEpilogue& ep) {
  if (!std::isfinite(ep.negative_slope))
    throw PrimError(op + ": negative_slope must be finite, got " +
                    std::to_string(ep.negative_slope));
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
  CREMA_DISPATCH(h, batchnorm_bwd_training, h, bd, BatchNormEpilogue{}, yd, y, dy, inv_std, nullptr,
                 nullptr, dxd, dx, blend);
}

void batchnorm_fwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& xd,
                             const void* x, const TensorDesc& yd, void* y, const void* mean,
                             const void* var, Blend blend) {
  check("batchnorm_fwd_inference", bd, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y || !mean || !var) throw PrimError("batchnorm_fwd_inference: null x, y, mean or var");
  CREMA_DISPATCH(h, batchnorm_fwd_inference, h, bd, BatchNormEpilogue{}, xd, x, yd, y, mean, var,
                 blend);
}

void batchnorm_fwd_training(Handle& h, const BatchNormDesc& bd, const TensorDesc& xd, const void* x,
                            const TensorDesc& yd, void* y, void* mean, void* var, void* inv_std,
                            Blend blend) {
  check("batchnorm_fwd_training", bd, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("batchnorm_fwd_training: null x or y");
  CREMA_DISPATCH(h, batchnorm_fwd_training, h, bd, BatchNormEpilogue{}, xd, x, yd, y, nullptr, mean,
                 var, inv_std, blend);
}

void batchnorm_fwd_training_fused(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                  const TensorDesc& xd, const void* x, const TensorDesc& yd,
                                  void* y, void* x_hat, void* mean, void* var, void* inv_std) {
  check("batchnorm_fwd_training_fused", bd, xd, yd);
  check_epilogue("batchnorm_fwd_training_fused", ep);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("batchnorm_fwd_training_fused: null x or y");
  CREMA_DISPATCH(h, batchnorm_fwd_training, h, bd, ep, xd, x, yd, y, x_hat, mean, var, inv_std,
                 Blend{});
}

void batchnorm_fwd_inference_fused(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                   const TensorDesc& xd, const void* x, const TensorDesc& yd,
                                   void* y, const void* mean, const void* var) {
  check("batchnorm_fwd_inference_fused", bd, xd, yd);
  check_epilogue("batchnorm_fwd_inference_fused", ep);
  if (xd.count() == 0) return;
  if (!x || !y || !mean || !var)
    throw PrimError("batchnorm_fwd_inference_fused: null x, y, mean or var");
  CREMA_DISPATCH(h, batchnorm_fwd_inference, h, bd, ep, xd, x, yd, y, mean, var, Blend{});
}

void batchnorm_bwd_training_fused(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                  const TensorDesc& xd, const void* x_hat, const void* dy,
                                  const void* inv_std, void* dgamma, void* dbeta,
                                  const TensorDesc& dxd, void* dx) {
  check("batchnorm_bwd_training_fused", bd, xd, dxd);
  check_epilogue("batchnorm_bwd_training_fused", ep);
  if (xd.count() == 0) return;
  if (!x_hat || !dy || !inv_std || !dx)
    throw PrimError("batchnorm_bwd_training_fused: null x_hat, dy, inv_std or dx");
  CREMA_DISPATCH(h, batchnorm_bwd_training, h, bd, ep, xd, x_hat, dy, inv_std, dgamma, dbeta, dxd,
                 dx, Blend{});
}

}  // namespace crema::prim
