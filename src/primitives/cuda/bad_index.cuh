// Internal: the index check of the CUDA primitives whose API throws on a bad label or row index
// (the losses with labels, gather and scatter). One kernel finds the first bad position with an
// integer atomicMin, so the answer does not depend on the order of the threads; the stream is
// then synchronized to read it, since the error must be thrown before anything is written.
#pragma once

#include <cstdint>

#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {

// Whether a label is the loss's ignore label.
template <typename T>
__host__ __device__ __forceinline__ bool ignored(T label, bool has_ignore, int ignore) {
  return has_ignore && label == T(ignore);
}

template <typename T>
__global__ void find_bad_index_kernel(const T* v, int64_t n, int64_t limit, bool has_ignore,
                                      int ignore, unsigned long long* first_bad) {
  CREMA_CUDA_LOOP(i, n) {
    const T x = v[i];
    if (ignored(x, has_ignore, ignore)) continue;
    if (!(x >= T(0) && x < T(limit) && floor(x) == x))
      atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

template <typename T>
struct BadIndex {
  bool found = false;
  uint64_t position = 0;
  T value{};
};

// The first of v[0, n) that is not an integer in [0, limit) nor, with has_ignore, the ignore
// label. flag: 8 bytes of device scratch.
template <typename T>
BadIndex<T> first_bad_index(Handle& h, const char* op, const T* v, int64_t n, int64_t limit,
                            unsigned long long* flag, bool has_ignore = false, int ignore = 0) {
  constexpr unsigned long long kNone = ~0ull;
  cudaStream_t s = stream_of(h);
  check_cuda(cudaMemsetAsync(flag, 0xff, sizeof(*flag), s), op);
  find_bad_index_kernel<T><<<grid_for(n), kBlock, 0, s>>>(v, n, limit, has_ignore, ignore, flag);
  check_launch(op);
  unsigned long long first = kNone;
  check_cuda(cudaMemcpyAsync(&first, flag, sizeof(first), cudaMemcpyDeviceToHost, s), op);
  wait_for_stream(h, op);
  BadIndex<T> bad;
  if (first == kNone) return bad;
  bad.found = true;
  bad.position = first;
  check_cuda(cudaMemcpyAsync(&bad.value, v + first, sizeof(T), cudaMemcpyDeviceToHost, s), op);
  wait_for_stream(h, op);
  return bad;
}

}  // namespace crema::prim::cuda
