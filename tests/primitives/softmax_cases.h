// What the CPU and CUDA softmax tests share: the (outer, channels, inner) shapes, the unit list
// both run, and the loss tests' descriptor and labels.
#pragma once

#include <cstdint>
#include <vector>

#include "primitives/softmax.h"
#include "test_util.h"

namespace crema::test {

struct SoftmaxShape {
  int64_t outer, channels, inner;
  size_t count() const { return size_t(outer * channels * inner); }
};

// Classifier rows (inner 1), spatial maps (inner > 1), N = 1, odd sizes, a single channel.
inline const std::vector<SoftmaxShape>& unit_softmax_shapes() {
  static const std::vector<SoftmaxShape> list = {{1, 10, 1}, {3, 7, 1}, {2, 5, 9},
                                                 {1, 3, 13}, {4, 1, 3}, {2, 1000, 1}};
  return list;
}

inline prim::SoftmaxLossDesc loss_desc(prim::DataType t, const SoftmaxShape& s,
                                       prim::LossNormalization norm, bool has_ignore, int ignore) {
  return prim::SoftmaxLossDesc{t, s.outer, s.channels, s.inner, has_ignore, ignore, norm};
}

// Labels in [0, channels), with every fifth position from the second on replaced by the ignore
// label when there is one (a single position stays valid, so the loss is not trivially 0).
template <typename T>
std::vector<T> make_labels(const SoftmaxShape& s, bool has_ignore, int ignore, uint64_t seed) {
  auto l = random_int_vector<T>(size_t(s.outer * s.inner), seed, 0, int(s.channels) - 1);
  if (has_ignore)
    for (size_t p = 1; p < l.size(); p += 5) l[p] = T(ignore);
  return l;
}

}  // namespace crema::test
