// Dropout on the CPU: the mask from Philox4x32-10, then one vectorizable multiply.
#include <cstdint>

#include "primitives/common/dropout_ops.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/common/philox.h"
#include "primitives/dropout.h"

namespace crema::prim::cpu {
namespace {

using dropout_ops::scale_of;

// The stream positions and keep rule are dropout_ops.h's. Any device computes the same mask from
// the same (seed, counter), and calls never share a position because the Handle hands out
// disjoint ranges.
void draw_mask(uint64_t seed, uint64_t base, int64_t count, double ratio, uint8_t* mask) {
  const philox::Key key = philox::key_from_seed(seed);
  const uint64_t threshold = dropout_ops::threshold_of(ratio);
  const uint64_t end = base + uint64_t(count);
  for (uint64_t b = base >> 2; b <= (end - 1) >> 2; ++b) {
    const philox::Counter r = dropout_ops::block_words(key, b);
    for (uint64_t w = 0; w < 4; ++w) {
      const uint64_t p = b * 4 + w;
      if (p >= base && p < end) mask[p - base] = dropout_ops::keep(r.v[w], threshold);
    }
  }
}

template <typename T>
void apply(int64_t n, const T* in, const uint8_t* mask, T scale, T* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = dropout_ops::apply(in[i], mask[i], scale);
}

}  // namespace

void dropout_fwd(Handle& h, const DropoutDesc& dd, const void* x, void* y, uint8_t* mask) {
  visit_dtype(kFloatTypes, dd.dtype, "dropout_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // The counter range is taken here, by the backend, so each call consumes exactly count.
    draw_mask(h.seed(), h.next_counter(uint64_t(dd.count)), dd.count, dd.ratio, mask);
    apply(dd.count, static_cast<const T*>(x), mask, T(scale_of(dd)), static_cast<T*>(y));
  });
}

void dropout_bwd(Handle&, const DropoutDesc& dd, const void* dy, const uint8_t* mask, void* dx) {
  visit_dtype(kFloatTypes, dd.dtype, "dropout_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    apply(dd.count, static_cast<const T*>(dy), mask, T(scale_of(dd)), static_cast<T*>(dx));
  });
}

}  // namespace crema::prim::cpu
