// NvjpegDecoder against the CPU's libjpeg decoder on the GPU: baseline color (4:2:0, odd sizes)
// and gray files of several sizes in one batch, as BGR and as gray, decode on the hardware to
// within a few levels of libjpeg's pixels, twice (the decoder's setup and memory reused). Skips
// where nvJPEG has no hardware decoder.
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
    std::vector<JpegHeader> headers;
    for (size_t i = 0; i < files.size(); ++i) {
      headers.push_back(read_jpeg_header(jpegs[i], where[i], color));
      EXPECT_TRUE(NvjpegDecoder::takes(jpegs[i], headers.back(), channels)) << where[i];
    }
    // Twice: the second batch reuses the decoder's setup and the pixels' memory.
    prim::DeviceBuffer pixels;
    for (int round = 0; round < 2; ++round) {
      bool on_gpu = false;
      decoder.decode(int(files.size()), views.data(), headers.data(), channels, &pixels,
                     crops.data(), &on_gpu);
      ASSERT_TRUE(on_gpu);
      for (size_t i = 0; i < files.size(); ++i) {
        SCOPED_TRACE(where[i]);
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

}  // namespace
}  // namespace crema
