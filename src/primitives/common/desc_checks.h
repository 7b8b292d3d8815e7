// Descriptor checks that several primitives' entry points share; each throws PrimError naming
// the op.
#pragma once

#include <cmath>
#include <string>

#include "primitives/types.h"

namespace crema::prim {

// "NxCxHxW", for messages (types.cpp).
std::string dims(const TensorDesc& d);

// Two tensors of one shape and type, with no negative size.
inline void check_pair_shapes(const std::string& op, const TensorDesc& a, const TensorDesc& b) {
  if (a.n < 0 || a.c < 0 || a.h < 0 || a.w < 0) throw PrimError(op + ": negative size " + dims(a));
  if (a.dtype != b.dtype)
    throw PrimError(op + ": tensors are " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  if (a.n != b.n || a.c != b.c || a.h != b.h || a.w != b.w)
    throw PrimError(op + ": shapes differ: " + dims(a) + " and " + dims(b));
}

// Both tensors packed NCHW, of one shape and type, with no negative size: the kernels walk
// packed planes or contiguous runs, where a strided view would silently read the wrong elements.
inline void check_packed_pair(const std::string& op, const TensorDesc& a, const TensorDesc& b) {
  check_pair_shapes(op, a, b);
  if (!a.is_packed_nchw() || !b.is_packed_nchw())
    throw PrimError(op + ": tensors must be packed NCHW");
}

// As check_packed_pair, or both packed channels last (NHWC): for the ops that see a tensor as a
// flat array or through channel_view.
inline void check_dense_pair(const std::string& op, const TensorDesc& a, const TensorDesc& b) {
  check_pair_shapes(op, a, b);
  if (!(a.is_packed_nchw() && b.is_packed_nchw()) && !(a.is_packed_nhwc() && b.is_packed_nhwc()))
    throw PrimError(op + ": tensors must both be packed NCHW or both packed NHWC");
}

// A packed tensor as (outer, channels, inner) with channel c of outer index o at
// (o * channels + c) * inner: (N, C, H*W) for NCHW, (N*H*W, C, 1) for channels last.
struct ChannelView {
  int64_t outer, channels, inner;
};
inline ChannelView channel_view(const TensorDesc& d) {
  const int64_t hw = int64_t(d.h) * d.w;
  if (d.is_packed_nchw()) return {d.n, d.c, hw};
  return {d.n * hw, d.c, 1};
}

// The normalizations' eps (batch norm, MVN): finite and >= 0.
inline void check_eps(const std::string& op, double eps) {
  if (!std::isfinite(eps) || eps < 0)
    throw PrimError(op + ": eps must be finite and >= 0, got " + std::to_string(eps));
}

}  // namespace crema::prim
