// Datum records: the examples stored in Caffe's LMDB datasets. decode_datum parses a record's
// bytes; datum_to_chw turns a Datum into float pixels in C-H-W order from raw uint8 `data`,
// from `float_data`, or from an encoded JPEG/PNG (decoded by decode_image, data/image_io.h;
// channels in BGR order as Caffe stores them). Records come from untrusted files: every size is
// checked.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "crema.pb.h"

namespace crema {

// Parses a serialized Datum into *datum. Corrupt bytes throw crema::Error
// "<db>: record '<key>': corrupt Datum ...".
void decode_datum(std::string_view bytes, const std::string& db, std::string_view key,
                  Datum* datum);

// How an encoded image is decoded: as stored, forced to 3 channels, or forced to 1.
enum class ColorMode { kNative, kColor, kGray };

// A decoded example: channels x height x width floats, C-H-W order.
struct ChwImage {
  int channels = 0;
  int height = 0;
  int width = 0;
  std::vector<float> data;
};

// An image's 8-bit pixels in the same layout, as a JPEG decodes (data/jpeg_codec.h).
struct ChwPixels {
  int channels = 0;
  int height = 0;
  int width = 0;
  std::vector<uint8_t> data;
};

// Converts datum to floats in *image (its buffer is reused). `where` names the record in error
// messages. Throws crema::Error when the sizes are not positive, exceed the tensor limit or do
// not match the stored data, and for an encoded Datum that cannot be decoded (data/image_io.h).
void datum_to_chw(const Datum& datum, const std::string& where, ColorMode color, ChwImage* image);

}  // namespace crema
