// CPU implementation of argmax_fwd: per (outer, inner) position the channel column is copied
// into (value, index) pairs and partially sorted; top_k = 1 takes a single linear scan.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "primitives/argmax.h"
#include "primitives/common/dtype_visit.h"

namespace crema::prim::cpu {
namespace {

template <typename T>
void argmax_impl(const ArgMaxDesc& ad, const void* xv, void* iv, void* vv) {
  const T* x = static_cast<const T*>(xv);
  T* index = static_cast<T*>(iv);
  T* value = static_cast<T*>(vv);
  const int64_t C = ad.channels, inner = ad.inner, k = ad.top_k;
  const int64_t ostride = ad.out_outer_stride ? ad.out_outer_stride : k * inner;
  std::vector<std::pair<T, int64_t>> col(static_cast<size_t>(C));
  for (int64_t o = 0; o < ad.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* src = x + o * C * inner + i;
      const int64_t out = o * ostride + i;
      if (k == 1) {
        // >= keeps the last of equal maxima: the ranking of the sorted path below.
        int64_t best = 0;
        for (int64_t c = 1; c < C; ++c)
          if (src[c * inner] >= src[best * inner]) best = c;
        if (index) index[out] = T(best);
        if (value) value[out] = src[best * inner];
        continue;
      }
      for (int64_t c = 0; c < C; ++c) col[size_t(c)] = {src[c * inner], c};
      std::partial_sort(col.begin(), col.begin() + k, col.end(),
                        std::greater<std::pair<T, int64_t>>());
      for (int64_t j = 0; j < k; ++j) {
        if (index) index[out + j * inner] = T(col[size_t(j)].second);
        if (value) value[out + j * inner] = col[size_t(j)].first;
      }
    }
  }
}

}  // namespace

void argmax_fwd(Handle&, const ArgMaxDesc& ad, const void* x, void* index, void* value) {
  visit_dtype(kFloatTypes, ad.dtype, "argmax_fwd", Device::kCPU,
              [&](auto tag) { argmax_impl<typename decltype(tag)::type>(ad, x, index, value); });
}

}  // namespace crema::prim::cpu
