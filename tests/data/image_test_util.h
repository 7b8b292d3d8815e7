// Helpers of the image tests: small images with known pixels written with OpenCV, photo-like
// pixels, a JPEG given an EXIF orientation, list files, and macros that skip a test in builds
// without OpenCV or libjpeg.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#ifdef CREMA_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

#ifdef CREMA_WITH_OPENCV
#define CREMA_SKIP_WITHOUT_OPENCV() \
  do {                              \
  } while (0)
#else
#define CREMA_SKIP_WITHOUT_OPENCV() GTEST_SKIP() << "built without OpenCV"
#endif

#ifdef CREMA_WITH_JPEG
#define CREMA_SKIP_WITHOUT_JPEG() \
  do {                            \
  } while (0)
#else
#define CREMA_SKIP_WITHOUT_JPEG() GTEST_SKIP() << "built without libjpeg"
#endif

namespace crema::test {

// A photo-like 8-bit image: smooth gradients plus noise, so the DCT has work at every frequency.
inline std::vector<unsigned char> test_pixels(int c, int h, int w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> noise(-25, 25);
  std::vector<unsigned char> chw(size_t(c) * h * w);
  for (int k = 0; k < c; ++k)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const int v = (x * 255 / w + y * 128 / h + k * 60) % 256 + noise(rng);
        chw[(size_t(k) * h + y) * w + x] = (unsigned char)(std::clamp(v, 0, 255));
      }
  return chw;
}

// jpg with an APP1 EXIF segment giving `orientation` (little- or big-endian TIFF) after its SOI.
inline std::string with_orientation(const std::string& jpg, int orientation, bool little) {
  std::string tiff = little ? std::string("II*\0\x08\0\0\0", 8) : std::string("MM\0*\0\0\0\x08", 8);
  const auto u16 = [little](int v) {
    return little ? std::string{char(v & 0xFF), char(v >> 8)}
                  : std::string{char(v >> 8), char(v & 0xFF)};
  };
  tiff += u16(1);                                                            // one IFD entry
  tiff += u16(0x0112) + u16(3);                                              // Orientation, SHORT
  tiff += little ? std::string("\1\0\0\0", 4) : std::string("\0\0\0\1", 4);  // count 1
  tiff += u16(orientation) + u16(0);                                         // the value, padded
  tiff += std::string(4, '\0');                                              // no next IFD
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const int len = int(payload.size()) + 2;
  return jpg.substr(0, 2) + "\xFF\xE1" + std::string{char(len >> 8), char(len & 0xFF)} + payload +
         jpg.substr(2);
}

// Pixel value of channel k at (y, x) of test image i (c channels, stored BGR as OpenCV does).
inline uint8_t image_pixel(int i, int k, int y, int x) {
  return uint8_t((i * 37 + k * 71 + y * 11 + x * 3) % 256);
}

// Writes test image i of h x w with c (1 or 3) channels to path (PNG: lossless, so the decoded
// pixels are exactly image_pixel).
inline void write_test_image(const std::string& path, int i, int h, int w, int c = 3) {
#ifdef CREMA_WITH_OPENCV
  cv::Mat img(h, w, c == 1 ? CV_8UC1 : CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) img.ptr<uint8_t>(y)[x * c + k] = image_pixel(i, k, y, x);
  ASSERT_TRUE(cv::imwrite(path, img)) << path;
#else
  (void)path, (void)i, (void)h, (void)w, (void)c;
#endif
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace crema::test
