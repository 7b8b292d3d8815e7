// A prototxt as `crema train|test|time` reads it: text parse, upgrade from V0/V1 (and NVCaffe's
// fields), then the phase filter and split insertion the net builds its graph from.
#include "core/net_graph.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crema::fuzz::refused_or_accepted([&] {
    crema::NetParameter net;
    crema::read_text_proto_string(std::string(crema::fuzz::bytes_of(data, size)), "net.prototxt",
                                  &net);
    crema::upgrade_net(&net, "net.prototxt");
    for (crema::Phase phase : {crema::TRAIN, crema::TEST}) {
      crema::NetParameter p = net;
      p.mutable_state()->set_phase(phase);
      crema::insert_splits(crema::filter_net(p));
    }
  });
  return 0;
}
