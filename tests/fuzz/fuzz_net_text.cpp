// A prototxt as `crema train|test|time` reads it: text parse, upgrade from V0/V1 (and NVCaffe's
// fields), then the phase filter and split insertion the net builds its graph from.
#include "core/net_graph.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crema::fuzz::refused_or_accepted([&] {
    const crema::NetParameter net = crema::fuzz::net_from_text(data, size);
    for (crema::Phase phase : {crema::TRAIN, crema::TEST}) {
      crema::NetParameter p = net;
      p.mutable_state()->set_phase(phase);
      crema::insert_splits(crema::filter_net(p));
    }
  });
  return 0;
}
