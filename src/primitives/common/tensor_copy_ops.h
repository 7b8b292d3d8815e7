// The view coalescing of tensor_copy, shared by both backends: unit axes are dropped and axes
// that are contiguous in both views merged, so a Concat of packed tensors becomes a few long
// rows. A rank-0 (single element) copy comes out as one axis of size 1.
#pragma once

#include <cstdint>

#include "primitives/view.h"

namespace crema::prim::copy_ops {

struct Coalesced {
  int rank = 0;
  int64_t size[ViewDesc::kMaxDims];
  int64_t sx[ViewDesc::kMaxDims];
  int64_t sy[ViewDesc::kMaxDims];
};

inline Coalesced coalesce(const ViewDesc& xd, const ViewDesc& yd) {
  Coalesced c;
  for (int i = 0; i < xd.rank; ++i) {
    if (xd.size[i] == 1) continue;
    const int p = c.rank - 1;
    if (p >= 0 && c.sx[p] == xd.size[i] * xd.stride[i] && c.sy[p] == yd.size[i] * yd.stride[i]) {
      c.size[p] *= xd.size[i];
      c.sx[p] = xd.stride[i];
      c.sy[p] = yd.stride[i];
    } else {
      c.size[c.rank] = xd.size[i];
      c.sx[c.rank] = xd.stride[i];
      c.sy[c.rank] = yd.stride[i];
      ++c.rank;
    }
  }
  if (c.rank == 0) {  // a single element
    c.rank = 1;
    c.size[0] = 1;
    c.sx[0] = c.sy[0] = 1;
  }
  return c;
}

}  // namespace crema::prim::copy_ops
