// A .binaryproto (a mean image, or one blob of a .caffemodel): BlobProto parse, then a tensor
// shaped and filled from it, in either shape form.
#include "core/proto_io.h"
#include "core/tensor.h"
#include "crema.pb.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crema::fuzz::refused_or_accepted([&] {
    crema::BlobProto blob;
    crema::read_binary_proto_bytes(crema::fuzz::bytes_of(data, size), "mean.binaryproto", &blob);
    crema::Tensor<float> t;
    t.from_proto(blob);
  });
  return 0;
}
