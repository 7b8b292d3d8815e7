// Dropout on CUDA with the mask rule of dropout_ops.h (shared with the CPU), so the mask equals
// the CPU's bit for bit for the same Handle seed and call sequence. Forward gives each thread one
// Philox block (four stream positions): it writes those four mask bytes and outputs in one pass.
// Traffic per element: forward 9 bytes (f32: x, y, mask), backward 9 (dy, mask, dx).
#include <cstdint>

#include "primitives/cuda_util.cuh"
#include "primitives/dropout.h"
#include "primitives/dropout_ops.h"

namespace crema::prim::cuda {
namespace {

// Stream positions [base, base + count); block b covers positions 4b .. 4b + 3.
template <typename T>
__global__ void fwd_kernel(philox::Key key, uint64_t base, int64_t count, uint64_t threshold,
                           T scale, const T* x, T* y, uint8_t* mask) {
  const uint64_t first = base >> 2, blocks = ((base + uint64_t(count) - 1) >> 2) - first + 1;
  CREMA_CUDA_LOOP(t, blocks) {
    const uint64_t b = first + uint64_t(t);
    const philox::Counter r = dropout_ops::block_words(key, b);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint64_t p = b * 4 + w;
      if (p < base || p >= base + uint64_t(count)) continue;
      const uint64_t i = p - base;
      const uint8_t m = dropout_ops::keep(r.v[w], threshold);
      mask[i] = m;
      y[i] = dropout_ops::apply(x[i], m, scale);
    }
  }
}

template <typename T>
__global__ void bwd_kernel(int64_t n, T scale, const T* dy, const uint8_t* mask, T* dx) {
  CREMA_CUDA_LOOP(i, n) dx[i] = dropout_ops::apply(dy[i], mask[i], scale);
}

template <typename T>
void fwd(Handle& h, const DropoutDesc& dd, const T* x, T* y, uint8_t* mask) {
  // The counter range is taken here, by the backend, exactly as the CPU takes it.
  const uint64_t base = h.next_counter(uint64_t(dd.count));
  const int64_t blocks = int64_t(((base + uint64_t(dd.count) - 1) >> 2) - (base >> 2) + 1);
  fwd_kernel<T><<<grid_for(blocks), kBlock, 0, stream_of(h)>>>(
      philox::key_from_seed(h.seed()), base, dd.count, dropout_ops::threshold_of(dd.ratio),
      T(dropout_ops::scale_of(dd)), x, y, mask);
  check_launch("dropout_fwd");
}

template <typename T>
void bwd(Handle& h, const DropoutDesc& dd, const T* dy, const uint8_t* mask, T* dx) {
  bwd_kernel<T><<<grid_for(dd.count), kBlock, 0, stream_of(h)>>>(
      dd.count, T(dropout_ops::scale_of(dd)), dy, mask, dx);
  check_launch("dropout_bwd");
}

}  // namespace

void dropout_fwd(Handle& h, const DropoutDesc& dd, const void* x, void* y, uint8_t* mask) {
  if (dd.dtype == DataType::kFloat64)
    fwd(h, dd, static_cast<const double*>(x), static_cast<double*>(y), mask);
  else
    fwd(h, dd, static_cast<const float*>(x), static_cast<float*>(y), mask);
}

void dropout_bwd(Handle& h, const DropoutDesc& dd, const void* dy, const uint8_t* mask, void* dx) {
  if (dd.dtype == DataType::kFloat64)
    bwd(h, dd, static_cast<const double*>(dy), mask, static_cast<double*>(dx));
  else
    bwd(h, dd, static_cast<const float*>(dy), mask, static_cast<float*>(dx));
}

}  // namespace crema::prim::cuda
