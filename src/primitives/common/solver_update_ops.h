// Per-element math of solver_update (formulas in solver_update.h), written once for the CPU
// loop and the CUDA kernel. The rule is a template parameter, so each backend compiles one
// branch-free body per rule.
#pragma once

#include <cmath>
#include <cstdint>

#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE
#include "primitives/solver_update.h"

namespace crema::prim::update_ops {

template <typename T>
struct Coefficients {
  T grad_scale, decay, rate, momentum, one_minus_momentum, one_plus_momentum, momentum2,
      one_minus_momentum2, rms_decay, one_minus_rms_decay, delta;
  bool scale_grad;
  Regularization regularization;
};

template <typename T>
Coefficients<T> coefficients(const SolverUpdateDesc& d) {
  // Derived constants round in T, as the solver computes them in its Dtype.
  const T m = T(d.momentum), m2 = T(d.momentum2), rd = T(d.rms_decay);
  return {T(d.grad_scale),
          T(d.decay),
          T(d.rate),
          m,
          T(1) - m,
          T(1) + m,
          m2,
          T(1) - m2,
          rd,
          T(1) - rd,
          T(d.delta),
          d.grad_scale != 1.0,
          d.regularization};
}

// Updates element i of w, g, h, h2 in place.
template <UpdateRule R, typename T>
CREMA_HOST_DEVICE inline void update_one(const Coefficients<T>& k, int64_t i, T* w, T* g, T* h,
                                         T* h2) {
  T gi = g[i];
  if (k.scale_grad) gi = gi * k.grad_scale;
  const T wi = w[i];
  if (k.regularization == Regularization::kL2) {
    gi = k.decay * wi + gi;
  } else if (k.regularization == Regularization::kL1) {
    const T sign = wi > T(0) ? T(1) : wi < T(0) ? T(-1) : T(0);
    gi = k.decay * sign + gi;
  }
  if constexpr (R == UpdateRule::kSgd) {
    const T hi = k.rate * gi + k.momentum * h[i];
    h[i] = hi;
    gi = hi;
  } else if constexpr (R == UpdateRule::kNesterov) {
    const T old = h[i];
    const T hi = k.rate * gi + k.momentum * old;
    h[i] = hi;
    gi = k.one_plus_momentum * hi + (-k.momentum) * old;
  } else if constexpr (R == UpdateRule::kAdaGrad) {
    const T hi = gi * gi + h[i];
    h[i] = hi;
    gi = k.rate * (gi / (std::sqrt(hi) + k.delta));
  } else if constexpr (R == UpdateRule::kRmsProp) {
    const T hi = k.one_minus_rms_decay * (gi * gi) + k.rms_decay * h[i];
    h[i] = hi;
    gi = k.rate * (gi / (std::sqrt(hi) + k.delta));
  } else if constexpr (R == UpdateRule::kAdaDelta) {
    const T hi = k.one_minus_momentum * (gi * gi) + k.momentum * h[i];
    h[i] = hi;
    gi = gi * std::sqrt((h2[i] + k.delta) / (hi + k.delta));
    h2[i] = k.one_minus_momentum * (gi * gi) + k.momentum * h2[i];
    gi = k.rate * gi;
  } else if constexpr (R == UpdateRule::kAdam) {
    const T m = k.one_minus_momentum * gi + k.momentum * h[i];
    const T v = k.one_minus_momentum2 * (gi * gi) + k.momentum2 * h2[i];
    h[i] = m;
    h2[i] = v;
    gi = k.rate * (m / (std::sqrt(v) + k.delta));
  }
  g[i] = gi;
  w[i] = wi - gi;
}

// Calls fn(std::integral_constant-like tag) with the rule as a compile-time value.
template <UpdateRule R>
struct RuleTag {
  static constexpr UpdateRule value = R;
};

template <typename Fn>
void visit_rule(UpdateRule rule, Fn&& fn) {
  switch (rule) {
    case UpdateRule::kSgd:
      return fn(RuleTag<UpdateRule::kSgd>{});
    case UpdateRule::kNesterov:
      return fn(RuleTag<UpdateRule::kNesterov>{});
    case UpdateRule::kAdaGrad:
      return fn(RuleTag<UpdateRule::kAdaGrad>{});
    case UpdateRule::kRmsProp:
      return fn(RuleTag<UpdateRule::kRmsProp>{});
    case UpdateRule::kAdaDelta:
      return fn(RuleTag<UpdateRule::kAdaDelta>{});
    case UpdateRule::kAdam:
      return fn(RuleTag<UpdateRule::kAdam>{});
  }
}

}  // namespace crema::prim::update_ops
