// Helpers of the image tests: small images with known pixels written with OpenCV, list files,
// and a macro that skips a test in builds without OpenCV.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
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

namespace crema::test {

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
