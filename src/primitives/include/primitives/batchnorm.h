// Batch normalization without a learned scale and shift (Caffe's BatchNorm; cuDNN's spatial
// batch norm with scale 1 and bias 0) on packed NCHW tensors. Statistics are per channel c,
// over the m = N * H * W values of that channel.
//
// Training (the batch's own statistics):
//   mean_c    = 1/m * sum_{n,h,w} x
//   var_c     = 1/m * sum_{n,h,w} (x - mean_c)^2          (biased: what the batch is normalized by)
//   inv_std_c = 1 / sqrt(var_c + eps)
//   y         = (x - mean_c) * inv_std_c
//   dx        = inv_std_c * (dy - mean_c(dy) - y * mean_c(dy * y))
// (mean and var depend on x, hence the two correction terms; mean_c(v) is the channel mean of v.)
//
// Inference (statistics given, e.g. running averages; they do not depend on x):
//   y  = (x - mean_c) / sqrt(var_c + eps)
//   dx = dy / sqrt(var_c + eps)
//
// The running averages are the caller's business (Caffe's update, with its unbiased m/(m-1)
// variance correction, is done by the layer from the batch mean and var written here).
//
// Blends: out = alpha * op + beta * out. y may be x itself (in place: each channel's statistics
// are complete before the channel is written), and dx may be dy; other overlaps are undefined.
// batchnorm_bwd_training needs y as batchnorm_fwd_training produced it with the default blend
// (alpha 1, beta 0): y is the normalized input there. Statistics are C-element vectors of the
// tensor's dtype; the training outputs mean, var and inv_std may each be null when not wanted.
//
// Fused forms (cuDNN's bnScale, bnBias and activation; Caffe's BatchNorm, Scale and ReLU on one
// blob, which the Net runs as one layer): with x_hat the normalized input,
//   z  = gamma_c * x_hat + beta_c        y = relu ? (z > 0 ? z : negative_slope * z) : z
//   dz = relu ? (z > 0 ? dy : negative_slope * dy) : dy
//   dgamma_c += sum dz * x_hat           dbeta_c += sum dz
//   dx = gamma_c * inv_std_c * (dz - mean_c(dz) - x_hat * mean_c(dz * x_hat))     (training)
// Forward training also writes x_hat (when not null), which the fused backward takes in place
// of y. The plain functions are these with gamma 1, beta 0 and no relu. y may be x, dx may be
// dy; x_hat must not overlap either. dgamma and dbeta may each be null when not wanted.
#pragma once

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct BatchNormDesc {
  double eps = 1e-5;  // added to the variance before the square root; >= 0
};

// What the fused forms apply after the normalization. gamma and beta are C values of the
// tensor's dtype; null means 1 and 0.
struct BatchNormEpilogue {
  const void* gamma = nullptr;
  const void* beta = nullptr;
  bool relu = false;
  double negative_slope = 0;
};

void batchnorm_bwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& dyd,
                             const void* dy, const void* var, const TensorDesc& dxd, void* dx,
                             Blend blend = {});
void batchnorm_bwd_training(Handle& h, const BatchNormDesc& bd, const TensorDesc& yd, const void* y,
                            const void* dy, const void* inv_std, const TensorDesc& dxd, void* dx,
                            Blend blend = {});
void batchnorm_fwd_inference(Handle& h, const BatchNormDesc& bd, const TensorDesc& xd,
                             const void* x, const TensorDesc& yd, void* y, const void* mean,
                             const void* var, Blend blend = {});
void batchnorm_fwd_training(Handle& h, const BatchNormDesc& bd, const TensorDesc& xd, const void* x,
                            const TensorDesc& yd, void* y, void* mean, void* var, void* inv_std,
                            Blend blend = {});

void batchnorm_fwd_training_fused(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                  const TensorDesc& xd, const void* x, const TensorDesc& yd,
                                  void* y, void* x_hat, void* mean, void* var, void* inv_std);
void batchnorm_fwd_inference_fused(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                   const TensorDesc& xd, const void* x, const TensorDesc& yd,
                                   void* y, const void* mean, const void* var);
void batchnorm_bwd_training_fused(Handle& h, const BatchNormDesc& bd, const BatchNormEpilogue& ep,
                                  const TensorDesc& xd, const void* x_hat, const void* dy,
                                  const void* inv_std, void* dgamma, void* dbeta,
                                  const TensorDesc& dxd, void* dx);

}  // namespace crema::prim
