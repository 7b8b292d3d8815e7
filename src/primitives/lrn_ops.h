// The per-element math of LRN written once for both backends: s -> s^-beta for the common
// exponents without pow (CaffeNet's 0.75 is 1 / (sqrt(s) * sqrt(sqrt(s))), several times faster
// and as exact), chosen once per call by visit so inner loops and kernels stay branch-free.
// Formulas: lrn.h.
#pragma once

#include <cmath>

#include "primitives/philox.h"  // CREMA_HOST_DEVICE

namespace crema::prim::lrn_ops {

template <typename T>
struct NegPow075 {
  CREMA_HOST_DEVICE T operator()(T s) const {
    const T r = std::sqrt(s);
    return T(1) / (r * std::sqrt(r));
  }
};

template <typename T>
struct NegPow05 {
  CREMA_HOST_DEVICE T operator()(T s) const { return T(1) / std::sqrt(s); }
};

template <typename T>
struct NegPow1 {
  CREMA_HOST_DEVICE T operator()(T s) const { return T(1) / s; }
};

template <typename T>
struct NegPowGeneral {
  T nb;  // -beta
  CREMA_HOST_DEVICE T operator()(T s) const { return std::pow(s, nb); }
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
