// A prototxt built into a Net as `crema train|test|time` builds it: text parse, upgrade, then
// every layer of each phase created, set up and shaped and its weights filled, on the CPU.
// Nothing runs forward: the fuzzed shapes reach the layers' setup and the allocator, within a
// host budget of 4 MiB (set_host_memory_limit): a net past it is refused, as on a machine that
// small, so the reference models stop at their first big layer instead of filling millions of
// weights per run (slow under the sanitizers).
#include <glog/logging.h>

#include "core/net.h"
#include "fuzz_util.h"
#include "primitives/handle.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FLAGS_minloglevel = 2;  // the net logs each layer it sets up
  crema::prim::set_host_memory_limit(size_t(4) << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crema::fuzz::refused_or_accepted([&] {
    const crema::NetParameter net = crema::fuzz::net_from_text(data, size);
    for (crema::Phase phase : {crema::TRAIN, crema::TEST})
      crema::Net<float>(net, phase, crema::Device::kCPU);
  });
  return 0;
}
