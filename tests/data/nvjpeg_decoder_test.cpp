// Which JPEGs NvjpegDecoder takes (no GPU needed): whole baseline files of the layer's channels
// shown as stored; a gray file for a 3-channel layer as stored, a turned photo and a truncated
// file are left to the CPU decoder, which refuses or turns them as it always has.
#include "data/nvjpeg_decoder.h"

#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"
#include "data/image_test_util.h"
#include "data/jpeg_codec.h"

namespace crema {
namespace {

TEST(NvjpegDecoder, LeavesWhatTheHardwareDoesNotShowAsTheCpuWould) {
  CREMA_SKIP_WITHOUT_JPEG();
  const std::string color = encode_jpeg(test::test_pixels(3, 40, 60, 1).data(), 3, 40, 60, 90);
  const std::string gray = encode_jpeg(test::test_pixels(1, 40, 60, 2).data(), 1, 40, 60, 90);
  const std::string turned = test::with_orientation(color, 6, true);
  const auto takes = [](const std::string& jpeg, ColorMode mode, int channels) {
    return NvjpegDecoder::takes(jpeg, read_jpeg_header(jpeg, "x", mode), channels);
  };
  EXPECT_TRUE(takes(color, ColorMode::kNative, 3));
  EXPECT_TRUE(takes(gray, ColorMode::kColor, 3));
  // As stored, a 3-channel layer leaves a gray file to the CPU decoder, which refuses it.
  EXPECT_FALSE(takes(gray, ColorMode::kNative, 3));
  EXPECT_FALSE(takes(turned, ColorMode::kColor, 3));
  // A truncated file (no end-of-image marker) too, which the CPU decoder refuses.
  const std::string cut = color.substr(0, color.size() - 100);
  EXPECT_FALSE(takes(cut, ColorMode::kColor, 3));
  ChwImage img;
  EXPECT_THROW(decode_jpeg(cut, "cut", ColorMode::kColor, &img), Error);
}

}  // namespace
}  // namespace crema
