// Internal to the CPU backend: the output blend every CPU kernel writes through.
#pragma once

#include <cstdint>

#include "primitives/types.h"

namespace crema::prim::cpu {

// out[i] = alpha * f(i) + beta * out[i] for i < n; with beta == 0 out is never read, since it
// may hold garbage (NaN poison). f is a lambda, inlined into each loop.
template <typename T, typename F>
inline void blend_row(int64_t n, Blend blend, T* out, F f) {
  const T alpha = T(blend.alpha), beta = T(blend.beta);
  if (beta == T(0)) {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * f(i) + beta * out[i];
  }
}

}  // namespace crema::prim::cpu
