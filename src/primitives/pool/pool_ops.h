// The window arithmetic of pooling, written once for both backends: where output o's window lies
// along one axis (clipped to the input, and its extent within the padded input), and the divisor
// average pooling uses. Rules: pool.h.
#pragma once

#include "primitives/common/philox.h"  // CREMA_HOST_DEVICE
#include "primitives/pool.h"

namespace crema::prim::pool_ops {

// One axis of output o's window: the input range [lo, hi) it covers (empty when the window lies
// past the input) and its extent clipped to the padded input, which Caffe's average counts.
struct Span {
  int lo, hi, padded;
};

CREMA_HOST_DEVICE inline Span span_of(int o, int in, int kernel, int pad, int stride) {
  const int start = o * stride - pad;
  const int end = start + kernel < in + pad ? start + kernel : in + pad;
  return Span{start > 0 ? start : 0, end < in ? end : in, end - start};
}

// Blocks of `stride` cells along an axis of `in` cells padded by `pad` (block b starts at
// b * stride - pad): enough to hold index in - 1. The backward kernels that own blocks of input
// cells (pool_sweep_cuda.cu, pool_lanes_s2_cuda.cu) walk these.
CREMA_HOST_DEVICE inline int blocks_of(int in, int pad, int stride) {
  return (in - 1 + pad) / stride + 1;
}

// The divisor of an average window: the padded-window area (Caffe), or the input cells alone
// (kAverageExcludePad).
CREMA_HOST_DEVICE inline int divisor_of(PoolMode mode, const Span& a, const Span& b) {
  return mode == PoolMode::kAverageExcludePad ? (a.hi - a.lo) * (b.hi - b.lo) : a.padded * b.padded;
}

}  // namespace crema::prim::pool_ops
