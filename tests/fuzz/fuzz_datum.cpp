// A database record as the data layers decode it: Datum parse, then pixels in C-H-W order.
#include "data/datum.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crema::fuzz::refused_or_accepted([&] {
    crema::Datum datum;
    crema::decode_datum(crema::fuzz::bytes_of(data, size), "db", "key", &datum);
    crema::ChwImage image;
    crema::datum_to_chw(datum, "db record key", crema::ColorMode::kNative, &image);
  });
  return 0;
}
