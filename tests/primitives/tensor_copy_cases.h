// The tensor_copy cases the CPU and CUDA tests share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primitives/view.h"

namespace crema::test {

using prim::DataType;
using prim::ViewDesc;

struct CopyCase {
  std::string name;
  ViewDesc x, y;
  int64_t xlen, ylen, yoff;  // buffer lengths; y's view starts at yoff
};

// The views both backends' tests copy between: the layers' uses of tensor_copy.
inline std::vector<CopyCase> unit_copy_cases(DataType t) {
  std::vector<CopyCase> c;
  // Concat: a packed (2, 3, 5) piece into a (2, 7, 5) top at channel 4.
  {
    ViewDesc y = ViewDesc::packed(t, {2, 3, 5});
    y.stride[0] = 7 * 5;
    c.push_back({"concat_window", ViewDesc::packed(t, {2, 3, 5}), y, 30, 70, 4 * 5});
  }
  // Slice: the window read, a packed piece written (outer 1, inner 1 edge cases).
  {
    ViewDesc x = ViewDesc::packed(t, {1, 4, 1});
    x.stride[0] = 9;
    c.push_back({"slice_window", x, ViewDesc::packed(t, {1, 4, 1}), 9, 4, 0});
  }
  // Crop: (outer 2) x 3 x 4 window of a 2 x 5 x 7 input at offset (1, 2), read into packed.
  {
    ViewDesc x = ViewDesc::packed(t, {2, 3, 4});
    x.stride[0] = 35;
    x.stride[1] = 7;
    c.push_back({"crop_window", x, ViewDesc::packed(t, {2, 3, 4}), 70 - (7 + 2), 24, 0});
  }
  // Tile: x (3, 1, 6) read 4 times along the middle axis (stride 0).
  {
    ViewDesc x = ViewDesc::packed(t, {3, 4, 6});
    x.stride[0] = 6;
    x.stride[1] = 0;
    c.push_back({"tile_broadcast", x, ViewDesc::packed(t, {3, 4, 6}), 18, 72, 0});
  }
  // A transpose (NCHW -> NHWC) of 6 axes with odd sizes.
  {
    ViewDesc x = ViewDesc::packed(t, {2, 3, 1, 5, 2, 3});
    ViewDesc y = x;
    // y strides of the permutation (0, 3, 4, 5, 1, 2) of the same sizes.
    const int64_t s[6] = {3 * 1 * 5 * 2 * 3, 1, 1, 2 * 3 * 3, 3 * 3, 3};
    for (int i = 0; i < 6; ++i) y.stride[i] = s[i];
    c.push_back({"permute_6d", x, y, x.count(), x.count(), 0});
  }
  c.push_back({"scalar", ViewDesc::packed(t, {}), ViewDesc::packed(t, {}), 1, 1, 0});
  return c;
}

}  // namespace crema::test
