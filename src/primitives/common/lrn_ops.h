// The per-element math of LRN written once for both backends: s -> s^-beta for the common
// exponents without pow, chosen once per call by visit so inner loops and kernels stay
// branch-free, and 1 / s beside it (the backward needs both). On the GPU they come from the
// reciprocal square root instruction (CaffeNet's 0.75: q = s^-1/2, s^-3/4 = q * q * q^-1/2,
// 1 / s = q * q; a few ulps, where correctly rounded square roots and divisions made the backward
// compute-bound); on the host from the correctly rounded operations, which are cheap there.
// Formulas: lrn.h.
#pragma once

#include <cmath>
#include <type_traits>

#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE

namespace crema::prim::lrn_ops {

// 1 / sqrt(s).
template <typename T>
CREMA_HOST_DEVICE inline T rsqrt_of(T s) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>)
    return rsqrtf(s);
  else
    return rsqrt(s);
#else
  return T(1) / std::sqrt(s);
#endif
}

// 1 / s: the square of rsqrt(s) on the GPU.
template <typename T>
CREMA_HOST_DEVICE inline T recip_of(T s) {
#ifdef __CUDA_ARCH__
  const T q = rsqrt_of(s);
  return q * q;
#else
  return T(1) / s;
#endif
}

template <typename T>
struct NegPow075 {
  CREMA_HOST_DEVICE T operator()(T s) const {
#ifdef __CUDA_ARCH__
    const T q = rsqrt_of(s);
    return q * q * rsqrt_of(q);
#else
    const T r = std::sqrt(s);
    return T(1) / (r * std::sqrt(r));
#endif
  }
  CREMA_HOST_DEVICE T inv(T s) const { return recip_of(s); }
};

template <typename T>
struct NegPow05 {
  CREMA_HOST_DEVICE T operator()(T s) const { return rsqrt_of(s); }
  CREMA_HOST_DEVICE T inv(T s) const { return recip_of(s); }
};

template <typename T>
struct NegPow1 {
  CREMA_HOST_DEVICE T operator()(T s) const { return T(1) / s; }
  CREMA_HOST_DEVICE T inv(T s) const { return T(1) / s; }
};

template <typename T>
struct NegPowGeneral {
  T nb;  // -beta
  CREMA_HOST_DEVICE T operator()(T s) const { return std::pow(s, nb); }
  CREMA_HOST_DEVICE T inv(T s) const { return T(1) / s; }
};

// Calls f with the functor for s^-beta.
template <typename T, typename F>
void visit_neg_pow(double beta, F&& f) {
  if (beta == 0.75)
    f(NegPow075<T>{});
  else if (beta == 0.5)
    f(NegPow05<T>{});
  else if (beta == 1.0)
    f(NegPow1<T>{});
  else
    f(NegPowGeneral<T>{T(-beta)});
}

// The scale from a window sum of squares. A running sum may drift a few ulps below zero after
// subtractions; the clamp makes a window of zeros give exactly k.
template <typename T>
CREMA_HOST_DEVICE inline T scale_of(T k, T a, T window_sum) {
  return k + a * (window_sum > T(0) ? window_sum : T(0));
}

}  // namespace crema::prim::lrn_ops
