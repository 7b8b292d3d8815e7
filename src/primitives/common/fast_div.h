// Division of non-negative 32-bit integers by a divisor fixed for a whole kernel launch, as a
// multiply-high, an add and a shift (Granlund and Montgomery, "Division by invariant integers
// using multiplication", PLDI 1994, section 4). A GPU integer division is a software sequence of
// about twenty instructions; kernels that place every element by a few divisions (pooling) are
// bound by that arithmetic rather than by memory. Valid for dividends and divisors in [0, 2^31)
// (divisors >= 1).
#pragma once

#include <cstdint>

#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE

namespace crema::prim {

struct FastDiv {
  uint32_t d = 1;      // the divisor
  uint32_t mul = 1;    // floor(2^32 * (2^shift - d) / d) + 1
  uint32_t shift = 0;  // ceil(log2(d))

  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor) {
    while ((uint64_t(1) << shift) < d) ++shift;
    mul = uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d) / d + 1);
  }

  // floor(n / d). mulhi(n, mul) <= n < 2^31, so the sum cannot overflow.
  CREMA_HOST_DEVICE uint32_t div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t hi = __umulhi(n, mul);
#else
    const uint32_t hi = uint32_t((uint64_t(n) * mul) >> 32);
#endif
    return (hi + n) >> shift;
  }
};

}  // namespace crema::prim
