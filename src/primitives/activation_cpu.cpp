// Activations on the CPU: one tight loop per mode and blend case, so the compiler can vectorize
// them (the mode is chosen once per call, never per element; parameters are hoisted constants).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "primitives/activation.h"

namespace crema::prim::cpu {
namespace {

// out[i] = alpha * f(i) + beta * out[i]; with beta == 0 out is never read, since it may hold
// garbage. f is a lambda, inlined into each loop.
template <typename T, typename F>
void blend_store(int64_t n, Blend blend, T* out, F f) {
  const T alpha = T(blend.alpha), beta = T(blend.beta);
  if (beta == T(0)) {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * f(i) + beta * out[i];
  }
}

// ln(base), with Caffe's -1 meaning e.
double log_base(double base) { return base == -1 ? 1.0 : std::log(base); }

template <typename T>
void fwd(const ActDesc& ad, int64_t n, const T* x, T* y, Blend blend) {
  const T scale = T(ad.scale), shift = T(ad.shift);
  switch (ad.mode) {
    case ActMode::kRelu: {
      const T slope = T(ad.relu_negative_slope);
      blend_store(n, blend, y, [=](int64_t i) { return x[i] > T(0) ? x[i] : x[i] * slope; });
      break;
    }
    case ActMode::kSigmoid:
      blend_store(n, blend, y, [=](int64_t i) { return T(1) / (T(1) + std::exp(-x[i])); });
      break;
    case ActMode::kTanh:
      blend_store(n, blend, y, [=](int64_t i) { return std::tanh(x[i]); });
      break;
    case ActMode::kElu: {
      const T a = T(ad.elu_alpha);
      // exp of min(x, 0) only: the positive branch must not overflow into the unused result.
      blend_store(n, blend, y, [=](int64_t i) {
        return x[i] > T(0) ? x[i] : a * (std::exp(std::min(x[i], T(0))) - T(1));
      });
      break;
    }
    case ActMode::kAbsVal:
      blend_store(n, blend, y, [=](int64_t i) { return std::fabs(x[i]); });
      break;
    case ActMode::kPower: {
      const T p = T(ad.power);
      if (ad.power == 1)
        blend_store(n, blend, y, [=](int64_t i) { return shift + scale * x[i]; });
      else if (ad.power == 2)
        blend_store(n, blend, y, [=](int64_t i) {
          const T u = shift + scale * x[i];
          return u * u;
        });
      else
        blend_store(n, blend, y, [=](int64_t i) { return std::pow(shift + scale * x[i], p); });
      break;
    }
    case ActMode::kExp: {
      // base^(shift + scale x) = exp(ln(base) * scale * x) * base^shift.
      const double lb = log_base(ad.base);
      const T inner = T(lb * ad.scale), outer = T(std::exp(lb * ad.shift));
      blend_store(n, blend, y, [=](int64_t i) { return outer * std::exp(inner * x[i]); });
      break;
    }
    case ActMode::kLog: {
      const T inv_lb = T(1.0 / log_base(ad.base));
      blend_store(n, blend, y, [=](int64_t i) { return std::log(shift + scale * x[i]) * inv_lb; });
      break;
    }
    case ActMode::kBnll:
      // log(1 + exp(x)) without overflow: x + log(1 + exp(-x)) for positive x.
      blend_store(n, blend, y, [=](int64_t i) {
        return x[i] > T(0) ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
      });
      break;
    case ActMode::kThreshold: {
      const T t = T(ad.threshold);
      blend_store(n, blend, y, [=](int64_t i) { return x[i] > t ? T(1) : T(0); });
      break;
    }
    case ActMode::kClip: {
      const T lo = T(ad.clip_min), hi = T(ad.clip_max);
      blend_store(n, blend, y, [=](int64_t i) { return std::max(lo, std::min(x[i], hi)); });
      break;
    }
    case ActMode::kSwish: {
      const T b = T(ad.swish_beta);
      blend_store(n, blend, y, [=](int64_t i) { return x[i] / (T(1) + std::exp(-b * x[i])); });
      break;
    }
  }
}

template <typename T>
void bwd(const ActDesc& ad, int64_t n, const T* y, const T* dy, const T* x, T* dx, Blend blend) {
  const T scale = T(ad.scale), shift = T(ad.shift);
  switch (ad.mode) {
    case ActMode::kRelu: {
      const T slope = T(ad.relu_negative_slope);
      blend_store(n, blend, dx, [=](int64_t i) { return x[i] > T(0) ? dy[i] : dy[i] * slope; });
      break;
    }
    case ActMode::kSigmoid:
      blend_store(n, blend, dx, [=](int64_t i) { return dy[i] * y[i] * (T(1) - y[i]); });
      break;
    case ActMode::kTanh:
      blend_store(n, blend, dx, [=](int64_t i) { return dy[i] * (T(1) - y[i] * y[i]); });
      break;
    case ActMode::kElu: {
      const T a = T(ad.elu_alpha);
      blend_store(n, blend, dx,
                  [=](int64_t i) { return x[i] > T(0) ? dy[i] : dy[i] * (y[i] + a); });
      break;
    }
    case ActMode::kAbsVal:
      blend_store(n, blend, dx, [=](int64_t i) {
        return x[i] > T(0) ? dy[i] : x[i] < T(0) ? -dy[i] : T(0);
      });
      break;
    case ActMode::kPower: {
      const T ds = T(ad.power * ad.scale), pm1 = T(ad.power - 1);
      if (ad.power * ad.scale == 0)
        blend_store(n, blend, dx, [=](int64_t) { return T(0); });
      else if (ad.power == 1)
        blend_store(n, blend, dx, [=](int64_t i) { return dy[i] * scale; });
      else if (ad.power == 2)
        blend_store(n, blend, dx, [=](int64_t i) { return dy[i] * ds * (shift + scale * x[i]); });
      else
        blend_store(n, blend, dx,
                    [=](int64_t i) { return dy[i] * ds * std::pow(shift + scale * x[i], pm1); });
      break;
    }
    case ActMode::kExp: {
      const T inner = T(log_base(ad.base) * ad.scale);
      blend_store(n, blend, dx, [=](int64_t i) { return dy[i] * y[i] * inner; });
      break;
    }
    case ActMode::kLog: {
      const T k = T(ad.scale / log_base(ad.base));
      blend_store(n, blend, dx, [=](int64_t i) { return dy[i] * k / (shift + scale * x[i]); });
      break;
    }
    case ActMode::kBnll:
      // sigmoid(x) = 1 - exp(-softplus(x)); expm1 keeps it accurate where y is tiny.
      blend_store(n, blend, dx, [=](int64_t i) { return -dy[i] * std::expm1(-y[i]); });
      break;
    case ActMode::kThreshold:  // refused by the dispatcher
      break;
    case ActMode::kClip: {
      const T lo = T(ad.clip_min), hi = T(ad.clip_max);
      blend_store(n, blend, dx, [=](int64_t i) { return x[i] >= lo && x[i] <= hi ? dy[i] : T(0); });
      break;
    }
    case ActMode::kSwish: {
      const T b = T(ad.swish_beta);
      blend_store(n, blend, dx, [=](int64_t i) {
        const T s = T(1) / (T(1) + std::exp(-b * x[i]));
        const T by = b * x[i] * s;
        return dy[i] * (by + s * (T(1) - by));
      });
      break;
    }
  }
}

}  // namespace

void act_fwd(Handle&, const ActDesc& ad, const TensorDesc& xd, const void* x, const TensorDesc&,
             void* y, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    fwd(ad, xd.count(), static_cast<const double*>(x), static_cast<double*>(y), blend);
  else
    fwd(ad, xd.count(), static_cast<const float*>(x), static_cast<float*>(y), blend);
}

void act_bwd(Handle&, const ActDesc& ad, const TensorDesc&, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  if (xd.dtype == DataType::kFloat64)
    bwd(ad, xd.count(), static_cast<const double*>(y), static_cast<const double*>(dy),
        static_cast<const double*>(x), static_cast<double*>(dx), blend);
  else
    bwd(ad, xd.count(), static_cast<const float*>(y), static_cast<const float*>(dy),
        static_cast<const float*>(x), static_cast<float*>(dx), blend);
}

}  // namespace crema::prim::cpu
