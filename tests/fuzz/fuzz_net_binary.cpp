// A .caffemodel as --weights and the converters read it: binary parse, upgrade from V0/V1, then
// the phase filter and split insertion.
#include "core/net_graph.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crema::fuzz::refused_or_accepted([&] {
    crema::NetParameter net;
    crema::read_binary_proto_bytes(crema::fuzz::bytes_of(data, size), "net.caffemodel", &net);
    crema::upgrade_net(&net, "net.caffemodel");
    crema::insert_splits(crema::filter_net(net));
  });
  return 0;
}
