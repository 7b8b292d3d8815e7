// Internal: LRN's implementation table (impl_table.h): the call every row sees and the rows each
// backend defines. lrn.cpp holds the table.
#pragma once

#include "primitives/common/impl_table.h"
#include "primitives/lrn.h"

namespace crema::prim {

// One LRN call, validated by lrn.cpp (packed NCHW, a channels-last pair seen as N*H*W images of
// 1 x 1 pixels; same shapes, non-empty). Forward reads x and
// writes out (y); backward reads x, y and dy and writes out (dx).
struct LrnArgs {
  bool forward;
  const LrnDesc& ld;
  const TensorDesc& xd;
  const void* x;
  const void* y;
  const void* dy;
  void* out;
  Blend blend;

  bool across() const { return ld.mode == LrnMode::kAcrossChannels; }
};

using LrnImpl = ImplRow<LrnArgs, LrnAlgo>;

// The support rules of the rows that run one mode, on either device.
inline const char* lrn_across_only(const LrnArgs& a) {
  return a.across() ? nullptr : "within-channel mode";
}
inline const char* lrn_within_only(const LrnArgs& a) {
  return a.across() ? "across-channel mode" : nullptr;
}

// The rows each backend defines, in lrn.cpp's order of preference.
namespace cpu {
extern const LrnImpl kLrnAcross, kLrnWithin;
}
namespace cuda {
extern const LrnImpl kLrnAcrossLanes, kLrnAcrossRing, kLrnAcross, kLrnWithin;
}

}  // namespace crema::prim
