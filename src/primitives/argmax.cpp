// ArgMax: descriptor validation and the device dispatcher. The CPU body lives in
// argmax_cpu.cpp; the CUDA backend is not built yet.
#include "primitives/argmax.h"

#include <string>

namespace crema::prim {

// Defined in argmax_cpu.cpp; only this dispatcher calls it.
namespace cpu {
void argmax_fwd(const ArgMaxDesc& ad, const void* x, void* index, void* value);
}  // namespace cpu

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
  if (h.device() != Device::kCPU) fail("CUDA backend not built yet");
  cpu::argmax_fwd(ad, x, index, value);
}

}  // namespace crema::prim
