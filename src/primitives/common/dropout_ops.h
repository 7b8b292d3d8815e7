// Dropout's mask rule, written once for both backends so CPU and CUDA draw the same mask bit for
// bit: element i of a call owns stream position base + i, which is 32-bit word (base + i) % 4 of
// Philox4x32-10 block (base + i) / 4 under the seed's key, and is kept when that word is at
// least ratio * 2^32 (probability 1 - ratio). Formulas: dropout.h.
#pragma once

#include <cstdint>

#include "primitives/common/philox.h"
#include "primitives/dropout.h"

namespace crema::prim::dropout_ops {

// Words below this are dropped.
inline uint64_t threshold_of(double ratio) { return uint64_t(ratio * 4294967296.0); }

// The multiplier of kept elements in training.
inline double scale_of(const DropoutDesc& dd) {
  return dd.scale_train ? 1.0 / (1.0 - dd.ratio) : 1.0;
}

// The four random words of stream block b.
CREMA_HOST_DEVICE inline philox::Counter block_words(philox::Key key, uint64_t b) {
  return philox::philox4x32_10(philox::counter_from_index(b), key);
}

CREMA_HOST_DEVICE inline uint8_t keep(uint32_t word, uint64_t threshold) {
  return uint8_t(word >= threshold);
}

// out = in * mask * scale, with mask * scale formed first (0 or scale, exact) as both backends
// do, so the products agree bit for bit.
template <typename T>
CREMA_HOST_DEVICE inline T apply(T in, uint8_t mask, T scale) {
  return in * (T(mask) * scale);
}

}  // namespace crema::prim::dropout_ops
