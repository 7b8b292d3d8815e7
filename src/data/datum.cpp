// Datum decoding.
#include "data/datum.h"

#include "core/errors.h"
#include "core/tensor.h"

#ifdef CREMA_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace crema {

void decode_datum(std::string_view bytes, const std::string& db, std::string_view key,
                  Datum* datum) {
  // The wire format stores lengths as int, so larger records cannot be valid.
  if (bytes.size() > size_t(INT32_MAX) || !datum->ParseFromArray(bytes.data(), int(bytes.size())))
    fail(db, ": record '", key, "': corrupt Datum (", bytes.size(),
         " bytes that do not parse as a Datum)");
}

namespace {

#ifdef CREMA_WITH_OPENCV
void decode_image(const Datum& datum, const std::string& where, ColorMode color, ChwImage* image) {
  const std::string& bytes = datum.data();
  const cv::Mat buf(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  const int flags = color == ColorMode::kColor  ? cv::IMREAD_COLOR
                    : color == ColorMode::kGray ? cv::IMREAD_GRAYSCALE
                                                : cv::IMREAD_ANYCOLOR;
  cv::Mat img;
  try {
    img = cv::imdecode(buf, flags);
  } catch (const cv::Exception& e) {
    fail(where, ": cannot decode the encoded image: ", e.what());
  }
  if (img.empty()) fail(where, ": cannot decode the encoded image (", bytes.size(), " bytes)");
  if (img.depth() != CV_8U) fail(where, ": encoded image is not 8-bit");
  const int c = img.channels(), h = img.rows, w = img.cols;
  if (int64_t(c) * h * w > kMaxTensorElements) fail(where, ": encoded image is too large");
  image->channels = c;
  image->height = h;
  image->width = w;
  image->data.resize(size_t(c) * h * w);
  // OpenCV stores H-W-C interleaved; the network wants planes.
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = img.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) image->data[(size_t(k) * h + y) * w + x] = row[x * c + k];
  }
}
#endif

}  // namespace

void datum_to_chw(const Datum& datum, const std::string& where, ColorMode color, ChwImage* image) {
  if (datum.encoded()) {
#ifdef CREMA_WITH_OPENCV
    decode_image(datum, where, color, image);
    return;
#else
    (void)color;
    fail(where, ": encoded Datum but crema was built without OpenCV");
#endif
  }
  const int64_t c = datum.channels(), h = datum.height(), w = datum.width();
  if (c <= 0 || h <= 0 || w <= 0)
    fail(where, ": Datum has shape ", c, "x", h, "x", w,
         "; channels, height and width must be > 0");
  const int64_t count = c * h * w;  // each factor < 2^31, so no overflow in 64 bits
  if (count > kMaxTensorElements)
    fail(where, ": Datum shape ", c, "x", h, "x", w, " exceeds ", kMaxTensorElements, " values");
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
