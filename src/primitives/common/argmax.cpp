// ArgMax: descriptor validation and the one device dispatcher.
#include "primitives/argmax.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (argmax_cpu.cpp, argmax_cuda.cu), with the public signatures.
CREMA_BACKENDS(void argmax_fwd(Handle& h, const ArgMaxDesc& ad, const void* x, void* index,
                               void* value);)

void argmax_fwd(Handle& h, const ArgMaxDesc& ad, const void* x, void* index, void* value) {
  auto fail = [](const std::string& why) { throw PrimError("argmax_fwd: " + why); };
  if (ad.outer < 0 || ad.channels < 0 || ad.inner < 0) fail("negative size");
  if (ad.top_k < 1 || ad.top_k > ad.channels)
    fail("top_k " + std::to_string(ad.top_k) + " must be in [1, " + std::to_string(ad.channels) +
         "] (the size of the searched axis)");
  if (ad.out_outer_stride != 0 && ad.out_outer_stride < int64_t(ad.top_k) * ad.inner)
    fail("out_outer_stride is smaller than top_k * inner");
  if (ad.outer == 0 || ad.inner == 0) return;
  if (!x) fail("null input");
  CREMA_DISPATCH(h, argmax_fwd, h, ad, x, index, value);
}

}  // namespace crema::prim
