// Internal: softmax's implementation table (impl_table.h): the call every row sees and the rows
// each backend defines. softmax.cpp holds the table.
#pragma once

#include "primitives/common/impl_table.h"
#include "primitives/softmax.h"

namespace crema::prim {

// One softmax call, validated by softmax.cpp (non-empty). Forward reads in (x) and writes out
// (y); backward reads in (y) and dy and writes out (dx).
struct SoftmaxArgs {
  bool forward;
  const SoftmaxDesc& sd;
  const void* in;
  const void* dy;
  void* out;
  Blend blend;
};

using SoftmaxImpl = ImplRow<SoftmaxArgs, SoftmaxAlgo>;

// Rules both devices' rows share: the row kernels take inner 1 alone, and there the spatial
// row (a running value per position, walking channels a stride apart) is the slower one.
inline const char* softmax_rows_only(const SoftmaxArgs& a) {
  return a.sd.inner == 1 ? nullptr : "inner > 1 (spatial)";
}
inline const char* softmax_spatial_slower(const SoftmaxArgs& a) {
  return a.sd.inner == 1 ? "inner 1: the row kernels are faster" : nullptr;
}

// The rows each backend defines, in softmax.cpp's order of preference.
namespace cpu {
extern const SoftmaxImpl kSoftmaxRows, kSoftmaxSpatial;
}
namespace cuda {
extern const SoftmaxImpl kSoftmaxWarpRows, kSoftmaxBlockRows, kSoftmaxSpatial;
}

}  // namespace crema::prim
