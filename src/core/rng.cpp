// Per-thread random generator.
#include "core/rng.h"

namespace crema {

Rng& thread_rng() {
  thread_local Rng rng(std::random_device{}());
  return rng;
}

void seed_thread_rng(int64_t seed) {
  thread_rng().seed(seed < 0 ? uint64_t(std::random_device{}()) : uint64_t(seed));
}

}  // namespace crema
