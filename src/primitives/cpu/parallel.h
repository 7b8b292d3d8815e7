// Fork-join parallelism of the CPU backend. The CPU primitives split their work (the images of a
// batch, the planes of a tensor) over the Handle's threads themselves and call single-threaded
// BLAS inside each part: OpenBLAS's own threads spin in sched_yield whenever the caller runs
// anything but BLAS (im2col, pooling), which on a 2-core machine cost more than they gave.
#pragma once

#include <cstdint>
#include <functional>

namespace crema::prim {

// Runs fn(t) for t in [0, tasks) on `tasks` threads, the calling one included, and returns when
// all are done. The first exception thrown by any task is rethrown here after every task ended.
// With tasks <= 1 it simply calls fn(0).
void parallel_for(int tasks, const std::function<void(int)>& fn);

// True on a thread that is running a parallel_for task: primitives called from inside one (the
// GEMMs of the convolution's per-thread chunks) must not split again.
bool inside_parallel_for();

// Contiguous share of [0, n) for part t of parts: [*begin, *end).
inline void split_range(int n, int parts, int t, int* begin, int* end) {
  *begin = int(int64_t(n) * t / parts);
  *end = int(int64_t(n) * (t + 1) / parts);
}

}  // namespace crema::prim
