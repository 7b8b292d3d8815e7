// CPU implementation of eltwise: each operation is a loop over the elements with the inputs
// combined in registers, so y may alias an input; the stable product gradient multiplies the
// other inputs into a running product per element.
#include <cstdint>

#include "primitives/common/activation_ops.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/eltwise.h"

namespace crema::prim::cpu {
namespace {

template <typename T>
void store(T* out, int64_t i, double v, Blend b) {
  out[i] = b.beta == 0.0 ? T(b.alpha * v) : T(b.alpha * v + b.beta * double(out[i]));
}

template <typename T>
void fwd_impl(const EltwiseDesc& ed, const void* const* xv, void* yv, int32_t* argmax,
              Blend blend) {
  const int K = ed.num_inputs;
  T* y = static_cast<T*>(yv);
  auto in = [&](int k) { return static_cast<const T*>(xv[k]); };
  for (int64_t i = 0; i < ed.n; ++i) {
    double v = 0;
    if (ed.op == EltwiseOp::kSum) {
      for (int k = 0; k < K; ++k) v += (ed.coeff.empty() ? 1.0 : ed.coeff[k]) * double(in(k)[i]);
    } else if (ed.op == EltwiseOp::kProd) {
      T p = in(0)[i];
      for (int k = 1; k < K; ++k) p *= in(k)[i];
      v = double(p);
    } else {
      T m = in(0)[i];
      int32_t at = 0;
      for (int k = 1; k < K; ++k)
        if (in(k)[i] > m) {  // strict: the first maximal input wins a tie
          m = in(k)[i];
          at = k;
        }
      v = double(m);
      if (argmax) argmax[i] = at;
    }
    store(y, i, ed.relu ? act_ops::Relu<double>{ed.negative_slope}.fwd(v) : v, blend);
  }
}

template <typename T>
void bwd_input(const EltwiseDesc& ed, const void* const* xv, const void* yv, const void* dyv,
               const int32_t* argmax, int input, void* dxv, Blend blend) {
  const T* dy = static_cast<const T*>(dyv);
  const T* y = static_cast<const T*>(yv);
  T* dx = static_cast<T*>(dxv);
  switch (ed.op) {
    case EltwiseOp::kSum: {
      const double c = ed.coeff.empty() ? 1.0 : ed.coeff[size_t(input)];
      const act_ops::Relu<double> relu{ed.negative_slope};
      if (ed.relu)
        for (int64_t i = 0; i < ed.n; ++i)
          store(dx, i, c * relu.bwd(double(y[i]), 0.0, double(dy[i])), blend);
      else
        for (int64_t i = 0; i < ed.n; ++i) store(dx, i, c * double(dy[i]), blend);
      break;
    }
    case EltwiseOp::kMax:
      for (int64_t i = 0; i < ed.n; ++i)
        store(dx, i, argmax[i] == input ? double(dy[i]) : 0.0, blend);
      break;
    case EltwiseOp::kProd:
      if (ed.stable_prod_grad) {
        for (int64_t i = 0; i < ed.n; ++i) {
          T p = dy[i];
          for (int k = 0; k < ed.num_inputs; ++k)
            if (k != input) p *= static_cast<const T*>(xv[k])[i];
          store(dx, i, double(p), blend);
        }
      } else {
        const T* x = static_cast<const T*>(xv[input]);
        for (int64_t i = 0; i < ed.n; ++i) store(dx, i, double(dy[i] * (y[i] / x[i])), blend);
      }
      break;
  }
}

// Inputs last to first: where dy is dx_0 (in place), it is overwritten after every other read.
template <typename T>
void bwd_impl(const EltwiseDesc& ed, const void* const* x, const void* y, const void* dy,
              const int32_t* argmax, void* const* dx, Blend blend) {
  for (int k = ed.num_inputs - 1; k >= 0; --k)
    if (dx[k]) bwd_input<T>(ed, x, y, dy, argmax, k, dx[k], blend);
}

}  // namespace

void eltwise_fwd(Handle&, const EltwiseDesc& ed, const void* const* x, void* y, int32_t* argmax,
                 Blend blend) {
  visit_dtype(kFloatTypes, ed.dtype, "eltwise_fwd", Device::kCPU,
              [&](auto tag) { fwd_impl<typename decltype(tag)::type>(ed, x, y, argmax, blend); });
}

void eltwise_bwd(Handle&, const EltwiseDesc& ed, const void* const* x, const void* y,
                 const void* dy, const int32_t* argmax, void* const* dx, Blend blend) {
  visit_dtype(kFloatTypes, ed.dtype, "eltwise_bwd", Device::kCPU, [&](auto tag) {
    bwd_impl<typename decltype(tag)::type>(ed, x, y, dy, argmax, dx, blend);
  });
}

}  // namespace crema::prim::cpu
