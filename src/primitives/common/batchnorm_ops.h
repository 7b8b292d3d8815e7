// The per-element math of the batchnorm primitives' epilogue (batchnorm.h), written once for both
// backends and callable on the host and in CUDA kernels.
#pragma once

#include <cstdint>

#include "primitives/batchnorm.h"
#include "primitives/common/activation_ops.h"

namespace crema::prim::bn_ops {

template <typename T>
struct Epilogue {
  const T* gamma;  // null: 1
  const T* beta;   // null: 0
  bool relu;
  T slope;

  explicit Epilogue(const BatchNormEpilogue& ep)
      : gamma(static_cast<const T*>(ep.gamma)),
        beta(static_cast<const T*>(ep.beta)),
        relu(ep.relu),
        slope(T(ep.negative_slope)) {}

  CREMA_HOST_DEVICE T gain(int64_t c) const { return gain_of(param(gamma, c)); }
  CREMA_HOST_DEVICE T gain_of(T g) const { return gamma ? g : T(1); }
  // z = gamma_c * x_hat + beta_c: the forward's activation input, recomputed by the backward
  // with the same arithmetic, so the ReLU's mask is the one the forward applied. The *_of forms
  // take the channel's gamma and beta already read (g, b: unused where gamma, beta are null).
  CREMA_HOST_DEVICE T z_of(T x_hat, T g, T b) const {
    const T v = gamma ? x_hat * g : x_hat;
    return beta ? v + b : v;
  }
  CREMA_HOST_DEVICE T fwd_of(T x_hat, T g, T b) const {
    const T v = z_of(x_hat, g, b);
    return relu ? act_ops::Relu<T>{slope}.fwd(v) : v;
  }
  // dz: the gradient at z from the gradient at y.
  CREMA_HOST_DEVICE T grad_of(T x_hat, T dy, T g, T b) const {
    return relu ? act_ops::Relu<T>{slope}.bwd(z_of(x_hat, g, b), T(0), dy) : dy;
  }
  CREMA_HOST_DEVICE T fwd(T x_hat, int64_t c) const {
    return fwd_of(x_hat, param(gamma, c), param(beta, c));
  }
  CREMA_HOST_DEVICE T grad(T x_hat, T dy, int64_t c) const {
    return grad_of(x_hat, dy, param(gamma, c), param(beta, c));
  }

 private:
  CREMA_HOST_DEVICE static T param(const T* p, int64_t c) { return p ? p[c] : T(0); }
};

}  // namespace crema::prim::bn_ops
