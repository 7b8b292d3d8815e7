// Internal: what the CPU and CUDA reductions share: x's axes as stride sets over the same sizes,
// split into those y keeps and those reduced (forward) or with dy broadcast over the reduced ones
// (backward), and the value each op sums.
#pragma once

#include <cmath>
#include <cstdint>

#include "primitives/common/host_device.h"
#include "primitives/reduce.h"

namespace crema::prim {

// Up to three stride sets over the same sizes; the last axis is the fastest.
struct ReduceAxes {
  int rank = 0;
  int64_t size[ViewDesc::kMaxDims] = {};
  int64_t s[3][ViewDesc::kMaxDims] = {};
  CREMA_HOST_DEVICE int64_t count() const {
    int64_t c = 1;
    for (int i = 0; i < rank; ++i) c *= size[i];
    return c;
  }
  // The offsets of flat index idx in the first K stride sets.
  template <int K>
  CREMA_HOST_DEVICE void offsets(int64_t idx, int64_t (&o)[K]) const {
    for (int j = 0; j < K; ++j) o[j] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t q = d > 0 ? idx / size[d] : 0;
      const int64_t at = idx - q * size[d];
      for (int j = 0; j < K; ++j) o[j] += at * s[j][d];
      idx = q;
    }
  }
};

// reduce_fwd's axes: kept (s[0] x's strides, s[1] y's) and reduced (s[0] x's strides).
inline void split_reduce_axes(const ViewDesc& xd, const ViewDesc& yd, ReduceAxes* kept,
                              ReduceAxes* reduced) {
  for (int i = 0; i < xd.rank; ++i) {
    ReduceAxes& a = yd.size[i] == xd.size[i] ? *kept : *reduced;
    a.size[a.rank] = xd.size[i];
    a.s[0][a.rank] = xd.stride[i];
    if (&a == kept) a.s[1][a.rank] = yd.stride[i];
    ++a.rank;
  }
}

// reduce_bwd's walk over every x: s[0] x's strides, s[1] dy's (0 on reduced axes), s[2] dx's.
inline ReduceAxes reduce_bwd_axes(const ViewDesc& xd, const ViewDesc& dyd, const ViewDesc& dxd) {
  ReduceAxes w;
  w.rank = xd.rank;
  for (int i = 0; i < xd.rank; ++i) {
    w.size[i] = xd.size[i];
    w.s[0][i] = xd.stride[i];
    w.s[1][i] = dyd.size[i] == xd.size[i] ? dyd.stride[i] : 0;
    w.s[2][i] = dxd.stride[i];
  }
  return w;
}

// The value op sums for an element v: |v| (kAsum), v^2 (kSumSq), else v.
template <typename T>
CREMA_HOST_DEVICE double reduce_term(ReduceOp op, T v) {
  return op == ReduceOp::kAsum    ? fabs(double(v))
         : op == ReduceOp::kSumSq ? double(v) * double(v)
                                  : double(v);
}

}  // namespace crema::prim
