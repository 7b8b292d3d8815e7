// The libjpeg decoder (data/jpeg_codec.h), used where OpenCV is absent: the same pixels as
// OpenCV's decoder for the same files (color, gray and as-stored; odd sizes, which exercise the
// chroma upsampling at the edges; files written by either encoder), BGR order, and one clear
// error for truncated or corrupt data. With OpenCV, decode_image runs JPEGs through it too.
#include "data/jpeg_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/errors.h"
#include "data/data_test_util.h"
#include "data/image_io.h"
#include "data/image_test_util.h"

#ifdef CREMA_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace crema {
namespace {

using test::test_pixels;
using test::with_orientation;

TEST(JpegCodec, ChannelOrderIsBgrAndQuality100IsClose) {
  CREMA_SKIP_WITHOUT_JPEG();
  const int h = 16, w = 16;
  std::vector<unsigned char> chw(size_t(3) * h * w);
  for (int i = 0; i < h * w; ++i) {
    chw[size_t(i)] = 200;             // blue
    chw[size_t(h * w + i)] = 60;      // green
    chw[size_t(2 * h * w + i)] = 20;  // red
  }
  const std::string jpg = encode_jpeg(chw.data(), 3, h, w, 100);
  ASSERT_TRUE(looks_like_jpeg(jpg));
  EXPECT_EQ(jpeg_channels(jpg, "x"), 3);
  ChwImage img;
  decode_jpeg(jpg, "x", ColorMode::kNative, &img);
  ASSERT_EQ(img.channels, 3);
  ASSERT_EQ(img.height, h);
  ASSERT_EQ(img.width, w);
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < h * w; ++i)
      ASSERT_NEAR(img.data[size_t(k * h * w + i)], chw[size_t(k * h * w + i)], 3) << k;
  decode_jpeg(jpg, "x", ColorMode::kGray, &img);
  ASSERT_EQ(img.channels, 1);
  // ITU-R BT.601 luma of (R, G, B) = (20, 60, 200).
  EXPECT_NEAR(img.data[0], 0.299 * 20 + 0.587 * 60 + 0.114 * 200, 2);
}

TEST(JpegCodec, TruncatedAndCorruptDataAreOneError) {
  CREMA_SKIP_WITHOUT_JPEG();
  const std::vector<unsigned char> chw = test_pixels(3, 40, 50, 1);
  const std::string jpg = encode_jpeg(chw.data(), 3, 40, 50, 90);
  ChwImage img;
  const std::string truncated = test::error_of([&] {
    decode_jpeg(jpg.substr(0, jpg.size() / 2), "db: record 'k'", ColorMode::kColor, &img);
  });
  EXPECT_EQ(truncated.rfind("db: record 'k': corrupt JPEG (", 0), 0u) << truncated;
  std::string garbled = jpg;
  for (size_t i = 20; i < 200 && i < garbled.size(); ++i) garbled[i] = char(0xFF);
  EXPECT_EQ(test::error_of([&] {
              decode_jpeg(garbled, "f.jpg", ColorMode::kColor, &img);
            }).rfind("f.jpg: corrupt JPEG (", 0),
            0u);
  EXPECT_EQ(test::error_of([&] {
              decode_jpeg("\xFF\xD8\xFF", "f.jpg", ColorMode::kNative, &img);
            }).rfind("f.jpg: corrupt JPEG (", 0),
            0u);
  // A header claiming 20000 x 30000 pixels before a few hundred bytes of data: refused from the
  // header, before the image is allocated.
  std::string huge = jpg;
  const size_t sof = huge.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  huge.replace(sof + 5, 4, std::string("\x4E\x20\x75\x30", 4));  // height 20000, width 30000
  const std::string claimed =
      test::error_of([&] { decode_jpeg(huge, "f.jpg", ColorMode::kColor, &img); });
  EXPECT_EQ(claimed.rfind("f.jpg: corrupt JPEG (truncated: ", 0), 0u) << claimed;
  EXPECT_NE(claimed.find("30000x20000 pixels"), std::string::npos) << claimed;
  // The same header, progressive with arithmetic coding (SOF10): the file's size bounds nothing
  // there, so the memory decoding would take is refused, before libjpeg allocates it.
  std::string arithmetic = huge;
  arithmetic[sof + 1] = char(0xCA);
  const std::string needs =
      test::error_of([&] { decode_jpeg(arithmetic, "f.jpg", ColorMode::kColor, &img); });
  EXPECT_EQ(needs.rfind("f.jpg: JPEG of 30000x20000 pixels needs ", 0), 0u) << needs;
  EXPECT_NE(needs.find(" MiB to decode (at most 512 MiB)"), std::string::npos) << needs;
}

#ifdef CREMA_WITH_OPENCV
// OpenCV's pixels for bytes, C-H-W floats.
ChwImage opencv_decode(const std::string& bytes, int flags) {
  const cv::Mat buf(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  const cv::Mat m = cv::imdecode(buf, flags);
  ChwImage out;
  out.channels = m.channels();
  out.height = m.rows;
  out.width = m.cols;
  out.data.resize(size_t(m.channels()) * m.rows * m.cols);
  for (int y = 0; y < m.rows; ++y)
    for (int x = 0; x < m.cols; ++x)
      for (int k = 0; k < m.channels(); ++k)
        out.data[(size_t(k) * m.rows + y) * m.cols + x] = m.ptr<uint8_t>(y)[x * m.channels() + k];
  return out;
}

void expect_same_as_opencv(const std::string& bytes, const std::string& what) {
  const struct {
    ColorMode mode;
    int flags;
  } modes[] = {{ColorMode::kColor, cv::IMREAD_COLOR},
               {ColorMode::kGray, cv::IMREAD_GRAYSCALE},
               {ColorMode::kNative, cv::IMREAD_ANYCOLOR}};
  for (const auto& m : modes) {
    const ChwImage want = opencv_decode(bytes, m.flags);
    ChwImage got;
    decode_jpeg(bytes, what, m.mode, &got);
    ASSERT_EQ(got.channels, want.channels) << what << " mode " << int(m.mode);
    ASSERT_EQ(got.height, want.height) << what;
    ASSERT_EQ(got.width, want.width) << what;
    size_t differ = 0;
    for (size_t i = 0; i < got.data.size(); ++i) differ += got.data[i] != want.data[i];
    EXPECT_EQ(differ, 0u) << what << " mode " << int(m.mode) << ": " << differ << " of "
                          << got.data.size() << " values differ";
  }
}
#endif

TEST(JpegCodec, ExifOrientationTurnsThePixels) {
  CREMA_SKIP_WITHOUT_JPEG();
  const int h = 5, w = 8;
  const std::vector<unsigned char> chw = test_pixels(1, h, w, 5);
  const std::string jpg = encode_jpeg(chw.data(), 1, h, w, 100);
  ChwImage plain, turned;
  decode_jpeg(jpg, "x", ColorMode::kNative, &plain);
  // Orientation 6 (rotate 90 clockwise to show): out(y, x) = stored(h - 1 - x, y).
  decode_jpeg(with_orientation(jpg, 6, true), "x", ColorMode::kNative, &turned);
  ASSERT_EQ(turned.height, w);
  ASSERT_EQ(turned.width, h);
  for (int y = 0; y < w; ++y)
    for (int x = 0; x < h; ++x)
      ASSERT_EQ(turned.data[size_t(y * h + x)], plain.data[size_t((h - 1 - x) * w + y)]);
  decode_jpeg(with_orientation(jpg, 3, false), "x", ColorMode::kNative, &turned);
  ASSERT_EQ(turned.height, h);
  EXPECT_EQ(turned.data[0], plain.data[size_t(h * w - 1)]);
}

TEST(JpegCodec, SamePixelsAsOpenCv) {
  CREMA_SKIP_WITHOUT_JPEG();
#ifndef CREMA_WITH_OPENCV
  GTEST_SKIP() << "built without OpenCV: nothing to compare with";
#else
  // Odd sizes: partial MCUs at the right and bottom edges, where upsampling differs first.
  const int sizes[][2] = {{375, 500}, {17, 33}, {1, 1}, {64, 63}, {101, 7}};
  uint64_t seed = 3;
  for (const auto& s : sizes) {
    for (int c : {3, 1}) {
      const std::vector<unsigned char> chw = test_pixels(c, s[0], s[1], seed++);
      for (int quality : {75, 95}) {
        const std::string ours = encode_jpeg(chw.data(), c, s[0], s[1], quality);
        expect_same_as_opencv(ours, "libjpeg-encoded " + std::to_string(c) + "x" +
                                        std::to_string(s[0]) + "x" + std::to_string(s[1]));
        // A file OpenCV wrote (its own encoder settings) decodes the same way too.
        cv::Mat m(s[0], s[1], c == 3 ? CV_8UC3 : CV_8UC1);
        for (int y = 0; y < s[0]; ++y)
          for (int x = 0; x < s[1]; ++x)
            for (int k = 0; k < c; ++k)
              m.ptr<uint8_t>(y)[x * c + k] = chw[(size_t(k) * s[0] + y) * s[1] + x];
        std::vector<uchar> buf;
        ASSERT_TRUE(cv::imencode(".jpg", m, buf, {cv::IMWRITE_JPEG_QUALITY, quality}));
        expect_same_as_opencv(std::string(buf.begin(), buf.end()), "OpenCV-encoded");
      }
    }
  }
  // A progressive JPEG (OpenCV's encoder writes one on request).
  const std::vector<unsigned char> chw = test_pixels(3, 50, 70, 99);
  cv::Mat m(50, 70, CV_8UC3);
  for (int y = 0; y < 50; ++y)
    for (int x = 0; x < 70; ++x)
      for (int k = 0; k < 3; ++k) m.ptr<uint8_t>(y)[x * 3 + k] = chw[(size_t(k) * 50 + y) * 70 + x];
  std::vector<uchar> buf;
  ASSERT_TRUE(cv::imencode(".jpg", m, buf, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  expect_same_as_opencv(std::string(buf.begin(), buf.end()), "progressive");
  // Every EXIF orientation, as OpenCV turns it.
  const std::string jpg = encode_jpeg(chw.data(), 3, 50, 70, 90);
  for (int orientation = 1; orientation <= 8; ++orientation)
    expect_same_as_opencv(with_orientation(jpg, orientation, orientation % 2 == 0),
                          "EXIF orientation " + std::to_string(orientation));
#endif
}

// With OpenCV, decode_image (an encoded Datum's decoder) takes a JPEG to decode_jpeg and leaves
// what that refuses to OpenCV: OpenCV's pixels for a sound file, and OpenCV's answer for a
// truncated one, which decode_jpeg refuses and OpenCV may finish with a warning.
TEST(JpegCodec, DecodeImageGivesOpenCvsAnswer) {
  CREMA_SKIP_WITHOUT_JPEG();
#ifndef CREMA_WITH_OPENCV
  GTEST_SKIP() << "built without OpenCV: decode_image is decode_jpeg";
#else
  const std::vector<unsigned char> chw = test_pixels(3, 40, 52, 11);
  const std::string sound = encode_jpeg(chw.data(), 3, 40, 52, 90);
  const std::string cut = sound.substr(0, sound.size() * 2 / 3);
  ChwImage refused;
  EXPECT_THROW(decode_jpeg(cut, "cut", ColorMode::kColor, &refused), Error);
  const struct {
    ColorMode mode;
    int flags;
  } modes[] = {{ColorMode::kColor, cv::IMREAD_COLOR}, {ColorMode::kGray, cv::IMREAD_GRAYSCALE}};
  for (const std::string& bytes : {sound, cut})
    for (const auto& m : modes) {
      SCOPED_TRACE(::testing::Message() << bytes.size() << " bytes, mode " << int(m.mode));
      const cv::Mat buf(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
      if (cv::imdecode(buf, m.flags).empty()) {
        ChwImage got;
        EXPECT_THROW(decode_image(bytes, "file", m.mode, &got), Error);
        continue;
      }
      const ChwImage want = opencv_decode(bytes, m.flags);
      ChwImage got;
      decode_image(bytes, "file", m.mode, &got);
      ASSERT_EQ(got.channels, want.channels);
      ASSERT_EQ(got.height, want.height);
      ASSERT_EQ(got.width, want.width);
      EXPECT_EQ(got.data, want.data);
    }
#endif
}

}  // namespace
}  // namespace crema
