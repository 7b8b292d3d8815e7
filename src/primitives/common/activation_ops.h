// The per-element math of every activation mode, written once for both backends: each mode is
// a small functor with fwd(x) and bwd(x, y, dy), callable on the host and in CUDA kernels. The
// CPU runs one loop per functor (so the compiler vectorizes it), CUDA one kernel per functor.
// Formulas: activation.h.
#pragma once

#include <algorithm>
#include <cmath>

#include "primitives/activation.h"
#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE

namespace crema::prim::act_ops {

template <typename T>
struct Relu {
  T slope;
  CREMA_HOST_DEVICE T fwd(T x) const { return x > T(0) ? x : x * slope; }
  CREMA_HOST_DEVICE T bwd(T x, T, T dy) const { return x > T(0) ? dy : dy * slope; }
};

template <typename T>
struct Sigmoid {
  CREMA_HOST_DEVICE T fwd(T x) const { return T(1) / (T(1) + std::exp(-x)); }
  CREMA_HOST_DEVICE T bwd(T, T y, T dy) const { return dy * y * (T(1) - y); }
};

template <typename T>
struct Tanh {
  CREMA_HOST_DEVICE T fwd(T x) const { return std::tanh(x); }
  CREMA_HOST_DEVICE T bwd(T, T y, T dy) const { return dy * (T(1) - y * y); }
};

template <typename T>
struct Elu {
  T alpha;
  // exp of min(x, 0) only: the positive branch must not overflow into the unused result.
  CREMA_HOST_DEVICE T fwd(T x) const {
    return x > T(0) ? x : alpha * (std::exp(x < T(0) ? x : T(0)) - T(1));
  }
  CREMA_HOST_DEVICE T bwd(T x, T y, T dy) const { return x > T(0) ? dy : dy * (y + alpha); }
};

template <typename T>
struct AbsVal {
  CREMA_HOST_DEVICE T fwd(T x) const { return std::fabs(x); }
  CREMA_HOST_DEVICE T bwd(T x, T, T dy) const { return x > T(0) ? dy : x < T(0) ? -dy : T(0); }
};

// Power in three forms so the common exponents avoid pow: affine (1), square (2), general.
template <typename T>
struct PowerAffine {
  T scale, shift;
  CREMA_HOST_DEVICE T fwd(T x) const { return shift + scale * x; }
  CREMA_HOST_DEVICE T bwd(T, T, T dy) const { return dy * scale; }
};

template <typename T>
struct PowerSquare {
  T scale, shift;
  CREMA_HOST_DEVICE T fwd(T x) const {
    const T u = shift + scale * x;
    return u * u;
  }
  CREMA_HOST_DEVICE T bwd(T x, T, T dy) const { return dy * T(2) * scale * (shift + scale * x); }
};

template <typename T>
struct PowerGeneral {
  T scale, shift, power;
  CREMA_HOST_DEVICE T fwd(T x) const { return std::pow(shift + scale * x, power); }
  CREMA_HOST_DEVICE T bwd(T x, T, T dy) const {
    // Caffe's rule: the gradient is 0 when power * scale is 0 (a constant map).
    return power * scale == T(0) ? T(0)
                                 : dy * power * scale * std::pow(shift + scale * x, power - T(1));
  }
};

// base^(shift + scale x) = exp(ln(base) * scale * x) * base^shift.
template <typename T>
struct Exp {
  T inner, outer;  // ln(base) * scale, base^shift
  CREMA_HOST_DEVICE T fwd(T x) const { return outer * std::exp(inner * x); }
  CREMA_HOST_DEVICE T bwd(T, T y, T dy) const { return dy * y * inner; }
};

template <typename T>
struct Log {
  T scale, shift, inv_lb;  // inv_lb = 1 / ln(base)
  CREMA_HOST_DEVICE T fwd(T x) const { return std::log(shift + scale * x) * inv_lb; }
  CREMA_HOST_DEVICE T bwd(T x, T, T dy) const { return dy * scale * inv_lb / (shift + scale * x); }
};

template <typename T>
struct Bnll {
  // log(1 + exp(x)) without overflow: x + log(1 + exp(-x)) for positive x.
  CREMA_HOST_DEVICE T fwd(T x) const {
    return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  // sigmoid(x) = 1 - exp(-softplus(x)); expm1 keeps it accurate where y is tiny.
  CREMA_HOST_DEVICE T bwd(T, T y, T dy) const { return -dy * std::expm1(-y); }
};

template <typename T>
struct Threshold {
  T threshold;
  CREMA_HOST_DEVICE T fwd(T x) const { return x > threshold ? T(1) : T(0); }
  CREMA_HOST_DEVICE T bwd(T, T, T) const { return T(0); }  // refused by the dispatcher
};

template <typename T>
struct Clip {
  T lo, hi;
  CREMA_HOST_DEVICE T fwd(T x) const { return x < lo ? lo : x > hi ? hi : x; }
  CREMA_HOST_DEVICE T bwd(T x, T, T dy) const { return x >= lo && x <= hi ? dy : T(0); }
};

template <typename T>
struct Swish {
  T beta;
  CREMA_HOST_DEVICE T fwd(T x) const { return x / (T(1) + std::exp(-beta * x)); }
  CREMA_HOST_DEVICE T bwd(T x, T, T dy) const {
    const T s = T(1) / (T(1) + std::exp(-beta * x));
    const T by = beta * x * s;
    return dy * (by + s * (T(1) - by));
  }
};

// ln(base), with Caffe's -1 meaning e.
inline double log_base(double base) { return base == -1 ? 1.0 : std::log(base); }

// Builds the functor for ad.mode and calls fn(op) with it: the one place a mode becomes code.
template <typename T, typename Fn>
void visit(const ActDesc& ad, Fn&& fn) {
  const T scale = T(ad.scale), shift = T(ad.shift);
  switch (ad.mode) {
    case ActMode::kRelu:
      return fn(Relu<T>{T(ad.relu_negative_slope)});
    case ActMode::kSigmoid:
      return fn(Sigmoid<T>{});
    case ActMode::kTanh:
      return fn(Tanh<T>{});
    case ActMode::kElu:
      return fn(Elu<T>{T(ad.elu_alpha)});
    case ActMode::kAbsVal:
      return fn(AbsVal<T>{});
    case ActMode::kPower:
      if (ad.power == 1) return fn(PowerAffine<T>{scale, shift});
      if (ad.power == 2) return fn(PowerSquare<T>{scale, shift});
      return fn(PowerGeneral<T>{scale, shift, T(ad.power)});
    case ActMode::kExp: {
      const double lb = log_base(ad.base);
      return fn(Exp<T>{T(lb * ad.scale), T(std::exp(lb * ad.shift))});
    }
    case ActMode::kLog:
      return fn(Log<T>{scale, shift, T(1.0 / log_base(ad.base))});
    case ActMode::kBnll:
      return fn(Bnll<T>{});
    case ActMode::kThreshold:
      return fn(Threshold<T>{T(ad.threshold)});
    case ActMode::kClip:
      return fn(Clip<T>{T(ad.clip_min), T(ad.clip_max)});
    case ActMode::kSwish:
      return fn(Swish<T>{T(ad.swish_beta)});
  }
}

}  // namespace crema::prim::act_ops
