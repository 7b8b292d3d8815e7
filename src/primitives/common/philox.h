// Philox4x32-10: the counter-based random generator of Salmon, Moraes, Dror and Shaw, "Parallel
// Random Numbers: As Easy as 1, 2, 3" (SC11). A pure function of a 128-bit counter and a 64-bit
// key, so any element's random bits can be computed independently on the CPU or in a CUDA
// thread and both agree bit for bit.
#pragma once

#include <cstdint>

#include "primitives/common/host_device.h"

namespace crema::prim::philox {

struct Counter {
  uint32_t v[4];
};
struct Key {
  uint32_t v[2];
};

// Round multipliers and key increments (the golden ratio and sqrt(3) - 1 in 32-bit fixed point)
// from the paper.
inline constexpr uint32_t kM0 = 0xD2511F53u;
inline constexpr uint32_t kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u;
inline constexpr uint32_t kW1 = 0xBB67AE85u;

// One S-box round: two 32x32 -> 64-bit products, their high halves mixed with the key and the
// untouched words, their low halves carried across (the Feistel-like permutation).
CREMA_HOST_DEVICE inline Counter round(Counter c, Key k) {
  const uint64_t p0 = uint64_t(kM0) * c.v[0];
  const uint64_t p1 = uint64_t(kM1) * c.v[2];
  Counter out;
  out.v[0] = uint32_t(p1 >> 32) ^ c.v[1] ^ k.v[0];
  out.v[1] = uint32_t(p1);
  out.v[2] = uint32_t(p0 >> 32) ^ c.v[3] ^ k.v[1];
  out.v[3] = uint32_t(p0);
  return out;
}

// Ten rounds with the key bumped between rounds (nine bumps): the variant the paper recommends
// as crush-resistant with a safety margin.
CREMA_HOST_DEVICE inline Counter philox4x32_10(Counter c, Key k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k.v[0] += kW0;
      k.v[1] += kW1;
    }
    c = round(c, k);
  }
  return c;
}

// The key for a 64-bit seed and the counter block for a 64-bit block index (upper words 0), so
// one seed gives 2^64 blocks of four 32-bit values.
CREMA_HOST_DEVICE inline Key key_from_seed(uint64_t seed) {
  return Key{{uint32_t(seed), uint32_t(seed >> 32)}};
}
CREMA_HOST_DEVICE inline Counter counter_from_index(uint64_t block) {
  return Counter{{uint32_t(block), uint32_t(block >> 32), 0u, 0u}};
}

}  // namespace crema::prim::philox
