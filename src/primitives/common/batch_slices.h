// Internal: passes that run over slices of a batch so that their workspace stays bounded (the
// implicit GEMM's padded first-layer copies, max pooling's argmax): the bound, and the cut.
#pragma once

#include <algorithm>
#include <cstdint>

namespace crema::prim {

// The workspace a sliced pass keeps within.
inline constexpr int64_t kSliceBytes = int64_t(16) << 20;

// Images a slice of an n-image batch whose slices may hold `most` images: as few slices as that
// allows, the same number of images in each (the last one perhaps fewer).
inline int even_slice(int n, int64_t most) {
  most = std::clamp<int64_t>(most, 1, n);
  const int64_t slices = (n + most - 1) / most;
  return int((n + slices - 1) / slices);
}

}  // namespace crema::prim
