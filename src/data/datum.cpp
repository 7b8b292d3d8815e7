// Datum decoding.
#include "data/datum.h"

#include "core/errors.h"
#include "core/tensor.h"
#include "data/image_io.h"

namespace crema {

void decode_datum(std::string_view bytes, const std::string& db, std::string_view key,
                  Datum* datum) {
  // The wire format stores lengths as int, so larger records cannot be valid.
  if (bytes.size() > size_t(INT32_MAX) || !datum->ParseFromArray(bytes.data(), int(bytes.size())))
    fail(db, ": record '", key, "': corrupt Datum (", bytes.size(),
         " bytes that do not parse as a Datum)");
}

void datum_to_chw(const Datum& datum, const std::string& where, ColorMode color, ChwImage* image) {
  if (datum.encoded()) {
    decode_image(datum.data(), where, color, image);
    return;
  }
  const int64_t c = datum.channels(), h = datum.height(), w = datum.width();
  if (c <= 0 || h <= 0 || w <= 0)
    fail(where, ": Datum has shape ", c, "x", h, "x", w,
         "; channels, height and width must be > 0");
  // The wire format holds at most INT32_MAX bytes, so no valid Datum has more values than that.
  // Each factor is below 2^31: c * h fits in 64 bits, and so does its product with w once c * h
  // is known to be within the limit (a fuzz finding: the three at once overflowed).
  constexpr int64_t kMaxValues = INT32_MAX;
  const int64_t plane_count = c * h;
  const int64_t count = plane_count > kMaxValues ? kMaxValues + 1 : plane_count * w;
  if (count > kMaxValues)
    fail(where, ": Datum shape ", c, "x", h, "x", w, " exceeds ", kMaxValues, " values");
  const std::string& bytes = datum.data();
  if (!bytes.empty()) {
    if (int64_t(bytes.size()) != count)
      fail(where, ": Datum of shape ", c, "x", h, "x", w, " needs ", count, " bytes of data, has ",
           bytes.size());
    image->data.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i) image->data[i] = float(uint8_t(bytes[i]));
  } else {
    if (datum.float_data_size() != count)
      fail(where, ": Datum of shape ", c, "x", h, "x", w, " needs ", count,
           " values of float_data, has ", datum.float_data_size(),
           datum.float_data_size() == 0 ? " (and no data bytes)" : "");
    image->data.assign(datum.float_data().begin(), datum.float_data().end());
  }
  image->channels = int(c);
  image->height = int(h);
  image->width = int(w);
}

}  // namespace crema
