// Datum decoding: raw bytes, float_data, encoded images, and every size check.
#include "data/datum.h"

#include <gtest/gtest.h>

#include <functional>

#include "core/errors.h"
#include "data_test_util.h"

#ifdef CREMA_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace crema {
namespace {

using test::error_of;

Datum raw_datum(int c, int h, int w, size_t bytes) {
  Datum d;
  d.set_channels(c);
  d.set_height(h);
  d.set_width(w);
  std::string data(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) data[i] = char(250 - i);
  d.set_data(data);
  return d;
}

TEST(Datum, DecodesSerializedBytes) {
  Datum in = raw_datum(2, 1, 3, 6);
  in.set_label(7);
  Datum out;
  decode_datum(in.SerializeAsString(), "db", "k", &out);
  EXPECT_EQ(out.label(), 7);
  EXPECT_EQ(out.data(), in.data());
}

TEST(Datum, CorruptBytesNameTheDbAndKey) {
  Datum out;
  const std::string garbage("\xff\xff\xff\xff\xff", 5);
  const std::string msg = error_of([&] { decode_datum(garbage, "train_lmdb", "00000042", &out); });
  EXPECT_EQ(msg.rfind("train_lmdb: record '00000042': corrupt Datum", 0), 0u) << msg;
}

TEST(Datum, RawBytesBecomeUnsignedFloats) {
  ChwImage img;
  datum_to_chw(raw_datum(2, 1, 3, 6), "r", ColorMode::kNative, &img);
  EXPECT_EQ(img.channels, 2);
  EXPECT_EQ(img.height, 1);
  EXPECT_EQ(img.width, 3);
  EXPECT_EQ(img.data, (std::vector<float>{250, 249, 248, 247, 246, 245}));
}

TEST(Datum, FloatData) {
  Datum d;
  d.set_channels(1);
  d.set_height(2);
  d.set_width(2);
  for (float v : {-1.5f, 0.25f, 3.f, 1e6f}) d.add_float_data(v);
  ChwImage img;
  datum_to_chw(d, "r", ColorMode::kNative, &img);
  EXPECT_EQ(img.data, (std::vector<float>{-1.5f, 0.25f, 3.f, 1e6f}));
  d.add_float_data(2);
  EXPECT_EQ(error_of([&] { datum_to_chw(d, "db: record 'x'", ColorMode::kNative, &img); }),
            "db: record 'x': Datum of shape 1x2x2 needs 4 values of float_data, has 5");
}

TEST(Datum, SizeChecks) {
  ChwImage img;
  EXPECT_EQ(error_of([&] { datum_to_chw(raw_datum(3, 4, 4, 47), "r", ColorMode::kNative, &img); }),
            "r: Datum of shape 3x4x4 needs 48 bytes of data, has 47");
  EXPECT_NE(error_of([&] {
              datum_to_chw(raw_datum(0, 4, 4, 1), "r", ColorMode::kNative, &img);
            }).find("must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              datum_to_chw(raw_datum(1 << 20, 1 << 20, 4, 4), "r", ColorMode::kNative, &img);
            }).find("exceeds"),
            std::string::npos);
  // Three sizes near 2^31 whose product overflows 64 bits (a fuzz finding): still "exceeds".
  EXPECT_EQ(error_of([&] {
              datum_to_chw(raw_datum(2147483647, 2147483647, 2147483647, 1), "r",
                           ColorMode::kNative, &img);
            }),
            "r: Datum shape 2147483647x2147483647x2147483647 exceeds 2147483647 values");
  Datum empty = raw_datum(1, 1, 1, 0);
  EXPECT_NE(
      error_of([&] { datum_to_chw(empty, "r", ColorMode::kNative, &img); }).find("no data bytes"),
      std::string::npos);
}

TEST(Datum, EncodedImages) {
  Datum d;
  d.set_encoded(true);
  ChwImage img;
#ifdef CREMA_WITH_OPENCV
  // A 2x3 BGR image whose pixel (y, x) is (10y + x, 100 + 10y + x, 200 + x).
  cv::Mat m(2, 3, CV_8UC3);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x)
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(10 * y + x, 100 + 10 * y + x, 200 + x);
  std::vector<uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", m, png));
  d.set_data(png.data(), png.size());
  datum_to_chw(d, "r", ColorMode::kNative, &img);
  ASSERT_EQ(img.channels, 3);
  ASSERT_EQ(img.height, 2);
  ASSERT_EQ(img.width, 3);
  EXPECT_EQ(img.data, (std::vector<float>{0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112, 200,
                                          201, 202, 200, 201, 202}));
  datum_to_chw(d, "r", ColorMode::kGray, &img);
  EXPECT_EQ(img.channels, 1);
  d.set_data("not an image");
  EXPECT_NE(error_of([&] {
              datum_to_chw(d, "db: record '7'", ColorMode::kNative, &img);
            }).find("db: record '7': cannot decode"),
            std::string::npos);
#else
  d.set_data("whatever");
  EXPECT_EQ(error_of([&] { datum_to_chw(d, "r", ColorMode::kNative, &img); }),
            "r: cannot decode this image: crema was built without OpenCV, which decodes formats "
            "other than JPEG");
#endif
}

}  // namespace
}  // namespace crema
