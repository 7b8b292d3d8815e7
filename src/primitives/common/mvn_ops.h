// Internal: what the CPU and CUDA mean-variance normalizations share: the rows they normalize.
#pragma once

#include <cstdint>

#include "primitives/mvn.h"

namespace crema::prim {

// Each row is a contiguous run of dim values: an image (across_channels) or one channel's plane.
struct MvnRows {
  int64_t rows, dim;
  MvnRows(const MvnDesc& md, const TensorDesc& d) {
    const int64_t hw = int64_t(d.h) * d.w;
    rows = md.across_channels ? d.n : int64_t(d.n) * d.c;
    dim = md.across_channels ? int64_t(d.c) * hw : hw;
  }
};

}  // namespace crema::prim
