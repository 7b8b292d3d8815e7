// ViewDesc: an N-d strided view (up to kMaxDims axes) for the data-movement primitives
// (tensor_copy, reduce_*). Sizes and strides are in elements; a stride of 0 repeats (broadcasts)
// the same element along that axis, which is how Tile's forward reads its input. A rank-0 view
// is one element. The 4-d TensorDesc stays the descriptor of the compute primitives.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "primitives/types.h"

namespace crema::prim {

struct ViewDesc {
  static constexpr int kMaxDims = 8;
  DataType dtype = DataType::kFloat32;
  int rank = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};

  // A packed row-major view of the given sizes (the last axis has stride 1).
  static ViewDesc packed(DataType t, const std::vector<int64_t>& sizes) {
    if (sizes.size() > size_t(kMaxDims))
      throw PrimError("view: rank " + std::to_string(sizes.size()) + " exceeds " +
                      std::to_string(kMaxDims));
    ViewDesc d;
    d.dtype = t;
    d.rank = int(sizes.size());
    int64_t s = 1;
    for (int i = d.rank - 1; i >= 0; --i) {
      d.size[i] = sizes[size_t(i)];
      d.stride[i] = s;
      s *= sizes[size_t(i)];
    }
    return d;
  }
  static ViewDesc packed(DataType t, std::initializer_list<int64_t> sizes) {
    return packed(t, std::vector<int64_t>(sizes));
  }

  int64_t count() const {
    int64_t c = 1;
    for (int i = 0; i < rank; ++i) c *= size[i];
    return c;
  }
  // "2x3x4", for error messages ("scalar" for rank 0).
  std::string sizes_string() const {
    if (rank == 0) return "scalar";
    std::string s;
    for (int i = 0; i < rank; ++i) {
      if (i) s += 'x';
      s += std::to_string(size[i]);
    }
    return s;
  }
};

}  // namespace crema::prim
