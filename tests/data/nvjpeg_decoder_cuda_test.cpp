// NvjpegDecoder against the CPU's libjpeg decoder on the GPU: baseline color (4:2:0, odd sizes)
// and gray files of several sizes in one batch, as BGR and as gray, decode on the hardware to
// within a few levels of libjpeg's pixels; a turned photo and a file of the wrong channels are
// left to the CPU, and so is a truncated file. Skips where nvJPEG has no hardware decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/errors.h"
#include "cuda_test_util.h"
#include "data/image_test_util.h"
#include "data/jpeg_codec.h"
#include "data/nvjpeg_decoder.h"

namespace crema {
namespace {

#define SKIP_WITHOUT_NVJPEG()                                                  \
  do {                                                                         \
    std::string why;                                                           \
    if (!NvjpegDecoder::available(&why)) GTEST_SKIP() << "no nvJPEG: " << why; \
  } while (0)

// Image i's planes as the decoder left them (channels x height x width, the pitch dropped).
std::vector<unsigned char> planes(prim::Handle& h, const prim::ImageCrop& c, int channels) {
  h.synchronize();
  std::vector<unsigned char> all(size_t(channels) * c.height * c.pitch), out;
  prim::device_memcpy(all.data(), prim::Device::kCPU, c.pixels, prim::Device::kCUDA, all.size());
  for (int k = 0; k < channels; ++k)
    for (int y = 0; y < c.height; ++y)
      out.insert(out.end(), all.begin() + (int64_t(k) * c.height + y) * c.pitch,
                 all.begin() + (int64_t(k) * c.height + y) * c.pitch + c.width);
  return out;
}

struct File {
  int channels, height, width;
};

TEST(NvjpegDecoderCuda, MatchesLibjpegWithinAFewLevels) {
  CREMA_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_NVJPEG();
  prim::Handle h(prim::Device::kCUDA);
  NvjpegDecoder decoder(h);
  const std::vector<File> files = {{3, 256, 256}, {3, 375, 500}, {3, 97, 131},
                                   {1, 64, 80},   {3, 17, 9},    {3, 256, 256}};
  std::vector<std::string> jpegs, where;
  for (size_t i = 0; i < files.size(); ++i) {
    const File& f = files[i];
    jpegs.push_back(encode_jpeg(test::test_pixels(f.channels, f.height, f.width, i).data(),
                                f.channels, f.height, f.width, 90));
    where.push_back("file " + std::to_string(i));
  }
  const std::vector<std::string_view> views(jpegs.begin(), jpegs.end());
  for (ColorMode color : {ColorMode::kColor, ColorMode::kGray}) {
    const int channels = color == ColorMode::kColor ? 3 : 1;
    SCOPED_TRACE(channels == 3 ? "BGR" : "gray");
    std::vector<prim::ImageCrop> crops(files.size());
    std::vector<bool> on_gpu;
    // Twice: the second batch reuses the decoder's setup and memory.
    for (int round = 0; round < 2; ++round) {
      decoder.decode(int(files.size()), views.data(), where.data(), channels, color, crops.data(),
                     &on_gpu);
      for (size_t i = 0; i < files.size(); ++i) {
        SCOPED_TRACE(where[i]);
        ASSERT_TRUE(on_gpu[i]);
        ChwImage want;
        decode_jpeg(jpegs[i], where[i], color, &want);
        ASSERT_EQ(crops[i].height, want.height);
        ASSERT_EQ(crops[i].width, want.width);
        const std::vector<unsigned char> got = planes(h, crops[i], channels);
        ASSERT_EQ(got.size(), want.data.size());
        double sum = 0;
        int worst = 0;
        for (size_t p = 0; p < got.size(); ++p) {
          const int d = std::abs(int(got[p]) - int(want.data[p]));
          sum += d;
          worst = std::max(worst, d);
        }
        EXPECT_LE(worst, 8) << "largest difference";
        EXPECT_LE(sum / double(got.size()), 1.0) << "mean difference";
      }
    }
  }
  EXPECT_EQ(decoder.decoded(), 4 * files.size());
  EXPECT_EQ(decoder.left(), 0u);
}

TEST(NvjpegDecoderCuda, LeavesWhatTheHardwareDoesNotShowAsTheCpuWould) {
  CREMA_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_NVJPEG();
  prim::Handle h(prim::Device::kCUDA);
  NvjpegDecoder decoder(h);
  const std::string color = encode_jpeg(test::test_pixels(3, 40, 60, 1).data(), 3, 40, 60, 90);
  const std::string gray = encode_jpeg(test::test_pixels(1, 40, 60, 2).data(), 1, 40, 60, 90);
  const std::vector<std::string> jpegs = {color, test::with_orientation(color, 6, true), gray};
  const std::vector<std::string_view> views(jpegs.begin(), jpegs.end());
  const std::vector<std::string> where = {"plain", "turned", "gray"};
  std::vector<prim::ImageCrop> crops(3);
  std::vector<bool> on_gpu;
  // As stored: a 3-channel layer leaves the gray file to the CPU decoder, which refuses it.
  decoder.decode(3, views.data(), where.data(), 3, ColorMode::kNative, crops.data(), &on_gpu);
  EXPECT_EQ(on_gpu, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(decoder.left(), 2u);

  // A truncated file (no end-of-image marker) is left to the CPU decoder too, which refuses it.
  const std::string cut = color.substr(0, color.size() - 100);
  const std::string_view one[] = {cut};
  const std::string name[] = {"cut"};
  decoder.decode(1, one, name, 3, ColorMode::kColor, crops.data(), &on_gpu);
  EXPECT_FALSE(on_gpu[0]);
  ChwImage img;
  EXPECT_THROW(decode_jpeg(cut, "cut", ColorMode::kColor, &img), Error);
}

}  // namespace
}  // namespace crema
