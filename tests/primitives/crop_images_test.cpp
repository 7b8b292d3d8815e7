// crop_images on the CPU against an oracle that walks each window's columns and places them
// (mirrored or not) as DataTransformer always has: exact, since both round (pixel - mean) and
// then the product once in fp32. Bad windows are refused with the image named, nothing written.
#include "primitives/crop_images.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "crop_images_cases.h"

namespace crema::prim {
namespace {

std::vector<float> oracle(const test::CropCase& c) {
  const CropImagesDesc& d = c.desc;
  std::vector<float> out(c.out_count());
  for (size_t i = 0; i < c.crops.size(); ++i) {
    const ImageCrop& k = c.crops[i];
    for (int ch = 0; ch < d.channels; ++ch)
      for (int y = 0; y < d.out_h; ++y)
        for (int x = 0; x < d.out_w; ++x) {
          const float p = c.pixels[size_t(
              c.offsets[i] + (int64_t(ch) * k.height + k.y0 + y) * k.pitch + k.x0 + x)];
          float m = 0;
          if (!c.mean_image.empty())
            m = c.mean_image[size_t((ch * d.mean_h + k.mean_y0 + y) * d.mean_w + k.mean_x0 + x)];
          else if (!c.mean_values.empty())
            m = c.mean_values[size_t(ch)];
          const int to = k.mirror ? d.out_w - 1 - x : x;
          out[((i * d.channels + ch) * d.out_h + y) * d.out_w + to] = (p - m) * d.scale;
        }
  }
  return out;
}

TEST(CropImages, MatchesTheOracle) {
  for (const test::CropCase& c : test::crop_cases())
    for (int threads : {1, 2}) {
      SCOPED_TRACE(c.name + ", " + std::to_string(threads) + " threads");
      Handle h(Device::kCPU);
      h.set_cpu_threads(threads);
      CropImagesDesc d = c.desc;
      d.mean_image = c.mean_image.empty() ? nullptr : c.mean_image.data();
      d.mean_values = c.mean_values.empty() ? nullptr : c.mean_values.data();
      const std::vector<unsigned char> bytes = c.pixel_bytes();
      const std::vector<ImageCrop> crops = c.at(bytes.data());
      std::vector<float> out = test::poisoned<float>(c.out_count());
      crop_images(h, d, int(crops.size()), crops.data(), out.data());
      EXPECT_EQ(out, oracle(c));
    }
}

TEST(CropImages, RefusesWindowsOutsideTheirImages) {
  const std::vector<test::CropCase> cases = test::crop_cases();
  const auto eight_bit_with_mean = std::find_if(cases.begin(), cases.end(), [](const auto& k) {
    return k.desc.pixels == PixelType::kUInt8 && !k.mean_image.empty();
  });
  ASSERT_NE(eight_bit_with_mean, cases.end());
  const test::CropCase& c = *eight_bit_with_mean;
  const std::vector<unsigned char> bytes = c.pixel_bytes();
  CropImagesDesc d = c.desc;
  d.mean_image = c.mean_image.data();
  Handle h(Device::kCPU);
  struct Bad {
    const char* what;
    void (*spoil)(ImageCrop*, CropImagesDesc*);
    const char* says;
  };
  const Bad bad[] = {
      {"above", [](ImageCrop* k, CropImagesDesc*) { k->y0 = -1; }, "image 1: the 7x5 window"},
      {"right", [](ImageCrop* k, CropImagesDesc*) { k->x0 = k->width - 4; }, "image 1: the 7x5"},
      {"below", [](ImageCrop* k, CropImagesDesc*) { k->y0 = k->height - 6; }, "is not inside"},
      {"pitch", [](ImageCrop* k, CropImagesDesc*) { k->pitch = k->width - 1; }, "row pitch"},
      {"null", [](ImageCrop* k, CropImagesDesc*) { k->pixels = nullptr; }, "null pixels"},
      {"mean", [](ImageCrop* k, CropImagesDesc*) { k->mean_x0 = 5; }, "the mean window"},
      {"small mean", [](ImageCrop*, CropImagesDesc* dd) { dd->mean_w = 4; }, "smaller than"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    std::vector<ImageCrop> crops = c.at(bytes.data());
    CropImagesDesc dd = d;
    b.spoil(&crops[1], &dd);
    std::vector<float> out = test::poisoned<float>(c.out_count());
    const std::vector<float> before = out;
    try {
      crop_images(h, dd, int(crops.size()), crops.data(), out.data());
      ADD_FAILURE() << "accepted";
    } catch (const PrimError& e) {
      EXPECT_NE(std::string(e.what()).find("crop_images: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
    }
    EXPECT_EQ(0, std::memcmp(out.data(), before.data(), out.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace crema::prim
