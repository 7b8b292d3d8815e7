// A JPEG as the libjpeg decoder takes it (encoded Datums and image files in a build without
// OpenCV): the header, the EXIF orientation and the pixels, in each color mode.
#include "data/jpeg_codec.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (crema::ColorMode mode :
       {crema::ColorMode::kNative, crema::ColorMode::kColor, crema::ColorMode::kGray}) {
    crema::fuzz::refused_or_accepted([&] {
      crema::ChwImage image;
      crema::decode_jpeg(crema::fuzz::bytes_of(data, size), "file.jpg", mode, &image);
    });
  }
  return 0;
}
