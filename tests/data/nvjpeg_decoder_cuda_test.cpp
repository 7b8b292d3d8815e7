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

// How far the hardware's pixels of image c are from libjpeg's decode of `jpeg`.
void expect_near_libjpeg(prim::Handle& h, const prim::ImageCrop& c, const std::string& jpeg,
                         const std::string& where, ColorMode color, int channels) {
  ChwImage want;
  decode_jpeg(jpeg, where, color, &want);
  ASSERT_EQ(c.height, want.height);
  ASSERT_EQ(c.width, want.width);
  const std::vector<unsigned char> got = planes(h, c, channels);
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
        expect_near_libjpeg(h, crops[i], jpegs[i], where[i], color, channels);
      }
    }
  }
  EXPECT_EQ(decoder.decoded(), 4 * files.size());
  EXPECT_EQ(decoder.left(), 0u);
}

// Batches of changing sizes, as AUTO's share and the files the hardware refuses make them: a
// batch a file short of a kept setup is padded to it, a new size replaces the setup used least
// recently, and every image of every batch is the one its file gives in a batch of all of them,
// bit for bit.
TEST(NvjpegDecoderCuda, BatchesOfChangingSizesKeepTheirImages) {
  CREMA_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_NVJPEG();
  prim::Handle h(prim::Device::kCUDA);
  NvjpegDecoder decoder(h);
  std::vector<std::string> jpegs, where;
  std::vector<JpegHeader> headers;
  for (int i = 0; i < 8; ++i) {
    const int height = 40 + 13 * i, width = 100 - 7 * i;
    jpegs.push_back(
        encode_jpeg(test::test_pixels(3, height, width, i).data(), 3, height, width, 90));
    where.push_back("file " + std::to_string(i));
    headers.push_back(read_jpeg_header(jpegs.back(), where.back(), ColorMode::kColor));
  }
  const std::vector<std::string_view> views(jpegs.begin(), jpegs.end());
  prim::DeviceBuffer all_pixels;
  std::vector<prim::ImageCrop> all(8);
  bool on_gpu = false;
  decoder.decode(8, views.data(), headers.data(), 3, &all_pixels, all.data(), &on_gpu);
  ASSERT_TRUE(on_gpu);
  std::vector<std::vector<unsigned char>> want;
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(where[size_t(i)]);
    expect_near_libjpeg(h, all[size_t(i)], jpegs[size_t(i)], where[size_t(i)], ColorMode::kColor,
                        3);
    want.push_back(planes(h, all[size_t(i)], 3));
  }
  // Sizes and the setups kept after each: 7 pads to 8; 5 and 3 are new; 4 pads to 5; 1 replaces
  // 3 (8 and 5 were used since); 3 then replaces 5.
  struct Round {
    int first, n, setups;
  };
  const Round rounds[] = {{1, 7, 1}, {0, 5, 2}, {3, 3, 3}, {2, 4, 3},
                          {0, 8, 3}, {7, 1, 3}, {4, 3, 3}};
  uint64_t decoded = 8;
  for (const Round& r : rounds) {
    SCOPED_TRACE("batch of " + std::to_string(r.n) + " from file " + std::to_string(r.first));
    prim::DeviceBuffer pixels;
    std::vector<prim::ImageCrop> crops(size_t(r.n));
    decoder.decode(r.n, views.data() + r.first, headers.data() + r.first, 3, &pixels, crops.data(),
                   &on_gpu);
    ASSERT_TRUE(on_gpu);
    EXPECT_EQ(decoder.setups(), r.setups);
    for (int i = 0; i < r.n; ++i)
      EXPECT_EQ(planes(h, crops[size_t(i)], 3), want[size_t(r.first + i)])
          << where[size_t(r.first + i)];
    decoded += uint64_t(r.n);
  }
  EXPECT_EQ(decoder.decoded(), decoded);
  EXPECT_EQ(decoder.left(), 0u);
}

}  // namespace
}  // namespace crema
